//! `small plan` as one operation: add tasks, retitle, cancel, change status, add dependencies,
//! or reset the plan; every change is recorded in the progress log, all in one transaction.
//!
//! Changes apply in a fixed order: add, title, done, pending, blocked, cancel, depends (each
//! dependency in the order given).
//! `done` follows the evidence rule of [`crate::authoring::record`]: the task needs a completed
//! entry of its own with evidence (written by `small checkpoint`), and completed dependencies
//! unless forced.

use serde::Serialize;

use crate::authoring::edit::{self, NewValue};
use crate::authoring::handoff;
use crate::authoring::plan::{self, Task};
use crate::authoring::progress::{self, NewEntry, TimestampRule, STATUSES};
use crate::authoring::record::open_dependencies;
use crate::authoring::session::TaskRef;
use crate::authoring::templates;
use crate::gates::invariants::scalar_text;
use crate::spec::bookkeeping;
use crate::spec::consts::EVIDENCE_FIELDS;
use crate::workspace::error::{code, Error};
use crate::workspace::txn::{Transaction, TxnError};
use crate::yaml::Node;

/// The changes to make.
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// Titles of tasks to add (each gets the next free `task-N`).
    pub add: Vec<String>,
    /// The id of the (one) added task instead of the next free `task-N`.
    pub id: Option<String>,
    /// Retitle: (task id, new title).
    pub title: Option<(String, String)>,
    pub done: Option<String>,
    pub pending: Option<String>,
    pub blocked: Option<String>,
    /// Tasks to cancel (status `cancelled`; they stay in the plan and the history).
    pub cancel: Vec<String>,
    /// (task, dependency) pairs, applied in order: task depends on dependency.
    pub depends: Vec<(String, String)>,
    /// Complete `done` even though its dependencies are not completed.
    pub force: bool,
    /// Replace the plan with the template.
    pub reset: bool,
}

/// One change made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanChange {
    /// `added`, `retitled`, `status`, `dependency`, `reset`.
    pub kind: String,
    pub task_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
}

/// What [`edit_plan`] staged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanOutcome {
    /// The plan did not exist and was created from the template.
    pub created: bool,
    pub added: Vec<TaskRef>,
    pub changes: Vec<PlanChange>,
    /// Nothing to change (no edit asked for, and the plan exists).
    pub unchanged: bool,
}

fn unknown(tasks: &[Task], id: &str) -> Error {
    crate::authoring::record::unknown_task(tasks, id)
}

/// `done` without a completed entry with evidence: `no-evidence`.
fn done_without_evidence(id: &str) -> Error {
    Error::invalid(
        code::NO_EVIDENCE,
        format!("task {id} has no completed progress entry with evidence; `plan --done` does not invent one"),
    )
    .with_help(format!(
        "record the completion with its evidence: small checkpoint --task {id} --status completed --evidence \"...\""
    ))
}

fn uneditable(e: impl std::fmt::Display) -> Error {
    Error::invalid(code::UNEDITABLE, e.to_string()).in_file(plan::plan_rel())
}

fn task_node<'a>(root: &'a Node, id: &str) -> Option<&'a Node> {
    root.get("tasks")?.as_seq()?.iter().find(|t| {
        t.get("id")
            .and_then(scalar_text)
            .is_some_and(|s| s.trim() == id)
    })
}

/// Set a task's title in place.
pub fn set_title(src: &str, id: &str, title: &str) -> Result<String, Error> {
    let doc = plan::parse(src)?;
    let Some(node) = task_node(&doc.root, id) else {
        return Err(unknown(&plan::tasks(&doc.root), id));
    };
    let e = edit::set_key(src, node, "title", &NewValue::Scalar(edit::quote(title)))
        .map_err(uneditable)?;
    edit::apply(src, vec![e]).map_err(uneditable)
}

/// Whether the log has a completed entry for `task` with evidence that is not bookkeeping.
pub fn has_completion_evidence(progress: &Node, task: &str) -> bool {
    let Some(entries) = progress.get("entries").and_then(Node::as_seq) else {
        return false;
    };
    entries.iter().any(|e| {
        let text = |k: &str| e.get(k).and_then(scalar_text).map(|s| s.trim().to_string());
        text("task_id").as_deref() == Some(task)
            && text("status").is_some_and(|s| s.eq_ignore_ascii_case("completed"))
            && EVIDENCE_FIELDS.iter().any(|f| {
                e.get(f).is_some_and(|n| {
                    n.as_map().is_some() || scalar_text(n).is_some_and(|s| !s.trim().is_empty())
                })
            })
            && !bookkeeping::is_bookkeeping(text("evidence").as_deref(), text("notes").as_deref())
    })
}

struct Record {
    task: String,
    status: Option<String>,
    evidence: String,
    notes: String,
}

fn append(txn: &mut Transaction, r: &Record) -> Result<(), TxnError> {
    let mut e = NewEntry::new(r.task.clone(), r.status.as_deref());
    e.set("evidence", r.evidence.as_str());
    if !r.notes.trim().is_empty() {
        e.set("notes", r.notes.as_str());
    }
    handoff::attach_replay_id(txn, &mut e)?;
    txn.append_progress(&e, &TimestampRule::Now)?;
    Ok(())
}

fn status_change(text: &mut String, id: &str, status: &str) -> Result<PlanChange, Error> {
    let doc = plan::parse(text)?;
    let tasks = plan::tasks(&doc.root);
    if !tasks.iter().any(|t| t.id == id) {
        return Err(unknown(&tasks, id));
    }
    let status = crate::spec::model::TaskStatus::parse(status)
        .ok_or_else(|| Error::invalid(code::REFUSED, format!("{status:?} is not a task status")))?;
    *text = plan::set_status(text, id, status)?;
    Ok(PlanChange {
        kind: "status".into(),
        task_id: id.to_string(),
        title: None,
        status: Some(status.to_string()),
        dependency: None,
    })
}

fn reset_plan(txn: &mut Transaction) -> Result<PlanOutcome, Error> {
    txn.write(plan::plan_rel(), templates::plan().into_bytes());
    handoff::touch_workspace(txn, None)?;
    append(
        txn,
        &Record {
            task: "meta/plan-reset".into(),
            status: Some("completed".into()),
            evidence: "Reset plan.small.yml to the template".into(),
            notes: "small plan --reset".into(),
        },
    )?;
    Ok(PlanOutcome {
        created: false,
        added: Vec::new(),
        changes: vec![PlanChange {
            kind: "reset".into(),
            task_id: "task-1".into(),
            title: None,
            status: None,
            dependency: None,
        }],
        unchanged: false,
    })
}

/// `small plan`: make the requested changes and record each in the progress log.
pub fn edit_plan(txn: &mut Transaction, req: &PlanRequest) -> Result<PlanOutcome, Error> {
    if req.reset {
        return reset_plan(txn);
    }
    let rel = plan::plan_rel();
    let titles = req.add.iter().chain(req.title.iter().map(|(_, t)| t));
    crate::secrets::refuse_secrets(
        &rel,
        titles.map(|t| ("/tasks/-/title".to_string(), Some("title"), t.as_str())),
    )
    .map_err(TxnError::Invalid)?;
    let existed = txn.exists(&rel);
    let mut text = if existed {
        txn.read_string(&rel)?
    } else {
        templates::plan()
    };
    plan::parse(&text)?;
    let mut records = Vec::new();
    let mut changes = Vec::new();
    let mut added = Vec::new();
    for title in &req.add {
        if title.trim().is_empty() {
            return Err(Error::usage(code::USAGE, "--add needs a task title")
                .with_help("give the task a title: small plan --add \"<title>\""));
        }
        let chosen = if req.add.len() == 1 {
            req.id.as_deref()
        } else {
            None
        };
        let (t, id) = plan::add_task_as(&text, title.trim(), chosen)?;
        text = t;
        added.push(TaskRef {
            id: id.clone(),
            title: title.trim().to_string(),
            status: "pending".into(),
        });
        changes.push(PlanChange {
            kind: "added".into(),
            task_id: id.clone(),
            title: Some(title.trim().to_string()),
            status: Some("pending".into()),
            dependency: None,
        });
        records.push(Record {
            task: id.clone(),
            status: Some("pending".into()),
            evidence: format!("Added task {id} via small plan --add"),
            notes: title.trim().to_string(),
        });
    }
    if let Some((id, title)) = &req.title {
        let (id, title) = (id.trim(), title.trim());
        if title.is_empty() {
            return Err(Error::usage(code::USAGE, "--title needs a new title")
                .with_help("small plan --title <id> \"<new title>\""));
        }
        text = set_title(&text, id, title)?;
        changes.push(PlanChange {
            kind: "retitled".into(),
            task_id: id.to_string(),
            title: Some(title.to_string()),
            status: None,
            dependency: None,
        });
        records.push(Record {
            task: id.into(),
            status: None,
            evidence: format!("Retitled task {id}: {title}"),
            notes: "small plan --title".into(),
        });
    }
    if let Some(id) = &req.done {
        let id = id.trim();
        let tasks = plan::tasks(&plan::parse(&text)?.root);
        if !tasks.iter().any(|t| t.id == id) {
            return Err(unknown(&tasks, id));
        }
        let progress = handoff::parse_file(txn, &progress::progress_rel())?;
        if !progress
            .as_ref()
            .is_some_and(|d| has_completion_evidence(&d.root, id))
        {
            return Err(done_without_evidence(id));
        }
        let open = open_dependencies(&tasks, id);
        if !open.is_empty() && !req.force {
            return Err(crate::authoring::record::open_dependencies_error(id, &open));
        }
        changes.push(status_change(&mut text, id, "completed")?);
    }
    for (flag, id, status) in [
        ("pending", &req.pending, "pending"),
        ("blocked", &req.blocked, "blocked"),
    ] {
        if let Some(id) = id {
            let id = id.trim();
            changes.push(status_change(&mut text, id, status)?);
            records.push(Record {
                task: id.into(),
                status: Some(status.into()),
                evidence: format!("Updated task {id} to {status}"),
                notes: format!("small plan --{flag}"),
            });
        }
    }
    for id in &req.cancel {
        let id = id.trim();
        changes.push(status_change(&mut text, id, "cancelled")?);
        records.push(Record {
            task: id.into(),
            status: Some("cancelled".into()),
            evidence: format!("Cancelled task {id} via small plan --cancel"),
            notes: "small plan --cancel".into(),
        });
    }
    for (task, dep) in &req.depends {
        let (task, dep) = (task.trim(), dep.trim());
        text = plan::add_dependency(&text, task, dep)?;
        let status = plan::parse(&text)
            .ok()
            .and_then(|d| plan::tasks(&d.root).into_iter().find(|t| t.id == task))
            .map(|t| t.status)
            .filter(|s| STATUSES.contains(&s.as_str()));
        changes.push(PlanChange {
            kind: "dependency".into(),
            task_id: task.to_string(),
            title: None,
            status: None,
            dependency: Some(dep.to_string()),
        });
        records.push(Record {
            task: task.into(),
            status,
            evidence: format!("Added dependency {dep} to {task}"),
            notes: "small plan --depends".into(),
        });
    }
    if changes.is_empty() && existed {
        return Ok(PlanOutcome {
            created: false,
            added,
            changes,
            unchanged: true,
        });
    }
    txn.write(rel, text.into_bytes());
    handoff::touch_workspace(txn, None)?;
    handoff::ensure_run_replay_id(txn)?;
    for r in &records {
        append(txn, r)?;
    }
    Ok(PlanOutcome {
        created: !existed,
        added,
        changes,
        unchanged: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{self, Limits};

    #[test]
    fn retitle_in_place() {
        let src = "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: task-1 # keep\n    title: Initial task\n";
        let out = set_title(src, "task-1", "Write the parser").unwrap();
        assert!(out.contains("# keep"));
        assert!(out.contains("title: \"Write the parser\""), "{out}");
        let e = set_title(src, "task-9", "x").unwrap_err();
        assert_eq!(e, Error::unknown_task("task-9", &["task-1"]));
        assert_eq!(done_without_evidence("t").code(), code::NO_EVIDENCE);
        assert!(done_without_evidence("t")
            .diagnostic
            .help
            .unwrap()
            .contains("small checkpoint --task t"));
        assert_eq!(uneditable("x").code(), code::UNEDITABLE);
    }

    #[test]
    fn completion_evidence_ignores_bookkeeping() {
        let log = |e: &str| {
            yaml::parse_str(&format!("entries:\n{e}"), &Limits::default())
                .unwrap()
                .root
        };
        let book = log("  - task_id: t\n    status: completed\n    evidence: Recorded completion via small plan --done t\n");
        assert!(!has_completion_evidence(&book, "t"));
        let pending = log("  - task_id: t\n    status: pending\n    evidence: tests pass\n");
        assert!(!has_completion_evidence(&pending, "t"));
        let real = log("  - task_id: t\n    status: completed\n    test: cargo test\n");
        assert!(has_completion_evidence(&real, "t"));
    }
}
