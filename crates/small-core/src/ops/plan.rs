//! `plan`: change the plan, for either profile. v1 edits `plan.small.yml` in place and records
//! each change in the progress log; 2.0.0 records one task event per call in the session (one
//! per dependency when the call adds several).

use std::time::Duration;

use serde::Serialize;

use crate::authoring::plan_edit::{self, PlanOutcome};
use crate::ops::members_json;
use crate::ops::{OpError, OpResult, Workspace};
use crate::v2::write::{self as v2w, PlanChange};
use crate::workspace::Scope;

/// The changes to make.
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// Titles of tasks to add.
    pub add: Vec<String>,
    /// v1: the id of the one added task instead of the next free `task-N`.
    pub id: Option<String>,
    /// v1: retitle (task id, new title).
    pub title: Option<(String, String)>,
    pub done: Option<String>,
    pub pending: Option<String>,
    pub blocked: Option<String>,
    /// v1: tasks to cancel.
    pub cancel: Vec<String>,
    /// `TASK:DEP` each, applied in order: TASK depends on DEP.
    pub depends: Vec<String>,
    /// v1: complete `done` although its dependencies are not completed.
    pub force: bool,
    /// v1: replace the plan with the template (2.0.0: refused, history is not reset).
    pub reset: bool,
    /// v1: the workspace kinds allowed.
    pub scope: Scope,
    /// 2.0.0: the session to record in (default: the active one).
    pub session: Option<String>,
    pub lock_timeout: Option<Duration>,
}

/// A v1 plan edit: what changed, and the files written.
#[derive(Debug, Clone, Serialize)]
pub struct V1Plan {
    #[serde(flatten)]
    pub outcome: PlanOutcome,
    pub written: Vec<String>,
    pub appended: Vec<String>,
}

/// A 2.0.0 plan change (the reference's keys).
#[derive(Debug, Clone, Serialize)]
pub struct V2Plan {
    pub alias: String,
    pub event: serde_json::Value,
    /// Several `--depends`: every event written, in order (`alias`, `event` and `task_id`
    /// are the last one's). Absent for one change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<serde_json::Value>,
    pub profile: &'static str,
    pub task_id: String,
    /// What changed: `added`, `status` or `dependency`, with the title or the status.
    #[serde(skip)]
    pub kind: &'static str,
    #[serde(skip)]
    pub detail: String,
    #[serde(skip)]
    pub event_id: String,
    /// Each change's (alias, event id), in order, for the text output.
    #[serde(skip)]
    pub changes: Vec<(String, String)>,
}

/// A 2.0.0 task as the plan lists it.
#[derive(Debug, Clone, Serialize)]
pub struct V2Task {
    pub alias: String,
    pub id: String,
    pub status: String,
    pub title: String,
}

/// A plan change of either profile, or the 2.0.0 task list (no change asked for).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Planned {
    V1(Box<V1Plan>),
    V2(Box<V2Plan>),
    V2Tasks {
        profile: &'static str,
        tasks: Vec<V2Task>,
    },
}

/// Change the plan.
pub fn plan(ws: &Workspace, req: &PlanRequest) -> OpResult<Planned> {
    let depends = parse_depends(&req.depends)?;
    ws.backend().plan(ws, req, depends)
}

/// Each `TASK:DEP`, in order; a malformed one refuses them all (a usage error).
fn parse_depends(specs: &[String]) -> OpResult<Vec<(String, String)>> {
    specs
        .iter()
        .map(|spec| match spec.split_once(':') {
            Some((t, d)) => Ok((t.trim().to_string(), d.trim().to_string())),
            None => Err(OpError::usage(
                "usage",
                format!("--depends {spec:?}: write it as <task-id>:<dep-id>, e.g. task-3:task-2"),
            )),
        })
        .collect()
}

pub(super) fn plan_v1(
    ws: &Workspace,
    req: &PlanRequest,
    depends: Vec<(String, String)>,
) -> OpResult<Planned> {
    if req.session.is_some() {
        return Err(OpError::usage(
            "usage",
            "--session applies to SMALL 2.0.0 workspaces; this one is v1",
        ));
    }
    if req.id.is_some() && req.add.len() > 1 {
        return Err(OpError::usage(
            "usage",
            "--id names one new task; give it with a single --add",
        ));
    }
    let core = plan_edit::PlanRequest {
        add: req.add.clone(),
        id: req.id.clone(),
        title: req.title.clone(),
        done: req.done.clone(),
        pending: req.pending.clone(),
        blocked: req.blocked.clone(),
        cancel: req.cancel.clone(),
        depends,
        force: req.force,
        reset: req.reset,
    };
    let (_, mut txn) = ws.transaction(req.lock_timeout)?;
    crate::authoring::handoff::check_command_scope(&txn, req.scope, "plan", false)?;
    let outcome = plan_edit::edit_plan(&mut txn, &core)?;
    let (written, appended) = if outcome.unchanged {
        (Vec::new(), Vec::new())
    } else {
        let r = txn.commit()?;
        (r.written, r.appended)
    };
    Ok(Planned::V1(Box::new(V1Plan {
        outcome,
        written,
        appended,
    })))
}

pub(super) fn plan_v2(
    ws: &Workspace,
    req: &PlanRequest,
    depends: Vec<(String, String)>,
) -> OpResult<Planned> {
    if req.reset {
        return Err(OpError::invalid(
            crate::workspace::error::code::REFUSED,
            "a 2.0.0 history cannot be reset; record explicit task events instead",
        ));
    }
    if req.title.is_some() || !req.cancel.is_empty() || req.id.is_some() || req.force {
        return Err(OpError::usage(
            "usage",
            "on a 2.0.0 workspace plan takes --add, --done, --pending, --blocked or --depends",
        ));
    }
    let mut changes: Vec<PlanChange> = req
        .add
        .iter()
        .map(|title| PlanChange::Add {
            title: title.clone(),
        })
        .collect();
    for (task, status) in [
        (&req.done, "completed"),
        (&req.pending, "pending"),
        (&req.blocked, "blocked"),
    ] {
        if let Some(t) = task {
            changes.push(PlanChange::Status {
                task: t.clone(),
                status: status.into(),
            });
        }
    }
    if changes.len() + usize::from(!depends.is_empty()) > 1 {
        return Err(OpError::invalid(
            crate::workspace::error::code::REFUSED,
            "a 2.0.0 plan takes one change per call (several --depends count as one)",
        ));
    }
    if depends.len() > 1 {
        return plan_v2_dependencies(ws, req, &depends);
    }
    if let Some((task, on)) = depends.into_iter().next() {
        changes.push(PlanChange::Depends { task, on });
    }
    let Some(change) = changes.pop() else {
        return Ok(list_v2(ws));
    };
    let session = v2w::resolve_session(&ws.root, req.session.as_deref())?;
    let mut w = ws.writer(req.lock_timeout)?;
    let (alias, id, e) = v2w::plan(&mut w, &session, &change)?;
    let (kind, detail) = match &change {
        PlanChange::Add { title } => ("added", title.trim().to_string()),
        PlanChange::Status { status, .. } => ("status", status.clone()),
        PlanChange::Depends { on, .. } => ("dependency", on.clone()),
    };
    Ok(Planned::V2(Box::new(V2Plan {
        changes: vec![(alias.clone(), e.draft.event_id.clone())],
        alias,
        event: members_json(&e.members),
        events: Vec::new(),
        profile: crate::v2::PROFILE_VERSION,
        task_id: id,
        kind,
        detail,
        event_id: e.draft.event_id,
    })))
}

/// Several `--depends` on 2.0.0: one `task_updated` event each, in order, all checked
/// before the first is written.
fn plan_v2_dependencies(
    ws: &Workspace,
    req: &PlanRequest,
    depends: &[(String, String)],
) -> OpResult<Planned> {
    let session = v2w::resolve_session(&ws.root, req.session.as_deref())?;
    let mut w = ws.writer(req.lock_timeout)?;
    let mut written = v2w::plan_dependencies(&mut w, &session, depends)?;
    let changes = written
        .iter()
        .map(|(alias, _, e)| (alias.clone(), e.draft.event_id.clone()))
        .collect();
    let events = written
        .iter()
        .map(|(_, _, e)| members_json(&e.members))
        .collect();
    let Some((alias, id, e)) = written.pop() else {
        return Err(OpError::usage(
            "usage",
            "--depends needs <task-id>:<dep-id>",
        ));
    };
    let on = depends.last().map(|(_, on)| on.clone()).unwrap_or_default();
    Ok(Planned::V2(Box::new(V2Plan {
        alias,
        event: members_json(&e.members),
        events,
        profile: crate::v2::PROFILE_VERSION,
        task_id: id,
        kind: "dependency",
        detail: on,
        event_id: e.draft.event_id,
        changes,
    })))
}

/// The tasks of a 2.0.0 workspace, as the plan lists them.
fn list_v2(ws: &Workspace) -> Planned {
    let checked = crate::v2::check(&ws.root, &ws.small_dir);
    Planned::V2Tasks {
        profile: crate::v2::PROFILE_VERSION,
        tasks: checked
            .state
            .tasks
            .iter()
            .map(|t| V2Task {
                alias: t.alias.clone(),
                id: t.id.clone(),
                status: t.status.clone(),
                title: t.title.clone(),
            })
            .collect(),
    }
}
