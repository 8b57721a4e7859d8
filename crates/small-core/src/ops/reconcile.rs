//! `reconcile`: preview the semantic conflicts of a 2.0.0 workspace, or resolve one with a
//! reviewed resolution file (a `conflict_resolved` event, compare-and-swap on the frontier).

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::ops::members_json;
use crate::ops::session::damaged;
use crate::ops::{require_v2, OpError, OpResult, Workspace};
use crate::v2::write::{self as v2w, Resolution};
use crate::v2::{self, Conflict};
use crate::workspace::error::code as acode;

/// The conflicts and what resolves each (the reference's keys, in its order).
#[derive(Debug, Clone, Serialize)]
pub struct Preview {
    pub conflict_count: usize,
    pub conflicts: Vec<Conflict>,
    pub frontier: String,
    pub mode: String,
    /// One step per conflict, or `no reconciliation required`.
    pub next_steps: Vec<String>,
    pub profile: &'static str,
}

/// A reviewed resolution to apply.
#[derive(Debug, Clone, Default)]
pub struct ResolveRequest {
    /// The resolution file.
    pub file: PathBuf,
    /// The frontier the caller reviewed (compare-and-swap; required).
    pub expect_state: Option<String>,
    /// The session to record in (default: the file's `session_id`, else the active one).
    pub session: Option<String>,
    pub lock_timeout: Option<Duration>,
}

/// A resolved conflict and the conflicts that remain (the reference's keys).
#[derive(Debug, Clone, Serialize)]
pub struct Resolved {
    pub frontier: String,
    pub profile: &'static str,
    pub remaining_conflicts: Vec<Conflict>,
    pub resolution_event: serde_json::Value,
    /// The id of the conflict resolved.
    pub resolved: String,
    /// The `conflict_resolved` event's id (for the human line).
    #[serde(skip)]
    pub event_id: String,
}

/// List the conflicts and what resolves them. Read-only; damaged records are refused.
pub fn preview(ws: &Workspace) -> OpResult<Preview> {
    require_v2(ws, "reconcile")?;
    let checked = v2::check(&ws.root, &ws.small_dir);
    let bad: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && v2::stage_of(&d.code) != v2::Stage::State)
        .cloned()
        .collect();
    if !bad.is_empty() {
        return Err(damaged(bad));
    }
    let st = checked.state;
    Ok(Preview {
        conflict_count: st.conflicts.len(),
        next_steps: next_steps(&st.conflicts),
        conflicts: st.conflicts,
        frontier: st.frontier,
        mode: st.mode,
        profile: v2::PROFILE_VERSION,
    })
}

/// What resolves each conflict.
fn next_steps(conflicts: &[Conflict]) -> Vec<String> {
    if conflicts.is_empty() {
        return vec!["no reconciliation required".into()];
    }
    conflicts
        .iter()
        .map(|c| {
            if c.kind == "policy_material" {
                format!(
                    "restore the reviewed policy bytes selected by {}",
                    c.heads.join(",")
                )
            } else {
                format!("create a resolution for {} referencing all heads", c.id)
            }
        })
        .collect()
}

/// Resolve one conflict with the reviewed resolution file `req.file`.
pub fn resolve(ws: &Workspace, req: &ResolveRequest) -> OpResult<Resolved> {
    require_v2(ws, "reconcile")?;
    let Some(expect) = req.expect_state.as_deref().filter(|s| !s.trim().is_empty()) else {
        return Err(OpError::usage(
            acode::USAGE,
            "--expect-state is required with --apply",
        ));
    };
    let res = Resolution::parse(&read_resolution(&req.file)?)?;
    let explicit = req
        .session
        .clone()
        .or_else(|| Some(res.session_id.clone()).filter(|s| !s.trim().is_empty()));
    let session = v2w::resolve_session(&ws.root, explicit.as_deref())?;
    let mut w = ws.writer(req.lock_timeout)?;
    let (e, id) = v2w::reconcile(&mut w, &session, &res, expect)?;
    Ok(Resolved {
        frontier: w.frontier()?,
        profile: v2::PROFILE_VERSION,
        remaining_conflicts: w.state.conflicts.clone(),
        resolution_event: members_json(&e.members),
        resolved: id,
        event_id: e.draft.event_id,
    })
}

/// The resolution file's bytes; one that cannot be read is refused (it is the request's
/// input, not a failure of the workspace).
fn read_resolution(file: &std::path::Path) -> OpResult<Vec<u8>> {
    crate::fsio::read_user_input(file, v2::MAX_RECORD_BYTES).map_err(|e| {
        OpError::invalid(
            acode::REFUSED,
            format!("cannot read {}: {e}", file.display()),
        )
        .with_help("give a readable resolution file of at most 1 MiB")
    })
}

impl crate::ops::report::Report for Preview {
    /// The frontier and how many conflicts, each conflict (id, kind, why), the next steps.
    fn text(&self) -> String {
        use crate::ops::report::outln;
        let mut o = String::new();
        outln!(
            o,
            "frontier {}; conflicts {}",
            self.frontier,
            self.conflict_count
        );
        for c in &self.conflicts {
            outln!(o, "{}\t{}\t{}", c.id, c.kind, c.message);
        }
        for n in &self.next_steps {
            outln!(o, "next: {n}");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conflict(id: &str, kind: &str) -> Conflict {
        Conflict {
            id: id.into(),
            kind: kind.into(),
            task_id: String::new(),
            heads: vec!["event_a".into(), "event_b".into()],
            message: String::new(),
            head_summaries: Vec::new(),
        }
    }

    #[test]
    fn next_steps_name_what_resolves_each_conflict() {
        assert_eq!(next_steps(&[]), ["no reconciliation required"]);
        assert_eq!(
            next_steps(&[
                conflict("conflict_1", "task_outcome"),
                conflict("conflict_2", "policy_material")
            ]),
            [
                "create a resolution for conflict_1 referencing all heads",
                "restore the reviewed policy bytes selected by event_a,event_b",
            ]
        );
    }

    /// The 2.0.0-only operations refuse a v1 workspace as a refused request.
    #[test]
    fn ops_v2_only_operations_refuse_a_v1_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::at(d.path().to_path_buf());
        let refusals = [
            preview(&ws).err(),
            resolve(&ws, &ResolveRequest::default()).err(),
            crate::ops::mode::show(&ws).err(),
            crate::ops::mode::set(&ws, &Default::default()).err(),
            crate::ops::policy::show(&ws).err(),
            crate::ops::policy::revise(&ws, &Default::default()).err(),
            crate::ops::evidence::save(&ws, &Default::default()).err(),
            crate::ops::evidence::declare_unavailable(&ws, &Default::default()).err(),
        ];
        for e in refusals {
            let e = e.expect("refused");
            assert_eq!(e.kind, crate::workspace::error::ErrorKind::Invalid);
            assert_eq!(e.reference_code(), "invalid_request");
            assert!(e.diagnostic.message.contains("not a 2.0.0 workspace"));
        }
    }
}
