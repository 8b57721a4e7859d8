//! `small status` of a v1 workspace and the plan summary every report shares (status, emit,
//! health), computed from the [`ProjectState`].

use std::collections::BTreeMap;
use std::path::Path;

use crate::spec::consts::{PROTOCOL_VERSION, TOOL_VERSION};
use crate::spec::queue;
use crate::state::report::{PlanStatus, PlanTaskLine, Status, StatusOptions, KNOWN_STATUSES};
use crate::state::{self, LoadOptions, ProjectState, Task};

/// The plan summary of `tasks`, with at most `next` next actionable tasks.
pub fn plan_summary(tasks: &[Task], next: usize) -> PlanStatus {
    let mut by: BTreeMap<String, usize> =
        KNOWN_STATUSES.iter().map(|s| (s.to_string(), 0)).collect();
    for t in tasks {
        *by.entry(t.status.clone()).or_insert(0) += 1;
    }
    PlanStatus {
        total_tasks: tasks.len(),
        tasks_by_status: by,
        next_actionable: queue::next_actionable(tasks, next)
            .into_iter()
            .map(|t| t.name().to_string())
            .collect(),
        first_incomplete: queue::preferred(tasks).map(|t| t.name().to_string()),
        tasks: tasks
            .iter()
            .map(|t| PlanTaskLine {
                id: t.name().to_string(),
                title: t.title.clone(),
                status: t.status.clone(),
            })
            .collect(),
    }
}

/// The plan summary of a state (`None`: no plan).
pub fn plan_status(st: &ProjectState, next: usize) -> Option<PlanStatus> {
    st.tasks.as_deref().map(|t| plan_summary(t, next))
}

/// The status of the v1 workspace whose `.small/` directory is `small_dir`.
pub fn status(small_dir: &Path, opts: StatusOptions) -> Status {
    let st = state::load_dir_v1(
        small_dir,
        &LoadOptions {
            recent: opts.recent,
            audit: opts.audit,
        },
    );
    from_state(&st, opts)
}

/// The status report of a loaded state (v1 keys, docs/json-output.md).
pub fn from_state(st: &ProjectState, opts: StatusOptions) -> Status {
    let plan = plan_status(st, opts.tasks);
    let current_task = st.handoff.as_ref().and_then(|h| h.current_task_id.clone());
    let next_task = match &plan {
        Some(p) => p
            .next_actionable
            .first()
            .cloned()
            .or_else(|| p.first_incomplete.clone())
            .or_else(|| current_task.clone())
            .or_else(|| {
                st.all_completed()
                    .then(|| "none (all tasks completed)".to_string())
            }),
        None => current_task.clone(),
    };
    Status {
        version: TOOL_VERSION.to_string(),
        spec_version: PROTOCOL_VERSION.to_string(),
        progress_mode: if opts.audit { "audit" } else { "signal" }.to_string(),
        small_dir_exists: st.small_dir_exists,
        artifacts: st.artifacts.clone(),
        plan,
        next_task,
        replay_id: st.run_replay_id.clone(),
        handoff_replay_id: st.handoff.as_ref().and_then(|h| h.replay_id.clone()),
        current_task,
        recent_progress: st.recent.clone(),
        problems: st.problems.clone(),
    }
}
