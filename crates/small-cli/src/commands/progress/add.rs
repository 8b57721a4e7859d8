//! `small progress add`: append one entry to the progress log.

use serde_json::json;
use small_core::authoring::record;

use crate::error::CmdResult;
use crate::writes::{self as shared, RecordFlags};
use crate::GlobalArgs;

/// Append a progress entry to .small/progress.small.yml.
///
/// The timestamp is generated (RFC 3339 UTC with nanoseconds) and is always later than the
/// last entry's. Only the new entry is written, at the end of the file; nothing else in the
/// log changes. Entries are bound to the current run (`replayId`) when the workspace has one.
/// The task must be a plan task (or meta/<name>); an unknown id is refused before anything is
/// written. A completed entry needs the caller's evidence and completed dependencies (or
/// --force, which the entry records).
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
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let req = args.record.request(&args.task, &args.status)?;
    let root = shared::root(args.record.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.record.workspace, "progress add", true)?;
    let out = record::add_progress(&mut txn, &req)?;
    let report = txn.commit()?;
    if args.record.json {
        let v = json!({
            "workspace": root.display().to_string(),
            "entry": out.entry,
            "task_exists_in_plan": out.task_exists_in_plan,
            "forced_past": out.forced_past,
        });
        return shared::print_json(Some(&report), v);
    }
    shared::say(
        g,
        format!(
            "Recorded progress: {} {} at {}",
            out.task_id, out.status, out.timestamp
        ),
    );
    shared::print_changes(g, &report);
    Ok(())
}
