//! Recording work: `checkpoint` (set a task's plan status and append the matching entry in one
//! step) and `progress add` (append one entry).
//!
//! The rules that keep progress verifiable (invariant 2), applied before anything is appended:
//! * a completion carries evidence the caller supplied (`evidence`, or one of the seed-000
//!   evidence fields: command, test, link, commit, verification); no canned text;
//! * a checkpoint always records the caller's evidence (for a blocked task: why);
//! * a task completes only when its dependencies are completed, unless the caller forces it,
//!   which the entry records;
//! * a task id must name a plan task (or `meta/…`); an unknown one is refused with the
//!   closest ids.

use crate::workspace::error::{code, Error};
use serde::Serialize;

use crate::authoring::handoff;
use crate::authoring::plan::{self, Task};
use crate::authoring::progress::{Appended, FieldValue, NewEntry, TimestampRule, STATUSES};
use crate::authoring::session::TaskRef;
use crate::spec::bookkeeping;
use crate::spec::consts::EVIDENCE_FIELDS;
use crate::workspace::txn::{Transaction, TxnError};

/// What the caller records about a task.
#[derive(Debug, Clone, Default)]
pub struct RecordRequest {
    pub task: String,
    pub status: String,
    /// Evidence fields (`evidence`, `command`, `test`, `link`, `commit`, `verification`).
    pub evidence: Vec<(String, String)>,
    pub notes: Option<String>,
    pub timestamp: TimestampRule,
    /// Complete even though dependencies are not completed (recorded in the entry's notes).
    pub force: bool,
    /// Tasks (id, who) finished in another checkout whose completion is not merged here
    /// yet (their done records): they count as completed dependencies, and the entry's
    /// notes say so.
    pub completed_elsewhere: Vec<(String, String)>,
}

/// What was recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordOutcome {
    pub task_id: String,
    pub status: String,
    pub timestamp: String,
    pub entry: serde_json::Map<String, serde_json::Value>,
    /// The plan status set (checkpoint only).
    pub plan_status: Option<String>,
    /// Dependencies that were not completed when `force` completed the task.
    pub forced_past: Vec<TaskRef>,
    pub task_exists_in_plan: bool,
}

/// A task whose dependencies are not completed: `open-dependencies`, listing them.
pub(crate) fn open_dependencies_error(task: &str, open: &[TaskRef]) -> Error {
    let mut message = format!("task {task} depends on tasks that are not completed");
    for t in open {
        message.push_str(&format!(
            "\n  - {}: {} (status: {})",
            t.id, t.title, t.status
        ));
    }
    Error::invalid(code::OPEN_DEPENDENCIES, message)
        .in_file(plan::plan_rel())
        .with_help(format!(
            "complete the dependencies first, or pass --force to complete {task} anyway (the entry records it)"
        ))
}

fn no_evidence(task: &str, what: &str) -> Error {
    Error::usage(
        code::NO_EVIDENCE,
        format!("{what} of {task} needs evidence supplied by the caller"),
    )
    .with_help(
        "pass --evidence \"...\" (or --command, --test, --link, --commit, --verification) saying what shows it",
    )
}

/// A status the protocol does not know: refused (exit 1, as the reference), not a usage error.
fn bad_status(status: &str, allowed: &str) -> Error {
    Error::invalid(
        code::REFUSED,
        format!("invalid status {status:?}: {allowed}"),
    )
}

fn no_plan(rel: &str) -> Error {
    Error::invalid(code::MISSING, format!("{rel} does not exist"))
        .in_file(rel.to_string())
        .with_help("create a plan with `small plan --add \"<title>\"`")
}

fn plan_tasks(txn: &Transaction) -> Result<Option<Vec<Task>>, TxnError> {
    Ok(handoff::parse_file(txn, &plan::plan_rel())?.map(|d| plan::tasks(&d.root)))
}

/// Refuse an id that names no plan task (`meta/…` ids are always accepted).
pub fn require_task(tasks: &[Task], id: &str) -> Result<(), Error> {
    if bookkeeping::is_meta(id) || tasks.iter().any(|t| t.id == id) {
        return Ok(());
    }
    Err(unknown_task(tasks, id))
}

/// The unknown-task error for the plan's `tasks` ([`Error::unknown_task`]).
pub fn unknown_task(tasks: &[Task], id: &str) -> Error {
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    Error::unknown_task(id, &ids)
}

/// Dependencies of `id` that are not completed.
pub fn open_dependencies(tasks: &[Task], id: &str) -> Vec<TaskRef> {
    let Some(t) = tasks.iter().find(|t| t.id == id) else {
        return Vec::new();
    };
    t.dependencies
        .iter()
        .map(|d| match tasks.iter().find(|x| &x.id == d) {
            Some(x) => TaskRef {
                id: x.id.clone(),
                title: x.title.clone(),
                status: x.effective_status().to_string(),
            },
            None => TaskRef {
                id: d.clone(),
                title: String::new(),
                status: "missing".into(),
            },
        })
        .filter(|r| r.status != "completed" && r.status != "cancelled")
        .collect()
}

fn has_caller_evidence(req: &RecordRequest) -> bool {
    req.evidence.iter().any(|(k, v)| {
        EVIDENCE_FIELDS.contains(&k.as_str())
            && !v.trim().is_empty()
            && !(k == "evidence" && bookkeeping::is_bookkeeping(Some(v), req.notes.as_deref()))
    })
}

fn build_entry(req: &RecordRequest, status: &str, default_evidence: Option<&str>) -> NewEntry {
    let mut e = NewEntry::new(req.task.trim(), Some(status));
    for (k, v) in &req.evidence {
        if !v.trim().is_empty() {
            e.set(k, FieldValue::Str(v.clone()));
        }
    }
    if !EVIDENCE_FIELDS.iter().any(|f| e.has(f)) {
        if let Some(d) = default_evidence {
            e.set("evidence", d);
        }
    }
    if let Some(n) = req.notes.as_deref().filter(|s| !s.trim().is_empty()) {
        e.set("notes", n);
    }
    e
}

/// The entry's notes with what the completion went past: dependencies forced, and those
/// completed in another checkout and not merged here yet.
fn note_dependencies(e: &mut NewEntry, req: &RecordRequest, deps: &Dependencies) {
    let mut marks = Vec::new();
    if !deps.forced.is_empty() {
        let list: Vec<String> = deps
            .forced
            .iter()
            .map(|t| format!("{} ({})", t.id, t.status))
            .collect();
        marks.push(format!(
            "completed with --force; dependencies not completed: {}",
            list.join(", ")
        ));
    }
    if !deps.elsewhere.is_empty() {
        marks.push(format!(
            "dependencies completed in another checkout, not merged here yet: {}",
            deps.elsewhere.join(", ")
        ));
    }
    if marks.is_empty() {
        return;
    }
    let mark = marks.join("; ");
    let notes = match req.notes.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(n) => format!("{n} [{mark}]"),
        None => mark,
    };
    e.set("notes", notes);
}

/// The dependencies a completion went past.
#[derive(Debug, Default)]
struct Dependencies {
    /// Not completed, passed with `force`.
    forced: Vec<TaskRef>,
    /// Completed in another checkout (`id by who`).
    elsewhere: Vec<String>,
}

/// The completion rules shared by checkpoint and progress add.
fn check_completion(
    tasks: &[Task],
    req: &RecordRequest,
    what: &str,
) -> Result<Dependencies, Error> {
    let task = req.task.trim();
    if !has_caller_evidence(req) {
        return Err(no_evidence(task, what));
    }
    let mut deps = Dependencies::default();
    for d in open_dependencies(tasks, task) {
        match req.completed_elsewhere.iter().find(|(id, _)| *id == d.id) {
            Some((id, who)) => deps.elsewhere.push(format!("{id} by {who}")),
            None => deps.forced.push(d),
        }
    }
    if !deps.forced.is_empty() && !req.force {
        return Err(open_dependencies_error(task, &deps.forced));
    }
    Ok(deps)
}

fn outcome(
    req: &RecordRequest,
    status: &str,
    appended: Appended,
    plan_status: Option<String>,
    forced_past: Vec<TaskRef>,
    in_plan: bool,
) -> RecordOutcome {
    RecordOutcome {
        task_id: req.task.trim().to_string(),
        status: status.to_string(),
        timestamp: appended.timestamp,
        entry: appended.entry,
        plan_status,
        forced_past,
        task_exists_in_plan: in_plan,
    }
}

/// `small checkpoint`: set a plan task's status (completed or blocked) and append the matching
/// entry with the caller's evidence, together.
pub fn checkpoint(txn: &mut Transaction, req: &RecordRequest) -> Result<RecordOutcome, Error> {
    let status = req.status.trim().to_ascii_lowercase();
    if status != "completed" && status != "blocked" {
        return Err(bad_status(
            &req.status,
            "a checkpoint is completed or blocked",
        ));
    }
    let task = req.task.trim().to_string();
    let rel = plan::plan_rel();
    let Some(tasks) = plan_tasks(txn)? else {
        return Err(no_plan(&rel));
    };
    if !tasks.iter().any(|t| t.id == task) {
        return Err(unknown_task(&tasks, &task));
    }
    let deps = if status == "completed" {
        check_completion(&tasks, req, "a completion")?
    } else {
        if !has_caller_evidence(req) {
            return Err(no_evidence(&task, "blocking"));
        }
        Dependencies::default()
    };
    let text = txn.read_string(&rel)?;
    // The replay id is computed (if the workspace has none yet) from the plan before the change.
    handoff::ensure_run_replay_id(txn)?;
    let task_status = crate::spec::model::TaskStatus::parse(&status).ok_or_else(|| {
        TxnError::invalid(code::ENTRY, format!("{status:?} is not a task status"))
    })?;
    let new_text =
        plan::set_status(&text, &task, task_status).map_err(|e| TxnError::Invalid(e.diagnostic))?;
    let mut entry = build_entry(req, &status, None);
    note_dependencies(&mut entry, req, &deps);
    handoff::attach_replay_id(txn, &mut entry)?;
    let appended = txn.append_progress(&entry, &req.timestamp)?;
    txn.write(rel, new_text.into_bytes());
    handoff::touch_workspace(txn, None)?;
    Ok(outcome(
        req,
        &status,
        appended,
        Some(status.clone()),
        deps.forced,
        true,
    ))
}

/// Evidence written when a non-completion entry is added without any.
pub const PROGRESS_DEFAULT_EVIDENCE: &str = "Recorded progress via small progress add";

/// `small progress add`: append one entry (the plan is not changed).
pub fn add_progress(txn: &mut Transaction, req: &RecordRequest) -> Result<RecordOutcome, Error> {
    let status = req.status.trim().to_ascii_lowercase();
    if !STATUSES.contains(&status.as_str()) {
        return Err(bad_status(
            &req.status,
            &format!("use {}", STATUSES.join(", ")),
        ));
    }
    let task = req.task.trim().to_string();
    let tasks = plan_tasks(txn)?.unwrap_or_default();
    require_task(&tasks, &task)?;
    let deps = if status == "completed" && !bookkeeping::is_meta(&task) {
        check_completion(&tasks, req, "a completion")?
    } else {
        Dependencies::default()
    };
    let mut entry = build_entry(req, &status, Some(PROGRESS_DEFAULT_EVIDENCE));
    note_dependencies(&mut entry, req, &deps);
    handoff::attach_replay_id(txn, &mut entry)?;
    let appended = txn.append_progress(&entry, &req.timestamp)?;
    let in_plan = tasks.iter().any(|t| t.id == task);
    Ok(outcome(req, &status, appended, None, deps.forced, in_plan))
}

/// What [`migrate_progress`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigrateOutcome {
    pub entries: usize,
    /// Timestamps rewritten.
    pub rewritten: usize,
    /// Whether the log changed (timestamps rewritten, or a flow list put in block form);
    /// false: nothing was staged.
    pub changed: bool,
}

/// `small progress migrate`: stage the progress log with canonical, strictly increasing
/// timestamps (only the timestamp values change). A missing log is an error.
pub fn migrate_progress(txn: &mut Transaction) -> Result<MigrateOutcome, Error> {
    let rel = crate::authoring::progress::progress_rel();
    let Some(bytes) = txn.read(&rel)? else {
        return Err(
            Error::invalid(code::MISSING, format!("{rel} does not exist"))
                .in_file(rel.clone())
                .with_help("create the workspace with `small init`"),
        );
    };
    let (report, new_text) = crate::authoring::progress::migrate_text(&bytes)
        .map_err(|m| Error::invalid(code::PROGRESS_LOG, m).in_file(rel.clone()))?;
    let Some(text) = new_text else {
        return Ok(MigrateOutcome {
            entries: report.entries,
            rewritten: 0,
            changed: false,
        });
    };
    txn.write(rel, text.into_bytes());
    handoff::touch_workspace(txn, None)?;
    Ok(MigrateOutcome {
        entries: report.entries,
        rewritten: report.rewritten,
        changed: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, status: &str, deps: &[&str]) -> Task {
        Task {
            id: id.into(),
            title: id.into(),
            status: status.into(),
            dependencies: deps.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn unknown_tasks_are_the_one_unknown_task_error() {
        let tasks = [
            t("task-1", "", &[]),
            t("task-9", "", &[]),
            t("docs", "", &[]),
        ];
        assert!(require_task(&tasks, "meta/x").is_ok());
        let e = require_task(&tasks, "task-99").unwrap_err();
        assert_eq!(
            e,
            Error::unknown_task("task-99", &["task-1", "task-9", "docs"])
        );
        assert!(e
            .diagnostic
            .help
            .as_deref()
            .unwrap()
            .starts_with("did you mean task-9"));
    }

    #[test]
    fn refusals_have_their_codes_and_help() {
        let tasks = [t("a", "pending", &[]), t("b", "", &["a"])];
        let req = RecordRequest {
            task: "b".into(),
            status: "completed".into(),
            ..Default::default()
        };
        let e = check_completion(&tasks, &req, "a completion").unwrap_err();
        assert_eq!(
            (e.code(), e.kind),
            (code::NO_EVIDENCE, crate::workspace::error::ErrorKind::Usage)
        );
        assert!(e.diagnostic.help.as_deref().unwrap().contains("--evidence"));
        let req = RecordRequest {
            evidence: vec![("test".into(), "cargo test".into())],
            ..req
        };
        let e = check_completion(&tasks, &req, "a completion").unwrap_err();
        assert_eq!(e.code(), code::OPEN_DEPENDENCIES);
        assert!(
            e.message().contains("\n  - a: a (status: pending)"),
            "{}",
            e.message()
        );
        assert!(e.diagnostic.help.as_deref().unwrap().contains("--force"));
        let elsewhere = RecordRequest {
            completed_elsewhere: vec![("a".into(), "alice".into())],
            ..req.clone()
        };
        let deps = check_completion(&tasks, &elsewhere, "a completion").unwrap();
        assert_eq!(
            (deps.forced.len(), deps.elsewhere),
            (0, vec!["a by alice".into()])
        );
        let forced = RecordRequest { force: true, ..req };
        assert_eq!(
            check_completion(&tasks, &forced, "a completion")
                .unwrap()
                .forced
                .len(),
            1
        );
        let e = bad_status("done", "use x");
        assert_eq!(
            (e.code(), e.kind),
            (code::REFUSED, crate::workspace::error::ErrorKind::Invalid)
        );
        let e = no_plan(".small/plan.small.yml");
        assert_eq!(
            (e.code(), e.kind),
            (code::MISSING, crate::workspace::error::ErrorKind::Invalid)
        );
        assert!(e
            .diagnostic
            .help
            .as_deref()
            .unwrap()
            .contains("small plan --add"));
    }

    #[test]
    fn open_dependencies_listed() {
        let tasks = [
            t("a", "completed", &[]),
            t("b", "pending", &[]),
            t("c", "", &["a", "b", "zz"]),
        ];
        let open: Vec<String> = open_dependencies(&tasks, "c")
            .into_iter()
            .map(|r| format!("{}:{}", r.id, r.status))
            .collect();
        assert_eq!(open, vec!["b:pending", "zz:missing"]);
    }

    #[test]
    fn canned_text_is_not_evidence() {
        let mut req = RecordRequest {
            task: "a".into(),
            status: "completed".into(),
            ..Default::default()
        };
        assert!(!has_caller_evidence(&req));
        req.evidence = vec![(
            "evidence".into(),
            "Recorded checkpoint via small checkpoint".into(),
        )];
        assert!(!has_caller_evidence(&req));
        req.evidence = vec![("test".into(), "cargo test".into())];
        assert!(has_caller_evidence(&req));
    }
}
