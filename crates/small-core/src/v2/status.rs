//! `status` of a 2.0.0 workspace, read from [`State`]. The first keys are the reference's
//! (`version`, `profile`, `mode`, `frontier`, `sessions`, `progress_mode`,
//! `small_dir_exists`, `artifacts`); the rest is small's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::spec::consts::{ArtifactKind, TOOL_VERSION};
use crate::spec::model::ArtifactPresence;
use crate::v2::reduce::{Conflict, SessionState, Task};
use crate::v2::{stage_of, Stage, PROFILE_VERSION};

/// Everything `small status` shows on a 2.0.0 workspace (docs/v2.md).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub version: String,
    pub profile: &'static str,
    pub mode: String,
    pub frontier: String,
    /// How many sessions there are (the reference's key).
    pub sessions: usize,
    pub progress_mode: &'static str,
    pub small_dir_exists: bool,
    /// v1 artifacts present in `.small/` (none in a sound 2.0.0 tree).
    pub artifacts: ArtifactPresence,
    pub project_id: String,
    pub policy_revision: String,
    /// Task count by status.
    pub task_counts: BTreeMap<String, usize>,
    pub tasks: Vec<StatusTask>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_task: Option<StatusTask>,
    pub session_list: Vec<SessionState>,
    pub conflicts: Vec<Conflict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
    /// Whether the records and the event graph are sound (conflicts do not count).
    pub ok: bool,
    pub exit_code: u8,
    /// Problems with the records or the event graph; empty when `ok`.
    pub problems: Vec<Diagnostic>,
}

/// A task as `status` shows it: the reducer's task with the number of transitions attesting
/// it instead of their ids (`reconstruct --task` lists them), so that the report grows with
/// the tasks, not with the log.
#[derive(Debug, Clone, Serialize)]
pub struct StatusTask {
    #[serde(flatten)]
    pub task: Task,
    #[serde(skip_serializing_if = "crate::json::is_zero")]
    pub attestation_count: usize,
}

impl From<&Task> for StatusTask {
    fn from(t: &Task) -> StatusTask {
        let mut task = t.clone();
        task.attestations = Vec::new();
        StatusTask {
            attestation_count: t.attestation_count,
            task,
        }
    }
}

/// The status of the 2.0.0 tree at `root/.small`, every record read.
#[cfg(test)]
pub fn status(root: &Path, small_dir: &Path) -> Status {
    status_with_cache(root, small_dir, false)
}

/// [`status`], through the cache in `.small-cache/` when `use_cache`
/// ([`crate::v2::snapshot`]): the same answer, without reading the records when none changed.
pub fn status_with_cache(root: &Path, small_dir: &Path, use_cache: bool) -> Status {
    let c = crate::v2::snapshot::snapshot(root, small_dir, use_cache);
    let problems: Vec<Diagnostic> = c
        .diagnostics
        .into_iter()
        .filter(|d| d.is_error() && stage_of(&d.code) != Stage::State)
        .collect();
    let s = c.state;
    let present = |k: ArtifactKind| small_dir.join(k.file_name()).exists();
    let mut task_counts = BTreeMap::new();
    for t in &s.tasks {
        *task_counts.entry(t.status.clone()).or_insert(0) += 1;
    }
    let exit_code = if problems.iter().any(|d| d.code == crate::workspace::CODE_IO) {
        2
    } else {
        u8::from(!problems.is_empty())
    };
    Status {
        version: TOOL_VERSION.to_string(),
        profile: PROFILE_VERSION,
        mode: s.mode.clone(),
        frontier: s.frontier.clone(),
        sessions: s.sessions.len(),
        progress_mode: "events",
        small_dir_exists: true,
        artifacts: ArtifactPresence {
            intent: present(ArtifactKind::Intent),
            constraints: present(ArtifactKind::Constraints),
            plan: present(ArtifactKind::Plan),
            progress: present(ArtifactKind::Progress),
            handoff: present(ArtifactKind::Handoff),
        },
        project_id: s.project_id.clone(),
        policy_revision: s.policy_revision.clone(),
        task_counts,
        next_task: s.next_task().map(StatusTask::from),
        tasks: s.tasks.iter().map(StatusTask::from).collect(),
        session_list: s.sessions,
        conflicts: s.conflicts,
        handoff: s.handoff,
        ok: problems.is_empty(),
        exit_code,
        problems,
    }
}
