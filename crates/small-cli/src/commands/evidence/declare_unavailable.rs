//! `small evidence declare-unavailable`: record that a task's evidence cannot be produced here.

use small_core::ops::evidence::DeclareRequest;
use small_core::ops::{self};

use crate::error::CmdResult;
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
    #[command(flatten)]
    pub wait: crate::v2writes::LockWait,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the receipt as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let req = DeclareRequest {
        lock_timeout: Some(args.wait.timeout()?),
        task: args.task,
        reason: args.reason,
    };
    let ws = args.at.open();
    g.op(args.json, ops::evidence::declare_unavailable(&ws, &req))
}
