//! `small start`: create or repair the handoff state a run starts from.

use std::path::PathBuf;

use small_core::ops::start::{self, StartRequest};
use small_core::ops::Workspace;

use crate::error::{from_op, CliError, CmdResult};
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
    g.outcome(args.json, &out)?;
    out.strict_failure()
        .map_or(Ok(()), |m| Err(CliError::invalid(m)))
}
