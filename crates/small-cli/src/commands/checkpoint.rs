//! `small checkpoint`: set a task's plan status and record it in progress, in one step.

use serde_json::json;
use small_core::authoring::record;

use crate::error::CmdResult;
use crate::writes::{self as shared, RecordFlags};
use crate::GlobalArgs;

/// Close a task: set its status in the plan and append the matching progress entry.
///
/// Both files change together or not at all (one workspace transaction), so the plan never
/// claims a status the progress log does not record. The entry carries the caller's evidence
/// (--evidence, --command, --test, --link, --commit or --verification); there is no default.
/// A task whose dependencies are not completed is completed only with --force, which the
/// entry records.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The plan task to checkpoint
    #[arg(long = "task", value_name = "ID")]
    pub task: String,
    /// completed or blocked
    #[arg(long, value_name = "STATUS")]
    pub status: String,
    #[command(flatten)]
    pub record: RecordFlags,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let req = args.record.request(&args.task, &args.status)?;
    let root = shared::root(args.record.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.record.workspace, "checkpoint", true)?;
    let out = record::checkpoint(&mut txn, &req)?;
    let report = txn.commit()?;

    let line = format!(
        "checkpoint: {} -> {} at {}",
        out.task_id, out.status, out.timestamp
    );
    if args.record.json {
        let v = json!({
            "task_id": out.task_id,
            "status": out.status,
            "progress_entry": out.entry,
            "files": ["plan.small.yml", "progress.small.yml"],
            "validated": true,
            "workspace": root.display().to_string(),
            "plan_status": out.plan_status,
            "checkpoint": line,
            "checkpoint_at": out.timestamp,
            "forced_past": out.forced_past,
        });
        return shared::print_json(Some(&report), v);
    }
    shared::say(g, line);
    if !out.forced_past.is_empty() {
        let ids: Vec<&str> = out.forced_past.iter().map(|t| t.id.as_str()).collect();
        shared::say(
            g,
            format!(
                "forced: dependencies not completed ({}); recorded in the entry's notes",
                ids.join(", ")
            ),
        );
    }
    shared::print_changes(g, &report);
    Ok(())
}
