//! `small reset`: start a new run, keeping the audit history.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use small_core::authoring::session::{self, ResetRequest};

use crate::commands::progress::shared::{self, ScopeArg};
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// Reset .small/ for a new run while keeping the audit history.
///
/// Resets plan.small.yml and handoff.small.yml (and intent.small.yml unless --keep-intent)
/// from the templates. Keeps progress.small.yml (append-only history) and
/// constraints.small.yml (human-owned). The new handoff's `run` block records the previous
/// replayId and the reason; a `meta/reset` progress entry opens the new run (entries before
/// it no longer count for handoffs). This is a human's command: it asks for confirmation
/// unless --yes is given.
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
    #[arg(long, value_enum, default_value_t = ScopeArg::Root, value_name = "SCOPE")]
    pub workspace: ScopeArg,
    /// Print what was done as JSON (needs --yes)
    #[arg(long, requires = "yes")]
    pub json: bool,
}

fn confirm(keep_intent: bool) -> Result<bool, CliError> {
    println!(
        "This resets plan.small.yml and handoff.small.yml{} for a new run.",
        if keep_intent {
            ""
        } else {
            " and intent.small.yml"
        }
    );
    println!("progress.small.yml and constraints.small.yml are kept.");
    print!("Continue? [y/N]: ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::usage(format!("cannot read the answer: {e}")))?;
    let a = answer.trim().to_ascii_lowercase();
    Ok(a == "y" || a == "yes")
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = shared::root(args.dir.as_deref())?;
    if !args.yes && !confirm(args.keep_intent)? {
        println!("Reset cancelled; nothing changed.");
        return Ok(());
    }
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "reset", false)?;
    let req = ResetRequest {
        keep_intent: args.keep_intent,
    };
    let out = session::reset(&mut txn, &req).map_err(shared::handoff_err)?;
    let report = txn.commit().map_err(shared::txn_err)?;
    if args.json {
        shared::print_json(
            Some(&report),
            serde_json::json!({
                "reset": out.reset,
                "kept": out.kept,
                "replay_id": out.replay_id,
                "previous_replay_id": out.previous_replay_id,
                "summary": out.summary,
            }),
        );
        return Ok(());
    }
    for f in &out.reset {
        shared::say(g, format!("Reset {f}"));
    }
    shared::say(
        g,
        format!(
            "New run: replayId {} (previous: {})",
            out.replay_id,
            out.previous_replay_id.as_deref().unwrap_or("none")
        ),
    );
    shared::say(g, format!("Kept {}", out.kept.join(", ")));
    shared::print_changes(g, &report);
    Ok(())
}
