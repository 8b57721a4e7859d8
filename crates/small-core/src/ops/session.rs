//! `session start`, `session close`, `session list`, `session show`: the sessions of a 2.0.0
//! workspace (a v1 workspace has none; the operations refuse it).

use std::time::Duration;

use serde::Serialize;

use crate::ops::members_json;
use crate::ops::{require_v2, OpError, OpResult, Workspace};
use crate::v2::inspect::{self, ShowError};
use crate::v2::read;
use crate::v2::write as v2w;

/// A started session: its record and the events that started it (the reference's keys).
#[derive(Debug, Clone, Serialize)]
pub struct SessionStarted {
    pub events: Vec<serde_json::Value>,
    pub session: serde_json::Value,
    /// The new session's id and the mode in force (for the human lines).
    #[serde(skip)]
    pub session_id: String,
    #[serde(skip)]
    pub mode: String,
    /// The session a take-over superseded.
    #[serde(skip)]
    pub took_over: Option<String>,
}

/// A closed session: its handoff and `session_closed` events.
#[derive(Debug, Clone, Serialize)]
pub struct SessionClosed {
    pub events: Vec<serde_json::Value>,
    pub session_id: String,
    #[serde(skip)]
    pub handoff_event: String,
}

/// Start a session (it becomes the active one here).
pub fn start(
    ws: &Workspace,
    req: &StartRequest,
    lock: Option<Duration>,
) -> OpResult<SessionStarted> {
    require_v2(ws, "sessions")?;
    let mut w = ws.writer(lock)?;
    let out = v2w::start_session(&mut w, req)?;
    Ok(SessionStarted {
        events: out
            .events
            .iter()
            .map(|e| members_json(&e.members))
            .collect(),
        session: members_json(&out.session_members),
        session_id: out.session.session_id.clone(),
        mode: w.state.mode.clone(),
        took_over: req.takeover.clone().filter(|_| out.events.len() > 1),
    })
}

/// Record a handoff summary and close `session` (default: the active one).
pub fn close(
    ws: &Workspace,
    session: Option<&str>,
    summary: &str,
    lock: Option<Duration>,
) -> OpResult<SessionClosed> {
    require_v2(ws, "sessions")?;
    let session = v2w::resolve_session(&ws.root, session)?;
    let mut w = ws.writer(lock)?;
    let events = v2w::close_session(&mut w, &session, summary)?;
    Ok(SessionClosed {
        handoff_event: events
            .first()
            .map(|e| e.draft.event_id.clone())
            .unwrap_or_default(),
        events: events.iter().map(|e| members_json(&e.members)).collect(),
        session_id: session,
    })
}

/// Every session, with its status and event count.
pub fn list(ws: &Workspace) -> OpResult<SessionList> {
    require_v2(ws, "sessions")?;
    read::session_list(&ws.root, &ws.small_dir).map_err(damaged)
}

/// One session (`query`: an id or a unique prefix; default: the active one).
pub fn show(ws: &Workspace, query: Option<&str>) -> OpResult<SessionShow> {
    require_v2(ws, "sessions")?;
    inspect::session_show(&ws.root, &ws.small_dir, query).map_err(|e| match e {
        ShowError::Damaged(diags) => damaged(diags),
        ShowError::NoneSelected => OpError::invalid(
            v2w::code::NO_SESSION,
            "no session given and none is selected here",
        )
        .with_help("pass a session id (`small session list` lists them)"),
        ShowError::NotFound(q) => OpError::invalid(
            v2w::code::SESSION_STATE,
            format!("no session `{}`", q.escape_debug()),
        )
        .with_help("`small session list` lists the sessions"),
        ShowError::Ambiguous(q, ids) => OpError::invalid(
            v2w::code::SESSION_STATE,
            format!(
                "`{}` names {} sessions: {}",
                q.escape_debug(),
                ids.len(),
                ids.join(", ")
            ),
        )
        .with_help("give more of the id"),
    })
}

/// The refusal of damaged records, with their findings.
pub(crate) fn damaged(diags: Vec<crate::diag::Diagnostic>) -> OpError {
    OpError::invalid(
        v2w::code::DAMAGED,
        "the 2.0.0 records are damaged (see `small check --strict`)",
    )
    .with_details(diags)
}

/// Who works in a session, as its record says: `actor_label` and `model_label`
/// (`session start --actor-label/--model-label`); empty when not given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Labels {
    pub actor: String,
    pub model: String,
}

/// The most session records [`labels`] reads.
const MAX_LABELLED_SESSIONS: usize = 10_000;

/// The actor and model labels of every session of a 2.0.0 workspace, by session id (empty
/// for a v1 workspace). A record that cannot be read is left out: the gates report it.
pub fn labels(ws: &Workspace) -> std::collections::BTreeMap<String, Labels> {
    ws.backend().session_labels(ws)
}

/// [`labels`] of a 2.0.0 workspace.
pub(super) fn labels_v2(ws: &Workspace) -> std::collections::BTreeMap<String, Labels> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(ws.small_dir.join("sessions")) else {
        return out;
    };
    for entry in dir.flatten().take(MAX_LABELLED_SESSIONS) {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = crate::fsio::read_string_bounded(&path, crate::v2::load::MAX_RECORD_BYTES)
        else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        let id = s("session_id");
        if id.is_empty() {
            continue;
        }
        out.insert(
            id,
            Labels {
                actor: s("actor_label"),
                model: s("model_label"),
            },
        );
    }
    out
}

/// The 2.0.0 documents the session commands and `reconstruct` print (built in `v2`).
impl crate::ops::report::Report for SessionStarted {
    fn text(&self) -> String {
        let mut o = format!("Started session {} ({} mode)\n", self.session_id, self.mode);
        if let Some(prior) = &self.took_over {
            o.push_str(&format!("  took over {prior}\n"));
        }
        o
    }
}

impl crate::ops::report::Report for SessionClosed {
    fn text(&self) -> String {
        format!(
            "Closed session {}; handoff {}\n",
            self.session_id, self.handoff_event
        )
    }
}

impl crate::ops::report::Report for SessionList {
    /// The sessions, one a line: id, status, events, when it began, its label.
    fn text(&self) -> String {
        use crate::ops::report::outln;
        let mut o = String::new();
        outln!(o, "Sessions: {} ({} mode)", self.sessions.len(), self.mode);
        for s in &self.sessions {
            let label = if s.label.is_empty() { "-" } else { &s.label };
            outln!(
                o,
                "  {}  {:<10}  {:>4} events  {}  {label}",
                s.session_id,
                s.status,
                s.events,
                s.created_at
            );
        }
        o
    }
}

pub use crate::v2::inspect::SessionShow;
pub use crate::v2::load::PROFILE_VERSION;
pub use crate::v2::read::{Reconstruction, SessionList};
pub use crate::v2::status::Status;
pub use crate::v2::write::StartRequest;

impl crate::ops::report::Report for SessionShow {
    /// The session's record and status, its events by kind, first and last, the tasks it
    /// named, the receipts it cited and its handoff.
    fn text(&self) -> String {
        use crate::ops::report::{or_dash, outln};
        let s = self;
        let mut o = String::new();
        outln!(
            o,
            "Session {}{}",
            s.session_id,
            if s.selected { " (selected here)" } else { "" }
        );
        outln!(o, "  label:      {}", or_dash(&s.label));
        if !s.actor_label.is_empty() {
            outln!(o, "  actor:      {}", s.actor_label);
        }
        if s.superseded_by.is_empty() {
            outln!(o, "  status:     {}", s.status);
        } else {
            outln!(
                o,
                "  status:     {} (taken over by {})",
                s.status,
                s.superseded_by
            );
        }
        outln!(o, "  created:    {}", s.created_at);
        outln!(o, "  observed:   {}", or_dash(&s.observed_frontier));
        let kinds: Vec<String> = s.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        if kinds.is_empty() {
            outln!(o, "Events: {}", s.events);
        } else {
            outln!(o, "Events: {} ({})", s.events, kinds.join(", "));
        }
        for (what, e) in [("first", &s.first_event), ("last", &s.last_event)] {
            if let Some(e) = e {
                outln!(
                    o,
                    "  {what:<5} #{:<4} {}  {}  {}",
                    e.sequence,
                    e.kind,
                    e.occurred_at,
                    e.event_id
                );
            }
        }
        if !s.tasks.is_empty() {
            outln!(o, "Tasks ({}):", s.tasks.len());
            for t in &s.tasks {
                let name = if t.alias.is_empty() {
                    &t.task_id
                } else {
                    &t.alias
                };
                outln!(
                    o,
                    "  [{}] {name}  {}  ({} event(s))",
                    t.status,
                    t.title,
                    t.events
                );
            }
        }
        if !s.receipts.is_empty() {
            outln!(o, "Receipts ({}):", s.receipts.len());
            for r in &s.receipts {
                outln!(
                    o,
                    "  {}  {} {}{}",
                    crate::ops::runs::short_id(&r.digest, 12),
                    r.strength,
                    r.availability,
                    if r.outcome.is_empty() {
                        String::new()
                    } else {
                        format!("  {}", r.outcome)
                    }
                );
            }
        }
        if let Some(h) = &s.handoff {
            outln!(o, "Handoff: {h}");
        }
        o
    }
}
