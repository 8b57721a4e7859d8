//! `small plan`: add tasks, change their status, add dependencies, reset the plan.

use small_core::spec::model::TaskStatus;
use std::path::PathBuf;

use small_core::authoring::handoff;
use small_core::authoring::plan;
use small_core::authoring::progress::{self, NewEntry, TimestampRule};
use small_core::authoring::templates;
use small_core::authoring::txn::Transaction;

use crate::commands::progress::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Create or change .small/plan.small.yml.
///
/// Edits are made in place: comments, key order and quoting in the plan stay as written.
/// Each change is recorded in progress.small.yml, and all of it is written in one step.
/// Several flags may be combined; they apply in the order --add, --done, --pending,
/// --blocked, --depends. With no flag, a missing plan is created from the template.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Add a task with this title (its id is the next free task-N)
    #[arg(long, value_name = "TITLE")]
    pub add: Option<String>,
    /// With --add: the new task's id instead of the next task-N (ids chosen per branch
    /// cannot collide when branches merge)
    #[arg(long, value_name = "ID", requires = "add")]
    pub id: Option<String>,
    /// Mark a task completed
    #[arg(long, value_name = "ID")]
    pub done: Option<String>,
    /// Mark a task pending
    #[arg(long, value_name = "ID")]
    pub pending: Option<String>,
    /// Mark a task blocked
    #[arg(long, value_name = "ID")]
    pub blocked: Option<String>,
    /// Add a dependency: <task-id>:<dep-id> (task-id depends on dep-id)
    #[arg(long, value_name = "TASK:DEP")]
    pub depends: Option<String>,
    /// Replace the plan with the template (needs --yes)
    #[arg(long)]
    pub reset: bool,
    /// Confirm --reset
    #[arg(long)]
    pub yes: bool,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
}

/// One progress entry the change records.
struct Record {
    task: String,
    status: Option<String>,
    evidence: String,
    notes: String,
}

fn append(txn: &mut Transaction, r: &Record) -> Result<(), CliError> {
    let mut e = NewEntry::new(r.task.clone(), r.status.as_deref());
    e.set("evidence", r.evidence.as_str());
    if !r.notes.trim().is_empty() {
        e.set("notes", r.notes.as_str());
    }
    handoff::attach_replay_id(txn, &mut e).map_err(shared::txn_err)?;
    txn.append_progress(&e, &TimestampRule::Now)
        .map_err(shared::txn_err)?;
    Ok(())
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if args.reset && !args.yes {
        return Err(CliError::usage(
            "--reset replaces the whole plan; add --yes to confirm",
        ));
    }
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "plan", false)?;
    let rel = plan::plan_rel();

    if args.reset {
        txn.write(rel.clone(), templates::plan().into_bytes());
        handoff::touch_workspace(&mut txn, None).map_err(shared::txn_err)?;
        append(
            &mut txn,
            &Record {
                task: "meta/plan-reset".into(),
                status: Some(TaskStatus::Completed.as_str().into()),
                evidence: "Reset plan.small.yml to the template".into(),
                notes: "small plan --reset".into(),
            },
        )?;
        let report = txn.commit().map_err(shared::txn_err)?;
        shared::say(
            g,
            "Plan reset to the template (one placeholder task, task-1)",
        );
        shared::print_changes(g, &report);
        return Ok(());
    }

    let existed = txn.exists(&rel);
    let mut text = if existed {
        txn.read_string(&rel).map_err(shared::txn_err)?
    } else {
        shared::say(g, "No plan yet: creating one from the template");
        templates::plan()
    };
    plan::parse(&text).map_err(CliError::invalid)?;

    let mut records = Vec::new();
    let mut lines = Vec::new();
    if let Some(title) = &args.add {
        if title.trim().is_empty() {
            return Err(CliError::usage("--add needs a task title"));
        }
        let (t, id) =
            plan::add_task_as(&text, title, args.id.as_deref()).map_err(CliError::invalid)?;
        text = t;
        lines.push(format!("Added task {id}: {title}"));
        records.push(Record {
            task: id.clone(),
            status: Some(TaskStatus::Pending.as_str().into()),
            evidence: format!("Added task {id} via small plan --add"),
            notes: title.clone(),
        });
    }
    if let Some(id) = &args.done {
        text = plan::set_status(&text, id.trim(), TaskStatus::Completed.as_str())
            .map_err(CliError::invalid)?;
        lines.push(format!("Marked task {} completed", id.trim()));
    }
    if let Some(id) = &args.pending {
        let id = id.trim();
        text =
            plan::set_status(&text, id, TaskStatus::Pending.as_str()).map_err(CliError::invalid)?;
        lines.push(format!("Marked task {id} pending"));
        records.push(Record {
            task: id.into(),
            status: Some(TaskStatus::Pending.as_str().into()),
            evidence: format!("Updated task {id} to pending"),
            notes: "small plan --pending".into(),
        });
    }
    if let Some(id) = &args.blocked {
        let id = id.trim();
        text =
            plan::set_status(&text, id, TaskStatus::Blocked.as_str()).map_err(CliError::invalid)?;
        lines.push(format!("Marked task {id} blocked"));
        records.push(Record {
            task: id.into(),
            status: Some(TaskStatus::Blocked.as_str().into()),
            evidence: format!("Updated task {id} to blocked"),
            notes: "small plan --blocked".into(),
        });
    }
    if let Some(spec) = &args.depends {
        let Some((task, dep)) = spec.split_once(':') else {
            return Err(CliError::usage(format!(
                "--depends {spec:?}: write it as <task-id>:<dep-id>, e.g. task-3:task-2"
            )));
        };
        let (task, dep) = (task.trim(), dep.trim());
        text = plan::add_dependency(&text, task, dep).map_err(CliError::invalid)?;
        let status = plan::parse(&text)
            .ok()
            .and_then(|d| plan::tasks(&d.root).into_iter().find(|t| t.id == task))
            .map(|t| t.status)
            .filter(|s| !s.is_empty());
        lines.push(format!("Added dependency: {task} depends on {dep}"));
        records.push(Record {
            task: task.into(),
            status: status.filter(|s| progress::STATUSES.contains(&s.as_str())),
            evidence: format!("Added dependency {dep} to {task}"),
            notes: "small plan --depends".into(),
        });
    }

    let modified = !lines.is_empty();
    if !modified && existed {
        shared::say(
            g,
            "No changes to the plan (use --add, --done, --pending, --blocked or --depends)",
        );
        return Ok(());
    }
    txn.write(rel.clone(), text.into_bytes());
    handoff::touch_workspace(&mut txn, None).map_err(shared::txn_err)?;
    handoff::ensure_run_replay_id(&mut txn).map_err(shared::txn_err)?;
    for r in &records {
        append(&mut txn, r)?;
    }
    if let Some(id) = &args.done {
        let id = id.trim();
        if !has_evidence_entry(&txn, id)? {
            append(
                &mut txn,
                &Record {
                    task: id.into(),
                    status: Some(TaskStatus::Completed.as_str().into()),
                    evidence: format!("Recorded completion via small plan --done {id}"),
                    notes: "completed via CLI".into(),
                },
            )?;
        }
    }
    let report = txn.commit().map_err(shared::txn_err)?;
    for l in lines {
        shared::say(g, l);
    }
    if !existed {
        shared::say(g, format!("Created {rel}"));
    }
    shared::print_changes(g, &report);
    Ok(())
}

/// Whether the log already has an entry for `task` with evidence or notes.
fn has_evidence_entry(txn: &Transaction, task: &str) -> Result<bool, CliError> {
    let Some(doc) = handoff::parse_file(txn, &progress::progress_rel()).map_err(shared::txn_err)?
    else {
        return Ok(false);
    };
    let Some(entries) = doc.root.get("entries").and_then(|e| e.as_seq()) else {
        return Ok(false);
    };
    let nonempty = |e: &small_core::yaml::Node, k: &str| {
        e.get(k)
            .and_then(|v| v.as_str())
            .is_some_and(|s| !s.trim().is_empty())
    };
    Ok(entries.iter().any(|e| {
        e.get("task_id").and_then(|t| t.as_str()).map(str::trim) == Some(task)
            && (nonempty(e, "evidence") || nonempty(e, "notes"))
            && e.get("timestamp")
                .and_then(|t| t.as_str())
                .is_some_and(|t| small_core::spec::timestamp::parse(t).is_ok())
    }))
}
