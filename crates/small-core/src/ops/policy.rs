//! `policy show`, `policy revise`: the policy of a 2.0.0 workspace, which changes only with a
//! `policy_changed` event written as a compare-and-swap on the frontier.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::ops::members_json;
use crate::ops::{require_v2, OpResult, Workspace};
use crate::v2::write::{self as v2w, PolicyMaterial, DEFAULT_READ_WAIT};

/// The policy revision in force, its material digests, the frontier `policy revise`
/// compares with, and the unresolved conflicts (the reference's keys, in its order).
#[derive(Debug, Clone, Serialize)]
pub struct PolicyShown {
    /// The ids of the unresolved conflicts (a revision is refused while there are any).
    pub conflicts: Vec<String>,
    pub constraints_digest: String,
    pub frontier: String,
    pub intent_digest: String,
    pub policy_revision: String,
    pub profile: &'static str,
}

/// New policy files to put in force.
#[derive(Debug, Clone, Default)]
pub struct PolicyRequest {
    /// The new intent file (`None`: it stays as it is).
    pub intent: Option<PathBuf>,
    /// The new constraints file (`None`: it stays as it is).
    pub constraints: Option<PathBuf>,
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

/// A revised policy: the `policy_changed` event and what is in force after it (the
/// reference's keys).
#[derive(Debug, Clone, Serialize)]
pub struct PolicyRevised {
    pub event: serde_json::Value,
    pub frontier: String,
    pub policy_revision: String,
    pub profile: &'static str,
    /// The event's id (for the human line).
    #[serde(skip)]
    pub event_id: String,
}

/// Show the policy in force. Read under the lock, as a writer would see it.
pub fn show(ws: &Workspace) -> OpResult<PolicyShown> {
    require_v2(ws, "the policy")?;
    let mut w = ws.writer(Some(DEFAULT_READ_WAIT))?;
    let store = w.store()?;
    let (constraints_digest, intent_digest) = (
        store.policy_constraints_digest.clone(),
        store.policy_intent_digest.clone(),
    );
    Ok(PolicyShown {
        conflicts: w.state.conflicts.iter().map(|c| c.id.clone()).collect(),
        constraints_digest,
        frontier: w.frontier()?,
        intent_digest,
        policy_revision: w.state.policy_revision.clone(),
        profile: crate::v2::PROFILE_VERSION,
    })
}

/// Revise the policy: the files are read first (an unreadable one is refused), then the event
/// is written and the files replaced.
pub fn revise(ws: &Workspace, req: &PolicyRequest) -> OpResult<PolicyRevised> {
    require_v2(ws, "the policy")?;
    let material = PolicyMaterial::read(req.intent.as_deref(), req.constraints.as_deref())?;
    let session = v2w::resolve_session(&ws.root, req.session.as_deref())?;
    let mut w = ws.writer(req.lock_timeout)?;
    let e = v2w::revise_policy(
        &mut w,
        &session,
        &material,
        &req.reason,
        &req.requester,
        &req.expect_state,
    )?;
    Ok(PolicyRevised {
        event: members_json(&e.members),
        frontier: w.frontier()?,
        policy_revision: w.state.policy_revision.clone(),
        profile: crate::v2::PROFILE_VERSION,
        event_id: e.draft.event_id,
    })
}

impl crate::ops::report::Report for PolicyShown {
    fn text(&self) -> String {
        format!(
            "Policy revision: {}\n  intent:      {}\n  constraints: {}\nFrontier: {}\n",
            self.policy_revision, self.intent_digest, self.constraints_digest, self.frontier
        )
    }
}

impl crate::ops::report::Report for PolicyRevised {
    fn text(&self) -> String {
        format!(
            "Policy revised to {} [{}]\n",
            self.policy_revision, self.event_id
        )
    }
}
