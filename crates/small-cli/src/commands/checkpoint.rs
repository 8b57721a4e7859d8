//! `small checkpoint`: set a task's plan status and record it in progress, in one step.

use serde_json::json;
use small_core::authoring::record;

use crate::error::CmdResult;
use crate::v2writes::{self as v2w, SessionFlags};
use crate::writes::{self as shared, RecordFlags};
use crate::GlobalArgs;

/// Close a task: set its status in the plan and append the matching progress entry.
///
/// Both files change together or not at all (one workspace transaction), so the plan never
/// claims a status the progress log does not record. The entry carries the caller's evidence
/// (--evidence, --command, --test, --link, --commit or --verification); there is no default.
/// A task whose dependencies are not completed is completed only with --force, which the
/// entry records.
///
/// In a SMALL 2.0.0 workspace the checkpoint is a narrative evidence receipt and a
/// task_transitioned event naming it, in the session (--session, or the active one).
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
    #[command(flatten)]
    pub v2: SessionFlags,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if let Some(root) = v2w::v2_root(args.record.dir.as_deref()) {
        return run_v2(&root, args, g);
    }
    args.v2.refuse_on_v1()?;
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

fn run_v2(root: &std::path::Path, args: Args, g: &GlobalArgs) -> CmdResult {
    let r = &args.record;
    let evidence = [
        &r.evidence,
        &r.command,
        &r.test,
        &r.link,
        &r.commit,
        &r.verification,
    ]
    .iter()
    .filter_map(|v| v.as_deref())
    .collect::<Vec<_>>()
    .join("; ");
    let session = args.v2.session(root)?;
    let mut w = args.v2.open(root)?;
    let notes = r.notes.clone().unwrap_or_default();
    let (t, e, receipt) = small_core::v2::write::checkpoint(
        &mut w,
        &session,
        &args.task,
        &args.status,
        &evidence,
        &notes,
    )?;
    let status = args.status.trim().to_lowercase();
    if r.json {
        return v2w::print(&small_core::v2::gojson::GoValue::map(vec![
            ("alias".into(), v2w::s(&t.task.alias)),
            ("event".into(), v2w::event(&e)),
            ("profile".into(), v2w::s("2.0.0")),
            ("receipt".into(), v2w::receipt(&receipt)),
            ("status".into(), v2w::s(&status)),
            ("task_id".into(), v2w::s(&t.task.id)),
            (
                "validated".into(),
                small_core::v2::gojson::GoValue::Bool(true),
            ),
        ]));
    }
    shared::say(
        g,
        format!(
            "checkpoint: {} -> {status} [{} receipt:{}]",
            t.task.alias, e.draft.event_id, receipt.digest
        ),
    );
    Ok(())
}
