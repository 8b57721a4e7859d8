//! `small progress add`: append one entry to the progress log.

use std::path::PathBuf;

use serde_json::json;
use small_core::authoring::handoff;
use small_core::authoring::plan;
use small_core::authoring::progress::{NewEntry, TimestampRule};

use super::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Append a progress entry to .small/progress.small.yml.
///
/// The timestamp is generated (RFC 3339 UTC with nanoseconds) and is always later than the
/// last entry's. Only the new entry is written, at the end of the file; nothing else in the
/// log changes. Entries are bound to the current run (`replayId`) when the workspace has one.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Task id the entry is about (a plan task, or meta/<name> for bookkeeping)
    #[arg(long = "task", value_name = "ID")]
    pub task: String,
    /// pending, in_progress, completed, blocked or cancelled
    #[arg(long, value_name = "STATUS")]
    pub status: String,
    /// What shows the work was done (default: a note that the entry was recorded by hand)
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
    /// Print the entry as JSON
    #[arg(long)]
    pub json: bool,
}

pub const DEFAULT_EVIDENCE: &str = "Recorded progress via small progress add";

/// The `--at`/`--after` rule.
pub fn timestamp_rule(at: Option<&str>, after: Option<&str>) -> Result<TimestampRule, CliError> {
    match (
        at.map(str::trim).filter(|s| !s.is_empty()),
        after.map(str::trim).filter(|s| !s.is_empty()),
    ) {
        (Some(_), Some(_)) => Err(CliError::usage("use only one of --at and --after")),
        (Some(a), None) => Ok(TimestampRule::At(a.to_string())),
        (None, Some(a)) => Ok(TimestampRule::After(a.to_string())),
        (None, None) => Ok(TimestampRule::Now),
    }
}

/// Build an entry from the common flags (`--evidence` defaulting to `default_evidence`).
pub fn entry_from_flags(
    task: &str,
    status: &str,
    evidence: Option<&str>,
    notes: Option<&str>,
    default_evidence: &str,
) -> NewEntry {
    let mut e = NewEntry::new(task.trim(), Some(status));
    match evidence.filter(|s| !s.trim().is_empty()) {
        Some(ev) => e.set("evidence", ev),
        None => e.set("evidence", default_evidence),
    }
    if let Some(n) = notes.filter(|s| !s.trim().is_empty()) {
        e.set("notes", n);
    }
    e
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let status = args.status.trim().to_ascii_lowercase();
    if !small_core::authoring::progress::STATUSES.contains(&status.as_str()) {
        return Err(CliError::usage(format!(
            "invalid --status {:?}: use pending, in_progress, completed, blocked or cancelled",
            args.status
        )));
    }
    if args.task.trim().is_empty() {
        return Err(CliError::usage("--task must not be empty"));
    }
    let rule = timestamp_rule(args.at.as_deref(), args.after.as_deref())?;
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "progress add", true)?;

    let mut entry = entry_from_flags(
        &args.task,
        &status,
        args.evidence.as_deref(),
        args.notes.as_deref(),
        DEFAULT_EVIDENCE,
    );
    handoff::attach_replay_id(&txn, &mut entry).map_err(shared::txn_err)?;
    let appended = txn
        .append_progress(&entry, &rule)
        .map_err(shared::txn_err)?;

    let task_id = args.task.trim().to_string();
    let in_plan = match handoff::parse_file(&txn, &plan::plan_rel()) {
        Ok(Some(doc)) => plan::tasks(&doc.root).iter().any(|t| t.id == task_id),
        _ => false,
    };
    let report = txn.commit().map_err(shared::txn_err)?;

    if args.json {
        let out = json!({
            "workspace": root.display().to_string(),
            "entry": appended.entry,
            "task_exists_in_plan": in_plan,
        });
        return g.json(&out);
    }
    if !in_plan && !task_id.starts_with(small_core::spec::consts::META_TASK_PREFIX) {
        g.warn(format!("warning: task {task_id} is not in plan.small.yml (add it with `small plan --add`, or use a meta/ id for bookkeeping)"));
    }
    shared::say(
        g,
        format!(
            "Recorded progress: {task_id} {status} at {}",
            appended.timestamp
        ),
    );
    shared::print_changes(g, &report);
    Ok(())
}
