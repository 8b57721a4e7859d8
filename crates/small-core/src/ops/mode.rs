//! `mode show`, `mode set`: the collaboration mode of a 2.0.0 workspace (solo: one active
//! session; collaborative: several), changed only by a compare-and-swap on the frontier.

use std::time::Duration;

use serde::Serialize;

use crate::ops::members_json;
use crate::ops::{require_v2, OpResult, Workspace};
use crate::v2::write::{self as v2w, DEFAULT_READ_WAIT};

/// The mode, the active sessions and the frontier `mode set` compares with (the reference's
/// keys, in its order).
#[derive(Debug, Clone, Serialize)]
pub struct ModeShown {
    pub active_sessions: Vec<String>,
    pub frontier: String,
    pub mode: String,
}

/// A mode to set.
#[derive(Debug, Clone, Default)]
pub struct ModeRequest {
    /// `solo` or `collaborative`.
    pub mode: String,
    /// Why (required, recorded).
    pub reason: String,
    /// Who asked for it (recorded).
    pub requester: String,
    /// The frontier the caller reviewed (compare-and-swap).
    pub expect_state: String,
    /// The session to record in (default: the active one).
    pub session: Option<String>,
    pub lock_timeout: Option<Duration>,
}

/// The mode after `mode set`; `event` when it changed (the reference's keys).
#[derive(Debug, Clone, Serialize)]
pub struct ModeSet {
    pub changed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<serde_json::Value>,
    pub mode: String,
    /// The `mode_changed` event's id, when one was written (for the human line).
    #[serde(skip)]
    pub event_id: Option<String>,
}

/// Show the mode. Read under the lock, as a writer would see it.
pub fn show(ws: &Workspace) -> OpResult<ModeShown> {
    require_v2(ws, "the mode")?;
    let mut w = ws.writer(Some(DEFAULT_READ_WAIT))?;
    Ok(ModeShown {
        frontier: w.frontier()?,
        active_sessions: w.active_sessions(),
        mode: w.state.mode.clone(),
    })
}

/// Set the mode: a `mode_changed` event, unless it is the mode in force already.
pub fn set(ws: &Workspace, req: &ModeRequest) -> OpResult<ModeSet> {
    require_v2(ws, "the mode")?;
    let session = v2w::resolve_session(&ws.root, req.session.as_deref())?;
    let mut w = ws.writer(req.lock_timeout)?;
    let e = v2w::set_mode(
        &mut w,
        &session,
        &req.mode,
        &req.reason,
        &req.requester,
        &req.expect_state,
    )?;
    if e.is_some() {
        w.refresh()?;
    }
    Ok(ModeSet {
        changed: e.is_some(),
        event: e.as_ref().map(|e| members_json(&e.members)),
        mode: w.state.mode.clone(),
        event_id: e.map(|e| e.draft.event_id),
    })
}

impl crate::ops::report::Report for ModeShown {
    fn text(&self) -> String {
        let active = if self.active_sessions.is_empty() {
            "none".to_string()
        } else {
            self.active_sessions.join(", ")
        };
        format!(
            "Mode: {}\nActive sessions: {active}\nFrontier: {}\n",
            self.mode, self.frontier
        )
    }
}

impl crate::ops::report::Report for ModeSet {
    fn text(&self) -> String {
        match &self.event_id {
            Some(id) => format!("Mode set to {} [{id}]\n", self.mode),
            None => format!("Mode is already {}; nothing recorded\n", self.mode),
        }
    }
}
