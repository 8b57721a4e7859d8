//! `progress add` and `checkpoint`: record work on a task, for either profile. v1 appends an
//! entry to the progress log (a checkpoint also sets the plan's status); 2.0.0 appends a
//! `task_transitioned` event to the session (a checkpoint with a narrative receipt).

use std::time::Duration;

use serde::Serialize;

use crate::authoring::progress::TimestampRule;
use crate::authoring::record::{self, RecordOutcome};
use crate::authoring::session::TaskRef;
use crate::ops::claims::fence;
use crate::ops::members_json;
use crate::ops::{OpError, OpResult, Workspace};
use crate::v2::write as v2w;
use crate::workspace::txn::{CommitReport, Transaction};
use crate::workspace::Scope;

/// Work on a task to record.
#[derive(Debug, Clone, Default)]
pub struct RecordRequest {
    /// The task (v1: a plan task or `meta/<name>`; 2.0.0: an id or alias).
    pub task: String,
    pub status: String,
    /// Evidence supplied by the caller, by kind (`evidence`, `command`, `test`, `link`,
    /// `commit`, `verification`), in that order.
    pub evidence: Vec<(String, String)>,
    pub notes: Option<String>,
    /// Exactly this time (`--at`).
    pub at: Option<String>,
    /// One nanosecond after this time (`--after`).
    pub after: Option<String>,
    /// v1: complete even though dependencies are not completed (recorded).
    pub force: bool,
    /// v1: the workspace kinds allowed.
    pub scope: Scope,
    /// 2.0.0: the session to record in (default: the active one).
    pub session: Option<String>,
    pub lock_timeout: Option<Duration>,
}

/// A v1 progress entry (`progress add --json`).
#[derive(Debug, Clone, Serialize)]
pub struct V1Progress {
    pub workspace: String,
    pub entry: serde_json::Map<String, serde_json::Value>,
    pub task_exists_in_plan: bool,
    pub forced_past: Vec<TaskRef>,
    /// The files the commit replaced, and those it appended to.
    pub written: Vec<String>,
    pub appended: Vec<String>,
    /// The outcome as the library returned it (for the human lines).
    #[serde(skip)]
    pub outcome: RecordOutcome,
}

/// A v1 checkpoint (`checkpoint --json`).
#[derive(Debug, Clone, Serialize)]
pub struct V1Checkpoint {
    pub task_id: String,
    pub status: String,
    pub progress_entry: serde_json::Map<String, serde_json::Value>,
    pub files: [&'static str; 2],
    pub validated: bool,
    pub workspace: String,
    pub plan_status: Option<String>,
    /// The line the reference prints.
    pub checkpoint: String,
    pub checkpoint_at: String,
    pub forced_past: Vec<TaskRef>,
    pub written: Vec<String>,
    pub appended: Vec<String>,
}

/// A 2.0.0 transition (`progress add --json`; `checkpoint --json` adds the receipt).
#[derive(Debug, Clone, Serialize)]
pub struct V2Transition {
    pub alias: String,
    pub event: serde_json::Value,
    pub profile: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipt: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub task_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validated: Option<bool>,
    /// The event's id and the receipt's digest (for the human lines).
    #[serde(skip)]
    pub event_id: String,
    #[serde(skip)]
    pub receipt_digest: String,
    /// The status recorded (for the human lines).
    #[serde(skip)]
    pub recorded_status: String,
}

/// A progress entry of either profile.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Progressed {
    V1(Box<V1Progress>),
    V2(Box<V2Transition>),
}

/// A checkpoint of either profile.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Checkpointed {
    V1(Box<V1Checkpoint>),
    V2(Box<V2Transition>),
}

/// Append a progress entry.
pub fn progress_add(ws: &Workspace, req: &RecordRequest) -> OpResult<Progressed> {
    let seen = fence::Seen::read(ws);
    progress_add_unfenced(ws, &seen, &fenced(ws, &seen, req)?)
}

/// [`progress_add`] without the claim check (the caller made it: `apply --force` recording
/// its override), given the leases the caller has seen.
pub(crate) fn progress_add_unfenced(
    ws: &Workspace,
    seen: &fence::Seen,
    req: &RecordRequest,
) -> OpResult<Progressed> {
    ws.backend().progress(ws, seen, req)
}

/// [`progress_add`] on a v1 workspace.
pub(super) fn progress_v1(
    ws: &Workspace,
    seen: &fence::Seen,
    req: &RecordRequest,
) -> OpResult<Progressed> {
    let (out, report, root) = v1_record(ws, seen, req, "progress add", record::add_progress)?;
    Ok(Progressed::V1(Box::new(V1Progress {
        workspace: root,
        entry: out.entry.clone(),
        task_exists_in_plan: out.task_exists_in_plan,
        forced_past: out.forced_past.clone(),
        written: report.written,
        appended: report.appended,
        outcome: out,
    })))
}

/// [`progress_add`] on a 2.0.0 workspace.
pub(super) fn progress_v2(ws: &Workspace, req: &RecordRequest) -> OpResult<Progressed> {
    let (session, mut w) = v2_open(ws, req)?;
    let occurred = occurred_at(req)?;
    let (t, e) = v2w::progress(
        &mut w,
        &session,
        &req.task,
        &req.status,
        &evidence_text(req),
        req.notes.as_deref().unwrap_or_default(),
        occurred,
    )?;
    Ok(Progressed::V2(Box::new(V2Transition {
        alias: t.task.alias,
        event: members_json(&e.members),
        profile: crate::v2::PROFILE_VERSION,
        receipt: None,
        status: None,
        task_id: t.task.id,
        validated: None,
        event_id: e.draft.event_id,
        receipt_digest: String::new(),
        recorded_status: req.status.trim().to_lowercase(),
    })))
}

/// Complete or block a task with evidence.
pub fn checkpoint(ws: &Workspace, req: &RecordRequest) -> OpResult<Checkpointed> {
    // The leases seen are read once: for the task to record, the fence, the dependencies
    // completed elsewhere and the lease to finish.
    let seen = fence::Seen::read(ws);
    let req = &fenced(ws, &seen, &with_task(&seen, req)?)?;
    let out = checkpoint_fenced(ws, &seen, req)?;
    let (task, how) = out.finish();
    fence::after_checkpoint(ws, &seen, task, &req.status, &how);
    Ok(out)
}

/// The request with its task: the one named, else the one this checkout holds a live
/// lease on (the agent loop's `checkpoint --status completed`).
fn with_task(seen: &fence::Seen, req: &RecordRequest) -> OpResult<RecordRequest> {
    if !req.task.trim().is_empty() {
        return Ok(req.clone());
    }
    Ok(RecordRequest {
        task: fence::held_task(seen)?,
        ..req.clone()
    })
}

/// The request after the claim check (docs/agents.md, "Claims"): refused on a task another
/// live holder has; with `force`, what it overrode joins the entry's notes.
fn fenced(ws: &Workspace, seen: &fence::Seen, req: &RecordRequest) -> OpResult<RecordRequest> {
    let mut req = req.clone();
    if let Some(note) = fence::before_write(ws, seen, &req.task, req.force)? {
        req.notes = Some(match req.notes.take() {
            Some(n) if !n.trim().is_empty() => format!("{n}; {note}"),
            _ => note,
        });
    }
    Ok(req)
}

fn checkpoint_fenced(
    ws: &Workspace,
    seen: &fence::Seen,
    req: &RecordRequest,
) -> OpResult<Checkpointed> {
    ws.backend().checkpoint(ws, seen, req)
}

/// [`checkpoint`] on a v1 workspace.
pub(super) fn checkpoint_v1(
    ws: &Workspace,
    seen: &fence::Seen,
    req: &RecordRequest,
) -> OpResult<Checkpointed> {
    let (out, report, root) = v1_record(ws, seen, req, "checkpoint", record::checkpoint)?;
    Ok(Checkpointed::V1(Box::new(V1Checkpoint {
        checkpoint: format!(
            "checkpoint: {} -> {} at {}",
            out.task_id, out.status, out.timestamp
        ),
        task_id: out.task_id,
        status: out.status,
        progress_entry: out.entry,
        files: ["plan.small.yml", "progress.small.yml"],
        validated: true,
        workspace: root,
        plan_status: out.plan_status,
        checkpoint_at: out.timestamp,
        forced_past: out.forced_past,
        written: report.written,
        appended: report.appended,
    })))
}

/// [`checkpoint`] on a 2.0.0 workspace.
pub(super) fn checkpoint_v2(ws: &Workspace, req: &RecordRequest) -> OpResult<Checkpointed> {
    if req.at.is_some() || req.after.is_some() {
        return Err(OpError::usage(
            "usage",
            "--at and --after apply to `progress add` on a 2.0.0 workspace",
        ));
    }
    let (session, mut w) = v2_open(ws, req)?;
    let (t, e, receipt) = v2w::checkpoint(
        &mut w,
        &session,
        &req.task,
        &req.status,
        &evidence_text(req),
        req.notes.as_deref().unwrap_or_default(),
    )?;
    Ok(Checkpointed::V2(Box::new(V2Transition {
        alias: t.task.alias,
        event: members_json(&e.members),
        profile: crate::v2::PROFILE_VERSION,
        receipt: Some(members_json(&receipt.members)),
        status: Some(req.status.trim().to_lowercase()),
        task_id: t.task.id,
        validated: Some(true),
        event_id: e.draft.event_id,
        receipt_digest: receipt.digest,
        recorded_status: req.status.trim().to_lowercase(),
    })))
}

type V1Step = fn(
    &mut Transaction,
    &record::RecordRequest,
) -> Result<RecordOutcome, crate::workspace::error::Error>;

/// Run a v1 recording step in one transaction: the outcome, what the commit changed, and the
/// workspace root.
fn v1_record(
    ws: &Workspace,
    seen: &fence::Seen,
    req: &RecordRequest,
    command: &str,
    step: V1Step,
) -> OpResult<(RecordOutcome, CommitReport, String)> {
    if req.session.is_some() {
        return Err(OpError::usage(
            "usage",
            "--session applies to SMALL 2.0.0 workspaces; this one is v1",
        ));
    }
    let mut core = v1_request(req)?;
    if core.status.trim().eq_ignore_ascii_case("completed") {
        core.completed_elsewhere = seen.completed_elsewhere();
    }
    let (root, mut txn) = ws.transaction(req.lock_timeout)?;
    crate::authoring::handoff::check_command_scope(&txn, req.scope, command, true)?;
    let out = step(&mut txn, &core)?;
    let report = txn.commit()?;
    Ok((out, report, root.display().to_string()))
}

/// The library request of a v1 entry.
fn v1_request(req: &RecordRequest) -> OpResult<record::RecordRequest> {
    let timestamp = match (nonblank(&req.at), nonblank(&req.after)) {
        (Some(_), Some(_)) => {
            return Err(OpError::usage("usage", "use only one of --at and --after"))
        }
        (Some(a), None) => TimestampRule::At(a.to_string()),
        (None, Some(a)) => TimestampRule::After(a.to_string()),
        (None, None) => TimestampRule::Now,
    };
    if req.task.trim().is_empty() {
        return Err(OpError::usage("usage", "--task must not be empty"));
    }
    Ok(record::RecordRequest {
        task: req.task.trim().to_string(),
        status: req.status.clone(),
        evidence: req.evidence.clone(),
        notes: req.notes.clone(),
        timestamp,
        force: req.force,
        completed_elsewhere: Vec::new(),
    })
}

fn nonblank(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// The session and the locked writer of a 2.0.0 write.
fn v2_open(ws: &Workspace, req: &RecordRequest) -> OpResult<(String, v2w::Writer)> {
    let session = v2w::resolve_session(&ws.root, req.session.as_deref())?;
    Ok((session, ws.writer(req.lock_timeout)?))
}

/// A 2.0.0 event's evidence: the caller's evidence of every kind, joined.
fn evidence_text(req: &RecordRequest) -> String {
    req.evidence
        .iter()
        .map(|(_, v)| v.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A 2.0.0 event's time: `at`, else one nanosecond past `after` when the clock is not past it.
fn occurred_at(req: &RecordRequest) -> OpResult<Option<String>> {
    match (nonblank(&req.at), nonblank(&req.after)) {
        (Some(at), _) => Ok(Some(v2_time(at, "--at")?)),
        (None, Some(after)) => {
            let t = v2_time(after, "--after")?;
            let now = crate::v2::record::now();
            Ok(Some(if now > t { now } else { t }))
        }
        _ => Ok(None),
    }
}

/// An RFC 3339 time as the reference writes it (UTC).
fn v2_time(s: &str, flag: &str) -> OpResult<String> {
    let t = time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339)
        .map_err(|e| OpError::usage("usage", format!("invalid {flag} {s:?}: {e}")))?;
    Ok(crate::v2::record::rfc3339_nano(t))
}
