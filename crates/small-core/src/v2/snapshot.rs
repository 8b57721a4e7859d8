//! The checked and reduced state of a 2.0.0 tree as the reading commands need it (`status`,
//! `resume`), and its cache in `.small-cache/`.
//!
//! A [`Snapshot`] is what [`crate::v2::check_store`] gives, minus what those commands never
//! look at: the records themselves (only the newest events are kept, for the handoff and the
//! recent entries) and the timeline. Building one reads every record; a cached one is used
//! instead only when the tree is provably the one it was built from.
//!
//! The proof is a stat of every entry under `.small/` (like git's index): the relative path,
//! type and mode, size, modification and change times in nanoseconds, device and inode. Any
//! write to a record, any file added, removed, renamed or replaced changes at least one of
//! them; the change time cannot be set back by a user. The event files themselves are the
//! exception: a session's directory under `events/` is proven by its own stat (its times
//! change with every name added, removed or replaced in it), so an event edited in place is
//! not seen through the cache. The one blind spot of the times is the "racy" case:
//! a file changed again within the file system's timestamp granularity after it was stat'ed
//! keeps the same times. The walk therefore happens before the records are read, and no cache
//! is written while any entry is younger than [`RACY_MARGIN`] at the start of the walk: such
//! a tree is read in full again next time. The decision and its costs are in
//! docs/decisions/0128-v2-state-cache.md.
//!
//! The cache file is sealed ([`crate::workspace::cache`]) and keyed by the tool build and the
//! canonical path of `.small/`: a damaged, foreign or hand-edited file is no cache, and a
//! cache never changes an answer, only how long it takes. `check` never uses it.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::diag::{Diagnostic, Severity};
use crate::v2::load::Event;
use crate::v2::reduce::State;
use crate::workspace::cache::{read_sealed, write_sealed, ContextKey};

/// How many of the newest events a snapshot keeps (per group: any kind, and progress
/// kinds), enough for the handoff and the recent entries of `status` and `resume`.
pub const TAIL: usize = 64;

pub(crate) use crate::workspace::cache::RACY_MARGIN;

/// The cache file under `.small-cache/`.
const CACHE_FILE: &str = "v2-state.v1";
/// The largest cache file read.
const CACHE_MAX_BYTES: u64 = 64 << 20;
/// The event kinds read as progress (the rest is bookkeeping).
pub const SIGNAL_KINDS: [&str; 2] = ["task_transitioned", "command_recorded"];

/// The checked state of a 2.0.0 tree, for the commands that read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Every finding of the checks (records, graph, state), sorted.
    pub diagnostics: Vec<Diagnostic>,
    /// The reduced state; its `timeline` is left empty.
    pub state: State,
    /// How many events were read.
    pub events: usize,
    /// The newest events in timeline order (oldest first): the latest [`TAIL`] of any kind,
    /// the latest [`TAIL`] of the [`SIGNAL_KINDS`], and the latest handoff.
    pub tail: Vec<Event>,
    /// Whether `tail` holds every event.
    pub tail_complete: bool,
    /// Whether it came from the cache.
    pub from_cache: bool,
    /// How many events written since the cache were folded into it ([`fold`]; 0 when it
    /// came from the cache as it was, or from a full read).
    pub folded: usize,
}

impl Snapshot {
    /// The snapshot of what [`crate::v2::check_store`] found.
    pub fn build(checked: crate::v2::Checked, store: &crate::v2::Store) -> Snapshot {
        Snapshot::build_with_tail(checked, store, TAIL)
    }

    /// [`Snapshot::build`], keeping `tail` events per group instead of [`TAIL`].
    pub fn build_with_tail(
        checked: crate::v2::Checked,
        store: &crate::v2::Store,
        tail: usize,
    ) -> Snapshot {
        let mut state = checked.state;
        state.timeline.clear();
        // The ids of the transitions attesting each task grow with the log (a thousand a
        // task at 100 000 events): `status` and `resume` show their number, and
        // `reconstruct --task` the ids.
        for t in &mut state.tasks {
            t.attestations = Vec::new();
        }
        let order = std::mem::take(&mut state.order);
        let keep = newest(order.iter().filter_map(|&i| store.events.get(i)), tail);
        Snapshot {
            diagnostics: checked.diagnostics,
            state,
            events: store.events.len(),
            tail_complete: keep.len() == order.len(),
            tail: keep.into_iter().cloned().collect(),
            from_cache: false,
            folded: 0,
        }
    }
}

/// The events of `timeline` (in timeline order) a snapshot keeps, in that order: the latest
/// `tail` of any kind, the latest `tail` of the [`SIGNAL_KINDS`], and the latest handoff.
fn newest<'e>(timeline: impl DoubleEndedIterator<Item = &'e Event>, tail: usize) -> Vec<&'e Event> {
    let (mut any, mut signal, mut handoff) = (0, 0, false);
    let mut keep: Vec<&Event> = Vec::new();
    for t in timeline.rev() {
        if any >= tail && signal >= tail && handoff {
            break;
        }
        let is_signal = SIGNAL_KINDS.contains(&t.kind.as_str());
        let is_handoff = t.kind == "handoff_recorded";
        let wanted = any < tail || (is_signal && signal < tail) || (is_handoff && !handoff);
        any += 1;
        signal += usize::from(is_signal);
        handoff |= is_handoff;
        if wanted {
            keep.push(t);
        }
    }
    keep.reverse();
    keep
}

/// The snapshot of the 2.0.0 tree at `root/.small` (`small_dir`): from the cache when
/// `use_cache` and the cache proves the tree unchanged, else read in full (and the cache
/// written when `use_cache` and the tree is not racy).
pub fn snapshot(root: &Path, small_dir: &Path, use_cache: bool) -> Snapshot {
    if !use_cache {
        let (c, store) = crate::v2::check_store_ordered(root, small_dir);
        return Snapshot::build(c, &store);
    }
    snapshot_at(root, small_dir, SystemTime::now())
}

/// [`snapshot`] through the cache, entries changed after `started - RACY_MARGIN` racy.
fn snapshot_at(root: &Path, small_dir: &Path, started: SystemTime) -> Snapshot {
    let cache_dir = root.join(".small-cache");
    let key = context_key(small_dir);
    let proof = key.as_ref().and_then(|_| proof(small_dir, started));
    if let (Some(key), Some(p)) = (&key, &proof) {
        if let Some(body) = read_body(&cache_dir, key) {
            if body.proof == p.digest {
                if body.base.as_ref().is_some_and(fold::Base::frontier_stale) {
                    if let Some(s) = settled(root, key, body, p) {
                        return s;
                    }
                } else if let Some(s) = body.into_snapshot() {
                    return s;
                }
            } else if let Some(s) = fold::forward(root, small_dir, key, body, p) {
                return s;
            }
        }
    }
    let (c, store) = crate::v2::check_store_ordered(root, small_dir);
    let snap = Snapshot::build(c, &store);
    if let (Some(key), Some(p)) = (key, proof) {
        // A state with conflicts is not cached: the steps that resolve them describe each
        // head from its event, which the cache does not keep.
        if !p.racy && snap.state.conflicts.is_empty() {
            write_cache(&cache_dir, &key, &p, &snap, &store);
        }
    }
    snap
}

/// The state `body` holds (for the tree `proof` proves) with the frontier a writer left
/// uncomputed computed, and cached so when the tree is not racy.
fn settled(root: &Path, key: &str, body: CacheBody, proof: &Proof) -> Option<Snapshot> {
    let mut f = Folding::of_body(root, body)?;
    f.settle()?;
    if proof.racy {
        return Some(f.snap);
    }
    Some(f.write(&root.join(".small-cache"), key, proof))
}

/// The cached state a writer starts from, for the tree `proof` proves (taken under the
/// write lock, not racy): the cache as it is when it proves that tree, or with the events
/// written since folded in. `None` when there is none, or it has findings, conflicts or
/// resolutions (then the writer reads every record).
pub(crate) fn for_write(root: &Path, small_dir: &Path, proof: &Proof) -> Option<Folding> {
    let key = context_key(small_dir)?;
    let body = read_body(&root.join(".small-cache"), &key)?;
    let f = if body.proof == proof.digest {
        Folding::of_body(root, body)?
    } else {
        Folding::forward(root, small_dir, body, proof)?
    };
    f.foldable().then_some(f)
}

/// Whether the cache of the tree at `root` holds a frontier a writer left uncomputed
/// (`None`: no cache with a base).
#[cfg(test)]
pub(crate) fn frontier_left_stale(root: &Path) -> Option<bool> {
    let key = context_key(&root.join(crate::spec::consts::SMALL_DIR))?;
    let body = read_body(&root.join(".small-cache"), &key)?;
    body.base.as_ref().map(fold::Base::frontier_stale)
}

/// What a cache is valid for besides the tree: the build, the place, the format.
pub(crate) fn context_key(small_dir: &Path) -> Option<String> {
    let canonical = std::fs::canonicalize(small_dir).ok()?;
    let mut key = ContextKey::new("v2-state");
    key.put(&canonical.to_string_lossy());
    key.put(&TAIL.to_string());
    // The session name hashes are sums (fold.rs).
    key.put("names-sum");
    Some(key.finish())
}

/// The stat proof of a tree.
pub(crate) struct Proof {
    /// BLAKE3 over every entry's stat line, in path order.
    pub digest: String,
    /// Some entry changed within [`RACY_MARGIN`] of the walk's start (or in the future).
    pub racy: bool,
    /// The newest modification or change time of an entry (nanoseconds since the epoch).
    pub newest: i128,
    /// Each entry's path (relative to `.small/`, `""` for itself) and stat line, in order.
    pub entries: Vec<(String, Vec<u8>)>,
}

/// Stat every entry under `small_dir` (never following a link). `None` when the tree cannot
/// be walked (then there is no cache).
pub(crate) fn proof(small_dir: &Path, started: SystemTime) -> Option<Proof> {
    let horizon = started
        .checked_sub(RACY_MARGIN)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    proof_since(small_dir, horizon)
}

/// [`proof`], racy when an entry changed at or after `horizon` (nanoseconds since the
/// epoch).
pub(crate) fn proof_since(small_dir: &Path, horizon: i128) -> Option<Proof> {
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    let mut ages = Ages::since(horizon);
    let top = std::fs::symlink_metadata(small_dir).ok()?;
    if !top.is_dir() {
        return None;
    }
    entries.push((String::new(), stat_line("", &top, &mut ages)));
    walk(small_dir, "", &mut entries, &mut ages, 0)?;
    let mut hasher = blake3::Hasher::new();
    for (_, line) in &entries {
        hasher.update(line);
    }
    Some(Proof {
        digest: hasher.finalize().to_hex().to_string(),
        racy: ages.racy,
        newest: ages.newest,
        entries,
    })
}

/// What a walk learns of its entries' times.
pub(crate) struct Ages {
    /// Changes at or after this (nanoseconds since the epoch) are young.
    horizon: i128,
    /// Some entry is young.
    racy: bool,
    /// The newest modification or change time seen.
    newest: i128,
}

impl Ages {
    pub(crate) fn since(horizon: i128) -> Ages {
        Ages {
            horizon,
            racy: false,
            newest: i128::MIN,
        }
    }
}

/// How deep the walk goes (the profile's trees are at most four levels deep; anything
/// deeper is still proven, up to this bound).
const MAX_DEPTH: u32 = 16;

fn walk(
    dir: &Path,
    rel: &str,
    out: &mut Vec<(String, Vec<u8>)>,
    ages: &mut Ages,
    depth: u32,
) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut entries: Vec<(String, std::fs::Metadata)> = Vec::new();
    for e in std::fs::read_dir(dir).ok()? {
        let e = e.ok()?;
        // DirEntry::metadata does not follow a link (fstatat relative to the directory).
        let m = e.metadata().ok()?;
        entries.push((e.file_name().to_string_lossy().into_owned(), m));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (name, m) in entries {
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        out.push((path.clone(), stat_line(&path, &m, ages)));
        // A session's event directory is proven by its own stat: any event added, removed,
        // renamed or replaced in it changes the directory's modification and change times,
        // and events are immutable, created exclusively. Stat'ing each of 100 000 event
        // files costs more than the cache may (docs/decisions/0128-v2-state-cache.md); an
        // event edited in place is found by `check` and `--no-cache`, not here.
        if m.is_dir() && rel != "events" {
            walk(&dir.join(&name), &path, out, ages, depth + 1)?;
        }
    }
    Some(())
}

/// The entry's stat line: its path and the stat facts the proof compares.
pub(crate) fn stat_line(path: &str, m: &std::fs::Metadata, ages: &mut Ages) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 80);
    let (mtime, ctime) = change_times(m);
    if mtime >= ages.horizon || ctime >= ages.horizon {
        ages.racy = true;
    }
    ages.newest = ages.newest.max(mtime).max(ctime);
    // Length-prefixed path: no name can run into the numbers.
    out.extend_from_slice(&(path.len() as u64).to_le_bytes());
    out.extend_from_slice(path.as_bytes());
    for n in identity(m) {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&mtime.to_le_bytes());
    out.extend_from_slice(&ctime.to_le_bytes());
    out
}

/// Modification and status-change times in nanoseconds since the epoch.
#[cfg(unix)]
pub(crate) fn change_times(m: &std::fs::Metadata) -> (i128, i128) {
    use std::os::unix::fs::MetadataExt;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (ns(m.mtime(), m.mtime_nsec()), ns(m.ctime(), m.ctime_nsec()))
}

/// Where there is no status-change time, the modification time stands for both: the proof
/// is weaker there (an edit that restores the time goes unseen), so `check` stays the judge.
#[cfg(not(unix))]
pub(crate) fn change_times(m: &std::fs::Metadata) -> (i128, i128) {
    let t = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    (t, t)
}

/// Mode, size, device, inode and link count: what tells one file from its replacement.
#[cfg(unix)]
fn identity(m: &std::fs::Metadata) -> [u64; 5] {
    use std::os::unix::fs::MetadataExt;
    [u64::from(m.mode()), m.size(), m.dev(), m.ino(), m.nlink()]
}

/// Without inode numbers in stable std, the size and read-only bit only.
#[cfg(not(unix))]
fn identity(m: &std::fs::Metadata) -> [u64; 5] {
    [u64::from(m.permissions().readonly()), m.len(), 0, 0, 1]
}

/// A diagnostic as the cache keeps it (2.0.0 findings carry no span or secret note; a
/// snapshot with one is not cached).
#[derive(Serialize, Deserialize)]
struct DiagOut {
    code: String,
    error: bool,
    file: Option<String>,
    path: Option<String>,
    message: String,
    help: Option<String>,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct CacheBody {
    key: String,
    proof: String,
    diagnostics: Vec<DiagOut>,
    state: State,
    /// The tasks' policy revisions (not part of the state's serialised form).
    task_policy: Vec<String>,
    /// The tasks' attestation counts (likewise).
    task_attestations: Vec<usize>,
    events: usize,
    tail: Vec<Event>,
    tail_complete: bool,
    /// What folding events written after it needs ([`fold`]); `None`: no fold.
    #[serde(default)]
    base: Option<fold::Base>,
}

impl CacheBody {
    /// The body for `s`, the snapshot of the tree `proof` proves (its stat lines kept for
    /// [`fold`] when `base` is given).
    fn of(key: &str, proof: &Proof, s: &Snapshot, base: Option<fold::Base>) -> Option<CacheBody> {
        if s.diagnostics
            .iter()
            .any(|d| d.span.is_some() || d.secret.is_some())
        {
            return None;
        }
        Some(CacheBody {
            key: key.to_string(),
            proof: proof.digest.clone(),
            diagnostics: s
                .diagnostics
                .iter()
                .map(|d| DiagOut {
                    code: d.code.clone(),
                    error: d.is_error(),
                    file: d.file.clone(),
                    path: d.path.clone(),
                    message: d.message.clone(),
                    help: d.help.clone(),
                })
                .collect(),
            state: s.state.clone(),
            task_policy: s
                .state
                .tasks
                .iter()
                .map(|t| t.policy_revision.clone())
                .collect(),
            task_attestations: s.state.tasks.iter().map(|t| t.attestation_count).collect(),
            events: s.events,
            tail: s.tail.clone(),
            tail_complete: s.tail_complete,
            base,
        })
    }

    /// The snapshot it holds (`None` when its parts do not fit together).
    fn into_snapshot(self) -> Option<Snapshot> {
        let tasks = self.state.tasks.len();
        if self.task_policy.len() != tasks || self.task_attestations.len() != tasks {
            return None;
        }
        let mut state = self.state;
        for ((t, p), n) in state
            .tasks
            .iter_mut()
            .zip(self.task_policy)
            .zip(self.task_attestations)
        {
            t.policy_revision = p;
            t.attestation_count = n;
        }
        Some(Snapshot {
            diagnostics: self
                .diagnostics
                .into_iter()
                .map(|d| Diagnostic {
                    code: d.code,
                    severity: if d.error {
                        Severity::Error
                    } else {
                        Severity::Warning
                    },
                    file: d.file,
                    span: None,
                    path: d.path,
                    message: d.message,
                    help: d.help,
                    secret: None,
                })
                .collect(),
            state,
            events: self.events,
            tail: self.tail,
            tail_complete: self.tail_complete,
            from_cache: true,
            folded: 0,
        })
    }

    fn write(&self, dir: &Path) {
        if let Ok(json) = serde_json::to_string(self) {
            write_sealed(dir, CACHE_FILE, &json);
        }
    }
}

/// Write the cache of `s`, the snapshot of `store`'s records, for the tree `proof` proves;
/// with what [`fold`] needs to fold events written later.
pub(crate) fn write_cache(
    dir: &Path,
    key: &str,
    proof: &Proof,
    s: &Snapshot,
    store: &crate::v2::Store,
) {
    let base = fold::Base::of(dir, proof, store);
    if let Some(body) = CacheBody::of(key, proof, s, base) {
        body.write(dir);
    }
}

/// The cache body for `key`, whatever tree it proves.
fn read_body(dir: &Path, key: &str) -> Option<CacheBody> {
    let json = read_sealed(dir, CACHE_FILE, CACHE_MAX_BYTES)?;
    let body: CacheBody = serde_json::from_str(&json).ok()?;
    (body.key == key).then_some(body)
}

pub(crate) mod carry;
mod fold;
pub(crate) use fold::Folding;
#[cfg(test)]
mod tests;
