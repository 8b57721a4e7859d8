//! The project state, one typed value built from either profile, for front ends that show the
//! whole workspace (the page), and for the operations that read it.

pub use crate::state::status::from_state as status_of;
pub use crate::state::{LoadOptions, ProjectState, Task};

use crate::gates::timeline::{Filter, Timeline};
use crate::workspace::Location;

/// Load the state of the workspace at `loc`. Never fails: what cannot be read is listed in
/// `problems` (and, for 2.0.0 records, `record_problems`).
pub fn load(loc: &Location, opts: &LoadOptions) -> ProjectState {
    load_with_cache(loc, opts, false)
}

/// [`load`]; a 2.0.0 state comes from the cache in `.small-cache/` when `use_cache` and no
/// record changed since it was written (the same value either way).
pub fn load_with_cache(loc: &Location, opts: &LoadOptions, use_cache: bool) -> ProjectState {
    loc.backend().load_state(loc, opts, use_cache)
}

/// Why the handoff of `st` (loaded from `loc`) no longer describes the run, if it does not.
pub fn handoff_staleness(loc: &Location, st: &ProjectState) -> Option<String> {
    loc.backend().handoff_staleness(st, &loc.small_dir)
}

/// A task as a board shows it: the status it is in now, and why it is blocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub status: String,
    /// For a blocked task: the newest blocking entry's (or event's) notes, else its evidence.
    pub blocked_reason: Option<String>,
}

/// How each of `tasks` of the workspace at `loc` is shown, in order. `progress` is the
/// progress timeline the caller keeps; a 2.0.0 workspace reads its events instead.
pub fn shown_tasks(loc: &Location, tasks: &[Task], progress: &Timeline) -> Vec<Shown> {
    loc.backend().shown_tasks(loc, tasks, progress)
}

/// Transitions of one task read for its blocking reason, newest first.
const REASON_SCAN: usize = 50;

/// The reason an entry gives, unless it is only the record that `small plan` set the status.
fn reason(notes: Option<&str>, evidence: Option<&str>) -> Option<String> {
    if notes.is_some_and(|n| n.trim().starts_with("small plan --")) {
        return None;
    }
    notes
        .or(evidence)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// v1: a task still pending in the plan whose newest progress entry is in progress is in
/// progress; a blocked one gives the reason of its newest blocking entry that has one.
pub(crate) fn shown_v1(tasks: &[Task], progress: &Timeline) -> Vec<Shown> {
    let newest = |task: &str, status: Option<&str>, limit: usize| {
        let f = Filter {
            task: Some(task.to_string()),
            status: status.map(str::to_string),
            ..Filter::default()
        };
        progress.page(&f, 0, limit).entries
    };
    tasks
        .iter()
        .map(|t| {
            let mut status = t.status.clone();
            if status == "pending" && progress.count_for_task(t.name()) > 0 {
                if let Some(e) = newest(t.name(), None, 1).first() {
                    if e.status == "in_progress" {
                        status = e.status.clone();
                    }
                }
            }
            let blocked_reason = (status == "blocked")
                .then(|| {
                    newest(t.name(), Some("blocked"), REASON_SCAN)
                        .iter()
                        .find(|e| {
                            !e.notes
                                .as_deref()
                                .is_some_and(|n| n.trim().starts_with("small plan --"))
                        })
                        .and_then(|e| reason(e.notes.as_deref(), e.evidence.as_deref()))
                })
                .flatten();
            Shown {
                status,
                blocked_reason,
            }
        })
        .collect()
}

/// 2.0.0: a task's status is its state's; a blocked one gives the reason of its newest
/// transition to blocked that has one.
pub(crate) fn shown_v2(loc: &Location, tasks: &[Task]) -> Vec<Shown> {
    let events = tasks
        .iter()
        .any(|t| t.status == "blocked")
        .then(|| crate::ops::timeline::event_timeline(&loc.root, &loc.small_dir))
        .flatten();
    tasks
        .iter()
        .map(|t| Shown {
            status: t.status.clone(),
            blocked_reason: events
                .as_ref()
                .filter(|_| t.status == "blocked")
                .and_then(|tl| {
                    tl.entries
                        .iter()
                        .rev()
                        .filter(|e| e.entry.task_id == t.name() && e.kind == "task_transitioned")
                        .take(REASON_SCAN)
                        .map(|e| tl.full(e))
                        .find(|r| {
                            r.status == "blocked"
                                && !r
                                    .notes
                                    .as_deref()
                                    .is_some_and(|n| n.trim().starts_with("small plan --"))
                        })
                })
                .and_then(|r| reason(r.notes.as_deref(), r.evidence.as_deref())),
        })
        .collect()
}
