//! `small progress add`: append one entry to the progress log.

use small_core::ops::{self, Workspace};

use crate::error::CmdResult;
use crate::v2writes::SessionFlags;
use crate::writes::RecordFlags;
use crate::GlobalArgs;

/// Append a progress entry to .small/progress.small.yml.
///
/// The timestamp is generated (RFC 3339 UTC with nanoseconds) and is always later than the
/// last entry's. Only the new entry is written, at the end of the file; nothing else in the
/// log changes. Entries are bound to the current run (`replayId`) when the workspace has one.
/// The task must be a plan task (or meta/<name>); an unknown id is refused before anything is
/// written. A completed entry needs the caller's evidence and completed dependencies (or
/// --force, which the entry records).
///
/// In a SMALL 2.0.0 workspace the entry is a task_transitioned event in the session
/// (--session, or the active one).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Task id the entry is about (a plan task, or meta/<name> for bookkeeping)
    #[arg(long = "task", value_name = "ID")]
    pub task: String,
    /// pending, in_progress, completed, blocked or cancelled
    #[arg(long, value_name = "STATUS")]
    pub status: String,
    #[command(flatten)]
    pub record: RecordFlags,
    #[command(flatten)]
    pub v2: SessionFlags,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let req = args.record.request(&args.task, &args.status, &args.v2)?;
    let ws = Workspace::find(args.record.dir.as_deref());
    g.op(args.record.json, ops::record::progress_add(&ws, &req))
}
