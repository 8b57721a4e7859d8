//! `small reset`: start a new run, keeping the audit history.

use std::io::BufRead;
use std::path::PathBuf;

use small_core::ops::reset::{self, ResetRequest};
use small_core::ops::Workspace;

use crate::error::{from_op, CliError, CmdResult};
use crate::GlobalArgs;
use small_core::ops::workspace::Scope;

/// Reset .small/ for a new run while keeping the audit history.
///
/// Resets plan.small.yml and handoff.small.yml (and intent.small.yml unless --keep-intent)
/// from the templates. Keeps progress.small.yml (append-only history) and
/// constraints.small.yml (human-owned). The new handoff's `run` block records the previous
/// replayId and the reason; a `meta/reset` progress entry opens the new run (entries before
/// it no longer count for handoffs). This is a human's command: it asks for confirmation
/// unless --yes is given. Refused in a SMALL 2.0.0 workspace, whose events are never reset.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Do not ask for confirmation
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Keep intent.small.yml as it is
    #[arg(long)]
    pub keep_intent: bool,
    /// Directory containing .small/ (default: search upward from the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print what was done as JSON (needs --yes)
    #[arg(long, requires = "yes")]
    pub json: bool,
}

fn confirm(g: &GlobalArgs, keep_intent: bool) -> Result<bool, CliError> {
    g.info(format!(
        "This resets plan.small.yml and handoff.small.yml{} for a new run.",
        if keep_intent {
            ""
        } else {
            " and intent.small.yml"
        }
    ));
    g.info("progress.small.yml and constraints.small.yml are kept.");
    g.prompt("Continue? [y/N]: ");
    let mut answer = String::new();
    let read = std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::usage(format!("cannot read the answer: {e}")))?;
    if read == 0 {
        // End of input (no terminal, nothing piped): not a "no", an error, as in the
        // reference.
        g.prompt("\n");
        return Err(CliError::invalid(
            "no answer (end of input); nothing changed. Pass --yes to reset without asking",
        ));
    }
    let a = answer.trim().to_ascii_lowercase();
    Ok(a == "y" || a == "yes")
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    // Refused before asking: a 2.0.0 history cannot be reset.
    reset::check(&ws).map_err(|e| from_op(e, g))?;
    if !args.yes && !confirm(g, args.keep_intent)? {
        g.info("Reset cancelled; nothing changed.");
        return Ok(());
    }
    let req = ResetRequest {
        keep_intent: args.keep_intent,
        scope: args.workspace,
    };
    let out = reset::reset(&ws, &req).map_err(|e| from_op(e, g))?;
    g.outcome(args.json, &out)
}
