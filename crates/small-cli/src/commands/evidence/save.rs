//! `small evidence save`: store a file as evidence for a task.

use std::path::PathBuf;

use small_core::ops::evidence::SaveRequest;
use small_core::ops::{self};

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Store a file as evidence: its bytes as `.small/evidence/blobs/sha256/<digest>` and a
/// verified_artifact receipt for the task. The file is read without following a symlink,
/// at most 64 MiB. Saving the same bytes again is idempotent for the blob.
///
/// Exit codes: 0 saved; 1 refused (unknown task, unreadable file, v1 workspace, damaged
/// records); 2 bad flags or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The evidence file
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    /// The task it is evidence for (id or alias) [default: none; the receipt names no task]
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// What validated it (a test command, a reviewer)
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub validator: String,
    /// The outcome it shows [default: passed]
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub outcome: String,
    #[command(flatten)]
    pub wait: crate::v2writes::LockWait,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the receipt as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let req = SaveRequest {
        lock_timeout: Some(args.wait.timeout()?),
        file: args.file,
        task: args.task,
        validator: args.validator,
        outcome: args.outcome,
    };
    let ws = args.at.open();
    g.op(args.json, ops::evidence::save(&ws, &req))
}
