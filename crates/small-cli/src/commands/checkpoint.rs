//! `small checkpoint`: set a task's plan status and record it in progress, in one step.

use small_core::spec::model::TaskStatus;
use std::path::PathBuf;

use serde_json::json;
use small_core::authoring::handoff;
use small_core::authoring::plan;

use crate::commands::progress::add::{entry_from_flags, timestamp_rule};
use crate::commands::progress::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Close a task: set its status in the plan and append the matching progress entry.
///
/// Both files change together or not at all (one workspace transaction), so the plan never
/// claims a status the progress log does not record.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The plan task to checkpoint
    #[arg(long = "task", value_name = "ID")]
    pub task: String,
    /// completed or blocked
    #[arg(long, value_name = "STATUS")]
    pub status: String,
    /// What shows the work was done (or why it is blocked)
    #[arg(long, value_name = "TEXT")]
    pub evidence: Option<String>,
    /// Free-form notes
    #[arg(long, value_name = "TEXT")]
    pub notes: Option<String>,
    /// Use exactly this RFC 3339 timestamp (with fractional seconds); it must be after the last entry
    #[arg(long, value_name = "TIME", conflicts_with = "after")]
    pub at: Option<String>,
    /// Use a timestamp just after this RFC 3339 time (and after the last entry)
    #[arg(long, value_name = "TIME")]
    pub after: Option<String>,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub const DEFAULT_EVIDENCE: &str = "Recorded checkpoint via small checkpoint";

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let status = args.status.trim().to_ascii_lowercase();
    if status != TaskStatus::Completed.as_str() && status != TaskStatus::Blocked.as_str() {
        return Err(CliError::usage(format!(
            "invalid --status {:?}: a checkpoint is completed or blocked",
            args.status
        )));
    }
    let task = args.task.trim().to_string();
    if task.is_empty() {
        return Err(CliError::usage("--task must not be empty"));
    }
    let rule = timestamp_rule(args.at.as_deref(), args.after.as_deref())?;
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "checkpoint", true)?;

    let rel = plan::plan_rel();
    if !txn.exists(&rel) {
        return Err(CliError::invalid(format!(
            "{rel} does not exist; create a plan with `small plan --add`"
        )));
    }
    let text = txn.read_string(&rel).map_err(shared::txn_err)?;
    // The replay id is computed (if the workspace has none yet) from the plan before the change.
    handoff::ensure_run_replay_id(&mut txn).map_err(shared::txn_err)?;
    let new_text = plan::set_status(&text, &task, &status).map_err(CliError::invalid)?;

    let mut entry = entry_from_flags(
        &task,
        &status,
        args.evidence.as_deref(),
        args.notes.as_deref(),
        DEFAULT_EVIDENCE,
    );
    handoff::attach_replay_id(&txn, &mut entry).map_err(shared::txn_err)?;
    let appended = txn
        .append_progress(&entry, &rule)
        .map_err(shared::txn_err)?;
    txn.write(rel, new_text.into_bytes());
    handoff::touch_workspace(&mut txn, None).map_err(shared::txn_err)?;
    let report = txn.commit().map_err(shared::txn_err)?;

    let line = format!("checkpoint: {task} -> {status} at {}", appended.timestamp);
    if args.json {
        let out = json!({
            "task_id": task,
            "status": status,
            "progress_entry": appended.entry,
            "files": ["plan.small.yml", "progress.small.yml"],
            "validated": true,
            "workspace": root.display().to_string(),
            "plan_status": status,
            "checkpoint": line,
            "checkpoint_at": appended.timestamp,
        });
        return g.json(&out);
    }
    shared::say(g, line);
    shared::print_changes(g, &report);
    Ok(())
}
