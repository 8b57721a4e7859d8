//! The state of a 2.0.0 workspace, from its records: loaded and checked once
//! ([`crate::v2::check_store`]), folded by the reducer, and mapped onto the profile-neutral
//! [`ProjectState`]. The policy files give the intent and constraints; the events give the
//! tasks, the handoff and the recent entries.

use std::collections::HashMap;

use serde::Serialize;

use crate::state::report::RecentEntry;
use crate::state::v1;
use crate::state::{Handoff, LoadOptions, ProjectState, Sessions, Task};
use crate::v2::json::Jv;
use crate::v2::load::Event;
use crate::v2::snapshot::{self, Snapshot, SIGNAL_KINDS};
use crate::v2::{stage_of, Stage};

/// Fill `st` from the 2.0.0 records under its `.small/` (through the cache in
/// `.small-cache/` when `use_cache`: [`crate::v2::snapshot`]).
pub(super) fn load(st: &mut ProjectState, opts: &LoadOptions, use_cache: bool) {
    let mut snap = snapshot::snapshot(&st.root, &st.small_dir, use_cache);
    let mut recent = recent_entries(st, &snap, opts);
    if recent.is_none() {
        // More entries asked for than the snapshot keeps: every record again, every event
        // kept.
        let (c, store) = crate::v2::check_store_ordered(&st.root, &st.small_dir);
        snap = Snapshot::build_with_tail(c, &store, usize::MAX);
        recent = recent_entries(st, &snap, opts);
    }
    st.recent = recent.unwrap_or_default();
    st.record_problems = snap
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && stage_of(&d.code) != Stage::State)
        .cloned()
        .collect();
    let policy = st.small_dir.join("policy");
    match v1::parse(&policy.join("intent.small.yml")) {
        Ok(Some(d)) => st.intent = Some(v1::intent(&d.root)),
        Ok(None) => {}
        Err(e) => st.problems.push(format!("policy/intent.small.yml: {e}")),
    }
    match v1::parse(&policy.join("constraints.small.yml")) {
        Ok(Some(d)) => st.constraints = v1::constraints(&d.root),
        Ok(None) => {}
        Err(e) => st
            .problems
            .push(format!("policy/constraints.small.yml: {e}")),
    }
    let s = snap.state;
    st.tasks = Some(
        s.tasks
            .iter()
            .map(|t| Task {
                id: t.id.clone(),
                alias: t.alias.clone(),
                title: t.title.clone(),
                description: String::new(),
                status: t.status.clone(),
                revision: t.revision,
                steps: Vec::new(),
                acceptance: t.acceptance.clone(),
                dependencies: t.dependencies.clone(),
                evidence: t.evidence_digests.clone(),
                attestation_count: t.attestation_count,
                source: None,
            })
            .collect(),
    );
    // The latest handoff event, in timeline order.
    if let Some(e) = snap
        .tail
        .iter()
        .rev()
        .find(|e| e.kind == "handoff_recorded")
    {
        let p = e.full_payload(&st.root);
        st.handoff = Some(Handoff {
            summary: p.str_of("summary").to_string(),
            replay_id: Some(p.str_of("legacy_replay_id").to_string()).filter(|v| !v.is_empty()),
            replay_id_source: None,
            current_task_id: Some(p.str_of("current_task_id").to_string())
                .filter(|v| !v.is_empty()),
            next_steps: p.strs_of("next_steps"),
            links: Vec::new(),
            needs_regeneration: false,
            current_task_span: None,
        });
    }
    st.sessions = Some(Sessions {
        project_id: s.project_id,
        mode: s.mode,
        policy_revision: s.policy_revision,
        frontier: s.frontier,
        sessions: s.sessions,
        receipts: s.receipts,
        conflicts: s.conflicts,
        events: snap.events,
        findings: snap.diagnostics,
        from_cache: snap.from_cache,
        folded: snap.folded,
    });
}

/// The newest `opts.recent` entries from the snapshot's newest events; `None` when those
/// may not be enough (fewer found, and older events were left out of the snapshot).
fn recent_entries(
    st: &ProjectState,
    snap: &Snapshot,
    opts: &LoadOptions,
) -> Option<Vec<RecentEntry>> {
    if opts.recent == 0 {
        return Some(Vec::new());
    }
    let alias: HashMap<&str, &str> = snap
        .state
        .tasks
        .iter()
        .filter(|t| !t.alias.is_empty())
        .map(|t| (t.id.as_str(), t.alias.as_str()))
        .collect();
    // The snapshot holds the latest TAIL events, and the latest TAIL progress events: as
    // candidates, only those are certain to be the newest.
    let limit = if snap.tail_complete {
        usize::MAX
    } else {
        snapshot::TAIL
    };
    let out: Vec<RecentEntry> = snap
        .tail
        .iter()
        .rev()
        .filter(|e| opts.audit || SIGNAL_KINDS.contains(&e.kind.as_str()))
        .take(limit)
        .map(|e| entry(e, &e.full_payload(&st.root), &alias))
        .filter(|r| opts.audit || r.is_signal())
        .take(opts.recent)
        .collect();
    (out.len() >= opts.recent || snap.tail_complete).then_some(out)
}

/// A string member of a payload object, masked for secrets.
fn masked(v: &Jv, key: &str) -> Option<String> {
    match v.get(key) {
        Some(Jv::Str(s)) if !s.is_empty() => Some(crate::secrets::redact(s).into_owned()),
        _ => None,
    }
}

/// One event as a recent entry: a transition shows its status and evidence, an imported v1
/// entry its original fields, any other event its kind.
fn entry<K, V>(e: &Event, p: &Jv, alias: &HashMap<K, V>) -> RecentEntry
where
    K: std::borrow::Borrow<str> + std::hash::Hash + Eq,
    V: AsRef<str>,
{
    let legacy = p.get("legacy_entry").filter(|l| matches!(l, Jv::Obj(_)));
    let from = legacy.unwrap_or(p);
    let task = alias
        .get(e.task_id.as_str())
        .map(|a| a.as_ref().to_string())
        .unwrap_or_else(|| e.task_id.clone());
    let status = match e.kind.as_str() {
        "task_transitioned" => masked(from, "status").unwrap_or_else(|| e.kind.clone()),
        _ => e.kind.clone(),
    };
    let notes = match e.kind.as_str() {
        "handoff_recorded" | "session_closed" => {
            masked(p, "summary").or_else(|| masked(p, "reason"))
        }
        _ => masked(from, "notes"),
    };
    RecentEntry {
        timestamp: legacy
            .and_then(|l| masked(l, "timestamp"))
            .unwrap_or_else(|| e.occurred_at.clone()),
        task_id: task,
        status,
        evidence: masked(from, "evidence"),
        notes,
        command_summary: masked(from, "command_summary").or_else(|| masked(from, "command")),
        command_ref: masked(from, "command_ref"),
        command_sha256: masked(from, "command_sha256"),
    }
}

/// One event of a 2.0.0 workspace's timeline, as a reader shows it: where it sits, who wrote
/// it, and what it says (the same mapping as the recent entries of [`ProjectState`]).
#[derive(Debug, Clone, Serialize)]
pub struct EventEntry {
    /// 1-based position in the timeline (the reducer's order).
    pub position: usize,
    pub event_id: String,
    pub session_id: String,
    pub sequence: i64,
    pub kind: String,
    /// The event as a timeline entry, the task named as people name it (its alias when it
    /// has one), made from the members held for every event: [`EventTimeline::full`] gives
    /// it with the whole payload.
    pub entry: RecentEntry,
    /// For an event that names evidence receipts: whether every one of them is present and
    /// verified. `None` when it names none.
    pub receipt_verified: Option<bool>,
    /// The event as loaded (its payload holds only the members the reducer reads).
    #[serde(skip)]
    event: Event,
}

/// The whole timeline of a 2.0.0 workspace, oldest first, with the problems that make it
/// untrustworthy (damaged records or event graph), as [`load`] reports them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EventTimeline {
    pub entries: Vec<EventEntry>,
    pub problems: Vec<String>,
    /// The directory holding `.small/`, and each task's alias by id (for [`Self::full`]).
    #[serde(skip)]
    root: std::path::PathBuf,
    #[serde(skip)]
    aliases: HashMap<String, String>,
}

impl EventTimeline {
    /// `e`'s entry with every member of its payload (notes, commands, an imported entry's
    /// fields), read again from its record: the timeline itself keeps only the members the
    /// reducer reads, so that a long history stays small in memory. Call it for the entries
    /// shown.
    pub fn full(&self, e: &EventEntry) -> RecentEntry {
        entry(&e.event, &e.event.full_payload(&self.root), &self.aliases)
    }
}

/// Every event of the 2.0.0 workspace under `small_dir`, in timeline order.
pub fn event_timeline(root: &std::path::Path, small_dir: &std::path::Path) -> EventTimeline {
    let (checked, store) = crate::v2::check_store_ordered(root, small_dir);
    let problems = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && stage_of(&d.code) != Stage::State)
        .map(|d| crate::secrets::redact(&d.message).into_owned())
        .collect();
    let s = checked.state;
    let alias: HashMap<&str, &str> = s
        .tasks
        .iter()
        .filter(|t| !t.alias.is_empty())
        .map(|t| (t.id.as_str(), t.alias.as_str()))
        .collect();
    let verified: std::collections::HashSet<&str> = store
        .receipts
        .iter()
        .filter(|r| r.availability == "verified")
        .map(|r| r.digest.as_str())
        .collect();
    let entries = s
        .order
        .iter()
        .filter_map(|&i| store.events.get(i))
        .enumerate()
        .map(|(i, e)| {
            let digests = e.payload.strs_of("evidence_digests");
            EventEntry {
                position: i + 1,
                event_id: e.id.clone(),
                session_id: e.session_id.clone(),
                sequence: e.sequence,
                kind: e.kind.clone(),
                entry: entry(e, &e.payload, &alias),
                receipt_verified: (!digests.is_empty())
                    .then(|| digests.iter().all(|d| verified.contains(d.as_str()))),
                event: (*e).clone(),
            }
        })
        .collect();
    let aliases = alias
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    EventTimeline {
        entries,
        problems,
        root: root.to_path_buf(),
        aliases,
    }
}
