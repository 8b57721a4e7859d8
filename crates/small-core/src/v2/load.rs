//! Safe, bounded loading of a 2.0.0 `.small/` tree into typed records.
//!
//! Symlinks are never followed (a symlink anywhere in an authoritative path is refused), only
//! regular files are read, each at most [`MAX_RECORD_BYTES`], a file that is not `*.json`
//! where records live is refused, and a record's path must match its identity. Every problem
//! becomes a [`Diagnostic`]; a record that can still be read is kept so that later checks do
//! not cascade from one damaged byte.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::diag::Diagnostic;
use crate::v2::fastevent::{self, EventFields};
use crate::v2::json::{self, JsonError, Jv};
use crate::workspace::CODE_IO;

pub const PROFILE_VERSION: &str = "2.0.0";
/// The largest record (and policy file) read, in bytes.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

pub const EVENT_KINDS: &[&str] = &[
    "session_started",
    "session_closed",
    "task_created",
    "task_updated",
    "task_transitioned",
    "command_recorded",
    "handoff_recorded",
    "mode_changed",
    "policy_changed",
    "ownership_claimed",
    "ownership_taken_over",
    "conflict_resolved",
    "v1_imported",
];

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    Str,
    Int,
    Obj,
    StrList,
    /// A list of objects, or `null` (the reference writes an empty list as `null`).
    ObjListOrNull,
}

/// (member, type, required)
pub(super) type Spec = &'static [(&'static str, Ty, bool)];

const PROFILE: Spec = &[
    ("small_version", Ty::Str, true),
    ("project_id", Ty::Str, true),
    ("lineage_id", Ty::Str, true),
    ("mode", Ty::Str, true),
    ("policy_revision", Ty::Str, true),
    ("intent_digest", Ty::Str, false),
    ("constraints_digest", Ty::Str, false),
    ("import_id", Ty::Str, false),
];
const SESSION: Spec = &[
    ("small_version", Ty::Str, true),
    ("project_id", Ty::Str, true),
    ("lineage_id", Ty::Str, true),
    ("session_id", Ty::Str, true),
    ("label", Ty::Str, false),
    ("actor_label", Ty::Str, false),
    ("model_label", Ty::Str, false),
    ("parent_session_id", Ty::Str, false),
    ("from_handoff", Ty::Str, false),
    ("observed_frontier", Ty::Str, true),
    ("tool_version", Ty::Str, true),
    ("created_at", Ty::Str, true),
    ("digest", Ty::Str, true),
];
pub(super) const EVENT: Spec = &[
    ("small_version", Ty::Str, true),
    ("project_id", Ty::Str, true),
    ("lineage_id", Ty::Str, true),
    ("session_id", Ty::Str, true),
    ("event_id", Ty::Str, true),
    ("kind", Ty::Str, true),
    ("sequence", Ty::Int, true),
    ("previous_event", Ty::Str, false),
    ("parents", Ty::StrList, false),
    ("occurred_at", Ty::Str, true),
    ("task_id", Ty::Str, false),
    ("task_revision", Ty::Int, false),
    ("policy_revision", Ty::Str, false),
    ("source_digest", Ty::Str, false),
    ("payload", Ty::Obj, true),
    ("digest", Ty::Str, true),
];
const RECEIPT: Spec = &[
    ("small_version", Ty::Str, true),
    ("project_id", Ty::Str, true),
    ("receipt_id", Ty::Str, true),
    ("strength", Ty::Str, true),
    ("availability", Ty::Str, true),
    ("producer", Ty::Obj, false),
    ("task_id", Ty::Str, false),
    ("task_revision", Ty::Int, false),
    ("policy_revision", Ty::Str, false),
    ("source_digest", Ty::Str, false),
    ("validator", Ty::Str, false),
    ("outcome", Ty::Str, false),
    ("artifact_path", Ty::Str, false),
    ("artifact_digest", Ty::Str, false),
    ("artifact_size", Ty::Int, false),
    ("metadata", Ty::Obj, false),
    ("digest", Ty::Str, true),
];

/// `profile.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Profile {
    pub project_id: String,
    pub lineage_id: String,
    pub mode: String,
    pub policy_revision: String,
    pub intent_digest: String,
    pub constraints_digest: String,
    pub import_id: String,
}

/// A session record (`sessions/<id>.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub file: String,
    pub id: String,
    pub label: String,
    pub actor_label: String,
    pub observed_frontier: String,
    pub created_at: String,
    pub digest: String,
}

/// An event record (`events/<session>/<event>.json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// The directory of the event records as diagnostics name it (`.small/events`), shared
    /// by every event of a read: [`Event::file`] is made from it, the session and the id (a
    /// record whose path says otherwise is not loaded), so that 100 000 events do not hold
    /// 100 000 copies of their paths.
    pub events_dir: std::sync::Arc<str>,
    pub id: String,
    pub session_id: String,
    pub kind: String,
    pub sequence: i64,
    pub previous_event: String,
    pub parents: Vec<String>,
    pub occurred_at: String,
    pub task_id: String,
    pub task_revision: i64,
    pub policy_revision: String,
    pub source_digest: String,
    /// The payload's members that folding the events reads ([`PAYLOAD_KEPT`]), in file
    /// order. The whole payload is checked when the record is read but not kept: at 100 000
    /// events the bodies would dominate memory, and only the few events a command shows
    /// need them ([`Store::full_payload`] reads those again).
    pub payload: Jv,
    pub digest: String,
}

pub use crate::v2::fastevent::PAYLOAD_KEPT;

/// The members of `payload` named in [`PAYLOAD_KEPT`].
fn kept_members(payload: Option<&Jv>) -> Jv {
    match payload {
        Some(Jv::Obj(members)) => Jv::Obj(
            members
                .iter()
                .filter(|(k, _)| PAYLOAD_KEPT.contains(&k.as_str()))
                .cloned()
                .collect(),
        ),
        _ => Jv::Obj(Vec::new()),
    }
}

/// The members of an event record read by the general path, as the fast path gives them.
pub(crate) fn event_fields(v: &Jv) -> EventFields {
    let int = |k: &str| match v.get(k) {
        Some(Jv::Int(n)) => *n,
        _ => 0,
    };
    EventFields {
        small_version: v.str_of("small_version").into(),
        project_id: v.str_of("project_id").into(),
        lineage_id: v.str_of("lineage_id").into(),
        session_id: v.str_of("session_id").into(),
        event_id: v.str_of("event_id").into(),
        kind: v.str_of("kind").into(),
        sequence: int("sequence"),
        previous_event: v.str_of("previous_event").into(),
        parents: v.strs_of("parents"),
        occurred_at: v.str_of("occurred_at").into(),
        task_id: v.str_of("task_id").into(),
        task_revision: int("task_revision"),
        policy_revision: v.str_of("policy_revision").into(),
        source_digest: v.str_of("source_digest").into(),
        payload: kept_members(v.get("payload")),
    }
}

impl Event {
    /// The record's file, relative to the directory holding `.small/`.
    pub fn file(&self) -> String {
        format!("{}/{}/{}.json", self.events_dir, self.session_id, self.id)
    }

    /// How [`load`] orders two events: by session directory, then by file name (the id and
    /// `.json`: not quite the id's own order when one id begins another).
    pub(super) fn file_order(&self, other: &Event) -> std::cmp::Ordering {
        fn name(e: &Event) -> impl Iterator<Item = u8> + '_ {
            e.id.bytes().chain(*b".json")
        }
        self.session_id
            .cmp(&other.session_id)
            .then_with(|| name(self).cmp(name(other)))
    }

    /// The whole payload of this event, read again from its record under `root` (the
    /// directory holding `.small/`). The record must still be the one that was loaded (its
    /// digest checked again and equal to [`Event::digest`]); otherwise, or when it cannot be
    /// read, the kept members ([`Event::payload`]) are all there is.
    pub fn full_payload(&self, root: &Path) -> Jv {
        let mut l = Loader {
            root,
            store: Store::default(),
        };
        let mut buf = Vec::new();
        let path = root.join(self.file());
        if !l.read_into(&path, &mut buf) {
            return self.payload.clone();
        }
        let same = json::record_digest(&buf)
            .is_some_and(|(stored, computed)| stored == computed && stored == self.digest);
        match json::parse(&buf) {
            Ok(v) if same => v.get("payload").cloned().unwrap_or(Jv::Obj(Vec::new())),
            _ => self.payload.clone(),
        }
    }

    /// `previous_event` and `parents`, without repeats or empties.
    pub fn all_parents(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in self
            .parents
            .iter()
            .map(String::as_str)
            .chain([self.previous_event.as_str()])
        {
            if !p.is_empty() && !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }
}

/// A receipt record (`receipts/sha256/<digest>.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub file: String,
    pub id: String,
    pub strength: String,
    pub availability: String,
    pub task_id: String,
    pub outcome: String,
    pub digest: String,
    /// The evidence blob the receipt names (`.small/evidence/blobs/sha256/<digest>`), if any.
    pub artifact_path: String,
    pub artifact_digest: String,
    pub artifact_size: Option<i64>,
}

/// Everything read from a 2.0.0 tree, plus the problems found while reading it.
#[derive(Debug, Clone, Default)]
pub struct Store {
    /// `None` when `profile.json` is missing or unusable.
    pub profile: Option<Profile>,
    pub sessions: Vec<Session>,
    pub events: Vec<Event>,
    pub receipts: Vec<Receipt>,
    /// SHA-256 of `policy/intent.small.yml` (`"absent"` when missing).
    pub policy_intent_digest: String,
    pub policy_constraints_digest: String,
    /// Event ids named by event files that could not be read as events (their file stem):
    /// a reference to one of them is a consequence of that damage, not a second one.
    pub unreadable_events: BTreeSet<String>,
    pub diagnostics: Vec<Diagnostic>,
    /// The evidence blobs whose bytes hashed to their name when the tree was read, with
    /// their sizes (so that reporting on them does not hash them again).
    pub verified_blobs: std::collections::BTreeMap<String, u64>,
    /// The directory of event records the events read share ([`Event::events_dir`]).
    pub(super) events_dir: Option<std::sync::Arc<str>>,
}

/// What reading one file gave.
enum ReadOutcome {
    Ok,
    Absent,
    /// Not usable (reported).
    Refused,
}

/// Reads the tree under `small_dir`; `root` is the directory holding it (paths in
/// diagnostics are relative to it).
pub(super) struct Loader<'a> {
    pub(super) root: &'a Path,
    pub(super) store: Store,
}

/// Read a 2.0.0 tree. Never fails: problems are in [`Store::diagnostics`].
pub fn load(root: &Path, small_dir: &Path) -> Store {
    let mut l = Loader {
        root,
        store: Store::default(),
    };
    l.load_profile(&small_dir.join("profile.json"));
    l.store.policy_intent_digest = l.policy_digest(&small_dir.join("policy/intent.small.yml"));
    l.store.policy_constraints_digest =
        l.policy_digest(&small_dir.join("policy/constraints.small.yml"));
    let mut buf = Vec::new();
    for path in l.json_files(&small_dir.join("sessions")) {
        if l.read_into(&path, &mut buf) {
            l.load_session(&path, &buf);
        } else {
            l.note_unreadable(&path);
        }
    }
    let events = l.event_files(&small_dir.join("events"));
    l.load_events(&events);
    drop(events);
    for path in l.json_files(&small_dir.join("receipts/sha256")) {
        if l.read_into(&path, &mut buf) {
            l.load_receipt(&path, &buf);
        } else {
            l.note_unreadable(&path);
        }
    }
    l.check_evidence(small_dir);
    l.check_imports(small_dir);
    l.store
}

/// Read records a writer has just published (`(path under .small/, bytes)`; sessions,
/// events and receipts) into `store`, exactly as [`load`] would read them from their files,
/// in the order [`load`] keeps. `false` when a record is of another kind.
pub(super) fn load_published(
    root: &Path,
    small_dir: &Path,
    store: &mut Store,
    records: &[(String, Vec<u8>)],
) -> bool {
    let mut l = Loader {
        root,
        store: Store {
            profile: store.profile.clone(),
            ..Store::default()
        },
    };
    for (rel, bytes) in records {
        let path = small_dir.join(rel);
        if rel.starts_with("events/") {
            l.load_event(&path, bytes);
        } else if rel.starts_with("sessions/") {
            l.load_session(&path, bytes);
        } else if rel.starts_with("receipts/") {
            l.load_receipt(&path, bytes);
        } else {
            return false;
        }
    }
    let fresh = l.store;
    store.events.extend(fresh.events);
    store.sessions.extend(fresh.sessions);
    store.receipts.extend(fresh.receipts);
    store.diagnostics.extend(fresh.diagnostics);
    store.unreadable_events.extend(fresh.unreadable_events);
    // The loader's order: by directory name, then file name (not the path's bytes).
    fn name(f: &str) -> &str {
        f.rsplit('/').next().unwrap_or(f)
    }
    store.events.sort_by(Event::file_order);
    store
        .sessions
        .sort_by(|a, b| name(&a.file).cmp(name(&b.file)));
    store
        .receipts
        .sort_by(|a, b| name(&a.file).cmp(name(&b.file)));
    true
}

/// How many event files one thread reads before handing its records over
/// ([`Loader::load_events`]): small enough that neither thread is left alone with much of
/// the work at the end (at 2 048, 10 000 events were five chunks, three of them on one
/// thread), large enough that handing over costs nothing.
const EVENT_CHUNK: usize = 512;

/// The value held in `slot` when it is the chunk `want`.
fn take_if<T>(slot: &mut Option<(usize, T)>, want: usize) -> Option<T> {
    match slot {
        Some((i, _)) if *i == want => slot.take().map(|(_, t)| t),
        _ => None,
    }
}

/// An event file being loaded: its path and the names checked against its identity.
struct EventAt<'p> {
    path: &'p Path,
    /// The file's name.
    name: &'p str,
    /// Its session directory's name.
    session_dir: &'p str,
    /// The directory of event records, as diagnostics name it.
    events_dir: std::sync::Arc<str>,
}

/// The session directory held open for `openat` of its events (none where there is no
/// `openat`).
#[cfg(unix)]
type HeldDir = rustix::fd::OwnedFd;
#[cfg(not(unix))]
type HeldDir = std::convert::Infallible;

/// Reads chunks of event files for [`Loader::load_events`], on one thread: its read buffer
/// and the session directory it has open are kept from one chunk to the next.
struct EventReader<'a> {
    root: &'a Path,
    profile: Option<Profile>,
    buf: Vec<u8>,
    at: Option<(PathBuf, HeldDir)>,
}

impl<'a> EventReader<'a> {
    fn new(root: &'a Path, profile: Option<Profile>) -> EventReader<'a> {
        EventReader {
            root,
            profile,
            buf: Vec::with_capacity(16 << 10),
            at: None,
        }
    }

    /// The records (and findings) of the event files `part`, in order.
    fn read(&mut self, part: &[(&Path, &str)]) -> Store {
        let mut sub = Loader {
            root: self.root,
            store: Store {
                profile: self.profile.clone(),
                events: Vec::with_capacity(part.len()),
                ..Store::default()
            },
        };
        // What is known of a session directory is worked out once for all its events.
        let mut held: Option<(&Path, String, std::sync::Arc<str>)> = None;
        for &(dir, name) in part {
            let path = dir.join(name);
            if held
                .as_ref()
                .is_some_and(|(d, _, _)| d.as_os_str() != dir.as_os_str())
            {
                held = None;
            }
            let (_, session_dir, events_dir) = held.get_or_insert_with(|| {
                let session_dir = dir.file_name().unwrap_or_default();
                (
                    dir,
                    session_dir.to_string_lossy().into_owned(),
                    sub.events_dir(&path),
                )
            });
            if sub.read_event(&mut self.at, dir, name, &path, &mut self.buf) {
                let at = EventAt {
                    path: &path,
                    name,
                    session_dir,
                    events_dir: events_dir.clone(),
                };
                sub.load_event_at(&at, &self.buf);
            } else {
                sub.note_unreadable(&path);
            }
        }
        sub.store
    }
}

impl Loader<'_> {
    pub(super) fn rel(&self, p: &Path) -> String {
        p.strip_prefix(self.root)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    }

    pub(super) fn push(&mut self, d: Diagnostic) {
        self.store.diagnostics.push(d);
    }

    pub(super) fn io(&mut self, p: &Path, e: &std::io::Error) {
        let d = Diagnostic::error(CODE_IO, format!("cannot read {}: {e}", self.rel(p)))
            .in_file(self.rel(p))
            .with_help("check the file's permissions and that the disk is readable");
        self.push(d);
    }

    pub(super) fn symlink(&mut self, p: &Path) {
        let d = Diagnostic::error(
            "V2-SYMLINK",
            "symlink in authoritative state: records are never read through a link",
        )
        .in_file(self.rel(p))
        .with_help("replace the link with the real file or directory it points to, or remove it");
        self.push(d);
    }

    /// Read a regular file of at most [`MAX_RECORD_BYTES`] without following a symlink.
    /// `None` (with a diagnostic) when it cannot be used; `Some(None)` when it is absent.
    pub(super) fn read_bounded(&mut self, p: &Path) -> Option<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        match self.read_file(p, &mut buf) {
            ReadOutcome::Ok => Some(Some(buf)),
            ReadOutcome::Absent => Some(None),
            ReadOutcome::Refused => None,
        }
    }

    /// [`Self::read_bounded`] into `buf` (cleared first): whether it holds the file. An
    /// absent file is reported as unreadable (it was listed a moment ago).
    pub(super) fn read_into(&mut self, p: &Path, buf: &mut Vec<u8>) -> bool {
        match self.read_file(p, buf) {
            ReadOutcome::Ok => true,
            ReadOutcome::Absent => {
                self.io(p, &std::io::Error::from(std::io::ErrorKind::NotFound));
                false
            }
            ReadOutcome::Refused => false,
        }
    }

    /// One `open` (never following a link, never waiting on a FIFO), one `fstat`, one
    /// bounded read.
    fn read_file(&mut self, p: &Path, buf: &mut Vec<u8>) -> ReadOutcome {
        buf.clear();
        let file = match crate::fsio::open_nofollow(p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return ReadOutcome::Absent,
            Err(e) if crate::fsio::is_link_refusal(&e) => {
                self.symlink(p);
                return ReadOutcome::Refused;
            }
            Err(e) => {
                // A unix socket cannot be opened: report it as what it is.
                if std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
                    self.not_file(p);
                } else {
                    self.io(p, &e);
                }
                return ReadOutcome::Refused;
            }
        };
        let len = match file.metadata() {
            Ok(m) if !m.is_file() => {
                self.not_file(p);
                return ReadOutcome::Refused;
            }
            Ok(m) => m.len(),
            Err(e) => {
                self.io(p, &e);
                return ReadOutcome::Refused;
            }
        };
        if len > MAX_RECORD_BYTES {
            self.too_big(p, len);
            return ReadOutcome::Refused;
        }
        buf.reserve(len as usize + 1);
        match file.take(MAX_RECORD_BYTES + 1).read_to_end(buf) {
            Ok(_) if buf.len() as u64 > MAX_RECORD_BYTES => {
                self.too_big(p, buf.len() as u64);
                ReadOutcome::Refused
            }
            Ok(_) => ReadOutcome::Ok,
            Err(e) => {
                self.io(p, &e);
                ReadOutcome::Refused
            }
        }
    }

    fn not_file(&mut self, p: &Path) {
        let d = Diagnostic::error("V2-NOT-FILE", "not a regular file where a record belongs")
            .in_file(self.rel(p))
            .with_help("authoritative records are regular files; remove or replace this entry");
        self.push(d);
    }

    pub(super) fn too_big(&mut self, p: &Path, len: u64) {
        let d = Diagnostic::error(
            "V2-SIZE",
            format!("record is {len} bytes, over the {MAX_RECORD_BYTES}-byte limit"),
        )
        .in_file(self.rel(p))
        .with_help("records are at most 1 MiB: keep large output in evidence blobs and reference it by digest");
        self.push(d);
    }

    fn policy_digest(&mut self, p: &Path) -> String {
        match self.read_bounded(p) {
            Some(Some(bytes)) => json::sha256_hex(&bytes),
            Some(None) => "absent".to_string(),
            None => String::new(),
        }
    }

    /// The entries of `dir` (name, path, type), sorted, never following a link; `None`
    /// (reported) when `dir` is a link or not a readable directory; `Some(empty)` when it is
    /// absent. Every walk of the profile's directories starts here.
    pub(super) fn entries(
        &mut self,
        dir: &Path,
    ) -> Option<Vec<(String, PathBuf, std::fs::FileType)>> {
        let names = self.names(dir)?;
        Some(
            names
                .into_iter()
                .map(|(name, ty)| {
                    let path = dir.join(&name);
                    (name, path, ty)
                })
                .collect(),
        )
    }

    /// [`Self::entries`] without the paths: (name, type), sorted. For the one directory that
    /// may hold 100 000 entries (a session's events), where the paths alone would be about
    /// 18 MiB held while the records are read.
    fn names(&mut self, dir: &Path) -> Option<Vec<(String, std::fs::FileType)>> {
        match std::fs::symlink_metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Vec::new()),
            Err(e) => {
                self.io(dir, &e);
                return None;
            }
            Ok(m) if m.file_type().is_symlink() => {
                self.symlink(dir);
                return None;
            }
            Ok(m) if !m.is_dir() => {
                let d = Diagnostic::error("V2-NOT-FILE", "expected a directory here")
                    .in_file(self.rel(dir))
                    .with_help("remove this entry; the profile keeps a directory of this name");
                self.push(d);
                return None;
            }
            Ok(_) => {}
        }
        let mut out: Vec<_> = match std::fs::read_dir(dir) {
            Ok(rd) => rd
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let ty = e.file_type().ok()?;
                    let name = e.file_name().into_string();
                    Some((
                        name.unwrap_or_else(|n| n.to_string_lossy().into_owned()),
                        ty,
                    ))
                })
                .collect(),
            Err(e) => {
                self.io(dir, &e);
                return None;
            }
        };
        // By name's bytes (the order of the paths, cheaper to compare).
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Some(out)
    }

    /// Every `*.json` file in `dir`, in name order. Anything else there is reported.
    fn json_files(&mut self, dir: &Path) -> Vec<PathBuf> {
        let names = self.json_names(dir);
        names.into_iter().map(|n| dir.join(n)).collect()
    }

    /// The names of the `*.json` files in `dir`, in name order (no paths: a session's
    /// events may be 100 000). Anything else there is reported.
    fn json_names(&mut self, dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for (name, ty) in self.names(dir).unwrap_or_default() {
            // As `Path::extension`: `.json` alone is a hidden file with no extension.
            let is_json = name.strip_suffix(".json").is_some_and(|s| !s.is_empty());
            if ty.is_symlink() {
                self.symlink(&dir.join(&name));
            } else if ty.is_file() && is_json {
                out.push(name);
            } else {
                self.stray_record(&dir.join(&name));
            }
        }
        out
    }

    /// Report `path`, an entry that does not belong among the records.
    fn stray_record(&mut self, path: &Path) {
        let d = Diagnostic::error(
            "V2-STRAY",
            "unexpected entry among authoritative records (only <id>.json files belong here)",
        )
        .in_file(self.rel(path))
        .with_help("move notes and other files out of .small/; records are written only by small");
        self.push(d);
    }

    /// The event files under `events`: each session directory (in name order) with the
    /// names of its `*.json` files (in name order). Anything else there is reported.
    fn event_files(&mut self, events: &Path) -> Vec<(PathBuf, Vec<String>)> {
        let mut out = Vec::new();
        for (_, dir, ty) in self.entries(events).unwrap_or_default() {
            if ty.is_symlink() {
                self.symlink(&dir);
                continue;
            }
            if !ty.is_dir() {
                self.stray_record(&dir);
                continue;
            }
            let names = self.json_names(&dir);
            out.push((dir, names));
        }
        out
    }

    /// Read and check the event files `dirs` names (in order) on two threads, in chunks of
    /// [`EVENT_CHUNK`]: each thread takes the next chunk nobody has taken yet, and each
    /// chunk's records (and findings) are added here in order, so the result is the same as
    /// one thread's. The second thread hands over one chunk at a time and waits until it is
    /// taken, so besides the store's list (made room for every event at once) only a few
    /// chunks are held: at 100 000 events, halves merged at the end held 16 MiB more.
    fn load_events(&mut self, dirs: &[(PathBuf, Vec<String>)]) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let files: Vec<(&Path, &str)> = dirs
            .iter()
            .flat_map(|(dir, names)| names.iter().map(move |n| (dir.as_path(), n.as_str())))
            .collect();
        self.store.events.reserve_exact(files.len());
        let chunks: Vec<&[(&Path, &str)]> = files.chunks(EVENT_CHUNK).collect();
        let mut mine = EventReader::new(self.root, self.store.profile.clone());
        if chunks.len() < 2 {
            for c in &chunks {
                self.absorb(mine.read(c));
            }
            return;
        }
        let next = AtomicUsize::new(0);
        let take = || next.fetch_add(1, Ordering::Relaxed);
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Store)>(1);
            let mut theirs = EventReader::new(self.root, self.store.profile.clone());
            let chunks = &chunks;
            let helper = crate::par::start(scope, move || loop {
                let i = take();
                let Some(c) = chunks.get(i) else { break };
                if tx.send((i, theirs.read(c))).is_err() {
                    break;
                }
            });
            // The chunk to add next; one this thread read out of turn; one the second thread
            // handed over out of turn. Both threads take chunks in increasing order, so the
            // chunk wanted is always one of these, one not yet taken, or the second thread's
            // next hand-over.
            let mut want = 0;
            let mut own: Option<(usize, Store)> = None;
            let mut handed: Option<(usize, Store)> = None;
            let mut helped = helper.is_ok();
            while want < chunks.len() {
                if let Some(part) = take_if(&mut own, want).or_else(|| take_if(&mut handed, want)) {
                    self.absorb(part);
                    want += 1;
                } else if own.is_none() && next.load(Ordering::Relaxed) < chunks.len() {
                    let i = take();
                    if let Some(c) = chunks.get(i) {
                        own = Some((i, mine.read(c)));
                    }
                } else if helped && handed.is_none() {
                    match rx.recv() {
                        Ok(part) => handed = Some(part),
                        Err(_) => helped = false,
                    }
                } else {
                    // The second thread is gone with chunks it took (or cannot be): they are
                    // read here.
                    let part = chunks.get(want).map(|c| mine.read(c)).unwrap_or_default();
                    self.absorb(part);
                    want += 1;
                }
            }
            drop(rx);
            if let Ok(Err(panic)) = helper.map(|h| h.join()) {
                std::panic::resume_unwind(panic);
            }
        });
    }

    /// Add what reading one chunk of event files found.
    fn absorb(&mut self, mut part: Store) {
        self.store.events.append(&mut part.events);
        self.store.diagnostics.append(&mut part.diagnostics);
        self.store
            .unreadable_events
            .append(&mut part.unreadable_events);
    }

    #[cfg(unix)]
    /// [`Self::read_into`] for an event file the listing showed as a regular file, by the
    /// short way: `openat` of its name in its session directory (held open in `at` for the
    /// next event of the same directory; no walk of the whole path per file) and one `read`
    /// into `buf`'s room, with no `fstat`. A short read of a regular file is its end. Anything
    /// unusual — the open or read failing, an empty or oversized file (a FIFO swapped in
    /// reads as empty) — is read again the long way, which reports it exactly as before.
    fn read_event(
        &mut self,
        at: &mut Option<(PathBuf, HeldDir)>,
        dir: &Path,
        name: &str,
        p: &Path,
        buf: &mut Vec<u8>,
    ) -> bool {
        use rustix::fs::{Mode, OFlags};
        if at
            .as_ref()
            .is_none_or(|(d, _)| d.as_os_str() != dir.as_os_str())
        {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            *at = rustix::fs::open(dir, flags, Mode::empty())
                .ok()
                .map(|fd| (dir.to_path_buf(), fd));
        }
        let Some((_, dirfd)) = at.as_ref() else {
            return self.read_into(p, buf);
        };
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let Ok(fd) = rustix::fs::openat(dirfd, name, flags, Mode::empty()) else {
            return self.read_into(p, buf);
        };
        buf.clear();
        loop {
            if buf.len() as u64 > MAX_RECORD_BYTES {
                return self.read_into(p, buf);
            }
            if buf.len() == buf.capacity() {
                buf.reserve(buf.len().max(16 << 10));
            }
            match rustix::io::read(&fd, rustix::buffer::spare_capacity(buf)) {
                Ok(0) => break,
                Ok(_) if buf.len() < buf.capacity() => break,
                Ok(_) => {}
                Err(_) => return self.read_into(p, buf),
            }
        }
        if buf.is_empty() || buf.len() as u64 > MAX_RECORD_BYTES {
            return self.read_into(p, buf);
        }
        true
    }

    /// Without `openat`, every event is read the long way.
    #[cfg(not(unix))]
    fn read_event(
        &mut self,
        _at: &mut Option<(PathBuf, HeldDir)>,
        _dir: &Path,
        _name: &str,
        p: &Path,
        buf: &mut Vec<u8>,
    ) -> bool {
        self.read_into(p, buf)
    }

    fn note_unreadable(&mut self, path: &Path) {
        if let Some(stem) = path.file_stem() {
            self.store
                .unreadable_events
                .insert(stem.to_string_lossy().into_owned());
        }
    }

    /// Parse `bytes` as a record of `what` against `spec`: syntax, duplicate keys, integers,
    /// unknown members, required members and their types. `None` when it cannot be used.
    pub(super) fn parse_record(
        &mut self,
        path: &Path,
        bytes: &[u8],
        what: &str,
        spec: Spec,
    ) -> Option<Jv> {
        let file = self.rel(path);
        let v = match json::parse(bytes) {
            Ok(v) => v,
            Err(JsonError::DuplicateKey(k)) => {
                let d = Diagnostic::error(
                    "V2-DUP-KEY",
                    format!("{what} has the member \"{k}\" twice"),
                )
                .in_file(file)
                .with_help(
                    "a record names each member once; restore the record from version control",
                );
                self.push(d);
                return None;
            }
            Err(JsonError::NotInteger(n)) => {
                let d = Diagnostic::error(
                    "V2-NUMBER",
                    format!("{what} holds the number {n}: records hold integers only"),
                )
                .in_file(file)
                .with_help(
                    "restore the record from version control; small writes whole numbers only",
                );
                self.push(d);
                return None;
            }
            Err(JsonError::Syntax(e)) => {
                let d = Diagnostic::error("V2-JSON", format!("{what} is not valid JSON: {e}"))
                    .in_file(file)
                    .with_help("the file is damaged or truncated; restore it from version control");
                self.push(d);
                return None;
            }
        };
        let Jv::Obj(members) = &v else {
            let d = Diagnostic::error(
                "V2-FIELD",
                format!("{what} is {}, not an object", v.type_name()),
            )
            .in_file(file)
            .with_help("restore the record from version control");
            self.push(d);
            return None;
        };
        let mut usable = true;
        for (k, _) in members {
            if !spec.iter().any(|(name, _, _)| name == k) {
                let d = Diagnostic::error("V2-UNKNOWN-FIELD", format!("{what} has the unknown member \"{k}\""))
                    .in_file(file.clone())
                    .with_path(format!("/{k}"))
                    .with_help("profile 2.0.0 records have a closed set of members; remove it (and restore the record's digest) or restore the file");
                self.push(d);
            }
        }
        for (name, ty, required) in spec {
            let ok = match (v.get(name), ty) {
                (None, _) => !required,
                (Some(Jv::Str(_)), Ty::Str)
                | (Some(Jv::Int(_)), Ty::Int)
                | (Some(Jv::Obj(_)), Ty::Obj) => true,
                (Some(Jv::Arr(items)), Ty::StrList) => {
                    items.iter().all(|i| matches!(i, Jv::Str(_)))
                }
                (Some(Jv::Null), Ty::ObjListOrNull) => true,
                (Some(Jv::Arr(items)), Ty::ObjListOrNull) => {
                    items.iter().all(|i| matches!(i, Jv::Obj(_)))
                }
                _ => false,
            };
            if !ok {
                usable = false;
                let want = match ty {
                    Ty::Str => "a string",
                    Ty::Int => "an integer",
                    Ty::Obj => "an object",
                    Ty::StrList => "a list of strings",
                    Ty::ObjListOrNull => "a list of objects",
                };
                let msg = match v.get(name) {
                    None => format!("{what} lacks the required member \"{name}\""),
                    Some(got) => format!("{what}'s \"{name}\" is {}, not {want}", got.type_name()),
                };
                let d = Diagnostic::error("V2-FIELD", msg)
                    .in_file(file.clone())
                    .with_path(format!("/{name}"))
                    .with_help("restore the record from version control");
                self.push(d);
            }
        }
        usable.then_some(v)
    }

    /// Check the stored digest against the bytes; the stored value.
    fn check_digest(&mut self, path: &Path, bytes: &[u8], what: &str) -> String {
        match json::record_digest(bytes) {
            Some((stored, computed)) if stored == computed => stored,
            Some((stored, computed)) => {
                let d = Diagnostic::error(
                    "V2-DIGEST",
                    format!("{what}'s digest does not match its bytes: stored {stored}, computed {computed}"),
                )
                .in_file(self.rel(path))
                .with_help("the record was changed after it was written; restore it from version control (records are immutable)");
                self.push(d);
                stored
            }
            None => {
                let d = Diagnostic::error(
                    "V2-DIGEST",
                    format!("{what} does not end with its \"digest\" member in compact form"),
                )
                .in_file(self.rel(path))
                .with_help("records are compact JSON ending with \"digest\"; restore the record from version control");
                self.push(d);
                String::new()
            }
        }
    }

    fn check_identity(&mut self, path: &Path, v: &Jv, what: &str, lineage: bool) {
        let lineage_id = lineage.then(|| v.str_of("lineage_id"));
        self.check_identity_of(
            path,
            what,
            v.str_of("small_version"),
            v.str_of("project_id"),
            lineage_id,
        );
    }

    /// A record's identity members (trimmed) against profile.json.
    fn check_identity_of(
        &mut self,
        path: &Path,
        what: &str,
        small_version: &str,
        project_id: &str,
        lineage_id: Option<&str>,
    ) {
        let Some(p) = self.store.profile.as_ref() else {
            return;
        };
        let mut wrong = Vec::new();
        if small_version != PROFILE_VERSION {
            wrong.push("small_version");
        }
        if project_id != p.project_id {
            wrong.push("project_id");
        }
        if lineage_id.is_some_and(|l| l != p.lineage_id) {
            wrong.push("lineage_id");
        }
        if !wrong.is_empty() {
            let d = Diagnostic::error(
                "V2-IDENTITY",
                format!("{what}'s {} do not match profile.json", wrong.join(", ")),
            )
            .in_file(self.rel(path))
            .with_help("the record belongs to another project or lineage; remove it or restore profile.json");
            self.push(d);
        }
    }

    fn path_mismatch(&mut self, path: &Path, msg: String) {
        let d = Diagnostic::error("V2-PATH", msg)
            .in_file(self.rel(path))
            .with_help("a record's path is its identity: remove the copy, or move the record to the path its ids name");
        self.push(d);
    }

    fn load_profile(&mut self, path: &Path) {
        let bytes = match self.read_bounded(path) {
            Some(Some(b)) => b,
            Some(None) => {
                let d = Diagnostic::error(
                    "V2-PROFILE",
                    "profile.json is missing beside profile 2.0.0 records (sessions/, events/, receipts/ or policy/)",
                )
                .in_file(self.rel(path))
                .with_help("restore .small/profile.json from version control; without it the records cannot be checked against their project");
                self.push(d);
                return;
            }
            None => return,
        };
        let Some(v) = self.parse_record(path, &bytes, "profile.json", PROFILE) else {
            return;
        };
        let file = self.rel(path);
        if v.str_of("small_version") != PROFILE_VERSION {
            let d = Diagnostic::error(
                "V2-PROFILE",
                format!("profile.json declares small_version \"{}\"; this reader knows \"{PROFILE_VERSION}\"", v.str_of("small_version")),
            )
            .in_file(file.clone())
            .with_help("use a small that supports this profile version");
            self.push(d);
        }
        for key in ["project_id", "lineage_id", "policy_revision"] {
            if v.str_of(key).is_empty() {
                let d =
                    Diagnostic::error("V2-PROFILE", format!("profile.json has an empty \"{key}\""))
                        .in_file(file.clone())
                        .with_help("restore profile.json from version control");
                self.push(d);
            }
        }
        let mode = v.str_of("mode");
        if mode != "solo" && mode != "collaborative" {
            let d = Diagnostic::error(
                "V2-PROFILE",
                format!("profile.json mode \"{mode}\" is neither solo nor collaborative"),
            )
            .in_file(file)
            .with_path("/mode")
            .with_help("set mode to \"solo\" or \"collaborative\"");
            self.push(d);
        }
        self.store.profile = Some(Profile {
            project_id: v.str_of("project_id").into(),
            lineage_id: v.str_of("lineage_id").into(),
            mode: mode.into(),
            policy_revision: v.str_of("policy_revision").into(),
            intent_digest: v.str_of("intent_digest").into(),
            constraints_digest: v.str_of("constraints_digest").into(),
            import_id: v.str_of("import_id").into(),
        });
    }

    fn load_session(&mut self, path: &Path, bytes: &[u8]) {
        let Some(v) = self.parse_record(path, bytes, "session", SESSION) else {
            return;
        };
        let digest = self.check_digest(path, bytes, "session");
        self.check_identity(path, &v, "session", true);
        let id = v.str_of("session_id").to_string();
        if path
            .file_name()
            .is_none_or(|n| n.to_string_lossy() != format!("{id}.json"))
        {
            self.path_mismatch(
                path,
                format!("session file name does not match its session_id {id}"),
            );
            return;
        }
        for key in ["observed_frontier", "tool_version", "created_at"] {
            if v.str_of(key).is_empty() {
                let d = Diagnostic::error("V2-FIELD", format!("session has an empty \"{key}\""))
                    .in_file(self.rel(path))
                    .with_help("restore the record from version control");
                self.push(d);
            }
        }
        self.store.sessions.push(Session {
            file: self.rel(path),
            id,
            label: v.str_of("label").into(),
            actor_label: v.str_of("actor_label").into(),
            observed_frontier: v.str_of("observed_frontier").into(),
            created_at: v.str_of("created_at").into(),
            digest,
        });
    }

    fn load_event(&mut self, path: &Path, bytes: &[u8]) {
        let name = path.file_name().map(|n| n.to_string_lossy());
        let session_dir = path.parent().and_then(Path::file_name);
        let session_dir = session_dir.map(|n| n.to_string_lossy());
        let events_dir = self.events_dir(path);
        let at = EventAt {
            path,
            name: name.as_deref().unwrap_or_default(),
            session_dir: session_dir.as_deref().unwrap_or_default(),
            events_dir,
        };
        self.load_event_at(&at, bytes);
    }

    /// [`Self::load_event`] of the event file `at` (whose names are already known).
    fn load_event_at(&mut self, at: &EventAt<'_>, bytes: &[u8]) {
        let path = at.path;
        // A sound record is read by the fast path; anything else by the general one, which
        // reports what is wrong (v2/fastevent.rs says why there are two).
        let f = match fastevent::parse(bytes) {
            Some(f) => f,
            None => match self.parse_record(path, bytes, "event", EVENT) {
                Some(v) => event_fields(&v),
                None => {
                    self.note_unreadable(path);
                    return;
                }
            },
        };
        let digest = self.check_digest(path, bytes, "event");
        self.check_identity_of(
            path,
            "event",
            &f.small_version,
            &f.project_id,
            Some(&f.lineage_id),
        );
        let name_ok = at
            .name
            .strip_suffix(".json")
            .is_some_and(|n| n == f.event_id);
        let dir_ok = at.session_dir == f.session_id;
        if !name_ok || !dir_ok {
            self.path_mismatch(
                path,
                format!(
                    "event path does not match its identity: session {}, event {}",
                    f.session_id, f.event_id
                ),
            );
            self.note_unreadable(path);
            return;
        }
        if !EVENT_KINDS.contains(&f.kind.as_str()) {
            let d = Diagnostic::error("V2-KIND", format!("unknown event kind \"{}\"", f.kind))
                .in_file(self.rel(path))
                .with_path("/kind")
                .with_help("profile 2.0.0 defines a closed set of event kinds; restore the record");
            self.push(d);
        }
        self.store.events.push(Event {
            events_dir: at.events_dir.clone(),
            id: f.event_id,
            session_id: f.session_id,
            kind: f.kind,
            sequence: f.sequence,
            previous_event: f.previous_event,
            parents: f.parents,
            occurred_at: f.occurred_at,
            task_id: f.task_id,
            task_revision: f.task_revision,
            policy_revision: f.policy_revision,
            source_digest: f.source_digest,
            payload: f.payload,
            digest,
        });
    }

    /// The directory of event records holding `path` (its session directory's parent), as
    /// diagnostics name it: the one this read already holds when it is the same.
    fn events_dir(&mut self, path: &Path) -> std::sync::Arc<str> {
        let dir = path.parent().and_then(Path::parent).unwrap_or(path);
        let rel = self.rel(dir);
        match &self.store.events_dir {
            Some(held) if **held == *rel => held.clone(),
            _ => {
                let held: std::sync::Arc<str> = rel.into();
                self.store.events_dir = Some(held.clone());
                held
            }
        }
    }

    fn load_receipt(&mut self, path: &Path, bytes: &[u8]) {
        let Some(v) = self.parse_record(path, bytes, "receipt", RECEIPT) else {
            return;
        };
        let digest = self.check_digest(path, bytes, "receipt");
        self.check_identity(path, &v, "receipt", false);
        let file = self.rel(path);
        if path
            .file_name()
            .is_none_or(|n| n.to_string_lossy() != format!("{digest}.json"))
        {
            self.path_mismatch(
                path,
                format!("receipt file name does not match its digest {digest}"),
            );
            return;
        }
        let strength = v.str_of("strength");
        if !["narrative_assertion", "cli_captured", "verified_artifact"].contains(&strength) {
            let d = Diagnostic::error("V2-FIELD", format!("receipt strength \"{strength}\" is not one of narrative_assertion, cli_captured, verified_artifact"))
                .in_file(file.clone())
                .with_path("/strength")
                .with_help("restore the receipt from version control");
            self.push(d);
        }
        let availability = v.str_of("availability");
        if !["unavailable", "stale", "failed", "verified"].contains(&availability) {
            let d = Diagnostic::error("V2-FIELD", format!("receipt availability \"{availability}\" is not one of unavailable, stale, failed, verified"))
                .in_file(file.clone())
                .with_path("/availability")
                .with_help("restore the receipt from version control");
            self.push(d);
        }
        self.store.receipts.push(Receipt {
            file,
            id: v.str_of("receipt_id").into(),
            strength: strength.into(),
            availability: availability.into(),
            task_id: v.str_of("task_id").into(),
            outcome: v.str_of("outcome").into(),
            digest,
            artifact_path: v.str_of("artifact_path").into(),
            artifact_digest: v.str_of("artifact_digest").into(),
            artifact_size: match v.get("artifact_size") {
                Some(Jv::Int(n)) => Some(*n),
                _ => None,
            },
        });
    }
}
