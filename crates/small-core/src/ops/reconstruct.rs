//! `reconstruct`: a task's or the run's evidence from the workspace state alone, for either
//! profile; on 2.0.0 also the bounded resume packet of a session (`resume`).

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::history::reconstruct as v1;
use crate::ops::{OpError, OpResult, Workspace};
use crate::v2::read as v2;
use crate::workspace::error::ErrorKind;
use crate::workspace::Scope;

/// What to reconstruct.
#[derive(Debug, Clone)]
pub struct ReconstructRequest {
    /// A task id (2.0.0: or alias): its entries or events only, and the task itself.
    pub task: Option<String>,
    /// Only entries or events at or after this RFC 3339 time.
    pub since: Option<String>,
    /// The newest N (0: all).
    pub limit: usize,
    /// 2.0.0: the most bytes of encoded events (0: no cap).
    pub max_bytes: usize,
    /// 2.0.0: a session: its events only (with `resume`: the session reported, every event).
    pub session: Option<String>,
    /// 2.0.0: the bounded resume packet of `session` (else the active one).
    pub resume: bool,
    /// v1: the workspace kinds allowed (`root` by default, as the reference).
    pub scope: Scope,
}

impl Default for ReconstructRequest {
    fn default() -> ReconstructRequest {
        ReconstructRequest {
            task: None,
            since: None,
            limit: 50,
            max_bytes: v2::MAX_EVENT_BYTES,
            session: None,
            resume: false,
            scope: Scope::Root,
        }
    }
}

/// The reconstruction: the v1 document or the 2.0.0 one (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Reconstructed {
    V1(Box<v1::Reconstruction>),
    V2(Box<v2::Reconstruction>),
}

/// Reconstruct the workspace's evidence.
pub fn reconstruct(ws: &Workspace, req: &ReconstructRequest) -> OpResult<Reconstructed> {
    ws.backend().reconstruct(ws, req)
}

pub(super) fn reconstruct_v1(ws: &Workspace, req: &ReconstructRequest) -> OpResult<Reconstructed> {
    if req.resume || req.session.is_some() {
        return Err(OpError::usage(
            "usage",
            "--resume and --session apply to SMALL 2.0.0 workspaces; this one is v1 (`small reconstruct --task ID` reads its progress log)",
        ));
    }
    if ws.small_dir.is_dir() {
        crate::history::runs::check_scope(&ws.root, req.scope)?;
    }
    let opts = v1::ReconstructOptions {
        task: req.task.clone(),
        since: req.since.clone(),
        limit: req.limit,
    };
    Ok(Reconstructed::V1(Box::new(v1::reconstruct(
        &ws.root, &opts,
    )?)))
}

pub(super) fn reconstruct_v2(ws: &Workspace, req: &ReconstructRequest) -> OpResult<Reconstructed> {
    let opts = v2::ReconstructOptions {
        task: req.task.clone(),
        since: req.since.clone(),
        limit: req.limit,
        max_bytes: req.max_bytes,
        session: req.session.clone(),
        resume: req.resume,
    };
    match v2::reconstruct(&ws.root, &ws.small_dir, &opts) {
        Ok(r) => Ok(Reconstructed::V2(Box::new(r))),
        Err(v2::ReconstructError::Damaged(diags)) => Err(OpError::invalid(
            crate::v2::write::code::DAMAGED,
            "the 2.0.0 records are damaged; nothing reconstructed (see `small check --strict`)",
        )
        .with_details(diags)),
        Err(v2::ReconstructError::UnknownTask(t)) => Err(OpError::invalid(
            crate::workspace::error::code::UNKNOWN_TASK,
            format!("task {t} not found (no task has this id or alias)"),
        )),
        Err(v2::ReconstructError::Session(code, message)) => Err(OpError {
            kind: ErrorKind::Invalid,
            diagnostic: Box::new(Diagnostic::error(code, message).with_help(
                "`small session list` shows the recorded sessions; name one with --session",
            )),
            details: Vec::new(),
        }),
    }
}
