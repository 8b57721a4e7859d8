//! The write side of the 2.0.0 session profile: typed operations that append immutable
//! records (docs/v2.md, "Working in a 2.0.0 workspace").
//!
//! Every operation is a [`Writer`]: it takes the workspace's write lock (`.small-cache/lock`,
//! the one every v1 transaction takes) and waits for it, up to a bound; starts from the
//! cached state when the stat proof shows the tree is the cached one (or the cached one plus
//! events that only extend it), else reads the records and refuses to write over damaged
//! ones; builds the records from the state it read under the lock (so concurrent writers
//! queue instead of failing); and publishes each record with an exclusive create
//! ([`record::publish`]). On the cached state, each append is folded in by the rules a full
//! read would apply to it ([`crate::v2::snapshot::fold`]); whatever the fold cannot prove
//! is read in full, as without a cache. Records are written in an order that leaves a
//! consistent tree after a crash at any instant: a session before its events, receipts
//! before the event that names them, events in sequence.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::diag::Diagnostic;
use crate::v2::gojson::GoValue;
use crate::v2::load::Store;
use crate::v2::record::{self, EventDraft, Ids, Members, ReceiptDraft, SessionDraft};
use crate::v2::snapshot::carry::Carry;
use crate::v2::snapshot::Folding;
use crate::v2::{self as v2, State, Task};
use crate::workspace::error::{code as acode, Error, Result};
use crate::workspace::txn::Transaction;

/// Codes of the 2.0.0 write refusals (docs/rules.md).
pub mod code {
    /// No session was named and none is selected in `.small-cache/active-session`.
    pub const NO_SESSION: &str = "V2-NO-SESSION";
    /// The session is unknown, closed or superseded; or solo mode has an active session.
    pub const SESSION_STATE: &str = "V2-SESSION-STATE";
    /// `--expect-state` does not name the current frontier.
    pub const STALE: &str = "V2-STALE";
    /// An authoritative handoff while a semantic conflict is unresolved.
    pub const CONFLICTED: &str = "V2-CONFLICTED";
    /// The records are damaged: nothing is written over them.
    pub const DAMAGED: &str = "V2-DAMAGED";
    /// A task reference that names no task, or more than one.
    pub const TASK: &str = "V2-TASK";
    /// Evidence that does not meet what the operation requires.
    pub const EVIDENCE: &str = "V2-EVIDENCE";
}

/// The local selection of the active session (not part of the shared state).
pub const ACTIVE_SESSION_FILE: &str = ".small-cache/active-session";

/// The largest evidence file `evidence save` stores.
pub const MAX_EVIDENCE_BYTES: u64 = 64 << 20;

/// How long the read-only views (`mode show`, `policy show`) wait for a writer to finish.
pub const DEFAULT_READ_WAIT: Duration = Duration::from_secs(60);

/// The tool version written into session records.
pub const TOOL_VERSION: &str = concat!("small-", env!("CARGO_PKG_VERSION"));

fn refused(code: &str, message: impl Into<String>) -> Error {
    Error::invalid(code, message)
}

fn usage(message: impl Into<String>) -> Error {
    Error::usage(acode::USAGE, message)
}

/// A value the request gave empty (the flag was there): refused, not a malformed request.
fn blank(message: impl Into<String>) -> Error {
    Error::invalid(acode::USAGE, message)
}

fn publish_err(e: record::PublishError) -> Error {
    match e {
        record::PublishError::Different(p) => refused(
            acode::REFUSED,
            format!(
                "immutable record {} already holds different bytes",
                p.display()
            ),
        )
        .with_help("records are never replaced; restore the file from version control"),
        record::PublishError::Io { what, path, source } => Error::system(
            acode::IO,
            format!("cannot {what} {}: {source}", path.display()),
        ),
    }
}

fn too_large(e: record::TooLarge) -> Error {
    refused(acode::REFUSED, e.to_string()).with_help("shorten the text you passed")
}

/// A task as writers need it: the reduced task plus what its definition says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    pub task: Task,
    pub acceptance: Vec<String>,
    pub source_digest: String,
}

/// A published event: its record as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub draft: EventDraft,
    pub digest: String,
    /// The record's members (with `digest`), for `--json`.
    pub members: Members,
}

/// A published receipt.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenReceipt {
    pub digest: String,
    pub members: Members,
}

/// An event to append.
#[derive(Debug, Clone, Default)]
pub struct Append {
    pub kind: String,
    pub task_id: String,
    pub task_revision: i64,
    /// `None`: the policy revision in force.
    pub policy_revision: Option<String>,
    pub source_digest: String,
    pub payload: Members,
    pub parents: Vec<String>,
    /// `None`: now.
    pub occurred_at: Option<String>,
}

/// The workspace, locked for writing, with the records read under the lock.
pub struct Writer {
    root: PathBuf,
    small_dir: PathBuf,
    _lock: Transaction,
    /// The records, as read under the lock (see [`Writer::refresh`]); empty while the
    /// writer works on the cached state ([`Writer::store`] reads them then).
    store: Store,
    /// Their state, as read under the lock.
    pub state: State,
    /// An event was published since the records were read: read them again before the
    /// next append (the session's last event and the heads changed).
    dirty: bool,
    /// What is needed to write the state cache for the tree this writer leaves
    /// ([`crate::v2::snapshot::carry`]).
    carry: std::sync::Mutex<Option<Carry>>,
    /// The cached state the writer started from, with its appends folded in (its `state`
    /// lives in [`Writer::state`]); `None` once the records were read in full.
    cached: Option<Folding>,
}

impl Drop for Writer {
    /// Still holding the lock: carry the state cache forward over what was published.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        // Appends not yet folded into the cached state are folded first.
        if self.cached.is_some() && self.dirty && !self.fold_own() {
            return;
        }
        let carry = self
            .carry
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(c) = carry else { return };
        // Whether a cache was left changes no answer, only the next command's cost.
        match self.cached.take() {
            Some(mut f) => {
                f.snap.state = std::mem::take(&mut self.state);
                c.finish_cached(&self.root, &self.small_dir, f);
            }
            None => {
                c.finish(&self.root, &self.small_dir, std::mem::take(&mut self.store));
            }
        }
    }
}

impl Writer {
    /// Lock the 2.0.0 workspace at `root`, waiting up to `timeout`, and read it. Damaged
    /// records are refused (conflicts are not: they are resolved by writing). The caller has
    /// made sure the workspace is a 2.0.0 one (the profile's back end opens writers).
    pub fn open(root: &Path, timeout: Duration) -> Result<Writer> {
        let small_dir = root.join(crate::spec::consts::SMALL_DIR);
        let lock = Transaction::begin_with_timeout(root, timeout)?;
        // Proven before anything is read (the records read are at least this new).
        let carry = Carry::begin(&small_dir);
        let cached = carry
            .as_ref()
            .and_then(|c| crate::v2::snapshot::for_write(root, &small_dir, c.before()));
        let mut w = Writer {
            root: root.to_path_buf(),
            small_dir,
            _lock: lock,
            store: Store::default(),
            state: State::default(),
            dirty: false,
            carry: std::sync::Mutex::new(carry),
            cached: None,
        };
        match cached {
            Some(mut f) => {
                w.state = std::mem::take(&mut f.snap.state);
                w.cached = Some(f);
            }
            None => w.read_all()?,
        }
        Ok(w)
    }

    /// Whether the writer works on the cached state (no record was read in full).
    #[cfg(test)]
    pub fn on_cached_state(&self) -> bool {
        self.cached.is_some()
    }

    /// The records, read in full under the lock (once; the writer then goes on from them).
    pub fn store(&mut self) -> Result<&Store> {
        if self.cached.is_some() {
            self.cached = None;
            self.read_all()?;
        }
        self.fresh()?;
        Ok(&self.store)
    }

    /// Fold the records published since the state was last brought up to date into the
    /// cached state; `false` (the state then unusable) when they cannot be folded.
    fn fold_own(&mut self) -> bool {
        let pending = self.carry_mut().as_mut().and_then(Carry::take_pending);
        let (Some(records), Some(f)) = (pending, self.cached.as_mut()) else {
            return false;
        };
        f.snap.state = std::mem::take(&mut self.state);
        let folded = f.add(&self.root, &self.small_dir, &records).is_some();
        self.state = std::mem::take(&mut f.snap.state);
        folded
    }

    /// Read the records again. `store` and `state` are as read before the last append until
    /// this runs (another append runs it first by itself).
    pub fn refresh(&mut self) -> Result<()> {
        if self.cached.is_some() {
            if self.dirty && self.fold_own() {
                self.dirty = false;
                return Ok(());
            }
            // Not foldable (or asked to read again): the records are read in full.
            self.cached = None;
            return self.read_all();
        }
        // After its own appends the writer proves the tree is its records plus the ones it
        // published and adds those from the bytes it wrote, instead of reading every record
        // again (v2/snapshot/carry.rs); failing that, it reads them all.
        if self.dirty {
            let mut carry = self.carry_mut().take();
            let advanced = carry.as_mut().and_then(|c| {
                let mut store = std::mem::take(&mut self.store);
                let r = c.advance(&self.root, &self.small_dir, &mut store);
                self.store = store;
                r
            });
            *self.carry_mut() = carry;
            if let Some((checked, _)) = advanced {
                self.state = checked.state;
                self.dirty = false;
                return Ok(());
            }
        }
        self.read_all()
    }

    /// Read and check every record; refuse damaged ones.
    fn read_all(&mut self) -> Result<()> {
        let (checked, store) = v2::check_store(&self.root, &self.small_dir);
        let damage: Vec<&Diagnostic> = checked
            .diagnostics
            .iter()
            .filter(|d| d.is_error() && v2::stage_of(&d.code) != v2::Stage::State)
            .collect();
        if let Some(first) = damage.first() {
            let mut e = refused(
                code::DAMAGED,
                format!(
                    "the 2.0.0 records are damaged ({} problem(s); first: {} {})",
                    damage.len(),
                    first.code,
                    first.message
                ),
            )
            .with_help("run `small check --strict` and repair the records before writing");
            if let Some(f) = &first.file {
                e = e.in_file(f.clone());
            }
            return Err(e);
        }
        if store.profile.is_none() {
            return Err(
                refused(code::DAMAGED, "profile.json is missing").in_file(".small/profile.json")
            );
        }
        self.state = checked.state;
        self.store = store;
        self.dirty = false;
        if let Some(c) = self.carry_mut().as_mut() {
            c.reread();
        }
        Ok(())
    }

    /// Read the records again if an event was published since they were read.
    pub fn fresh(&mut self) -> Result<()> {
        if self.dirty {
            self.refresh()?;
        }
        Ok(())
    }

    fn ids(&self) -> Ids {
        let p = match &self.cached {
            Some(f) => f.profile().clone(),
            None => self.store.profile.clone().unwrap_or_default(),
        };
        Ids {
            project_id: p.project_id,
            lineage_id: p.lineage_id,
        }
    }

    /// The state's frontier (after every append so far). On the cached state it is computed
    /// when first asked for after an append: most writes never show it.
    pub fn frontier(&mut self) -> Result<String> {
        self.fresh()?;
        if let Some(f) = self.cached.as_mut() {
            f.snap.state = std::mem::take(&mut self.state);
            let settled = f.settle().is_some();
            self.state = std::mem::take(&mut f.snap.state);
            if !settled {
                // The lines file the frontier needs is not the cached one: read in full.
                self.cached = None;
                self.read_all()?;
            }
        }
        Ok(self.state.frontier.clone())
    }

    /// Fail unless the frontier is `expected`.
    pub fn expect_state(&mut self, expected: &str) -> Result<()> {
        let frontier = self.frontier()?;
        if expected.trim() != frontier {
            return Err(refused(
                code::STALE,
                format!(
                    "stale state frontier: expected {}, actual {}",
                    expected.trim(),
                    frontier
                ),
            )
            .with_help("read the state again (`small status --json` prints `frontier`), review it, and retry with the current frontier"));
        }
        Ok(())
    }

    /// Sessions neither closed nor superseded, sorted by id.
    pub fn active_sessions(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .state
            .sessions
            .iter()
            .filter(|s| s.is_active())
            .map(|s| s.id.clone())
            .collect();
        out.sort();
        out
    }

    fn require_active(&self, session: &str) -> Result<()> {
        let Some(s) = self.state.sessions.iter().find(|s| s.id == session) else {
            return Err(
                refused(code::SESSION_STATE, format!("session {session} not found")).with_help(
                    "`small session list` shows the sessions; `small session start` starts one",
                ),
            );
        };
        if !s.is_active() {
            let how = if s.superseded {
                "superseded by a take-over"
            } else {
                "closed"
            };
            return Err(refused(
                code::SESSION_STATE,
                format!("session {session} is not active ({how})"),
            )
            .with_help("start a new session with `small session start`"));
        }
        Ok(())
    }

    /// Events no other event names as previous or parent.
    fn heads(&self) -> Vec<String> {
        if let Some(f) = &self.cached {
            return f.heads().to_vec();
        }
        let mut named: BTreeSet<&str> = BTreeSet::new();
        for e in &self.store.events {
            for p in e.all_parents() {
                named.insert(p);
            }
        }
        let mut out: Vec<String> = self
            .store
            .events
            .iter()
            .map(|e| e.id.clone())
            .filter(|id| !named.contains(id.as_str()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The sequence number and id of `session`'s last event (`(0, "")` for none).
    fn tip_of(&self, session: &str) -> (i64, String) {
        if let Some(f) = &self.cached {
            // A fold keeps each session's sequences contiguous from 1.
            let (count, last) = f.tip(session);
            return (count as i64, last.to_string());
        }
        self.store
            .events
            .iter()
            .filter(|e| e.session_id == session)
            .max_by_key(|e| e.sequence)
            .map_or((0, String::new()), |e| (e.sequence, e.id.clone()))
    }

    /// Find a task by id or alias.
    pub fn task(&self, reference: &str) -> Result<TaskRef> {
        let r = reference.trim();
        let found = match self.state.tasks.iter().find(|t| t.id == r) {
            Some(t) => t.clone(),
            None => {
                let m: Vec<&Task> = self.state.tasks.iter().filter(|t| t.alias == r).collect();
                match m.as_slice() {
                    [t] => (*t).clone(),
                    [] => {
                        return Err(refused(code::TASK, format!("task {r} not found"))
                            .with_help("`small plan` lists the tasks (alias, id, status)"))
                    }
                    _ => {
                        return Err(refused(
                            code::TASK,
                            format!("task alias {r} is ambiguous; use the task id"),
                        ))
                    }
                }
            }
        };
        Ok(TaskRef {
            // The criteria of the definition the state holds in force (the one its revision
            // and policy revision come from).
            acceptance: found.acceptance.clone(),
            // The task's source as the state holds it (its definition's, or the selected
            // outcome's candidate), as the reference stamps it on receipts and transitions.
            source_digest: found.source_digest.clone(),
            task: found,
        })
    }

    fn publish(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        let done = record::publish(&self.root, &self.small_dir, rel, bytes).map_err(publish_err)?;
        if done == record::Published::Created {
            if let Some(c) = self.carry_mut().as_mut() {
                c.published(rel, bytes);
            }
        }
        Ok(())
    }

    fn carry_mut(&self) -> std::sync::MutexGuard<'_, Option<Carry>> {
        self.carry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn publish_receipt(&self, r: &ReceiptDraft) -> Result<WrittenReceipt> {
        let ids = self.ids();
        let members = r.members(&ids.project_id);
        let (bytes, digest) = record::seal(members.clone()).map_err(too_large)?;
        self.publish(&format!("receipts/sha256/{digest}.json"), &bytes)?;
        let mut members = members;
        members.push(("digest".into(), GoValue::str(&digest)));
        Ok(WrittenReceipt { digest, members })
    }

    /// Append one event to `session` (which must be active).
    pub fn append(&mut self, session: &str, a: Append) -> Result<Written> {
        if self.dirty {
            self.refresh()?;
        }
        self.require_active(session)?;
        self.append_unchecked(session, a)
    }

    fn append_unchecked(&mut self, session: &str, a: Append) -> Result<Written> {
        if self.dirty {
            self.refresh()?;
        }
        let (last, previous) = self.tip_of(session);
        let sequence = last + 1;
        let mut parents: Vec<String> = self.heads();
        parents.extend(a.parents.iter().map(|p| p.trim().to_string()));
        parents.retain(|p| !p.is_empty() && *p != previous);
        parents.sort();
        parents.dedup();
        let draft = EventDraft {
            session_id: session.to_string(),
            event_id: record::new_id("event"),
            kind: a.kind,
            sequence,
            previous_event: previous,
            parents,
            occurred_at: a.occurred_at.unwrap_or_else(record::now),
            task_id: a.task_id.trim().to_string(),
            task_revision: a.task_revision,
            policy_revision: a
                .policy_revision
                .unwrap_or_else(|| self.state.policy_revision.clone()),
            source_digest: a.source_digest.trim().to_string(),
            payload: a.payload,
        };
        let ids = self.ids();
        let mut members = draft.members(&ids);
        let (bytes, digest) = record::seal(members.clone()).map_err(too_large)?;
        self.publish(&draft.rel_path(), &bytes)?;
        members.push(("digest".into(), GoValue::str(&digest)));
        self.dirty = true;
        Ok(Written {
            draft,
            digest,
            members,
        })
    }
}

fn s(v: &str) -> GoValue {
    GoValue::str(v)
}

fn trimmed(v: &Option<String>) -> String {
    v.as_deref().map(str::trim).unwrap_or_default().to_string()
}

/// The session named (trimmed), else the one selected in `.small-cache/active-session`.
pub fn resolve_session(root: &Path, explicit: Option<&str>) -> Result<String> {
    if let Some(id) = explicit.map(str::trim).filter(|s| !s.is_empty()) {
        return Ok(id.to_string());
    }
    let path = root.join(ACTIVE_SESSION_FILE);
    let text = crate::fsio::read_bounded_opt(&path, 4096)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    if text.is_empty() || text.contains(['/', '\\']) {
        return Err(
            refused(code::NO_SESSION, "no session given and none is active here")
                .with_help("pass --session ID, or start one with `small session start`"),
        );
    }
    Ok(text)
}

fn select_session(root: &Path, id: &str) -> Result<()> {
    crate::workspace::txn::atomic_write(
        root.join(ACTIVE_SESSION_FILE),
        format!("{id}\n").as_bytes(),
    )
    .map_err(Error::from)
}

fn clear_session_if(root: &Path, id: &str) {
    let path = root.join(ACTIVE_SESSION_FILE);
    if let Ok(Some(b)) = crate::fsio::read_bounded_opt(&path, 4096) {
        if String::from_utf8_lossy(&b).trim() == id {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What `session start` asks for.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    pub label: Option<String>,
    pub actor_label: Option<String>,
    pub model_label: Option<String>,
    pub parent_session: Option<String>,
    pub from_handoff: Option<String>,
    pub takeover: Option<String>,
    pub reason: Option<String>,
}

/// A started session.
#[derive(Debug, Clone)]
pub struct Started {
    pub session: SessionDraft,
    pub session_members: Members,
    pub events: Vec<Written>,
}

/// Start a session. In solo mode a second active session is refused unless it takes over
/// an active one with a reason. The new session becomes the local active selection.
pub fn start_session(w: &mut Writer, req: &StartRequest) -> Result<Started> {
    w.fresh()?;
    let parent = trimmed(&req.parent_session);
    if !parent.is_empty() && !w.state.sessions.iter().any(|s| s.id == parent) {
        return Err(refused(
            code::SESSION_STATE,
            format!("parent session {parent} not found"),
        ));
    }
    let from = trimmed(&req.from_handoff);
    if !from.is_empty()
        && !w
            .store()?
            .events
            .iter()
            .any(|e| e.id == from && e.kind == "handoff_recorded")
    {
        return Err(refused(
            code::SESSION_STATE,
            format!("handoff event {from} not found"),
        ));
    }
    let takeover = trimmed(&req.takeover);
    let reason = trimmed(&req.reason);
    if !takeover.is_empty() && reason.is_empty() {
        return Err(usage(
            "--takeover needs --reason (a non-empty reason is recorded)",
        ));
    }
    if takeover.is_empty() && !reason.is_empty() {
        return Err(usage("--reason is for --takeover"));
    }
    let active = w.active_sessions();
    if !takeover.is_empty() && !active.contains(&takeover) {
        return Err(refused(
            code::SESSION_STATE,
            format!("takeover target {takeover} is not an active session"),
        ));
    }
    if w.state.mode == "solo" && !active.is_empty() && takeover.is_empty() {
        return Err(refused(
            code::SESSION_STATE,
            format!(
                "solo mode already has active session {}; close it or use --takeover with --reason",
                active.join(",")
            ),
        )
        .with_help(format!(
            "`small session close --session {} --summary TEXT`, or `small session start --takeover {} --reason TEXT`",
            active[0], active[0]
        )));
    }
    let session = SessionDraft {
        session_id: record::new_id("session"),
        label: trimmed(&req.label),
        actor_label: trimmed(&req.actor_label),
        model_label: trimmed(&req.model_label),
        parent_session_id: parent,
        from_handoff: from,
        observed_frontier: w.frontier()?,
        tool_version: TOOL_VERSION.into(),
        created_at: record::now(),
    };
    let ids = w.ids();
    let mut members = session.members(&ids);
    let (bytes, digest) = record::seal(members.clone()).map_err(too_large)?;
    w.publish(&session.rel_path(), &bytes)?;
    members.push(("digest".into(), s(&digest)));
    let id = session.session_id.clone();
    let mut events = vec![w.append_unchecked(
        &id,
        Append {
            kind: "session_started".into(),
            policy_revision: Some(String::new()),
            payload: vec![
                ("label".into(), s(&session.label)),
                ("observed_frontier".into(), s(&session.observed_frontier)),
            ],
            ..Append::default()
        },
    )?];
    if !takeover.is_empty() {
        events.push(w.append_unchecked(
            &id,
            Append {
                kind: "ownership_taken_over".into(),
                policy_revision: Some(String::new()),
                payload: vec![
                    ("scope".into(), s("session")),
                    ("prior_session".into(), s(&takeover)),
                    ("owner_session".into(), s(&id)),
                    ("reason".into(), s(&reason)),
                ],
                ..Append::default()
            },
        )?);
    }
    select_session(&w.root, &id)?;
    Ok(Started {
        session,
        session_members: members,
        events,
    })
}

/// Record a handoff and close `session`; clears the local selection if it named it.
pub fn close_session(w: &mut Writer, session: &str, summary: &str) -> Result<Vec<Written>> {
    w.fresh()?;
    let summary = summary.trim();
    if summary.is_empty() {
        return Err(usage("--summary is required and must not be blank"));
    }
    w.require_active(session)?;
    let handoff = w.append(
        session,
        Append {
            kind: "handoff_recorded".into(),
            payload: vec![
                ("summary".into(), s(summary)),
                ("authoritative".into(), GoValue::Bool(true)),
            ],
            ..Append::default()
        },
    )?;
    let closed = w.append(
        session,
        Append {
            kind: "session_closed".into(),
            parents: vec![handoff.draft.event_id.clone()],
            payload: vec![("handoff_event".into(), s(&handoff.draft.event_id))],
            ..Append::default()
        },
    )?;
    clear_session_if(&w.root, session);
    Ok(vec![handoff, closed])
}

/// An authoritative handoff without closing the session. Refused while a semantic conflict
/// is unresolved: the handoff would claim a state that is not settled (and, moving the
/// frontier, would make the reviewed `reconcile --apply --expect-state` that settles it stale).
/// The event records the frontier it was written on (`input_frontier`).
pub fn handoff(w: &mut Writer, session: &str, summary: &str) -> Result<Written> {
    w.fresh()?;
    let summary = summary.trim();
    if summary.is_empty() {
        return Err(usage("--summary is required on a 2.0.0 workspace"));
    }
    if !w.state.conflicts.is_empty() {
        let ids: Vec<&str> = w.state.conflicts.iter().map(|c| c.id.as_str()).collect();
        return Err(refused(
            code::CONFLICTED,
            format!(
                "authoritative handoff refused: semantic conflicts remain: {} conflict(s) ({})",
                ids.len(),
                ids.join(", ")
            ),
        )
        .with_help("review them with `small reconcile --preview --json`, settle each with `small reconcile --apply`, then hand off"));
    }
    let input_frontier = w.frontier()?;
    w.append(
        session,
        Append {
            kind: "handoff_recorded".into(),
            payload: vec![
                ("summary".into(), s(summary)),
                ("authoritative".into(), GoValue::Bool(true)),
                ("input_frontier".into(), s(&input_frontier)),
            ],
            ..Append::default()
        },
    )
}

/// The progress statuses.
pub const STATUSES: &[&str] = &[
    "pending",
    "in_progress",
    "completed",
    "blocked",
    "cancelled",
];

/// A progress entry: a `task_transitioned` event.
pub fn progress(
    w: &mut Writer,
    session: &str,
    task: &str,
    status: &str,
    evidence: &str,
    notes: &str,
    occurred_at: Option<String>,
) -> Result<(TaskRef, Written)> {
    w.fresh()?;
    let status = status.trim().to_lowercase();
    if !STATUSES.contains(&status.as_str()) {
        return Err(refused(
            acode::REFUSED,
            format!("invalid status {status:?} (one of {})", STATUSES.join(", ")),
        ));
    }
    let t = w.task(task)?;
    if status == "completed" && !t.acceptance.is_empty() {
        return Err(refused(
            code::EVIDENCE,
            format!(
                "task {} has acceptance criteria; complete it with `small checkpoint --evidence`",
                t.task.alias
            ),
        ));
    }
    let mut payload = vec![("status".into(), s(&status))];
    if !evidence.trim().is_empty() {
        payload.push(("evidence".into(), s(evidence.trim())));
    }
    if !notes.trim().is_empty() {
        payload.push(("notes".into(), s(notes.trim())));
    }
    let e = w.append(session, transition(&t, payload, occurred_at))?;
    Ok((t, e))
}

fn transition(t: &TaskRef, payload: Members, occurred_at: Option<String>) -> Append {
    Append {
        kind: "task_transitioned".into(),
        task_id: t.task.id.clone(),
        task_revision: t.task.revision,
        policy_revision: Some(t.task.policy_revision.clone()).filter(|p| !p.is_empty()),
        source_digest: t.source_digest.clone(),
        payload,
        occurred_at,
        ..Append::default()
    }
}

/// A checkpoint: a narrative receipt for the evidence, then the `task_transitioned` event
/// naming it. `status` is completed or blocked; evidence is required.
pub fn checkpoint(
    w: &mut Writer,
    session: &str,
    task: &str,
    status: &str,
    evidence: &str,
    notes: &str,
) -> Result<(TaskRef, Written, WrittenReceipt)> {
    w.fresh()?;
    let status = status.trim().to_lowercase();
    if status != "completed" && status != "blocked" {
        return Err(refused(
            acode::REFUSED,
            format!("invalid status {status:?} (must be completed or blocked)"),
        ));
    }
    let evidence = evidence.trim();
    if evidence.is_empty() {
        return Err(refused(
            code::EVIDENCE,
            "a 2.0.0 checkpoint requires explicit --evidence",
        ));
    }
    w.require_active(session)?;
    let t = w.task(task)?;
    let accepted = if status == "completed" {
        acceptance_evidence(w, &t)?
    } else {
        Vec::new()
    };
    let receipt = w.publish_receipt(&ReceiptDraft {
        receipt_id: record::new_id("receipt"),
        strength: "narrative_assertion".into(),
        availability: "verified".into(),
        producer: vec![("tool".into(), s("small checkpoint"))],
        task_id: t.task.id.clone(),
        task_revision: t.task.revision,
        policy_revision: t.task.policy_revision.clone(),
        source_digest: t.source_digest.clone(),
        outcome: status.clone(),
        metadata: vec![
            ("evidence".into(), s(evidence)),
            ("notes".into(), s(notes.trim())),
        ],
        ..ReceiptDraft::default()
    })?;
    let mut payload = vec![
        ("status".into(), s(&status)),
        ("evidence".into(), s(evidence)),
        (
            "evidence_digests".into(),
            GoValue::Arr(
                std::iter::once(&receipt.digest)
                    .chain(&accepted)
                    .map(|d| s(d))
                    .collect(),
            ),
        ),
    ];
    if !notes.trim().is_empty() {
        payload.push(("notes".into(), s(notes.trim())));
    }
    let e = w.append(session, transition(&t, payload, None))?;
    Ok((t, e, receipt))
}

/// Outcomes that say a check did not pass: a receipt with one of them meets no criterion.
const FAILED_OUTCOMES: [&str; 5] = ["failed", "fail", "failure", "error", "errored"];

/// The receipts that let a checkpoint complete `t` when its definition states acceptance
/// criteria (docs/v2.md, "Acceptance"): verified, portable (`cli_captured` from `small
/// apply`, `verified_artifact` from `small evidence save`; a narrative assertion is the
/// checkpoint's own claim), for the task at its current revision and policy revision, with
/// an outcome that is not a failure. Sorted by digest; empty when the task states no
/// criteria. None of them: refused, naming the criteria and how to add evidence.
pub fn acceptance_evidence(w: &mut Writer, t: &TaskRef) -> Result<Vec<String>> {
    if t.acceptance.is_empty() {
        return Ok(Vec::new());
    }
    let mut found: Vec<String> = Vec::new();
    let mut stale = 0usize;
    let root = w.root.clone();
    for r in &w.store()?.receipts {
        if r.task_id != t.task.id
            || r.availability != "verified"
            || !(r.strength == "cli_captured" || r.strength == "verified_artifact")
            || FAILED_OUTCOMES.contains(&r.outcome.to_ascii_lowercase().as_str())
        {
            continue;
        }
        // The revisions are read from the record itself (checked when the store was read).
        let bytes =
            crate::fsio::read_bounded(&root.join(&r.file), crate::v2::load::MAX_RECORD_BYTES)
                .map_err(|e| {
                    Error::system(acode::IO, format!("cannot read receipt {}: {e}", r.file))
                })?;
        let Ok(v) = crate::v2::json::parse(&bytes) else {
            continue;
        };
        let revision = match v.get("task_revision") {
            Some(crate::v2::json::Jv::Int(n)) => *n,
            _ => 0,
        };
        let policy = v.str_of("policy_revision");
        if revision != t.task.revision || (!policy.is_empty() && policy != t.task.policy_revision) {
            stale += 1;
            continue;
        }
        found.push(r.digest.clone());
    }
    found.sort();
    found.dedup();
    if !found.is_empty() {
        return Ok(found);
    }
    let name = if t.task.alias.is_empty() {
        &t.task.id
    } else {
        &t.task.alias
    };
    let criteria: Vec<String> = t.acceptance.iter().map(|c| format!("{c:?}")).collect();
    let older = if stale > 0 {
        format!(" ({stale} receipt(s) are for an earlier revision of the task or its policy)")
    } else {
        String::new()
    };
    Err(refused(
        code::EVIDENCE,
        format!(
            "task {name} cannot be completed: it has {} acceptance criteria ({}) and no verified evidence for revision {}{older}",
            t.acceptance.len(),
            criteria.join(", "),
            t.task.revision
        ),
    )
    .with_help(format!(
        "save evidence that meets them with `small evidence save --task {name} --file FILE --validator NAME` (or record a passing check with `small apply --task {name} --cmd CMD`), then run the checkpoint again"
    )))
}

/// What `plan` changes on a 2.0.0 workspace (one change per call, or several dependencies:
/// [`plan_dependencies`]).
#[derive(Debug, Clone)]
pub enum PlanChange {
    Add { title: String },
    Status { task: String, status: String },
    Depends { task: String, on: String },
}

/// A `plan` change: `task_created` (alias `task-N`), `task_transitioned`, or
/// `task_updated` for a dependency.
pub fn plan(
    w: &mut Writer,
    session: &str,
    change: &PlanChange,
) -> Result<(String, String, Written)> {
    w.fresh()?;
    match change {
        PlanChange::Add { title } => {
            let title = title.trim();
            if title.is_empty() {
                return Err(usage("the task title must not be blank"));
            }
            let used: BTreeSet<&str> = w.state.tasks.iter().map(|t| t.alias.as_str()).collect();
            let alias = (1..)
                .map(|i| format!("task-{i}"))
                .find(|a| !used.contains(a.as_str()))
                .unwrap_or_default();
            let id = record::new_id("task");
            let e = w.append(
                session,
                Append {
                    kind: "task_created".into(),
                    task_id: id.clone(),
                    task_revision: 1,
                    payload: vec![("alias".into(), s(&alias)), ("title".into(), s(title))],
                    ..Append::default()
                },
            )?;
            Ok((alias, id, e))
        }
        PlanChange::Status { task, status } => {
            let t = w.task(task)?;
            if status == "completed" && !t.acceptance.is_empty() {
                return Err(refused(
                    code::EVIDENCE,
                    format!(
                        "task {} has acceptance criteria; use `small checkpoint --evidence`",
                        t.task.alias
                    ),
                ));
            }
            let e = w.append(
                session,
                transition(
                    &t,
                    vec![
                        ("status".into(), s(status)),
                        ("reason".into(), s("small plan lifecycle flag")),
                    ],
                    None,
                ),
            )?;
            Ok((t.task.alias.clone(), t.task.id.clone(), e))
        }
        PlanChange::Depends { task, on } => {
            let (t, d) = dependency(w, task, on)?;
            let mut deps = t.task.dependencies.clone();
            if !deps.contains(&d.task.id) {
                deps.push(d.task.id.clone());
            }
            deps.sort();
            let list = |v: &[String]| {
                if v.is_empty() {
                    GoValue::Null
                } else {
                    GoValue::Arr(v.iter().map(|x| s(x)).collect())
                }
            };
            let e = w.append(
                session,
                Append {
                    kind: "task_updated".into(),
                    task_id: t.task.id.clone(),
                    task_revision: t.task.revision + 1,
                    policy_revision: Some(t.task.policy_revision.clone()).filter(|p| !p.is_empty()),
                    source_digest: t.source_digest.clone(),
                    payload: vec![
                        ("alias".into(), s(&t.task.alias)),
                        ("title".into(), s(&t.task.title)),
                        ("acceptance".into(), list(&t.acceptance)),
                        ("dependencies".into(), list(&deps)),
                    ],
                    ..Append::default()
                },
            )?;
            Ok((t.task.alias.clone(), t.task.id.clone(), e))
        }
    }
}

/// The tasks of a dependency `task` on `on`, refused when either is unknown or they are the
/// same task.
fn dependency(w: &Writer, task: &str, on: &str) -> Result<(TaskRef, TaskRef)> {
    let t = w.task(task)?;
    let d = w.task(on)?;
    if t.task.id == d.task.id {
        return Err(refused(acode::REFUSED, "a task cannot depend on itself"));
    }
    Ok((t, d))
}

/// Several dependencies in one `plan` call, `(task, on)` each: one `task_updated` event
/// each, in order. Every one is checked before the first is written, so a refused one
/// writes nothing.
pub fn plan_dependencies(
    w: &mut Writer,
    session: &str,
    deps: &[(String, String)],
) -> Result<Vec<(String, String, Written)>> {
    w.fresh()?;
    for (task, on) in deps {
        dependency(w, task, on)?;
    }
    deps.iter()
        .map(|(task, on)| {
            let change = PlanChange::Depends {
                task: task.clone(),
                on: on.clone(),
            };
            plan(w, session, &change)
        })
        .collect()
}

/// The outcome of a command `apply` ran, to record.
#[derive(Debug, Clone)]
pub struct CommandRun {
    pub command: String,
    pub exit_code: i64,
    pub output: Vec<u8>,
}

/// The longest command summary recorded.
pub const COMMAND_SUMMARY_CAP: usize = 200;
/// How much of a command's output a receipt keeps.
pub const BOUNDED_OUTPUT: usize = 4000;

fn cut(s: &str, max: usize) -> (String, bool) {
    if s.len() <= max {
        return (s.to_string(), false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (s[..end].to_string(), true)
}

/// What `apply` is asked to record besides the command.
#[derive(Debug, Clone, Default)]
pub struct ApplyRequest<'a> {
    pub session: &'a str,
    pub task: Option<&'a str>,
    /// Checkpoint the task after the run: `completed` on exit 0, else `blocked`.
    pub auto_checkpoint: bool,
    /// The caller's acceptance evidence for that checkpoint.
    pub acceptance_evidence: Option<&'a str>,
    /// Record a handoff after a successful run.
    pub handoff: bool,
}

impl ApplyRequest<'_> {
    fn acceptance(&self) -> Option<&str> {
        self.acceptance_evidence
            .map(str::trim)
            .filter(|x| !x.is_empty())
    }
}

/// What `apply` recorded.
#[derive(Debug, Clone)]
pub struct ApplyOutcome {
    pub event: Written,
    pub receipt: WrittenReceipt,
    pub checkpointed: bool,
}

/// Before `apply` runs anything: refuse what the session could not record afterwards (the
/// session is not active, the task does not exist, an automatic checkpoint of a task with
/// acceptance criteria without the caller's acceptance evidence).
pub fn apply_precheck(w: &mut Writer, req: &ApplyRequest) -> Result<()> {
    w.fresh()?;
    if req.auto_checkpoint && req.acceptance().is_none() {
        let t = w.task(req.task.unwrap_or_default())?;
        if !t.acceptance.is_empty() {
            return Err(usage(format!(
                "--auto-checkpoint requires --acceptance-evidence for task {}",
                t.task.alias
            )));
        }
    }
    if !w.active_sessions().iter().any(|s| s == req.session) {
        return Err(refused(
            code::SESSION_STATE,
            format!("session {} is not active; nothing was run", req.session),
        ));
    }
    if let Some(t) = req.task {
        w.task(t)?;
    }
    Ok(())
}

/// After `apply` ran the command: record it ([`record_command`]; a failure says the command
/// ran and was not retried), then the automatic checkpoint and the handoff asked for.
pub fn apply_record(w: &mut Writer, req: &ApplyRequest, run: &CommandRun) -> Result<ApplyOutcome> {
    let (event, receipt) = record_command(w, req.session, req.task, run).map_err(|err| {
        refused(
            err.code(),
            format!(
                "the command ran (exit code {}) but its evidence was not recorded; it was not retried: {}",
                run.exit_code,
                err.message()
            ),
        )
    })?;
    let ok = run.exit_code == 0;
    if req.auto_checkpoint {
        let evidence = req.acceptance().map(str::to_string).unwrap_or_else(|| {
            format!(
                "Explicit acceptance of captured command result exit_code={}",
                run.exit_code
            )
        });
        checkpoint(
            w,
            req.session,
            req.task.unwrap_or_default(),
            if ok { "completed" } else { "blocked" },
            &evidence,
            "small apply --auto-checkpoint",
        )?;
    }
    if req.handoff && ok {
        handoff(
            w,
            req.session,
            &format!("Command completed successfully: {}", run.command.trim()),
        )?;
    }
    Ok(ApplyOutcome {
        event,
        receipt,
        checkpointed: req.auto_checkpoint,
    })
}

/// Record a command `apply` ran: a `cli_captured` receipt (exit code, bounded output), the
/// command text in `.small-cache/commands/<sha256>.txt`, and a `command_recorded` event.
pub fn record_command(
    w: &mut Writer,
    session: &str,
    task: Option<&str>,
    run: &CommandRun,
) -> Result<(Written, WrittenReceipt)> {
    w.fresh()?;
    w.require_active(session)?;
    let t = match task.map(str::trim).filter(|t| !t.is_empty()) {
        Some(r) => Some(w.task(r)?),
        None => None,
    };
    let sha = crate::v2::json::sha256_hex(run.command.as_bytes());
    let outcome = if run.exit_code == 0 {
        "succeeded"
    } else {
        "failed"
    };
    let text = String::from_utf8_lossy(&run.output);
    let masked = crate::secrets::redact(&text).into_owned();
    let (bounded, truncated) = cut(&masked, BOUNDED_OUTPUT);
    let summary = cut(
        &crate::secrets::redact(run.command.trim()),
        COMMAND_SUMMARY_CAP,
    )
    .0;
    let (task_id, rev, policy) = match &t {
        Some(t) => (
            t.task.id.clone(),
            t.task.revision,
            t.task.policy_revision.clone(),
        ),
        None => (String::new(), 0, String::new()),
    };
    let receipt = w.publish_receipt(&ReceiptDraft {
        receipt_id: record::new_id("receipt"),
        strength: "cli_captured".into(),
        availability: "verified".into(),
        producer: vec![
            ("tool".into(), s("small apply")),
            ("command_sha256".into(), s(&sha)),
        ],
        task_id: task_id.clone(),
        task_revision: rev,
        policy_revision: policy.clone(),
        source_digest: sha.clone(),
        outcome: outcome.into(),
        metadata: vec![
            ("exit_code".into(), GoValue::Int(run.exit_code)),
            ("bounded_output".into(), s(&bounded)),
            ("output_truncated".into(), GoValue::Bool(truncated)),
        ],
        ..ReceiptDraft::default()
    })?;
    let cmd_ref = format!(".small-cache/commands/{sha}.txt");
    // The local copy of the command (not shared state): best effort, masked.
    let _ = crate::workspace::txn::atomic_write(
        w.root.join(&cmd_ref),
        crate::secrets::redact(&run.command).as_bytes(),
    );
    let e = w.append(
        session,
        Append {
            kind: "command_recorded".into(),
            task_id,
            task_revision: rev,
            policy_revision: Some(policy).filter(|p| !p.is_empty()),
            source_digest: sha.clone(),
            payload: vec![
                ("command_ref".into(), s(&cmd_ref)),
                ("command_summary".into(), s(&summary)),
                ("command_sha256".into(), s(&sha)),
                ("outcome".into(), s(outcome)),
                ("exit_code".into(), GoValue::Int(run.exit_code)),
                (
                    "evidence_digests".into(),
                    GoValue::Arr(vec![s(&receipt.digest)]),
                ),
                ("task_acceptance_unchanged".into(), GoValue::Bool(true)),
            ],
            ..Append::default()
        },
    )?;
    Ok((e, receipt))
}

/// Set the mode (`solo` or `collaborative`): a `mode_changed` event, with the frontier the
/// caller reviewed and a reason.
pub fn set_mode(
    w: &mut Writer,
    session: &str,
    mode: &str,
    reason: &str,
    requester: &str,
    expect_state: &str,
) -> Result<Option<Written>> {
    w.fresh()?;
    let mode = mode.trim();
    if mode != "solo" && mode != "collaborative" {
        return Err(refused(
            acode::REFUSED,
            format!("invalid mode {mode:?} (solo or collaborative)"),
        )
        .with_help("give solo (one active session) or collaborative"));
    }
    if reason.trim().is_empty() {
        return Err(blank("--reason is required"));
    }
    w.expect_state(expect_state)?;
    if mode == "solo" && w.active_sessions().len() > 1 {
        return Err(refused(
            code::SESSION_STATE,
            format!(
                "solo mode allows one active session; {} are active ({})",
                w.active_sessions().len(),
                w.active_sessions().join(",")
            ),
        )
        .with_help("close the other sessions first"));
    }
    let prior = w.state.mode.clone();
    if prior == mode {
        return Ok(None);
    }
    w.append(
        session,
        Append {
            kind: "mode_changed".into(),
            payload: vec![
                ("prior_mode".into(), s(&prior)),
                ("new_mode".into(), s(mode)),
                ("reason".into(), s(reason.trim())),
                ("requester".into(), s(requester.trim())),
            ],
            ..Append::default()
        },
    )
    .map(Some)
}

/// The policy revision of a pair of policy material digests (`absent` for a missing file).
pub fn policy_revision(intent_digest: &str, constraints_digest: &str) -> String {
    let sum = crate::v2::json::sha256_hex(
        format!("intent:{intent_digest}\nconstraints:{constraints_digest}").as_bytes(),
    );
    format!("policy_{}", &sum[..32])
}

/// New policy material (`None`: the file stays as it is).
#[derive(Debug, Clone, Default)]
pub struct PolicyMaterial {
    pub intent: Option<Vec<u8>>,
    pub constraints: Option<Vec<u8>>,
}

impl PolicyMaterial {
    /// Read the files a request names (`None`: that file stays as it is), each at most
    /// [`v2::MAX_RECORD_BYTES`]. A file that cannot be read is refused: it is the request's
    /// input, as an evidence file is, not a failure of the workspace.
    pub fn read(intent: Option<&Path>, constraints: Option<&Path>) -> Result<PolicyMaterial> {
        Ok(PolicyMaterial {
            intent: intent.map(read_policy_file).transpose()?,
            constraints: constraints.map(read_policy_file).transpose()?,
        })
    }
}

fn read_policy_file(path: &Path) -> Result<Vec<u8>> {
    crate::fsio::read_user_input(path, v2::MAX_RECORD_BYTES).map_err(|e| {
        refused(
            acode::REFUSED,
            format!("cannot read {}: {e}", path.display()),
        )
        .with_help("give a readable policy file of at most 1 MiB")
    })
}

/// Revise the policy: a `policy_changed` event with the new digests, then the policy files.
/// Refused over unresolved conflicts, with a stale `expect_state`, or without a reason.
pub fn revise_policy(
    w: &mut Writer,
    session: &str,
    material: &PolicyMaterial,
    reason: &str,
    requester: &str,
    expect_state: &str,
) -> Result<Written> {
    w.fresh()?;
    if reason.trim().is_empty() {
        return Err(blank("--reason is required"));
    }
    if material.intent.is_none() && material.constraints.is_none() {
        return Err(usage("give --intent FILE and/or --constraints FILE"));
    }
    w.expect_state(expect_state)?;
    if !w.state.conflicts.is_empty() {
        return Err(refused(
            "V2-CONFLICT",
            format!(
                "{} unresolved conflict(s); resolve them first",
                w.state.conflicts.len()
            ),
        )
        .with_help("`small reconcile --preview` lists them"));
    }
    let digest_of = |new: &Option<Vec<u8>>, current: &str| match new {
        Some(b) => crate::v2::json::sha256_hex(b),
        None => current.to_string(),
    };
    let store = w.store()?;
    let intent = digest_of(&material.intent, &store.policy_intent_digest);
    let constraints = digest_of(&material.constraints, &store.policy_constraints_digest);
    let new_revision = policy_revision(&intent, &constraints);
    let prior = w.state.policy_revision.clone();
    let e = w.append(
        session,
        Append {
            kind: "policy_changed".into(),
            policy_revision: Some(prior.clone()),
            payload: vec![
                ("prior_revision".into(), s(&prior)),
                ("new_revision".into(), s(&new_revision)),
                ("intent_digest".into(), s(&intent)),
                ("constraints_digest".into(), s(&constraints)),
                ("reason".into(), s(reason.trim())),
                ("requester".into(), s(requester.trim())),
            ],
            ..Append::default()
        },
    )?;
    // The files follow the event: until they are replaced, check reports the material as
    // differing from the revision in force (V2-POLICY), never a silent change.
    for (name, data) in [
        ("intent.small.yml", &material.intent),
        ("constraints.small.yml", &material.constraints),
    ] {
        if let Some(d) = data {
            crate::workspace::txn::atomic_write(w.small_dir.join("policy").join(name), d)?;
        }
    }
    w.refresh()?;
    Ok(e)
}

/// A saved evidence file.
#[derive(Debug, Clone)]
pub struct Saved {
    pub receipt: WrittenReceipt,
    pub blob: String,
    pub size: u64,
}

/// Save an evidence file: its bytes as `.small/evidence/blobs/sha256/<digest>` and a
/// `verified_artifact` receipt. `file` is read without following a symlink, bounded.
pub fn save_evidence(
    w: &mut Writer,
    file: &Path,
    task: &str,
    validator: &str,
    outcome: &str,
) -> Result<Saved> {
    w.fresh()?;
    let t = task_fields(w, task)?;
    let data = crate::fsio::read_bounded(file, MAX_EVIDENCE_BYTES).map_err(|e| {
        refused(
            code::EVIDENCE,
            format!("cannot read evidence file {}: {e}", file.display()),
        )
        .with_help("give a regular file (not a symlink), at most 64 MiB")
    })?;
    let digest = crate::v2::json::sha256_hex(&data);
    let rel = format!("{BLOB_PREFIX}{digest}");
    // A blob is not a JSON record but the same exclusive publish applies.
    w.publish(&rel, &data)?;
    let outcome = if outcome.trim().is_empty() {
        "passed"
    } else {
        outcome.trim()
    };
    let receipt = w.publish_receipt(&ReceiptDraft {
        receipt_id: record::new_id("receipt"),
        strength: "verified_artifact".into(),
        availability: "verified".into(),
        producer: vec![("tool".into(), s("small evidence save"))],
        task_id: t.0,
        task_revision: t.1,
        policy_revision: t.2,
        source_digest: t.3,
        validator: validator.trim().into(),
        outcome: outcome.into(),
        artifact_path: format!(".small/{rel}"),
        artifact_digest: digest,
        artifact_size: data.len() as i64,
        ..ReceiptDraft::default()
    })?;
    w.refresh()?;
    Ok(Saved {
        receipt,
        blob: format!(".small/{rel}"),
        size: data.len() as u64,
    })
}

/// A receipt's task members (id, revision, policy revision, source digest) for the task
/// `reference` names; all empty for a blank reference (a receipt of no task, as the
/// reference allows).
fn task_fields(w: &Writer, reference: &str) -> Result<(String, i64, String, String)> {
    if reference.trim().is_empty() {
        return Ok((String::new(), 0, String::new(), String::new()));
    }
    let t = w.task(reference)?;
    Ok((
        t.task.id.clone(),
        t.task.revision,
        t.task.policy_revision.clone(),
        t.source_digest.clone(),
    ))
}

/// Declare evidence for a task unavailable (a narrative receipt with availability
/// `unavailable` and the reason).
pub fn declare_unavailable(w: &mut Writer, task: &str, reason: &str) -> Result<WrittenReceipt> {
    w.fresh()?;
    if reason.trim().is_empty() {
        return Err(usage("--reason is required"));
    }
    let t = task_fields(w, task)?;
    let r = w.publish_receipt(&ReceiptDraft {
        receipt_id: record::new_id("receipt"),
        strength: "narrative_assertion".into(),
        availability: "unavailable".into(),
        producer: vec![("tool".into(), s("small evidence declare-unavailable"))],
        task_id: t.0,
        task_revision: t.1,
        policy_revision: t.2,
        source_digest: t.3,
        metadata: vec![("reason".into(), s(reason.trim()))],
        ..ReceiptDraft::default()
    })?;
    w.refresh()?;
    Ok(r)
}

/// A reviewed resolution of one conflict (the file `reconcile --apply` reads).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolution {
    pub profile: String,
    pub conflict_id: String,
    pub heads: Vec<String>,
    pub selected_event: String,
    pub reason: String,
    #[serde(default)]
    pub resolver: String,
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub expected_frontier: String,
}

impl Resolution {
    /// Read a resolution file: strict JSON (no duplicate or unknown member, integers only).
    pub fn parse(bytes: &[u8]) -> Result<Resolution> {
        crate::v2::json::parse(bytes).map_err(|e| usage(format!("resolution file: {e:?}")))?;
        serde_json::from_slice(bytes).map_err(|e| usage(format!("resolution file: {e}")))
    }
}

/// Resolve one conflict: a `conflict_resolved` event naming the conflict, its heads, the
/// selected head and the frontier the resolution was reviewed against. Refused unless
/// `expect_state` and the file's `expected_frontier` are the current frontier, the heads
/// are the conflict's, the selected event is one of them, and a reason is given.
pub fn reconcile(
    w: &mut Writer,
    session: &str,
    res: &Resolution,
    expect_state: &str,
) -> Result<(Written, String)> {
    w.fresh()?;
    if res.profile != crate::v2::PROFILE_VERSION {
        return Err(usage(format!(
            "resolution profile must be {}",
            crate::v2::PROFILE_VERSION
        )));
    }
    w.expect_state(expect_state)?;
    if res.expected_frontier.trim() != expect_state.trim() {
        return Err(refused(
            code::STALE,
            format!(
                "the resolution file's expected_frontier ({}) is not --expect-state ({})",
                if res.expected_frontier.is_empty() { "missing" } else { res.expected_frontier.as_str() },
                expect_state.trim()
            ),
        )
        .with_help("write the frontier you reviewed (`small reconcile --preview --json` prints it) into the file as expected_frontier"));
    }
    let Some(c) = w
        .state
        .conflicts
        .iter()
        .find(|c| c.id == res.conflict_id)
        .cloned()
    else {
        return Err(refused(
            "V2-CONFLICT",
            format!("conflict {} is absent or already resolved", res.conflict_id),
        ));
    };
    let mut heads = res.heads.clone();
    heads.sort();
    heads.dedup();
    if heads != c.heads {
        return Err(refused(
            "V2-CONFLICT",
            "resolution heads do not match the conflict's heads",
        )
        .with_help(format!("the heads are {}", c.heads.join(", "))));
    }
    if !c.heads.contains(&res.selected_event) {
        return Err(refused(
            "V2-CONFLICT",
            "selected_event must be one of the competing heads",
        ));
    }
    if res.reason.trim().is_empty() {
        return Err(usage("the resolution's reason is required"));
    }
    if c.kind == "policy_material" {
        return Err(refused(
            "V2-POLICY",
            "a policy file differs from the policy in force: restore the file, or revise the policy",
        ));
    }
    let e = w.append(
        session,
        Append {
            kind: "conflict_resolved".into(),
            parents: c.heads.clone(),
            payload: vec![
                ("conflict_id".into(), s(&c.id)),
                (
                    "heads".into(),
                    GoValue::Arr(c.heads.iter().map(|h| s(h)).collect()),
                ),
                ("selected_event".into(), s(&res.selected_event)),
                ("expected_frontier".into(), s(expect_state.trim())),
                ("reason".into(), s(res.reason.trim())),
                ("resolver".into(), s(res.resolver.trim())),
            ],
            ..Append::default()
        },
    )?;
    w.refresh()?;
    if w.state.conflicts.iter().any(|x| x.id == c.id) {
        return Err(refused(
            "V2-CONFLICT",
            format!(
                "resolution event {} did not resolve conflict {}",
                e.draft.event_id, c.id
            ),
        ));
    }
    Ok((e, c.id))
}

/// One receipt as `evidence verify` found it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verified {
    pub receipt_digest: String,
    /// `verified`; for a receipt with an artifact: `unavailable` (the blob is missing) or
    /// `failed` (its bytes differ from the recorded digest or size, or it is a symlink, not a
    /// regular file, or outside the blob store); for one without: its availability.
    pub status: String,
    /// Why a receipt is not verified, when its artifact says so.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The receipt's `artifact_path`, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub artifact_path: String,
}

impl Verified {
    pub fn is_verified(&self) -> bool {
        self.status == "verified"
    }
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// Check every receipt's evidence: an artifact's blob must be a regular file in
/// `.small/evidence/blobs/sha256/` (no symlink anywhere on the way) whose bytes have the
/// recorded digest and size (read with a bound). Read-only.
pub fn verify_evidence(store: &Store, root: &Path) -> Vec<Verified> {
    let small_dir = root.join(crate::spec::consts::SMALL_DIR);
    let mut out: Vec<Verified> = store
        .receipts
        .iter()
        .map(|r| {
            let mut v = Verified {
                receipt_digest: r.digest.clone(),
                status: r.availability.clone(),
                reason: String::new(),
                artifact_path: r.artifact_path.clone(),
            };
            if !r.artifact_digest.is_empty() || !r.artifact_path.is_empty() {
                let size = r.artifact_size.unwrap_or(0);
                let (status, reason) = match store.verified_blobs.get(&r.artifact_digest) {
                    // Hashed when the tree was read: its bytes are its name.
                    Some(&n)
                        if r.artifact_path
                            == format!(".small/{BLOB_PREFIX}{}", r.artifact_digest) =>
                    {
                        if size == 0 || n as i64 == size {
                            ("verified", "")
                        } else {
                            ("failed", "artifact digest or size mismatch")
                        }
                    }
                    _ => blob_status(&small_dir, &r.artifact_digest, &r.artifact_path, size),
                };
                fail(&mut v, status, reason);
            }
            v
        })
        .collect();
    out.sort_by(|a, b| a.receipt_digest.cmp(&b.receipt_digest));
    out
}

fn fail(v: &mut Verified, status: &str, reason: &str) {
    v.status = status.to_string();
    v.reason = reason.to_string();
}

/// The status of an artifact's blob and, when it is not verified, why.
/// Where evidence blobs are, under `.small/`.
const BLOB_PREFIX: &str = "evidence/blobs/sha256/";

fn blob_status(
    small_dir: &Path,
    digest: &str,
    path: &str,
    size: i64,
) -> (&'static str, &'static str) {
    const OUTSIDE: &str = "the artifact is not a regular file in .small/evidence/blobs/sha256/";
    let rel = format!("{BLOB_PREFIX}{digest}");
    if !is_hex64(digest) || path != format!(".small/{rel}") {
        return ("failed", "unsafe evidence artifact path or digest");
    }
    let mut at = small_dir.to_path_buf();
    for part in ["evidence", "blobs", "sha256"] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return ("failed", OUTSIDE),
            Err(_) => return ("unavailable", "portable artifact is missing"),
        }
    }
    let file = at.join(digest);
    match std::fs::symlink_metadata(&file) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return ("failed", OUTSIDE),
        Err(_) => return ("unavailable", "portable artifact is missing"),
    }
    match crate::fsio::read_bounded(&file, MAX_EVIDENCE_BYTES) {
        Ok(b)
            if crate::v2::json::sha256_hex(&b) == digest
                && (size == 0 || b.len() as i64 == size) =>
        {
            ("verified", "")
        }
        Ok(_) => ("failed", "artifact digest or size mismatch"),
        Err(_) => (
            "failed",
            "the artifact cannot be read within the evidence size limit",
        ),
    }
}

#[cfg(test)]
mod cached_tests;
#[cfg(test)]
mod tests;
