//! `small checkpoint`: set a task's plan status and record it in progress, in one step.

use small_core::ops::{self, Workspace};

use crate::error::CmdResult;
use crate::v2writes::SessionFlags;
use crate::writes::RecordFlags;
use crate::GlobalArgs;

/// Close a task: set its status in the plan and append the matching progress entry.
///
/// Both files change together or not at all (one workspace transaction), so the plan never
/// claims a status the progress log does not record. The entry carries the caller's evidence
/// (--evidence, --command, --test, --link, --commit or --verification); there is no default.
/// A task whose dependencies are not completed is completed only with --force, which the
/// entry records.
///
/// Without --task, the task is the one this checkout holds a live lease on (`small claim`).
/// A completed checkpoint turns that lease into a done record, which keeps every other agent
/// off the task until the remote's default branch shows the completion (`small sync`).
///
/// In a SMALL 2.0.0 workspace the checkpoint is a narrative evidence receipt and a
/// task_transitioned event naming it, in the session (--session, or the active one).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The plan task to checkpoint [default: the task this checkout holds a lease on]
    #[arg(long = "task", value_name = "ID")]
    pub task: Option<String>,
    /// completed or blocked
    #[arg(long, value_name = "STATUS")]
    pub status: String,
    #[command(flatten)]
    pub record: RecordFlags,
    #[command(flatten)]
    pub v2: SessionFlags,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let task = args.task.as_deref().unwrap_or("");
    let req = args.record.request(task, &args.status, &args.v2)?;
    let ws = Workspace::find(args.record.dir.as_deref());
    g.op(args.record.json, ops::record::checkpoint(&ws, &req))
}
