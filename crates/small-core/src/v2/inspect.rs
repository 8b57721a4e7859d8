//! Looking into a 2.0.0 tree: one session's record and what it did (`small session show`), and
//! the comparison of two trees' states (`small run diff` on 2.0.0 snapshots).
//!
//! Both read the records and the reduced [`State`] through [`read::open`]: a damaged tree is
//! refused with its problems, an unresolved conflict is state and is shown. Every string
//! that came from a record and may hold free text (labels, titles, summaries) is masked for
//! secrets.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::v2::json::Jv;
use crate::v2::load::Event;
use crate::v2::read::{self, Opened};

fn masked(s: &str) -> String {
    let mut v = serde_json::Value::String(s.to_string());
    crate::secrets::redact_json(&mut v);
    match v {
        serde_json::Value::String(s) => s,
        _ => String::new(),
    }
}

/// One event, briefly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventBrief {
    pub event_id: String,
    pub sequence: i64,
    pub kind: String,
    pub occurred_at: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task_id: String,
}

impl EventBrief {
    fn of(e: &Event) -> Self {
        EventBrief {
            event_id: e.id.clone(),
            sequence: e.sequence,
            kind: e.kind.clone(),
            occurred_at: e.occurred_at.clone(),
            task_id: e.task_id.clone(),
        }
    }
}

/// A task a session's events name, as the tree's state leaves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskTouched {
    pub task_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub alias: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// The task's status now (not only what this session made it).
    pub status: String,
    pub revision: i64,
    /// How many of the session's events name the task, and their kinds.
    pub events: usize,
    pub kinds: BTreeMap<String, usize>,
}

/// A receipt, briefly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReceiptBrief {
    pub digest: String,
    pub receipt_id: String,
    pub strength: String,
    pub availability: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub outcome: String,
}

/// `small session show` (docs/json-output.md). The leading keys are `session list`'s.
#[derive(Debug, Clone, Serialize)]
pub struct SessionShow {
    pub created_at: String,
    pub label: String,
    pub observed_frontier: String,
    pub session_id: String,
    /// `active`, `closed` or `superseded`, as in `session list`.
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub actor_label: String,
    pub events: usize,
    /// Whether this is the session selected in this checkout (`.small-cache/active-session`).
    pub selected: bool,
    /// The session that took this one over, when superseded.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub superseded_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_event: Option<EventBrief>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_event: Option<EventBrief>,
    /// Event count by kind.
    pub kinds: BTreeMap<String, usize>,
    pub tasks: Vec<TaskTouched>,
    /// Receipts named by the session's events (`evidence_digests`).
    pub receipts: Vec<ReceiptBrief>,
    /// The summary of the session's latest handoff, if it recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
    /// The workspace's frontier and mode, for context.
    pub frontier: String,
    pub mode: String,
}

/// Why a session cannot be shown.
#[derive(Debug, Clone)]
pub enum ShowError {
    /// The tree is damaged: its record and graph problems.
    Damaged(Vec<Diagnostic>),
    /// No session was named and none is selected here.
    NoneSelected,
    /// No session has this id or prefix.
    NotFound(String),
    /// More than one session starts with this prefix (the candidates, sorted).
    Ambiguous(String, Vec<String>),
}

/// The session `query` names: its full id, or a prefix of exactly one id (with or without
/// the `session_` start).
pub fn find_session<'a>(ids: &[&'a str], query: &str) -> Result<&'a str, ShowError> {
    let q = query.trim();
    if q.is_empty() {
        return Err(ShowError::NotFound(query.to_string()));
    }
    if let Some(id) = ids.iter().find(|id| **id == q) {
        return Ok(id);
    }
    let with = if q.starts_with("session_") {
        q.to_string()
    } else {
        format!("session_{q}")
    };
    let mut hits: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| id.starts_with(q) || id.starts_with(&with))
        .collect();
    hits.sort_unstable();
    hits.dedup();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(ShowError::NotFound(q.to_string())),
        many => Err(ShowError::Ambiguous(
            q.to_string(),
            many.iter().map(|s| s.to_string()).collect(),
        )),
    }
}

/// The receipt digests an event names.
fn evidence_digests(e: &Event) -> Vec<String> {
    match e.payload.get("evidence_digests") {
        Some(Jv::Arr(items)) => items
            .iter()
            .filter_map(|v| match v {
                Jv::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Show the session `query` names (`None`: the one selected in this checkout) of the 2.0.0
/// tree at `root/.small`.
pub fn session_show(
    root: &Path,
    small_dir: &Path,
    query: Option<&str>,
) -> Result<SessionShow, ShowError> {
    let o = read::open(root, small_dir).map_err(ShowError::Damaged)?;
    let selected_id = crate::v2::write::resolve_session(root, None).ok();
    let query = match query {
        Some(q) => q.to_string(),
        None => selected_id.clone().ok_or(ShowError::NoneSelected)?,
    };
    let ids: Vec<&str> = o.state.sessions.iter().map(|s| s.id.as_str()).collect();
    let id = find_session(&ids, &query)?.to_string();
    Ok(build(&o, &id, selected_id.as_deref() == Some(id.as_str())))
}

fn build(o: &Opened, id: &str, selected: bool) -> SessionShow {
    let state = &o.state;
    let s = state.sessions.iter().find(|s| s.id == id);
    let rec = o.store.sessions.iter().find(|r| r.id == id);
    let mut events: Vec<&Event> = o
        .store
        .events
        .iter()
        .filter(|e| e.session_id == id)
        .collect();
    events.sort_by(|a, b| a.sequence.cmp(&b.sequence).then_with(|| a.id.cmp(&b.id)));

    let mut kinds = BTreeMap::new();
    let mut per_task: BTreeMap<&str, (usize, BTreeMap<String, usize>)> = BTreeMap::new();
    let mut digests: BTreeSet<String> = BTreeSet::new();
    let mut handoff = None;
    for e in &events {
        *kinds.entry(e.kind.clone()).or_insert(0) += 1;
        if !e.task_id.is_empty() {
            let t = per_task.entry(e.task_id.as_str()).or_default();
            t.0 += 1;
            *t.1.entry(e.kind.clone()).or_insert(0) += 1;
        }
        digests.extend(evidence_digests(e));
        if e.kind == "handoff_recorded" {
            if let Some(Jv::Str(summary)) = e.payload.get("summary") {
                handoff = Some(masked(summary));
            }
        }
    }
    let tasks = per_task
        .into_iter()
        .map(|(task_id, (n, kinds))| {
            let t = state.tasks.iter().find(|t| t.id == task_id);
            TaskTouched {
                task_id: task_id.to_string(),
                alias: t.map(|t| masked(&t.alias)).unwrap_or_default(),
                title: t.map(|t| masked(&t.title)).unwrap_or_default(),
                status: t.map(|t| t.status.clone()).unwrap_or_default(),
                revision: t.map(|t| t.revision).unwrap_or_default(),
                events: n,
                kinds,
            }
        })
        .collect();
    let receipts = o
        .store
        .receipts
        .iter()
        .filter(|r| digests.contains(&r.digest))
        .map(receipt_brief)
        .collect();
    let superseded_by = o
        .store
        .events
        .iter()
        .filter(|e| e.kind == "ownership_taken_over")
        .filter(|e| {
            matches!(e.payload.get("prior_session"), Some(Jv::Str(p)) if p == id)
                && matches!(e.payload.get("scope"), Some(Jv::Str(sc)) if sc == "session")
        })
        .map(|e| e.session_id.clone())
        .next_back()
        .unwrap_or_default();
    SessionShow {
        created_at: s.map(|s| s.created_at.clone()).unwrap_or_default(),
        label: s.map(|s| masked(&s.label)).unwrap_or_default(),
        observed_frontier: rec.map(|r| r.observed_frontier.clone()).unwrap_or_default(),
        session_id: id.to_string(),
        status: s.map(|s| s.status()).unwrap_or("active").to_string(),
        actor_label: rec.map(|r| masked(&r.actor_label)).unwrap_or_default(),
        events: events.len(),
        selected,
        superseded_by,
        first_event: events.first().map(|e| EventBrief::of(e)),
        last_event: events.last().map(|e| EventBrief::of(e)),
        kinds,
        tasks,
        receipts,
        handoff,
        frontier: state.frontier.clone(),
        mode: state.mode.clone(),
    }
}

fn receipt_brief(r: &crate::v2::load::Receipt) -> ReceiptBrief {
    ReceiptBrief {
        digest: r.digest.clone(),
        receipt_id: r.id.clone(),
        strength: r.strength.clone(),
        availability: r.availability.clone(),
        task_id: r.task_id.clone(),
        outcome: r.outcome.clone(),
    }
}

// ---------------------------------------------------------------------------------------
// Comparing two trees

/// What one session gained or lost between two trees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionEvents {
    pub session_id: String,
    pub added: usize,
    pub removed: usize,
    /// Kinds of the added events.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub added_kinds: BTreeMap<String, usize>,
    /// Kinds of the removed events.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub removed_kinds: BTreeMap<String, usize>,
}

/// One value before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change<T> {
    pub before: T,
    pub after: T,
}

/// A task that differs between two trees. `None` sides: the task is new, or gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskChange {
    pub task_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub alias: String,
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Change<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<Change<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Change<String>>,
}

/// Sessions opened, closed or taken over between two trees.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SessionChanges {
    /// In the second tree only.
    pub opened: Vec<String>,
    /// Closed in the second tree, not in the first (opened and closed in between included).
    pub closed: Vec<String>,
    /// Superseded in the second tree, not in the first.
    pub superseded: Vec<String>,
    /// In the first tree only.
    pub removed: Vec<String>,
}

/// Conflicts of both trees.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConflictChanges {
    pub before: usize,
    pub after: usize,
    /// Conflict ids in the second tree only.
    pub new: Vec<String>,
    /// Conflict ids in the first tree only (resolved, or their heads gone).
    pub resolved: Vec<String>,
}

/// The comparison of two 2.0.0 trees' states.
#[derive(Debug, Clone, Serialize)]
pub struct StateDiff {
    pub frontier: Change<String>,
    pub events_added: usize,
    pub events_removed: usize,
    /// Per session with added or removed events, by session id.
    pub events: Vec<SessionEvents>,
    pub sessions: SessionChanges,
    pub tasks: Vec<TaskChange>,
    pub receipts_added: Vec<ReceiptBrief>,
    pub receipts_removed: Vec<ReceiptBrief>,
    pub conflicts: ConflictChanges,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Change<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_revision: Option<Change<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Change<String>>,
}

impl StateDiff {
    /// Whether the two trees hold different states.
    pub fn has_changes(&self) -> bool {
        self.frontier.before != self.frontier.after
            || !self.tasks.is_empty()
            || !self.receipts_added.is_empty()
            || !self.receipts_removed.is_empty()
            || self.mode.is_some()
            || self.policy_revision.is_some()
    }
}

fn change<T: PartialEq + Clone>(a: &T, b: &T) -> Option<Change<T>> {
    (a != b).then(|| Change {
        before: a.clone(),
        after: b.clone(),
    })
}

/// Compare the states of two opened trees.
pub fn diff_states(a: &Opened, b: &Opened) -> StateDiff {
    let ids = |o: &Opened| -> BTreeMap<String, (String, String)> {
        o.store
            .events
            .iter()
            .map(|e| (e.id.clone(), (e.session_id.clone(), e.kind.clone())))
            .collect()
    };
    let (ea, eb) = (ids(a), ids(b));
    let blank = |sid: &str| SessionEvents {
        session_id: sid.to_string(),
        added: 0,
        removed: 0,
        added_kinds: BTreeMap::new(),
        removed_kinds: BTreeMap::new(),
    };
    let mut collected: BTreeMap<String, SessionEvents> = BTreeMap::new();
    let (mut added, mut removed) = (0, 0);
    for (id, (sid, kind)) in &eb {
        if !ea.contains_key(id) {
            added += 1;
            let s = collected.entry(sid.clone()).or_insert_with(|| blank(sid));
            s.added += 1;
            *s.added_kinds.entry(kind.clone()).or_insert(0) += 1;
        }
    }
    for (id, (sid, kind)) in &ea {
        if !eb.contains_key(id) {
            removed += 1;
            let s = collected.entry(sid.clone()).or_insert_with(|| blank(sid));
            s.removed += 1;
            *s.removed_kinds.entry(kind.clone()).or_insert(0) += 1;
        }
    }

    let sess = |o: &Opened| -> BTreeMap<String, (bool, bool)> {
        o.state
            .sessions
            .iter()
            .map(|s| (s.id.clone(), (s.closed, s.superseded)))
            .collect()
    };
    let (sa, sb) = (sess(a), sess(b));
    let mut sessions = SessionChanges::default();
    for (id, (closed, superseded)) in &sb {
        let before = sa.get(id);
        if before.is_none() {
            sessions.opened.push(id.clone());
        }
        if *closed && !before.is_some_and(|b| b.0) {
            sessions.closed.push(id.clone());
        }
        if *superseded && !before.is_some_and(|b| b.1) {
            sessions.superseded.push(id.clone());
        }
    }
    sessions.removed = sa
        .keys()
        .filter(|k| !sb.contains_key(*k))
        .cloned()
        .collect();

    let ta: BTreeMap<&str, &crate::v2::Task> =
        a.state.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let tb: BTreeMap<&str, &crate::v2::Task> =
        b.state.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let all: BTreeSet<&str> = ta.keys().chain(tb.keys()).copied().collect();
    let mut tasks = Vec::new();
    for id in all {
        let (x, y) = (ta.get(id), tb.get(id));
        let alias = masked(&y.or(x).map(|t| t.alias.clone()).unwrap_or_default());
        let c = match (x, y) {
            (None, Some(t)) => TaskChange {
                task_id: id.to_string(),
                alias,
                change: "added",
                status: Some(Change {
                    before: String::new(),
                    after: t.status.clone(),
                }),
                revision: Some(Change {
                    before: 0,
                    after: t.revision,
                }),
                title: Some(Change {
                    before: String::new(),
                    after: masked(&t.title),
                }),
            },
            (Some(t), None) => TaskChange {
                task_id: id.to_string(),
                alias,
                change: "removed",
                status: Some(Change {
                    before: t.status.clone(),
                    after: String::new(),
                }),
                revision: Some(Change {
                    before: t.revision,
                    after: 0,
                }),
                title: Some(Change {
                    before: masked(&t.title),
                    after: String::new(),
                }),
            },
            (Some(x), Some(y)) => {
                let status = change(&x.status, &y.status);
                let revision = change(&x.revision, &y.revision);
                let title = change(&x.title, &y.title).map(|c| Change {
                    before: masked(&c.before),
                    after: masked(&c.after),
                });
                if status.is_none() && revision.is_none() && title.is_none() {
                    continue;
                }
                TaskChange {
                    task_id: id.to_string(),
                    alias,
                    change: "changed",
                    status,
                    revision,
                    title,
                }
            }
            (None, None) => continue,
        };
        tasks.push(c);
    }

    let ra: BTreeSet<&str> = a.store.receipts.iter().map(|r| r.digest.as_str()).collect();
    let rb: BTreeSet<&str> = b.store.receipts.iter().map(|r| r.digest.as_str()).collect();
    let mut receipts_added: Vec<ReceiptBrief> = b
        .store
        .receipts
        .iter()
        .filter(|r| !ra.contains(r.digest.as_str()))
        .map(receipt_brief)
        .collect();
    let mut receipts_removed: Vec<ReceiptBrief> = a
        .store
        .receipts
        .iter()
        .filter(|r| !rb.contains(r.digest.as_str()))
        .map(receipt_brief)
        .collect();
    receipts_added.sort_by(|x, y| x.digest.cmp(&y.digest));
    receipts_removed.sort_by(|x, y| x.digest.cmp(&y.digest));

    let ca: BTreeSet<&str> = a.state.conflicts.iter().map(|c| c.id.as_str()).collect();
    let cb: BTreeSet<&str> = b.state.conflicts.iter().map(|c| c.id.as_str()).collect();
    let conflicts = ConflictChanges {
        before: ca.len(),
        after: cb.len(),
        new: cb.difference(&ca).map(|s| s.to_string()).collect(),
        resolved: ca.difference(&cb).map(|s| s.to_string()).collect(),
    };
    let handoff_of = |o: &Opened| masked(o.state.handoff.as_deref().unwrap_or(""));

    StateDiff {
        frontier: Change {
            before: a.state.frontier.clone(),
            after: b.state.frontier.clone(),
        },
        events_added: added,
        events_removed: removed,
        events: collected.into_values().collect(),
        sessions,
        tasks,
        receipts_added,
        receipts_removed,
        conflicts,
        mode: change(&a.state.mode, &b.state.mode),
        policy_revision: change(&a.state.policy_revision, &b.state.policy_revision),
        handoff: change(&handoff_of(a), &handoff_of(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v2::tests::{ev_path, valid};

    const IDS: [&str; 3] = ["session_ab12", "session_ab34", "session_cd56"];

    #[test]
    fn a_session_is_found_by_id_or_unique_prefix() {
        assert_eq!(find_session(&IDS, "session_ab12").unwrap(), "session_ab12");
        assert_eq!(find_session(&IDS, "cd").unwrap(), "session_cd56");
        assert_eq!(find_session(&IDS, "session_ab3").unwrap(), "session_ab34");
        assert_eq!(find_session(&IDS, " ab12 ").unwrap(), "session_ab12");
        match find_session(&IDS, "ab") {
            Err(ShowError::Ambiguous(q, ids)) => {
                assert_eq!(q, "ab");
                assert_eq!(ids, ["session_ab12", "session_ab34"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            find_session(&IDS, "ef"),
            Err(ShowError::NotFound(_))
        ));
        assert!(matches!(
            find_session(&IDS, ""),
            Err(ShowError::NotFound(_))
        ));
    }

    #[test]
    fn session_show_counts_events_tasks_receipts() {
        let dir = valid();
        let root = dir.path();
        let small = root.join(".small");
        let s = session_show(root, &small, Some("session_")).unwrap();
        assert_eq!(s.status, "closed");
        assert!(!s.selected);
        assert_eq!(s.events, 5);
        assert_eq!(s.kinds.get("task_created"), Some(&2));
        assert_eq!(s.first_event.as_ref().map(|e| e.sequence), Some(1));
        assert_eq!(
            s.last_event.as_ref().map(|e| e.kind.as_str()),
            Some("session_closed")
        );
        let tasks: Vec<(&str, &str, usize)> = s
            .tasks
            .iter()
            .map(|t| (t.alias.as_str(), t.status.as_str(), t.events))
            .collect();
        assert_eq!(tasks, [("t1", "completed", 2), ("t2", "pending", 1)]);
        assert_eq!(s.receipts.len(), 1);
        assert_eq!(s.receipts[0].strength, "cli_captured");
        assert_eq!(s.handoff, None);
        // None named and none selected.
        assert!(matches!(
            session_show(root, &small, None),
            Err(ShowError::NoneSelected)
        ));
    }

    #[test]
    fn diff_states_names_added_events_tasks_and_receipts() {
        let before = valid();
        let after = valid();
        // The first tree stops before the session's last two events.
        let small_b = before.path().join(".small");
        std::fs::remove_file(small_b.join(ev_path("e5"))).unwrap();
        std::fs::remove_file(small_b.join(ev_path("e4"))).unwrap();
        let a = read::open(before.path(), &small_b).unwrap();
        let b = read::open(after.path(), &after.path().join(".small")).unwrap();
        let d = diff_states(&a, &b);
        assert_ne!(d.frontier.before, d.frontier.after);
        assert_eq!((d.events_added, d.events_removed), (2, 0));
        assert_eq!(d.events.len(), 1);
        assert_eq!(d.events[0].added_kinds.get("session_closed"), Some(&1));
        assert_eq!(d.sessions.closed.len(), 1);
        assert!(d.sessions.opened.is_empty());
        assert_eq!(d.tasks.len(), 1);
        assert_eq!(d.tasks[0].change, "added");
        assert_eq!(d.tasks[0].alias, "t2");
        assert!(d.receipts_added.is_empty());
        assert!(d.has_changes());
        // The other way round.
        let r = diff_states(&b, &a);
        assert_eq!((r.events_added, r.events_removed), (0, 2));
        assert_eq!(r.tasks[0].change, "removed");
        // A tree against itself.
        let same = diff_states(&b, &b);
        assert!(!same.has_changes());
        assert_eq!(same.events_added + same.events_removed, 0);
    }
}
