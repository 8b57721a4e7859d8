//! `small evidence declare-unavailable`: record that a task's evidence cannot be produced here.

use small_core::ops::evidence::DeclareRequest;
use small_core::ops::{self};

use crate::error::{from_op, CmdResult};
use crate::GlobalArgs;

/// Record that evidence for a task is unavailable, and why: a narrative_assertion receipt
/// with availability unavailable. It proves nothing; it says what is missing.
///
/// Exit codes: 0 recorded; 1 refused (unknown task, v1 workspace, damaged records); 2 bad
/// flags (a blank reason) or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The task (id or alias) [default: none; the receipt names no task]
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Why the evidence is unavailable (required)
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// How long to wait for the workspace lock (seconds, or 90s, 2m) [default: SMALL_LOCK_TIMEOUT, else 60s]
    #[arg(long, value_name = "DURATION")]
    pub lock_timeout: Option<String>,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the receipt as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let req = DeclareRequest {
        lock_timeout: Some(crate::v2writes::lock_timeout(args.lock_timeout.as_deref())?),
        task: args.task,
        reason: args.reason,
    };
    let ws = args.at.open();
    let out = ops::evidence::declare_unavailable(&ws, &req).map_err(|e| from_op(e, g))?;
    g.outcome(args.json, &out)
}
