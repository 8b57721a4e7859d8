//! The writer carries the state cache forward across its own writes.
//!
//! After `small progress add` or `small session close` the session's event directory has
//! changed, so the stat proof of the cache no longer matches and the next `status` would
//! read every record again (seconds at 100 000 events) — although the writer had all of
//! them in memory, under the lock, a moment before. So a writer, on its way out, writes the
//! cache for the tree it leaves, when it can prove that tree is the records it read plus the
//! ones it published and nothing else (jj's model: the operation that writes also records
//! the view it leaves, and readers load that view):
//!
//! - a stat proof of `.small/` taken before the records were read, with no young entry (the
//!   ordinary rule of [`super::snapshot`]); when the tree changed a moment ago (the writer
//!   before this one), the proof is taken again once the stamping clock reads later than
//!   the newest change, and then only a change at or after that reading is young;
//! - after the writes, once the file system's clock has moved past the newest change (so any
//!   later change gets a later time), a second proof: every entry is as before except the
//!   records published and the directories holding them;
//! - each changed session directory is listed, and must hold exactly the events of the
//!   writer's records: an event another program added meanwhile, even within the same clock
//!   tick, is found here; the directory's stat after the listing must be the one the proof
//!   recorded. Each published session record is read back and must be the bytes written;
//! - the records, with the published ones read from the bytes written by the same loader,
//!   pass every check and have no conflict.
//!
//! Only sessions, events and receipts are carried: a writer that stores an evidence blob
//! leaves the next read to prove the tree as usual. A carry that cannot be proven is
//! simply not written; it never changes an answer.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::SystemTime;

use super::{
    context_key, proof, proof_since, stat_line, write_cache, Ages, Folding, Proof, Snapshot,
};
use crate::v2::load::{self, Store};
use crate::workspace::cache::{stamp_clock, wait_past};

/// What a writer tracks to carry the cache forward.
pub(crate) struct Carry {
    /// The proof taken before the records were first read.
    before: Proof,
    /// Every record published (path under `.small/`, bytes), in order.
    published: Vec<(String, Vec<u8>)>,
    /// `published[pending..]` were published after the records were last read.
    pending: usize,
    /// Something was written that is not carried.
    off: bool,
}

impl Carry {
    /// Start tracking, before the records are read: `None` when the tree cannot be proven
    /// or is racy (a full read next time, as without a writer).
    pub(crate) fn begin(small_dir: &Path) -> Option<Carry> {
        let mut before = proof(small_dir, SystemTime::now())?;
        if before.racy {
            // Changed a moment ago (most often by the writer before this one). Once the
            // clock that stamps changes reads later than the newest of them, every later
            // change gets a later time than the proof holds: the proof is taken again with
            // that reading as the horizon, so only a change racing this walk makes it racy.
            if !wait_past(before.newest) {
                return None;
            }
            before = proof_since(small_dir, stamp_clock()?)?;
        }
        (!before.racy).then_some(Carry {
            before,
            published: Vec::new(),
            pending: 0,
            off: false,
        })
    }

    /// `bytes` were published at `rel` (under `.small/`) as a new record.
    pub(crate) fn published(&mut self, rel: &str, bytes: &[u8]) {
        if ["events/", "sessions/", "receipts/"]
            .iter()
            .any(|p| rel.starts_with(p))
        {
            self.published.push((rel.to_string(), bytes.to_vec()));
        } else {
            self.off = true;
        }
    }

    /// The proof taken before the records were first read.
    pub(crate) fn before(&self) -> &Proof {
        &self.before
    }

    /// The records published since the records were last read or folded (now counted as
    /// read); `None` when something was written that is not carried.
    pub(crate) fn take_pending(&mut self) -> Option<Vec<(String, Vec<u8>)>> {
        if self.off {
            return None;
        }
        let pending = self.published[self.pending..].to_vec();
        self.pending = self.published.len();
        Some(pending)
    }

    /// Write the cache for the tree as a writer on the cached state leaves it (`f`, with
    /// every record it published folded in), if that can be proven: as [`Carry::finish`],
    /// with the changed session directories checked against the names `f` keeps.
    pub(crate) fn finish_cached(self, root: &Path, small_dir: &Path, f: Folding) -> bool {
        if self.off || self.published.is_empty() || self.pending != self.published.len() {
            return false;
        }
        let Some(key) = context_key(small_dir) else {
            return false;
        };
        let Some(after) = self.after(small_dir) else {
            return false;
        };
        for dir in self.dirs() {
            if dir.starts_with("events/") && !f.holds(small_dir, &dir, &after) {
                return false;
            }
        }
        f.write(&root.join(".small-cache"), &key, &after);
        true
    }

    /// The directories the writes changed: each record's parent and theirs, up to
    /// `.small/` itself ("").
    fn dirs(&self) -> BTreeSet<String> {
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        for (rel, _) in &self.published {
            let mut p = rel.as_str();
            while let Some((parent, _)) = p.rsplit_once('/') {
                dirs.insert(parent.to_string());
                p = parent;
            }
            dirs.insert(String::new());
        }
        dirs
    }

    /// Once the clock has moved past the writes, the proof of the tree, when it differs from
    /// the first only by the records published and the directories holding them.
    fn after(&self, small_dir: &Path) -> Option<Proof> {
        let dirs = self.dirs();
        let newest = newest_change(small_dir, &dirs, &self.published)?;
        if !wait_past(newest) {
            return None;
        }
        let after = proof(small_dir, SystemTime::now())?;
        self.only_own_changes(small_dir, &after, &dirs)
            .then_some(after)
    }

    /// The records were read again: they include everything published so far.
    pub(crate) fn reread(&mut self) {
        self.pending = self.published.len();
    }

    /// Write the cache for the tree as the writer leaves it, if that can be proven. `store`
    /// is the records as last read.
    pub(crate) fn finish(mut self, root: &Path, small_dir: &Path, mut store: Store) -> bool {
        let Some(key) = context_key(small_dir) else {
            return false;
        };
        let Some((checked, after)) = self.advance(root, small_dir, &mut store) else {
            return false;
        };
        if !checked.state.conflicts.is_empty() {
            return false;
        }
        let snap = Snapshot::build(checked, &store);
        write_cache(&root.join(".small-cache"), &key, &after, &snap, &store);
        true
    }

    /// Add the records published since the last read to `store` (read from the bytes
    /// written) and prove that the tree on disk is now exactly `store`'s records: their
    /// checks (conflicts allowed, no error) and the proof, or `None` — then `store` may hold
    /// the added records and the tree must be read again.
    pub(crate) fn advance(
        &mut self,
        root: &Path,
        small_dir: &Path,
        store: &mut Store,
    ) -> Option<(crate::v2::Checked, Proof)> {
        if self.off || self.published.is_empty() {
            return None;
        }
        if !load::load_published(root, small_dir, store, &self.published[self.pending..]) {
            return None;
        }
        self.pending = self.published.len();
        let checked = crate::v2::check_loaded(root, small_dir, store);
        let damage = |d: &crate::diag::Diagnostic| {
            d.is_error() && crate::v2::stage_of(&d.code) != crate::v2::Stage::State
        };
        if checked.diagnostics.iter().any(damage) {
            return None;
        }
        let after = self.after(small_dir)?;
        if !event_dirs_hold_exactly(small_dir, &after, &self.dirs(), store) {
            return None;
        }
        Some((checked, after))
    }

    /// Whether `after` differs from the first proof only in the published records (read
    /// back: the bytes written) and the directories holding them.
    fn only_own_changes(&self, small_dir: &Path, after: &Proof, dirs: &BTreeSet<String>) -> bool {
        let before: HashMap<&str, &[u8]> = self
            .before
            .entries
            .iter()
            .map(|(p, l)| (p.as_str(), l.as_slice()))
            .collect();
        let mine: HashMap<&str, &[u8]> = self
            .published
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice()))
            .collect();
        let mut seen = 0usize;
        for (path, line) in &after.entries {
            match before.get(path.as_str()) {
                Some(old) if *old == line.as_slice() => {
                    seen += 1;
                    continue;
                }
                Some(_) => seen += 1,
                None => {}
            }
            if dirs.contains(path) {
                continue;
            }
            let Some(bytes) = mine.get(path.as_str()) else {
                return false;
            };
            let limit = bytes.len() as u64 + 1;
            match crate::fsio::read_bounded(&small_dir.join(path), limit) {
                Ok(found) if found == *bytes => {}
                _ => return false,
            }
        }
        // Nothing that was there is gone.
        seen == before.len()
    }
}

/// The newest modification or change time among the changed directories and the published
/// records the proof stats (sessions), in nanoseconds.
fn newest_change(
    small_dir: &Path,
    dirs: &BTreeSet<String>,
    published: &[(String, Vec<u8>)],
) -> Option<i128> {
    let mut newest = i128::MIN;
    let paths = dirs
        .iter()
        .map(String::as_str)
        .chain(published.iter().map(|(p, _)| p.as_str()));
    for rel in paths {
        let m = std::fs::symlink_metadata(small_dir.join(rel)).ok()?;
        let (mtime, ctime) = super::change_times(&m);
        newest = newest.max(mtime).max(ctime);
    }
    Some(newest)
}

/// Whether each changed session directory (`events/<id>`) holds exactly the event files of
/// `store`'s events of that session, and still has the stat `after` recorded.
fn event_dirs_hold_exactly(
    small_dir: &Path,
    after: &Proof,
    dirs: &BTreeSet<String>,
    store: &Store,
) -> bool {
    let lines: HashMap<&str, &[u8]> = after
        .entries
        .iter()
        .map(|(p, l)| (p.as_str(), l.as_slice()))
        .collect();
    for dir in dirs {
        let Some(session) = dir.strip_prefix("events/") else {
            continue;
        };
        let mut want: HashSet<String> = store
            .events
            .iter()
            .filter(|e| e.session_id == session)
            .map(|e| format!("{}.json", e.id))
            .collect();
        let Ok(listing) = std::fs::read_dir(small_dir.join(dir)) else {
            return false;
        };
        for entry in listing {
            let Ok(entry) = entry else { return false };
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                return false;
            };
            if !want.remove(&name) {
                return false;
            }
        }
        if !want.is_empty() {
            return false;
        }
        // Listed after the proof: its stat must still be the one proven.
        let Ok(m) = std::fs::symlink_metadata(small_dir.join(dir)) else {
            return false;
        };
        if lines.get(dir.as_str()).copied()
            != Some(stat_line(dir, &m, &mut Ages::since(0)).as_slice())
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests;
