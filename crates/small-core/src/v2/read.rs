//! What `small reconstruct` and `small session list` show of a 2.0.0 workspace, read from
//! the records and the reduced [`State`](crate::v2::State). The leading keys are the reference's
//! (docs/v2.md); every string is masked for secrets.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::diag::Diagnostic;
use crate::v2::json::Jv;
use crate::v2::load::{Event, Store};
use crate::v2::reduce::{Conflict, State, Task};
use crate::v2::{stage_of, Stage, PROFILE_VERSION};

/// The reference's cap on the bytes of the events a reconstruction returns.
pub const MAX_EVENT_BYTES: usize = 65536;

/// The records and state of a 2.0.0 tree, or why they cannot be shown.
pub struct Opened {
    pub store: Store,
    pub state: State,
}

/// Load and check the tree; `Err` with the record and graph problems (conflicts and policy
/// findings are state, not damage) when there are any: a damaged tree is not reconstructed.
pub fn open(root: &Path, small_dir: &Path) -> Result<Opened, Vec<Diagnostic>> {
    let (c, store) = crate::v2::check_store_ordered(root, small_dir);
    let problems: Vec<Diagnostic> = c
        .diagnostics
        .into_iter()
        .filter(|d| d.is_error() && stage_of(&d.code) != Stage::State)
        .collect();
    if problems.is_empty() {
        Ok(Opened {
            store,
            state: c.state,
        })
    } else {
        Err(problems)
    }
}

/// A JSON value of a record, members in file order.
pub fn to_value(v: &Jv) -> Value {
    match v {
        Jv::Null => Value::Null,
        Jv::Bool(b) => Value::Bool(*b),
        Jv::Int(i) => Value::from(*i),
        Jv::Str(s) => Value::String(s.clone()),
        Jv::Arr(items) => Value::Array(items.iter().map(to_value).collect()),
        Jv::Obj(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), to_value(v))).collect()),
    }
}

/// One event as the reference shows it (its record's members; empty ones left out).
#[derive(Debug, Clone, Serialize)]
pub struct EventView {
    pub small_version: &'static str,
    pub project_id: String,
    pub lineage_id: String,
    pub session_id: String,
    pub event_id: String,
    pub kind: String,
    pub sequence: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub previous_event: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    pub occurred_at: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    #[serde(skip_serializing_if = "crate::json::is_zero")]
    pub task_revision: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub policy_revision: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source_digest: String,
    pub payload: Value,
    pub digest: String,
}

impl EventView {
    /// The view of `e`, its whole payload read again from its record under `root`.
    fn new(e: &Event, root: &Path, project_id: &str, lineage_id: &str) -> EventView {
        EventView {
            small_version: PROFILE_VERSION,
            project_id: project_id.to_string(),
            lineage_id: lineage_id.to_string(),
            session_id: e.session_id.clone(),
            event_id: e.id.clone(),
            kind: e.kind.clone(),
            sequence: e.sequence,
            previous_event: e.previous_event.clone(),
            parents: e.parents.clone(),
            occurred_at: e.occurred_at.clone(),
            task_id: e.task_id.clone(),
            task_revision: e.task_revision,
            policy_revision: e.policy_revision.clone(),
            source_digest: e.source_digest.clone(),
            payload: {
                let mut p = to_value(&e.full_payload(root));
                crate::secrets::redact_json(&mut p);
                p
            },
            digest: e.digest.clone(),
        }
    }
}

/// A task with its policy revision (the reference's keys).
#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    #[serde(flatten)]
    pub task: Task,
    pub policy_revision: String,
}

impl From<&Task> for TaskView {
    fn from(t: &Task) -> TaskView {
        let mut task = t.clone();
        task.title = masked(&task.title);
        TaskView {
            task,
            policy_revision: t.policy_revision.clone(),
        }
    }
}

/// A receipt and what a check of its evidence found now (the reference's keys, then small's).
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceView {
    pub receipt_digest: String,
    /// `verified`, `unavailable`, `failed`, or a receipt without an artifact's availability.
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub artifact_path: String,
    pub strength: String,
    pub availability: String,
}

/// What to reconstruct.
#[derive(Debug, Clone, Default)]
pub struct ReconstructOptions {
    /// A task id or alias: its events (and the events of no task) only.
    pub task: Option<String>,
    /// Only events that occurred at or after this RFC 3339 time.
    pub since: Option<String>,
    /// The newest N matching events (0: all).
    pub limit: usize,
    /// The most bytes of encoded events returned (0: no cap; at least one event is returned).
    pub max_bytes: usize,
    /// A session id: its events only, unless `resume`.
    pub session: Option<String>,
    /// The bounded resume packet: the session (the one named, else the active one) is checked
    /// and reported, and the events of every session are returned.
    pub resume: bool,
}

/// The reconstruction of a 2.0.0 workspace (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
pub struct Reconstruction {
    pub profile: &'static str,
    pub project_id: String,
    pub lineage_id: String,
    pub mode: String,
    pub frontier: String,
    /// The session asked for (`--session`, or the active one with `--resume`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskView>,
    /// The tasks not completed, and the tasks in an unresolved conflict, by id (as the
    /// reference orders them).
    pub obligations: Vec<TaskView>,
    /// The handoff_recorded events; `null` when there is none (as the reference prints it).
    #[serde(serialize_with = "null_if_empty")]
    pub handoffs: Vec<EventView>,
    pub conflicts: Vec<Conflict>,
    pub evidence: Vec<EvidenceView>,
    pub events: Vec<EventView>,
    pub matched_events: usize,
    pub returned_events: usize,
    pub returned_event_bytes: usize,
    pub limit: usize,
    pub max_bytes: usize,
    /// Older matching events were left out by the limit or the byte cap.
    pub truncated: bool,
}

/// Why a reconstruction was refused.
#[derive(Debug, Clone)]
pub enum ReconstructError {
    /// The tree is damaged: its record and graph problems.
    Damaged(Vec<Diagnostic>),
    /// No task has this id or alias.
    UnknownTask(String),
    /// The session named is not in the records, or none was named and none is active: the
    /// refusal's code and message.
    Session(&'static str, String),
}

/// Reconstruct the 2.0.0 tree at `root/.small`.
pub fn reconstruct(
    root: &Path,
    small_dir: &Path,
    opts: &ReconstructOptions,
) -> Result<Reconstruction, ReconstructError> {
    let o = open(root, small_dir).map_err(ReconstructError::Damaged)?;
    let (s, store) = (&o.state, &o.store);
    let profile = store.profile.clone().unwrap_or_default();
    let task = match &opts.task {
        None => None,
        Some(want) => Some(
            s.tasks
                .iter()
                .find(|t| t.id == *want || (!t.alias.is_empty() && t.alias == *want))
                .ok_or_else(|| ReconstructError::UnknownTask(want.clone()))?,
        ),
    };
    let session = match (&opts.session, opts.resume) {
        (None, false) => None,
        (named, _) => Some(session_of(root, store, named.as_deref())?),
    };
    let only_session = session.as_deref().filter(|_| !opts.resume);
    let view = |e: &Event| EventView::new(e, root, &s.project_id, &profile.lineage_id);
    let ordered: Vec<&Event> = s
        .order
        .iter()
        .filter_map(|&i| store.events.get(i))
        .collect();
    let matched: Vec<&Event> = ordered
        .iter()
        .copied()
        .filter(|e| only_session.is_none_or(|id| e.session_id == id))
        .filter(|e| task.is_none_or(|t| e.task_id.is_empty() || e.task_id == t.id))
        .filter(|e| {
            opts.since
                .as_deref()
                .is_none_or(|since| e.occurred_at.as_str() >= since)
        })
        .collect();
    // The newest events within the limit and the byte cap, shown oldest first.
    let mut events = Vec::new();
    let mut bytes = 0;
    for e in matched.iter().rev() {
        if opts.limit > 0 && events.len() >= opts.limit {
            break;
        }
        let v = view(e);
        let size = serde_json::to_vec(&v).map_or(0, |b| b.len());
        if opts.max_bytes > 0 && !events.is_empty() && bytes + size > opts.max_bytes {
            break;
        }
        bytes += size;
        events.push(v);
    }
    events.reverse();
    Ok(Reconstruction {
        profile: PROFILE_VERSION,
        project_id: s.project_id.clone(),
        lineage_id: profile.lineage_id.clone(),
        mode: s.mode.clone(),
        frontier: s.frontier.clone(),
        task: task.map(TaskView::from),
        obligations: obligations(s),
        handoffs: ordered
            .iter()
            .filter(|e| e.kind == "handoff_recorded")
            .map(|e| view(e))
            .collect(),
        conflicts: s.conflicts.clone(),
        evidence: evidence(store, root),
        matched_events: matched.len(),
        returned_events: events.len(),
        returned_event_bytes: bytes,
        truncated: events.len() < matched.len(),
        events,
        limit: opts.limit,
        max_bytes: opts.max_bytes,
        session_id: session,
    })
}

/// The tasks not completed, and the tasks in an unresolved conflict, by id.
fn obligations(s: &State) -> Vec<TaskView> {
    let mut open: Vec<&Task> = s
        .tasks
        .iter()
        .filter(|t| t.status != "completed" || s.conflicts.iter().any(|c| c.task_id == t.id))
        .collect();
    open.sort_by(|a, b| a.id.cmp(&b.id));
    open.into_iter().map(TaskView::from).collect()
}

/// An empty list as `null`, a list as itself.
fn null_if_empty<T: Serialize, S: serde::Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    if v.is_empty() {
        s.serialize_none()
    } else {
        v.serialize(s)
    }
}

/// The session a reconstruction names: `named`, else the active one; it must be recorded.
fn session_of(root: &Path, store: &Store, named: Option<&str>) -> Result<String, ReconstructError> {
    let id = crate::v2::write::resolve_session(root, named).map_err(|e| {
        let code = if e.diagnostic.code == crate::v2::write::code::NO_SESSION {
            crate::v2::write::code::NO_SESSION
        } else {
            crate::v2::write::code::SESSION_STATE
        };
        ReconstructError::Session(code, e.diagnostic.message.clone())
    })?;
    if store.sessions.iter().any(|x| x.id == id) {
        Ok(id)
    } else {
        Err(ReconstructError::Session(
            crate::v2::write::code::SESSION_STATE,
            format!("session {id} not found"),
        ))
    }
}

/// Every receipt with what a check of its evidence finds now, by digest.
fn evidence(store: &Store, root: &Path) -> Vec<EvidenceView> {
    let checked = crate::v2::write::verify_evidence(store, root);
    store
        .receipts
        .iter()
        .filter_map(|r| {
            let at = checked
                .binary_search_by(|v| v.receipt_digest.as_str().cmp(&r.digest))
                .ok()?;
            let v = &checked[at];
            Some(EvidenceView {
                receipt_digest: r.digest.clone(),
                status: v.status.clone(),
                reason: v.reason.clone(),
                artifact_path: v.artifact_path.clone(),
                strength: r.strength.clone(),
                availability: r.availability.clone(),
            })
        })
        .collect()
}

/// A string with its secrets masked (the masking of every front end).
fn masked(s: &str) -> String {
    let mut v = Value::String(s.to_string());
    crate::secrets::redact_json(&mut v);
    match v {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// One session (the reference's keys, then small's).
#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    pub created_at: String,
    pub label: String,
    pub observed_frontier: String,
    pub session_id: String,
    /// `active`, `closed` (a session_closed event) or `superseded` (taken over by another
    /// session; this outranks `closed`).
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub actor_label: String,
    /// How many events the session holds.
    pub events: usize,
}

/// `small session list` (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
pub struct SessionList {
    pub frontier: String,
    pub mode: String,
    pub sessions: Vec<SessionView>,
}

/// The sessions of the 2.0.0 tree at `root/.small`, by id (the reference's order).
pub fn session_list(root: &Path, small_dir: &Path) -> Result<SessionList, Vec<Diagnostic>> {
    let o = open(root, small_dir)?;
    let mut sessions: Vec<SessionView> = o
        .state
        .sessions
        .iter()
        .map(|s| {
            let rec = o.store.sessions.iter().find(|r| r.id == s.id);
            SessionView {
                created_at: s.created_at.clone(),
                label: masked(&s.label),
                observed_frontier: rec.map(|r| r.observed_frontier.clone()).unwrap_or_default(),
                session_id: s.id.clone(),
                status: s.status().to_string(),
                actor_label: rec.map(|r| masked(&r.actor_label)).unwrap_or_default(),
                events: s.events,
            }
        })
        .collect();
    sessions.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    Ok(SessionList {
        frontier: o.state.frontier.clone(),
        mode: o.state.mode.clone(),
        sessions,
    })
}
