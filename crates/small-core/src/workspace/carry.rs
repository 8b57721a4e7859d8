//! Why a resumed check may trust an unchanged stat of the progress log instead of hashing
//! what it already checked (docs/decisions/0151-v1-recheck-trusts-an-unchanged-stat.md).
//!
//! Proving the checked part of a 35 MB log unchanged by its BLAKE3 hash is half of what a
//! gate after `progress add` costs. The 2.0.0 state cache already trusts a file's stat (size,
//! modification and change times in nanoseconds, device, inode) when it was recorded while
//! no time of it was younger than a racy margin (docs/decisions/0128-v2-state-cache.md);
//! the v1 gates do the same here:
//!
//! - a check that read the log from its file records the log's stat in its cache when the
//!   stat did not change while it read and is older than [`RACY_MARGIN`], and starts the
//!   carry note (`.small-cache/log-carry.v1`) with it;
//! - `progress add`, under the workspace lock, finds the log's stat at the end of the note's
//!   chain before it appends (nothing is hashed), appends and syncs, waits until the clock
//!   that stamps changes has moved past the log's new times (any later change gets a later
//!   time), and puts the new stat at the end of the chain: "this log is that one plus the
//!   bytes appended";
//! - a resumed check trusts the cached prefix when the log's stat is the one its cache
//!   recorded or one the chain carried from it; anything else is hashed as before.
//!
//! The note only ever saves time: a missing, damaged or foreign note means hashing.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The carry note's file in the gates' cache directory.
pub(crate) const CARRY_FILE: &str = "log-carry.v1";

/// A stat younger than this when a check starts reading is not recorded (0128's margin).
pub(crate) use super::cache::RACY_MARGIN;

/// The most stats a chain keeps (the oldest are dropped; a cache recorded at one of them
/// then hashes again).
const CHAIN_MAX: usize = 256;

/// The largest note read.
const NOTE_MAX_BYTES: u64 = 256 << 10;

/// The stat facts a cache trusts: a file with the same ones has the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LogStat {
    size: u64,
    /// Modification time: seconds and nanoseconds since the epoch.
    mtime: (i64, i64),
    /// Status-change time: seconds and nanoseconds since the epoch.
    ctime: (i64, i64),
    dev: u64,
    ino: u64,
}

impl LogStat {
    /// The stat of a regular file (`None` for anything else, and where there is no inode
    /// or change time to trust).
    #[cfg(unix)]
    pub(crate) fn of(m: &std::fs::Metadata) -> Option<LogStat> {
        use std::os::unix::fs::MetadataExt;
        m.is_file().then(|| LogStat {
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    #[cfg(not(unix))]
    pub(crate) fn of(_: &std::fs::Metadata) -> Option<LogStat> {
        None
    }

    /// The stat of the file at `path`, never following a link.
    pub(crate) fn at(path: &Path) -> Option<LogStat> {
        LogStat::of(&std::fs::symlink_metadata(path).ok()?)
    }

    /// The newer of the two times, in nanoseconds since the epoch.
    fn newest(&self) -> i128 {
        let ns = |(s, n): (i64, i64)| i128::from(s) * 1_000_000_000 + i128::from(n);
        ns(self.mtime).max(ns(self.ctime))
    }

    /// Whether `later` can be this file after appends (same file, not shorter).
    fn may_grow_into(&self, later: &LogStat) -> bool {
        self.dev == later.dev && self.ino == later.ino && self.size <= later.size
    }
}

/// The stat a check may record for the bytes it read: the stat `before` reading equals the
/// one `after`, and neither time is younger than [`RACY_MARGIN`] at `started` (when reading
/// began). A change within the same clock tick as the last one could otherwise keep every
/// fact of the stat.
pub(crate) fn settled(
    before: Option<LogStat>,
    after: Option<LogStat>,
    started: SystemTime,
) -> Option<LogStat> {
    let (before, after) = (before?, after?);
    let horizon = started
        .checked_sub(RACY_MARGIN)?
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let horizon = i128::try_from(horizon).ok()?;
    (before == after && before.newest() < horizon).then_some(before)
}

/// The carry note: each stat of `chain` after the first is the log of the one before it
/// with bytes appended by `progress add`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Note {
    chain: Vec<LogStat>,
}

fn read_note(dir: &Path) -> Option<Note> {
    let json = super::cache::read_sealed(dir, CARRY_FILE, NOTE_MAX_BYTES)?;
    serde_json::from_str(&json).ok()
}

fn write_note(dir: &Path, note: &Note) {
    if let Ok(json) = serde_json::to_string(note) {
        super::cache::write_sealed(dir, CARRY_FILE, &json);
    }
}

/// A check recorded `stat` in its cache: appends are carried from it on, unless the note's
/// chain already holds it (another gate's cache may be recorded at an earlier stat of it).
pub(crate) fn start(dir: &Path, stat: &LogStat) {
    if read_note(dir).is_some_and(|n| n.chain.contains(stat)) {
        return;
    }
    write_note(dir, &Note { chain: vec![*stat] });
}

/// Whether the log, whose stat is `now`, is the log a check recorded at `recorded` with
/// only bytes appended: the same stat, or a chain of carried appends leads from one to the
/// other. Nothing is hashed.
pub(crate) fn vouched(dir: &Path, recorded: &LogStat, now: &LogStat) -> bool {
    if recorded == now {
        return true;
    }
    if !recorded.may_grow_into(now) {
        return false;
    }
    let Some(note) = read_note(dir) else {
        return false;
    };
    let Some(i) = note.chain.iter().position(|s| s == recorded) else {
        return false;
    };
    note.chain[i + 1..].contains(now)
}

/// `progress add` carrying the note across its append (see the module docs).
pub(crate) struct AppendCarry {
    dir: PathBuf,
    note: Note,
    before: LogStat,
}

impl AppendCarry {
    /// Before the append to the log at `path` (under the workspace lock; `pre_len` is the
    /// length the append starts at): `Some` when the log's stat ends the note's chain.
    pub(crate) fn begin(cache_dir: &Path, path: &Path, pre_len: u64) -> Option<AppendCarry> {
        let before = LogStat::at(path)?;
        if before.size != pre_len {
            return None;
        }
        let note = read_note(cache_dir)?;
        (note.chain.last() == Some(&before)).then(|| AppendCarry {
            dir: cache_dir.to_path_buf(),
            note,
            before,
        })
    }

    /// After `appended` bytes were appended and synced: once the clock that stamps changes
    /// reads later than the log's new times, its stat (unchanged meanwhile) ends the chain.
    /// Nothing is carried when the log is not the same file `appended` bytes longer, or the
    /// clock does not move on in time.
    pub(crate) fn finish(mut self, path: &Path, appended: u64) {
        let Some(after) = LogStat::at(path) else {
            return;
        };
        if !self.before.may_grow_into(&after)
            || self.before.size.checked_add(appended) != Some(after.size)
        {
            return;
        }
        if !super::cache::wait_past(after.newest()) {
            return;
        }
        if LogStat::at(path) != Some(after) {
            return;
        }
        self.note.chain.push(after);
        let extra = self.note.chain.len().saturating_sub(CHAIN_MAX);
        self.note.chain.drain(..extra);
        write_note(&self.dir, &self.note);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn stat(size: u64, t: i64) -> LogStat {
        LogStat {
            size,
            mtime: (t, 0),
            ctime: (t, 0),
            dev: 1,
            ino: 2,
        }
    }

    #[test]
    fn a_chain_vouches_only_for_stats_carried_from_the_recorded_one() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".small-cache");
        let (s0, s1, s2) = (stat(10, 1), stat(20, 2), stat(30, 3));
        assert!(vouched(&dir, &s0, &s0), "an unchanged stat needs no note");
        assert!(!vouched(&dir, &s0, &s1), "no note: nothing carried");
        start(&dir, &s0);
        write_note(
            &dir,
            &Note {
                chain: vec![s0, s1, s2],
            },
        );
        assert!(vouched(&dir, &s0, &s2));
        assert!(vouched(&dir, &s1, &s2));
        assert!(!vouched(&dir, &s2, &s1), "never backwards");
        assert!(!vouched(&dir, &stat(10, 9), &s2), "not in the chain");
        let other = LogStat { ino: 3, ..s2 };
        assert!(!vouched(&dir, &s0, &other), "another file");
        // A check recording a stat the chain holds keeps it; another one starts anew.
        start(&dir, &s1);
        assert!(vouched(&dir, &s0, &s2));
        start(&dir, &stat(40, 4));
        assert!(!vouched(&dir, &s0, &s2));
        // A damaged note vouches for nothing.
        std::fs::write(dir.join(CARRY_FILE), "x\n{}").unwrap();
        assert!(!vouched(&dir, &stat(40, 4), &stat(50, 5)));
    }

    #[test]
    fn a_young_or_changing_stat_is_not_settled() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        std::fs::write(&p, "x").unwrap();
        let s = LogStat::at(&p);
        let now = SystemTime::now();
        assert_eq!(settled(s, s, now), None, "written just now");
        let later = now + RACY_MARGIN * 2;
        assert_eq!(settled(s, s, later), s);
        let changed = s.map(|s| LogStat { size: 2, ..s });
        assert_eq!(settled(s, changed, later), None);
    }

    #[test]
    fn an_append_is_carried_when_the_chain_ends_at_the_log() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".small-cache");
        let p = d.path().join("log");
        std::fs::write(&p, "abc").unwrap();
        let s0 = LogStat::at(&p).unwrap();
        assert!(AppendCarry::begin(&dir, &p, 3).is_none(), "no note");
        start(&dir, &s0);
        assert!(AppendCarry::begin(&dir, &p, 2).is_none(), "another length");
        let carry = AppendCarry::begin(&dir, &p, 3).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, b"de").unwrap();
        carry.finish(&p, 2);
        let s1 = LogStat::at(&p).unwrap();
        assert!(vouched(&dir, &s0, &s1));
        // An append the note does not cover breaks the chain.
        let carry = AppendCarry::begin(&dir, &p, 5).unwrap();
        std::io::Write::write_all(&mut f, b"fg").unwrap();
        carry.finish(&p, 1);
        assert!(!vouched(&dir, &s0, &LogStat::at(&p).unwrap()));
    }
}
