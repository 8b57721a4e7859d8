//! Events another program wrote, folded into the cached state.
//!
//! A writer of small carries the cache across its own writes ([`super::carry`]). Another
//! program — the reference implementation, a `git pull` — changes the tree behind the
//! cache's back, and the stat proof no longer matches. At 100 000 events, reading every
//! record again takes over a second; the usual change is one session directory with a few
//! new events. So before a full read, the reader tries to fold the new records into the
//! cached state, the way jj loads a view and applies the operations after it. It folds only
//! what it can prove is exactly "the records the cache vouched for, plus these":
//!
//! - the tree differs from the cached proof only in session directories under `events/`
//!   (changed or new), new session records under `sessions/`, new receipts under
//!   `receipts/sha256/`, and the directories holding them; nothing the cache proved is gone;
//! - each changed session directory, listed, holds every event it held (their names hash to
//!   the digest the cache keeps per session) and new `*.json` files; its stat after the
//!   listing is the one proven;
//! - the new records pass the loader's record checks (read as [`load::load`] reads them)
//!   and the command rule (a recorded command's digest is its event's source digest);
//! - the new events continue their sessions' sequences and links, name parents that exist,
//!   and form one chain that descends from every event before them: the first names each of
//!   the cached heads among its parents, each later one the event before it. Then the
//!   reducer's order is the cached order followed by the chain, and no new event is
//!   concurrent with any other, so no new conflict can arise from concurrency;
//! - folding them raises no conflict: no stale or unverified evidence, no task unknown, no
//!   definition that changes the revision a task's earlier transitions attest; no policy
//!   change and no conflict resolution among them or before them.
//!
//! Anything else is a full read, which gives the same answer. The frontier needs every
//! event's `id:digest` line: the cache keeps them, sorted, in a file of their own
//! ([`LINES_FILE`]: the frontier's preimage, sealed and bound to the cache by its hash),
//! and the lines folded since that file was written in the cache itself. A writer computes
//! the frontier only when a step asks for it and otherwise leaves it marked uncomputed for
//! the next reader ([`Folding::settle`]); it reads the lines file only then, or for a parent
//! the cache does not name itself.
//!
//! What the cache trusts, a fold trusts: an event the cache vouched for that was edited in
//! place, or replaced in the same moment as new events were added beside it, is found by
//! `check` and `--no-cache`, not here (docs/decisions/0128-v2-state-cache.md and
//! docs/decisions/0130-v2-cache-folds-foreign-events.md).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{newest, stat_line, Ages, CacheBody, Proof, Snapshot, TAIL};
use crate::v2::load::{self, Event, Profile, Store, MAX_RECORD_BYTES};
use crate::v2::reduce::{apply_definition, set_outcome, ReceiptState, SessionState, Task};
use crate::workspace::cache::write_sealed;

/// The file under `.small-cache/` with every event's `id:digest` line, sorted.
const LINES_FILE: &str = "v2-frontier.v1";
/// The largest lines file read (a million events is about 100 MiB).
const LINES_MAX_BYTES: u64 = 256 << 20;
/// The most new events folded; more are read in full.
const MAX_FOLD: usize = 4096;
/// The most folded lines the cache body keeps before the lines file is written again.
const MAX_EXTRA: usize = if cfg!(test) { 3 } else { 4096 };

/// What folding needs besides the cached snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Base {
    /// `profile.json`, which the records are checked against (proven unchanged).
    profile: Profile,
    /// The proof's entries: path under `.small/` and the hex of its stat line.
    entries: Vec<(String, String)>,
    /// The events no event names as a parent or previous event.
    heads: Vec<String>,
    /// Each session with events: how many, the last, and the hash of their file names.
    sessions: Vec<Tip>,
    /// How many `conflict_resolved` events there are (a fold needs none).
    resolutions: usize,
    /// The BLAKE3 hash of the lines file this body goes with.
    lines_seal: String,
    /// The lines file's stat line (hex), recorded once it was older than the racy margin;
    /// empty: not yet.
    #[serde(default)]
    pub(super) lines_stat: String,
    /// Lines folded since the lines file was written, sorted.
    extra: Vec<String>,
    /// The state's frontier is not computed for the lines folded last: a writer leaves it so
    /// when no step asked for it, and the next reader computes it ([`Folding::settle`]).
    #[serde(default)]
    frontier_stale: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Tip {
    id: String,
    count: usize,
    last: String,
    /// The [`names_digest`] of the session's event file names.
    names: String,
}

/// The hash of a set of event file names: the sum, in four 64-bit lanes, of each name's
/// BLAKE3 hash. A sum, so that a writer adds the names it publishes to a session's hash
/// without listing the names it does not know (the names in a directory are distinct).
fn names_digest<S: AsRef<str>>(names: &[S]) -> String {
    names_add(&hex::encode([0u8; 32]), names)
}

/// `acc` (a [`names_digest`]) with `names` added.
fn names_add<S: AsRef<str>>(acc: &str, names: &[S]) -> String {
    let mut lanes = [0u64; 4];
    if let Ok(bytes) = hex::decode(acc) {
        for (lane, chunk) in lanes.iter_mut().zip(bytes.chunks(8)) {
            *lane = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        }
    }
    for n in names {
        let h = blake3::hash(n.as_ref().as_bytes());
        for (lane, chunk) in lanes.iter_mut().zip(h.as_bytes().chunks(8)) {
            *lane = lane.wrapping_add(u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])));
        }
    }
    let mut out = [0u8; 32];
    for (chunk, lane) in out.chunks_mut(8).zip(lanes) {
        chunk.copy_from_slice(&lane.to_le_bytes());
    }
    hex::encode(out)
}

fn hex_entries(proof: &Proof) -> Vec<(String, String)> {
    proof
        .entries
        .iter()
        .map(|(p, l)| (p.clone(), hex::encode(l)))
        .collect()
}

/// Write `lines` (sorted, distinct) as the lines file; its seal.
fn write_lines<S: AsRef<str>>(dir: &Path, lines: &[S]) -> String {
    let mut text = String::with_capacity(lines.len() * 104);
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(l.as_ref());
    }
    write_sealed(dir, LINES_FILE, &text);
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

impl Base {
    /// The base of `store`'s records, the tree `proof` proves; writes the lines file into
    /// `dir`. `None` without a usable profile.
    pub(crate) fn of(dir: &Path, proof: &Proof, store: &Store) -> Option<Base> {
        let profile = store.profile.clone()?;
        let mut lines: Vec<String> = store
            .events
            .iter()
            .map(|e| format!("{}:{}", e.id, e.digest))
            .collect();
        lines.sort_unstable();
        lines.dedup();
        let lines_seal = write_lines(dir, &lines);
        drop(lines);
        let named: HashSet<&str> = store.events.iter().flat_map(|e| e.all_parents()).collect();
        let mut heads: Vec<String> = store
            .events
            .iter()
            .filter(|e| !named.contains(e.id.as_str()))
            .map(|e| e.id.clone())
            .collect();
        heads.sort();
        heads.dedup();
        let mut by_session: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
        for e in &store.events {
            by_session.entry(e.session_id.as_str()).or_default().push(e);
        }
        let sessions = by_session
            .into_iter()
            .map(|(id, evs)| {
                let last = evs
                    .iter()
                    .max_by_key(|e| e.sequence)
                    .map(|e| e.id.clone())
                    .unwrap_or_default();
                let mut names: Vec<String> = evs.iter().map(|e| format!("{}.json", e.id)).collect();
                names.sort();
                Tip {
                    id: id.to_string(),
                    count: evs.len(),
                    last,
                    names: names_digest(&names),
                }
            })
            .collect();
        Some(Base {
            profile,
            entries: hex_entries(proof),
            heads,
            sessions,
            resolutions: store
                .events
                .iter()
                .filter(|e| e.kind == "conflict_resolved")
                .count(),
            lines_seal,
            lines_stat: String::new(),
            extra: Vec::new(),
            frontier_stale: false,
        })
    }
}

/// The event ids the cache vouches for: the lines file's (`text`: sorted lines joined by
/// newlines) and the folded ones (`extra`, sorted).
struct Known<'a> {
    text: &'a [u8],
    extra: &'a [String],
}

impl Known<'_> {
    fn contains(&self, id: &str) -> bool {
        let key = format!("{id}:");
        let at = lower_bound(self.text, key.as_bytes());
        line_at(self.text, at).starts_with(key.as_bytes()) || {
            let at = self.extra.partition_point(|l| l.as_str() < key.as_str());
            self.extra.get(at).is_some_and(|l| l.starts_with(&key))
        }
    }
}

/// The line of `text` starting at byte `at` (empty at the end).
fn line_at(text: &[u8], at: usize) -> &[u8] {
    let rest = &text[at.min(text.len())..];
    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    &rest[..end]
}

/// Where the first line of `text` (sorted lines joined by newlines) that is not less than
/// `key` starts; `text.len()` when there is none. A binary search on the bytes: each probe
/// looks back to the start of the line it falls in (lines are about 100 bytes).
fn lower_bound(text: &[u8], key: &[u8]) -> usize {
    let (mut lo, mut hi) = (0, text.len());
    // `lo` is a line start, every line before it is less than `key`; `hi` is a line start
    // (or the end), no line from it on is.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let start = text[lo..mid]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(lo, |p| lo + p + 1);
        let line = line_at(text, start);
        if line < key {
            lo = (start + line.len() + 1).min(text.len());
        } else {
            hi = start;
        }
    }
    lo
}

/// The lines file as read: its bytes, where the text starts (after the seal line), and its
/// stat line when the text was hashed and found sealed and the file is older than the racy
/// margin (the next cache trusts that stat instead of hashing again).
struct Lines {
    bytes: Vec<u8>,
    at: usize,
    learned: Option<String>,
}

/// The lines file, when its seal is `seal` and matches. When the file's stat is `stat` (one
/// recorded once the file was older than the racy margin) the text is not hashed again: the
/// cache trusts an unchanged stat, as it does for the records
/// (docs/decisions/0152-v2-writes-on-the-cached-state.md).
fn read_lines(dir: &Path, seal: &str, stat: &str) -> Option<Lines> {
    let f = crate::fsio::open_read(&dir.join(LINES_FILE)).ok()?;
    let m = f.metadata().ok()?;
    let horizon = std::time::SystemTime::now()
        .checked_sub(super::RACY_MARGIN)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(i128::MAX, |d| d.as_nanos() as i128);
    let mut ages = Ages::since(horizon);
    let now_stat = hex::encode(stat_line(LINES_FILE, &m, &mut ages));
    let unchanged = !stat.is_empty() && now_stat == stat;
    let bytes = crate::fsio::read_all_bounded(f, LINES_MAX_BYTES).ok()?;
    let nl = bytes.iter().position(|&b| b == b'\n')?;
    if &bytes[..nl] != seal.as_bytes() {
        return None;
    }
    if unchanged {
        return Some(Lines {
            bytes,
            at: nl + 1,
            learned: None,
        });
    }
    (blake3::hash(&bytes[nl + 1..]).to_hex().as_str() == seal).then(|| Lines {
        bytes,
        at: nl + 1,
        learned: (!ages.racy).then_some(now_stat),
    })
}

/// What changed since the cached proof: session directories (by session id) and new session
/// records (paths under `.small/`). `None` when anything else changed.
struct Changes {
    dirs: Vec<String>,
    /// New session and receipt records.
    records: Vec<String>,
}

fn changes(base: &Base, proof: &Proof) -> Option<Changes> {
    let old: HashMap<&str, &str> = base
        .entries
        .iter()
        .map(|(p, l)| (p.as_str(), l.as_str()))
        .collect();
    let (mut dirs, mut sessions, mut seen) = (Vec::new(), Vec::new(), 0usize);
    for (path, line) in &proof.entries {
        let existed = match old.get(path.as_str()) {
            Some(o) if *o == hex::encode(line) => {
                seen += 1;
                continue;
            }
            Some(_) => {
                seen += 1;
                true
            }
            None => false,
        };
        let record = |dir: &str| {
            path.strip_prefix(dir).is_some_and(|n| {
                !existed && !n.contains('/') && n.len() > 5 && n.ends_with(".json")
            })
        };
        if path == "events" || path == "sessions" {
            if !existed {
                return None;
            }
        } else if path == "receipts" || path == "receipts/sha256" {
            // Changed, or made for the first receipt.
        } else if let Some(sid) = path.strip_prefix("events/").filter(|s| !s.contains('/')) {
            dirs.push(sid.to_string());
        } else if record("sessions/") || record("receipts/sha256/") {
            sessions.push(path.clone());
        } else {
            return None;
        }
    }
    (seen == old.len() && !dirs.is_empty()).then_some(Changes {
        dirs,
        records: sessions,
    })
}

/// The names of the event files in `small_dir/rel`, sorted: `None` unless every entry is a
/// regular `*.json` file and the directory's stat after the listing is the one `proof`
/// recorded.
fn list_events(small_dir: &Path, rel: &str, proof: &Proof) -> Option<Vec<String>> {
    let dir = small_dir.join(rel);
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).ok()? {
        let e = e.ok()?;
        let name = e.file_name().into_string().ok()?;
        let is_json = name.strip_suffix(".json").is_some_and(|s| !s.is_empty());
        if !e.file_type().ok()?.is_file() || !is_json {
            return None;
        }
        names.push(name);
    }
    names.sort();
    let m = std::fs::symlink_metadata(&dir).ok()?;
    let proven = proof.entries.iter().find(|(p, _)| p == rel)?;
    (stat_line(rel, &m, &mut Ages::since(0)) == proven.1).then_some(names)
}

/// Read one new record, bounded (`None` when it cannot be read or is too large).
fn read_record(small_dir: &Path, rel: &str) -> Option<(String, Vec<u8>)> {
    let bytes = crate::fsio::read_bounded(&small_dir.join(rel), MAX_RECORD_BYTES + 1).ok()?;
    (bytes.len() as u64 <= MAX_RECORD_BYTES).then(|| (rel.to_string(), bytes))
}

/// Fold the records written since `body` was cached into it, for the tree `proof` proves;
/// the cache is written for that tree when it is not racy. `None`: read the tree in full.
pub(super) fn forward(
    root: &Path,
    small_dir: &Path,
    key: &str,
    body: CacheBody,
    proof: &Proof,
) -> Option<Snapshot> {
    let mut f = Folding::forward(root, small_dir, body, proof)?;
    f.settle()?;
    if proof.racy {
        return Some(f.snap);
    }
    Some(f.write(&root.join(".small-cache"), key, proof))
}

/// A cached state with what folding more events onto it needs: where `status` starts when
/// the tree is the cached one plus events, and where a writer starts and goes on after each
/// of its appends (docs/decisions/0152-v2-writes-on-the-cached-state.md).
pub(crate) struct Folding {
    pub(crate) snap: Snapshot,
    base: Base,
    /// `.small-cache/`, where the lines file is.
    dir: PathBuf,
    /// The lines file as read (read when first needed: a writer that neither names an
    /// unknown parent nor needs the frontier never reads it), and where its text starts.
    lines: Option<(Vec<u8>, usize)>,
    /// Where the last frontier computed can resume ([`Mark`]), and the least line folded
    /// since (marks after it are no longer valid).
    marks: Vec<Mark>,
    fresh_min: Option<String>,
}

impl Folding {
    /// The state `body` holds, as it is (for the tree its proof proves). `None` when it
    /// keeps no base.
    pub(crate) fn of_body(root: &Path, mut body: CacheBody) -> Option<Folding> {
        let base = body.base.take()?;
        let snap = body.into_snapshot()?;
        Some(Folding {
            snap,
            base,
            dir: root.join(".small-cache"),
            lines: None,
            marks: Vec::new(),
            fresh_min: None,
        })
    }

    /// The text of the lines file, read (and checked against its seal) when first needed;
    /// `None` when it is not the one the cache goes with.
    fn text(&mut self) -> Option<&[u8]> {
        if self.lines.is_none() {
            let read = read_lines(&self.dir, &self.base.lines_seal, &self.base.lines_stat)?;
            if let Some(stat) = read.learned {
                self.base.lines_stat = stat;
            }
            self.lines = Some((read.bytes, read.at));
        }
        self.lines.as_ref().map(|(bytes, at)| &bytes[*at..])
    }

    /// Compute the state's frontier if it is left uncomputed. `None` when the lines file
    /// cannot be read (the state is then unusable).
    pub(crate) fn settle(&mut self) -> Option<()> {
        if !self.base.frontier_stale {
            return Some(());
        }
        self.text()?;
        let text = self.lines.as_ref().map(|(bytes, at)| &bytes[*at..])?;
        // The last mark every line folded since the marks were taken is greater than.
        let valid = match &self.fresh_min {
            Some(least) => self
                .marks
                .partition_point(|m| line_at(text, m.pos) < least.as_bytes()),
            None => self.marks.len(),
        };
        self.marks.truncate(valid);
        let start = self.marks.last().cloned();
        self.snap.state.frontier =
            frontier_from(text, &self.base.extra, start.as_ref(), &mut self.marks);
        self.fresh_min = None;
        self.base.frontier_stale = false;
        Some(())
    }

    /// Whether events may be folded onto it: no finding, no conflict, no resolution.
    pub(crate) fn foldable(&self) -> bool {
        self.snap.diagnostics.is_empty()
            && self.snap.state.conflicts.is_empty()
            && self.base.resolutions == 0
    }

    /// `body`'s state with the records written since it was cached folded in, for the tree
    /// `proof` proves (see the module documentation). `None`: read the tree in full.
    pub(super) fn forward(
        root: &Path,
        small_dir: &Path,
        body: CacheBody,
        proof: &Proof,
    ) -> Option<Folding> {
        let mut f = Folding::of_body(root, body)?;
        if !f.foldable() {
            return None;
        }
        let changed = changes(&f.base, proof)?;
        f.text()?;
        let mut records = Vec::new();
        {
            let known = Known {
                text: f.lines.as_ref().map_or(&[][..], |(b, at)| &b[*at..]),
                extra: &f.base.extra,
            };
            for sid in &changed.dirs {
                let rel = format!("events/{sid}");
                let names = list_events(small_dir, &rel, proof)?;
                let (old, new): (Vec<&String>, Vec<&String>) = names
                    .iter()
                    .partition(|n| known.contains(n.strip_suffix(".json").unwrap_or(n)));
                match f.base.sessions.iter().find(|t| t.id == *sid) {
                    Some(t) if old.len() != t.count || names_digest(&old) != t.names => {
                        return None
                    }
                    None if !old.is_empty() => return None,
                    _ => {}
                }
                if new.is_empty() || records.len() + new.len() > MAX_FOLD {
                    return None;
                }
                for n in new {
                    records.push(read_record(small_dir, &format!("{rel}/{n}"))?);
                }
            }
        }
        for rel in &changed.records {
            records.push(read_record(small_dir, rel)?);
        }
        f.add(root, small_dir, &records)?;
        Some(f)
    }

    /// Fold `records` (new sessions and events, as read or as published) into the state.
    /// `None` when they are not exactly what a fold may take; the state may then be partly
    /// folded and must be dropped.
    pub(crate) fn add(
        &mut self,
        root: &Path,
        small_dir: &Path,
        records: &[(String, Vec<u8>)],
    ) -> Option<()> {
        let mut store = Store {
            profile: Some(self.base.profile.clone()),
            ..Store::default()
        };
        if !load::load_published(root, small_dir, &mut store, records)
            || !store.diagnostics.is_empty()
            || !store.unreadable_events.is_empty()
            || !crate::v2::command::digest_rule(&store).is_empty()
        {
            return None;
        }
        // New receipts first: the transitions folded next may name them as evidence.
        let receipts = &mut self.snap.state.receipts;
        for r in &store.receipts {
            if receipts.iter().any(|x| x.digest == r.digest) {
                return None;
            }
            receipts.push(ReceiptState {
                digest: r.digest.clone(),
                strength: r.strength.clone(),
                availability: r.availability.clone(),
            });
        }
        receipts.sort_by(|a, b| a.digest.cmp(&b.digest));
        // The lines file is read only when a new event names a parent the base does not
        // name itself (a writer's own events name the heads and their session's last event).
        if self.lines.is_none() && !self.base.names_all_parents(&store) {
            self.text()?;
        }
        let base = &mut self.base;
        let known = Known {
            text: self.lines.as_ref().map_or(&[][..], |(b, at)| &b[*at..]),
            extra: &base.extra,
        };
        let chain = chain(base, &self.snap.state.sessions, &store, &known)?;
        fold(&mut self.snap, &store, &chain)?;
        let added: Vec<String> = store
            .events
            .iter()
            .map(|e| format!("{}:{}", e.id, e.digest))
            .collect();
        let least = added.iter().min().cloned();
        let mut extra: Vec<String> = added
            .into_iter()
            .chain(base.extra.iter().cloned())
            .collect();
        extra.sort_unstable();
        extra.dedup();
        base.extra = extra;
        self.fresh_min = match (self.fresh_min.take(), least) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Computed when asked for (`settle`): most writes never show it.
        base.frontier_stale = true;
        self.snap.state.frontier = String::new();
        if let Some(last) = chain.last() {
            base.heads = vec![last.id.clone()];
        }
        base.advance_tips(&store);
        Some(())
    }

    /// The events no event names as a parent or previous event.
    pub(crate) fn heads(&self) -> &[String] {
        &self.base.heads
    }

    /// How many events `session` has and its last one (`(0, "")` for none).
    pub(crate) fn tip(&self, session: &str) -> (usize, &str) {
        self.base
            .sessions
            .iter()
            .find(|t| t.id == session)
            .map_or((0, ""), |t| (t.count, t.last.as_str()))
    }

    /// The profile the records were checked against.
    pub(crate) fn profile(&self) -> &Profile {
        &self.base.profile
    }

    /// Whether the session directory `rel` (`events/<id>`) holds exactly the events of the
    /// state (no other file), with the stat `proof` recorded for it.
    pub(crate) fn holds(&self, small_dir: &Path, rel: &str, proof: &Proof) -> bool {
        let Some(session) = rel.strip_prefix("events/") else {
            return false;
        };
        let Some(tip) = self.base.sessions.iter().find(|t| t.id == session) else {
            return false;
        };
        list_events(small_dir, rel, proof)
            .is_some_and(|names| names.len() == tip.count && names_digest(&names) == tip.names)
    }

    /// Write it as the cache for the tree `proof` proves (the folded lines go into the lines
    /// file once there are many); the snapshot.
    pub(crate) fn write(mut self, dir: &Path, key: &str, proof: &Proof) -> Snapshot {
        self.base.entries = hex_entries(proof);
        let compact = self.base.extra.len() > MAX_EXTRA;
        if compact {
            self.text();
        }
        let text = self
            .lines
            .as_ref()
            .filter(|_| compact)
            .and_then(|(b, at)| std::str::from_utf8(&b[*at..]).ok());
        if let Some(text) = text {
            let mut all: Vec<&str> = text
                .split('\n')
                .filter(|l| !l.is_empty())
                .chain(self.base.extra.iter().map(String::as_str))
                .collect();
            all.sort_unstable();
            all.dedup();
            self.base.lines_seal = write_lines(dir, &all);
            self.base.lines_stat = String::new();
            self.base.extra = Vec::new();
        }
        if let Some(body) = CacheBody::of(key, proof, &self.snap, Some(self.base)) {
            body.write(dir);
        }
        self.snap
    }
}

impl Base {
    /// Whether the state's frontier was left uncomputed by the writer that cached it.
    pub(crate) fn frontier_stale(&self) -> bool {
        self.frontier_stale
    }

    /// Whether every parent and previous event the events of `store` name is one of them or
    /// an event the base names itself ([`Base::names`]).
    fn names_all_parents(&self, store: &Store) -> bool {
        let own: HashSet<&str> = store.events.iter().map(|e| e.id.as_str()).collect();
        store
            .events
            .iter()
            .flat_map(|e| e.all_parents())
            .all(|p| own.contains(p) || self.names(p))
    }

    /// Whether `id` is a head, a session's last event or a folded event: one the base knows
    /// without the lines file.
    fn names(&self, id: &str) -> bool {
        self.heads.iter().any(|h| h == id)
            || self.sessions.iter().any(|t| t.last == id)
            || Known {
                text: &[],
                extra: &self.extra,
            }
            .contains(id)
    }

    /// Each session of `store`'s events (new ones) with those events added to its tip.
    fn advance_tips(&mut self, store: &Store) {
        let mut by_session: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
        for e in &store.events {
            by_session.entry(e.session_id.as_str()).or_default().push(e);
        }
        for (sid, evs) in by_session {
            let names: Vec<String> = evs.iter().map(|e| format!("{}.json", e.id)).collect();
            let last = evs
                .iter()
                .max_by_key(|e| e.sequence)
                .map(|e| e.id.clone())
                .unwrap_or_default();
            match self.sessions.iter_mut().find(|t| t.id == sid) {
                Some(t) => {
                    t.count += evs.len();
                    t.last = last;
                    t.names = names_add(&t.names, &names);
                }
                None => self.sessions.push(Tip {
                    id: sid.to_string(),
                    count: evs.len(),
                    last,
                    names: names_digest(&names),
                }),
            }
        }
        self.sessions.sort_by(|a, b| a.id.cmp(&b.id));
    }
}

/// The new events in the reducer's order, when they form one chain that descends from
/// every cached event (see the module documentation) and keep the graph's rules.
fn chain<'s>(
    base: &Base,
    cached: &[SessionState],
    store: &'s Store,
    known: &Known,
) -> Option<Vec<&'s Event>> {
    let new: HashMap<&str, &Event> = store.events.iter().map(|e| (e.id.as_str(), e)).collect();
    if new.len() != store.events.len() {
        return None;
    }
    let mut sessions: HashSet<&str> = cached.iter().map(|s| s.id.as_str()).collect();
    for s in &store.sessions {
        if !sessions.insert(s.id.as_str()) {
            return None;
        }
    }
    // Sequences continue each session's chain; links name the event before.
    let mut by_session: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in &store.events {
        by_session.entry(e.session_id.as_str()).or_default().push(e);
    }
    for (sid, evs) in &mut by_session {
        if !sessions.contains(sid) {
            return None;
        }
        evs.sort_by_key(|e| e.sequence);
        let (count, last) = base
            .sessions
            .iter()
            .find(|t| t.id == *sid)
            .map_or((0, ""), |t| (t.count, t.last.as_str()));
        for (k, e) in evs.iter().enumerate() {
            let want_prev = if k == 0 { last } else { evs[k - 1].id.as_str() };
            if e.sequence != (count + k + 1) as i64 || e.previous_event != want_prev {
                return None;
            }
        }
    }
    for e in &store.events {
        if e.all_parents()
            .iter()
            .any(|p| !new.contains_key(p) && !base.names(p) && !known.contains(p))
        {
            return None;
        }
    }
    // The reducer's order among the new events: topological, ties by id.
    let mut indeg: HashMap<&str, usize> = HashMap::new();
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for e in &store.events {
        let ps: Vec<&str> = e
            .all_parents()
            .into_iter()
            .filter(|p| new.contains_key(p))
            .collect();
        indeg.insert(e.id.as_str(), ps.len());
        for p in ps {
            children.entry(p).or_default().push(e.id.as_str());
        }
    }
    let mut ready: BTreeSet<&str> = indeg
        .iter()
        .filter(|(_, &n)| n == 0)
        .map(|(&id, _)| id)
        .collect();
    let mut order: Vec<&Event> = Vec::new();
    while let Some(id) = ready.pop_first() {
        order.push(new[id]);
        for &c in children.get(id).into_iter().flatten() {
            let n = indeg.get_mut(c)?;
            *n -= 1;
            if *n == 0 {
                ready.insert(c);
            }
        }
    }
    if order.len() != store.events.len() {
        return None;
    }
    if order.is_empty() {
        return Some(order);
    }
    // One chain: the first names every cached head, each later one the event before it.
    let first = order.first()?.all_parents();
    if !base.heads.iter().all(|h| first.contains(&h.as_str())) {
        return None;
    }
    for w in order.windows(2) {
        if !w[1].all_parents().contains(&w[0].id.as_str()) {
            return None;
        }
    }
    Some(order)
}

/// Apply the chain's events to the cached snapshot as the reducer would; `None` when one
/// would raise a conflict or needs more than the cached state (see the module
/// documentation).
fn fold(snap: &mut Snapshot, store: &Store, chain: &[&Event]) -> Option<()> {
    let state = &mut snap.state;
    for s in &store.sessions {
        state.sessions.push(SessionState {
            id: s.id.clone(),
            label: s.label.clone(),
            created_at: s.created_at.clone(),
            events: 0,
            closed: false,
            superseded: false,
        });
    }
    let mut tix: HashMap<String, usize> = state
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.clone(), i))
        .collect();
    let mut transitions: Vec<&Event> = Vec::new();
    for &e in chain {
        if let Some(s) = state.sessions.iter_mut().find(|s| s.id == e.session_id) {
            s.events += 1;
        }
        match e.kind.as_str() {
            "session_closed" => {
                if let Some(s) = state.sessions.iter_mut().find(|s| s.id == e.session_id) {
                    s.closed = true;
                }
            }
            "handoff_recorded" => state.handoff = Some(e.payload.str_of("summary").to_string()),
            "ownership_taken_over"
                if e.task_id.is_empty() && e.payload.str_of("scope") == "session" =>
            {
                let prior = e.payload.str_of("prior_session");
                if let Some(s) = state.sessions.iter_mut().find(|s| s.id == prior) {
                    s.superseded = true;
                }
            }
            "task_created" | "task_updated" => {
                if e.task_id.is_empty()
                    || (e.kind == "task_updated" && !tix.contains_key(&e.task_id))
                {
                    return None;
                }
                let i = *tix.entry(e.task_id.clone()).or_insert_with(|| {
                    state.tasks.push(Task::pending(&e.task_id));
                    state.tasks.len() - 1
                });
                let t = &mut state.tasks[i];
                let before = (t.revision, t.policy_revision.clone());
                let outcome = (
                    t.status.clone(),
                    t.evidence_digests.clone(),
                    t.source_digest.clone(),
                );
                apply_definition(t, e);
                if t.attestation_count > 0 {
                    // Its transitions were checked against the definition in force: a new
                    // revision or policy would make them stale (a conflict).
                    if (t.revision, &t.policy_revision) != (before.0, &before.1) {
                        return None;
                    }
                    // The reducer sets the outcome after every definition.
                    (t.status, t.evidence_digests, t.source_digest) = outcome;
                }
            }
            "task_transitioned" => transitions.push(e),
            "mode_changed" => state.mode = e.payload.str_of("new_mode").to_string(),
            "policy_changed" | "conflict_resolved" => return None,
            _ => {}
        }
    }
    let verified: HashSet<&str> = state
        .receipts
        .iter()
        .filter(|r| r.availability == "verified")
        .map(|r| r.digest.as_str())
        .collect();
    for c in transitions {
        let t = &mut state.tasks[*tix.get(&c.task_id)?];
        let stale = c.task_revision != t.revision
            || (!c.policy_revision.is_empty() && c.policy_revision != t.policy_revision);
        if stale
            || c.payload
                .strs_of("evidence_digests")
                .iter()
                .any(|d| !verified.contains(d.as_str()))
        {
            return None;
        }
        t.attestation_count += 1;
        // Each descends from the one before: the last is the only head.
        set_outcome(t, c);
    }
    state
        .sessions
        .sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    let all: Vec<&Event> = snap.tail.iter().chain(chain.iter().copied()).collect();
    let keep = newest(all.iter().copied(), TAIL);
    snap.tail_complete = snap.tail_complete && keep.len() == all.len();
    snap.tail = keep.into_iter().cloned().collect();
    snap.events += chain.len();
    snap.folded = chain.len();
    Some(())
}

/// How far apart (bytes of the lines file's text) [`Mark`]s are taken.
const MARK_EVERY: usize = if cfg!(test) { 64 } else { 256 << 10 };

/// Where a frontier's hash can resume: the SHA-256 state after every line less than the line
/// starting at `pos` of the lines file's text (and nothing else) was hashed. It stays valid
/// while every line folded after it was taken is greater than that line: a handoff hashes
/// again only from the last mark before its own line, not the whole file.
#[derive(Clone)]
struct Mark {
    pos: usize,
    hash: Sha256,
}

/// SHA-256 over the lines of `text` (sorted, joined by newlines) and `add` (sorted, none
/// of them in `text`) in order, joined by newlines: [`crate::v2::reduce::frontier`] of
/// their events. The old lines are hashed in the runs between the new ones, not one by one.
#[cfg(test)]
fn frontier(text: &[u8], add: &[String]) -> String {
    frontier_from(text, add, None, &mut Vec::new())
}

/// [`frontier`], resuming from `start` (every line of `add` greater than its line is new
/// since it was taken), with a [`Mark`] pushed onto `marks` about every [`MARK_EVERY`] bytes.
fn frontier_from(
    text: &[u8],
    add: &[String],
    start: Option<&Mark>,
    marks: &mut Vec<Mark>,
) -> String {
    let (mut h, mut first, mut at, add) = match start {
        Some(m) => {
            let key = line_at(text, m.pos);
            let skip = add.partition_point(|a| a.as_bytes() < key);
            (m.hash.clone(), false, m.pos, &add[skip..])
        }
        None => (Sha256::new(), true, 0, add),
    };
    let mut next_mark = at + MARK_EVERY;
    let mut emit = |piece: &[u8], h: &mut Sha256| {
        if piece.is_empty() {
            return;
        }
        if !first {
            h.update(b"\n");
        }
        h.update(piece);
        first = false;
    };
    // The whole lines of `text[from..end]` (no newline at `end`), with the marks in them.
    let mut run =
        |mut from: usize, end: usize, h: &mut Sha256, emit: &mut dyn FnMut(&[u8], &mut Sha256)| {
            while next_mark < end {
                let probe = next_mark.max(from);
                let Some(nl) = text[probe..end].iter().position(|&b| b == b'\n') else {
                    break;
                };
                let p = probe + nl + 1;
                emit(&text[from..p - 1], h);
                marks.push(Mark {
                    pos: p,
                    hash: h.clone(),
                });
                from = p;
                next_mark = p + MARK_EVERY;
            }
            emit(&text[from..end], h);
        };
    for a in add {
        let cut = lower_bound(text, a.as_bytes());
        if line_at(text, cut) == a.as_bytes() {
            continue;
        }
        if cut > at {
            // The lines from `at` up to `cut`, without the newline between them and `a`
            // (the last line of the text has none).
            let end = if cut < text.len() { cut - 1 } else { cut };
            run(at, end, &mut h, &mut emit);
            at = cut;
        }
        emit(a.as_bytes(), &mut h);
    }
    run(at, text.len(), &mut h, &mut emit);
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    //! The byte-level search and the merged hash against the plain definitions.
    use super::*;
    use proptest::prelude::*;

    fn joined<S: AsRef<str>>(lines: &[S]) -> String {
        lines
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join("\n")
    }

    proptest! {
        #[test]
        fn the_merged_frontier_and_the_lookups_are_the_plain_ones(
            ids in proptest::collection::btree_set("[a-f0-9]{1,6}", 0..60),
            split in 0u8..=255,
        ) {
            let lines: Vec<String> = ids.iter().map(|id| format!("event_{}:{}", id, id.len())).collect();
            // As the lines file keeps them: by their bytes (`9:` after `90`).
            let mut lines = lines;
            lines.sort();
            let (mut old, mut new) = (Vec::new(), Vec::new());
            for (i, l) in lines.iter().enumerate() {
                if (i as u8).wrapping_mul(37) >= split {
                    old.push(l.clone());
                } else {
                    new.push(l.clone());
                }
            }
            let text = joined(&old);
            let want = hex::encode(Sha256::digest(joined(&lines).as_bytes()));
            prop_assert_eq!(frontier(text.as_bytes(), &new), want.clone());
            // Resumed from the last mark below the least of the lines added later.
            let later: Vec<String> = new.iter().filter(|l| l.len() % 2 == 0).cloned().collect();
            let before: Vec<String> = new.iter().filter(|l| l.len() % 2 == 1).cloned().collect();
            let mut marks = Vec::new();
            let first = frontier_from(text.as_bytes(), &before, None, &mut marks);
            let mut so_far: Vec<String> = old.iter().chain(&before).cloned().collect();
            so_far.sort();
            prop_assert_eq!(first, hex::encode(Sha256::digest(joined(&so_far).as_bytes())));
            let least = later.first().map_or(&[][..], |l| l.as_bytes());
            let valid = if later.is_empty() {
                marks.len()
            } else {
                marks.partition_point(|m| line_at(text.as_bytes(), m.pos) < least)
            };
            let start = marks.get(valid.wrapping_sub(1)).cloned();
            prop_assert_eq!(
                frontier_from(text.as_bytes(), &new, start.as_ref(), &mut Vec::new()),
                want
            );
            let known = Known { text: text.as_bytes(), extra: &new };
            for id in &ids {
                let (there, longer) = (format!("event_{id}"), format!("event_{id}x"));
                prop_assert!(known.contains(&there));
                // An id that begins another is not taken for it.
                prop_assert!(!known.contains(&longer));
            }
        }
    }
}
