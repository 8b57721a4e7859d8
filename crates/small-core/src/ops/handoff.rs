//! `handoff`: the resume point for the next session, for either profile. v1 writes
//! `handoff.small.yml` from the plan and the progress log, resuming at a task no other agent
//! holds when one is ready; 2.0.0 records an authoritative `handoff_recorded` event in the
//! session (it names no task), refused while a semantic conflict is unresolved.

use std::time::Duration;

use serde::Serialize;

use crate::authoring::activity::LastEvidence;
use crate::authoring::handoff::{self, ReplayId, RunStatus};
use crate::authoring::session::{self, SummarySource, TaskRef};
use crate::authoring::snapshot::Artifacts;
use crate::ops::{members_json, OpError, OpResult, Workspace};
use crate::v2::write as v2w;
use crate::workspace::Scope;

/// What to hand off.
#[derive(Debug, Clone, Default)]
pub struct HandoffRequest {
    /// The summary (v1: default computed or kept; 2.0.0: required).
    pub summary: Option<String>,
    /// v1: a manual replayId (64 hexadecimal digits).
    pub replay_id: Option<String>,
    /// v1: the end-of-run check (refuse while a task of this run is open).
    pub final_check: bool,
    /// v1: the workspace kinds allowed.
    pub scope: Scope,
    /// 2.0.0: the session to record in (default: the active one).
    pub session: Option<String>,
    /// How long to wait for the workspace lock (default: `SMALL_LOCK_TIMEOUT`, else 60 s).
    pub lock_timeout: Option<Duration>,
}

/// The reference's `resume` block of a v1 handoff (its Go field names).
#[derive(Debug, Clone, Serialize)]
#[allow(non_snake_case)]
pub struct ResumeBlock {
    pub CurrentTaskID: Option<String>,
    pub NextSteps: Vec<String>,
}

/// A v1 handoff: the reference's keys, then small's (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
pub struct V1Handoff {
    pub profile: &'static str,
    pub status: RunStatus,
    pub summary: String,
    pub resume: ResumeBlock,
    pub replay_id: String,
    pub replay_source: String,
    /// The handoff file was written (an outcome is only returned when it was).
    pub written: bool,
    pub handoff: String,
    pub summary_source: SummarySource,
    pub replaced_summary: Option<String>,
    #[serde(rename = "replayId")]
    pub replay: ReplayId,
    pub current_task_id: Option<String>,
    pub next_steps: Vec<String>,
    pub in_progress: Vec<TaskRef>,
    pub blocked: Vec<TaskRef>,
    pub last_evidence: Option<LastEvidence>,
    /// Tasks with work in this run that are not closed (`final` refuses them).
    pub open: Vec<TaskRef>,
    pub strict_ok: bool,
    pub strict_problem: String,
    /// The files the commit replaced, and those it appended to.
    pub files_written: Vec<String>,
    pub appended: Vec<String>,
    /// Whether `--final` was asked for (the open tasks go unsaid then: it refused them).
    #[serde(skip)]
    pub final_check: bool,
}

/// A 2.0.0 handoff: the reference's keys, then the event as written.
#[derive(Debug, Clone, Serialize)]
pub struct V2Handoff {
    /// The frontier after the event.
    pub frontier: String,
    pub handoff_event: String,
    pub profile: &'static str,
    pub session_id: String,
    /// `recorded`.
    pub status: &'static str,
    pub summary: String,
    pub written: bool,
    /// The frontier the handoff was written on (its `input_frontier`).
    pub input_frontier: String,
    pub event: serde_json::Value,
}

/// A handoff of either profile.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum HandedOff {
    V1(Box<V1Handoff>),
    V2(Box<V2Handoff>),
}

/// Hand off.
pub fn handoff(ws: &Workspace, req: &HandoffRequest) -> OpResult<HandedOff> {
    ws.backend().handoff(ws, req)
}

pub(super) fn handoff_v1(ws: &Workspace, req: &HandoffRequest) -> OpResult<HandedOff> {
    if req.session.is_some() {
        return Err(OpError::usage(
            "usage",
            "--session applies to SMALL 2.0.0 workspaces; this one is v1",
        ));
    }
    let replay_id = match req.replay_id.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => Some(
            handoff::manual_replay_id(s)
                .map_err(|m| OpError::invalid(crate::workspace::error::code::REFUSED, m))?,
        ),
        _ => None,
    };
    // A handoff sums up the run; it writes on no task, so no lease fences it. It does not
    // resume at a task another agent holds (a live lease or a done record this checkout
    // has seen, as `small resume` skips them) while another task is ready.
    let (others, _) = crate::ops::claims::Seen::read(ws).by_holder();
    let skip = others.into_iter().map(|c| c.task_id).collect();
    let (_, mut txn) = ws.transaction(req.lock_timeout)?;
    // One snapshot for the scope check and the handoff: each file is read once.
    let snap = Artifacts::new();
    handoff::check_command_scope_in(&txn, &snap, req.scope, "handoff", false)?;
    let core = session::HandoffRequest {
        summary: req.summary.clone(),
        replay_id,
        final_check: req.final_check,
        skip,
    };
    let out = session::write_handoff_in(&mut txn, &snap, &core)?;
    let report = txn.commit()?;
    Ok(HandedOff::V1(Box::new(V1Handoff {
        profile: crate::spec::consts::PROTOCOL_VERSION,
        status: out.run.status,
        summary: out.summary.clone(),
        resume: ResumeBlock {
            CurrentTaskID: out.run.current_task_id.clone(),
            NextSteps: out.run.next_steps.clone(),
        },
        replay_id: out.replay_id.value.clone(),
        replay_source: out.replay_id.source.clone(),
        written: true,
        handoff: handoff::handoff_rel(),
        summary_source: out.summary_source,
        replaced_summary: out.replaced_summary,
        replay: out.replay_id,
        current_task_id: out.run.current_task_id,
        next_steps: out.run.next_steps,
        in_progress: out.run.in_progress,
        blocked: out.run.blocked,
        last_evidence: out.run.last_evidence,
        open: out.open,
        strict_ok: out.run.strict_ok,
        strict_problem: out.run.strict_problem,
        files_written: report.written,
        appended: report.appended,
        final_check: req.final_check,
    })))
}

pub(super) fn handoff_v2(ws: &Workspace, req: &HandoffRequest) -> OpResult<HandedOff> {
    if req.replay_id.is_some() || req.final_check {
        return Err(OpError::usage(
            "usage",
            "--replay-id and --final apply to v1 workspaces; a 2.0.0 handoff is an event of the session",
        ));
    }
    let summary = req.summary.clone().unwrap_or_default();
    let session = v2w::resolve_session(&ws.root, req.session.as_deref())?;
    let mut w = ws.writer(req.lock_timeout)?;
    let input_frontier = w.frontier()?;
    let e = v2w::handoff(&mut w, &session, &summary)?;
    w.fresh()?;
    Ok(HandedOff::V2(Box::new(V2Handoff {
        frontier: w.frontier()?,
        handoff_event: e.draft.event_id.clone(),
        profile: crate::v2::PROFILE_VERSION,
        session_id: session,
        status: "recorded",
        summary: summary.trim().to_string(),
        written: true,
        input_frontier,
        event: members_json(&e.members),
    })))
}
