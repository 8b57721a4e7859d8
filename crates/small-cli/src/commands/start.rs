//! `small start`: create or repair the handoff state a run starts from.

use std::path::PathBuf;

use small_core::ops::start::{self, StartRequest, Started};
use small_core::ops::Workspace;

use crate::error::{from_op, CliError, CmdResult};
use crate::writes as shared;
use crate::GlobalArgs;
use small_core::ops::workspace::Scope;

/// Initialise or repair run handoff state, then run the strict check.
///
/// Creates any missing artifact (from the templates; existing files are never changed),
/// missing workspace metadata, and a handoff with `run` metadata. A handoff without a valid
/// replayId gets one (recorded as meta/replayid-self-heal). A summary written with
/// `--summary` is kept while the run's state is unchanged. With --fix, recoverable drift the
/// strict check finds (orphan progress, legacy runtime directories) is repaired. Refused in a
/// SMALL 2.0.0 workspace: work there begins with `small session start`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Summary to write into the handoff (default: keep one written with --summary while the state is unchanged, else computed)
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// Repair recoverable drift (orphan progress, legacy runtime layout) if the strict check fails
    #[arg(long)]
    pub fix: bool,
    /// Directory containing .small/ (default: search upward from the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print what was done as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if args.workspace == Scope::Examples {
        return Err(CliError::usage(
            "--workspace examples is not supported by `small start`; use --workspace any to run it on an examples workspace",
        ));
    }
    let req = StartRequest {
        summary: args.summary.clone(),
        fix: args.fix,
        scope: args.workspace,
    };
    let out =
        start::start(&Workspace::find(args.dir.as_deref()), &req).map_err(|e| from_op(e, g))?;
    if args.json {
        crate::output::json(&out)?;
    } else {
        print_human(g, &out);
    }
    let strict = &out.handoff;
    if !strict.strict_ok {
        return Err(CliError::invalid(format!(
            "strict check failed: {}\n  help: run `small check --strict` for every problem; `small start --fix` repairs orphan progress and legacy runtime directories",
            strict.strict_problem
        )));
    }
    if !args.json {
        shared::say(g, "Strict check passed. Start complete.");
    }
    Ok(())
}

/// The human lines: the repairs' changes, the files created, the handoff, the changes, what
/// was repaired.
fn print_human(g: &GlobalArgs, out: &Started) {
    if let Some(fixed) = &out.fixed {
        shared::print_changes(g, fixed);
    }
    for c in &out.created {
        shared::say(g, format!("Created {c} from the template"));
    }
    let h = &out.handoff;
    let lines = small_core::ops::report::HandoffLines {
        summary: &h.summary,
        current_task_id: h.current_task_id.as_deref(),
        next_steps: h.next_steps.len(),
        source: h.summary_source,
        replaced: h.replaced_summary.as_deref(),
        replay: &h.replay_id,
    };
    g.info_raw(lines.text("Handoff ready"));
    shared::print_files(g, &out.written, &out.appended);
    for r in &out.repaired {
        shared::say(g, r);
    }
}
