//! What one write operation has read of the `.small/` files, so it reads each at most once.
//!
//! A handoff needs the same files many times: the replayId, the plan's tasks, the existing
//! handoff, the strict check and the run's activity all look at intent, plan, constraints,
//! progress, handoff and `workspace.small.yml`. Reading them through the transaction each
//! time would go to the disk for every look. [`Artifacts`] remembers what the disk held the
//! first time a file was looked at; the transaction's lock keeps the files unchanged until
//! its commit, so the first read stays true for the whole operation.
//!
//! Staged changes are never remembered: a path the transaction has staged (written or
//! appended to) is always read through the transaction, which serves the staged content. So
//! an operation may stage, look, and discard again in any order and always sees what the
//! transaction would show.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::workspace::error::code;
use crate::workspace::txn::{Transaction, TxnError};
use crate::yaml::{self, Document, Limits};

/// Progress logs up to this long are kept whole when their end is read: the handoff's
/// activity then needs no other read of the log. A longer log is read from its ends.
pub const WHOLE_LOG_MAX: u64 = 4 << 20;

/// What the disk held for one path, as far as it was looked at.
#[derive(Debug, Clone)]
enum Seen {
    /// Only whether the path exists (as [`Transaction::exists`] says).
    Exists(bool),
    /// The whole file (`None`: it does not exist).
    Bytes(Option<Vec<u8>>),
    /// The last [`WHOLE_LOG_MAX`] bytes of a log and the offset they start at (`None`: it
    /// does not exist). An offset of 0 means the bytes are the whole log.
    End(Option<(u64, Vec<u8>)>),
}

impl Seen {
    /// Whether the path exists, when what was seen says so.
    fn exists(&self) -> bool {
        match self {
            Seen::Exists(e) => *e,
            Seen::Bytes(b) => b.is_some(),
            Seen::End(e) => e.is_some(),
        }
    }

    /// The whole file, when what was seen holds all of it.
    fn whole(&self) -> Option<Option<Vec<u8>>> {
        match self {
            Seen::Exists(_) => None,
            Seen::Bytes(b) => Some(b.clone()),
            Seen::End(None) => Some(None),
            Seen::End(Some((0, b))) => Some(Some(b.clone())),
            Seen::End(Some(_)) => None,
        }
    }
}

/// The `.small/` files of one operation, each looked up on disk at most once (see the module
/// docs). Every method takes the transaction the operation runs in.
#[derive(Debug, Default)]
pub struct Artifacts {
    seen: RefCell<BTreeMap<String, Seen>>,
}

impl Artifacts {
    /// A snapshot that has read nothing yet.
    pub fn new() -> Artifacts {
        Artifacts::default()
    }

    /// `f` of what was seen of `rel`, if it was looked at (borrowed: a log's end is not
    /// copied to be looked at).
    fn with_seen<T>(&self, rel: &str, f: impl FnOnce(&Seen) -> Option<T>) -> Option<T> {
        self.seen.borrow().get(rel).and_then(f)
    }

    /// Remember what the disk holds for `rel`; knowing only existence never replaces more.
    fn remember(&self, rel: &str, seen: Seen) {
        let mut all = self.seen.borrow_mut();
        let keep = matches!(seen, Seen::Exists(_)) && all.contains_key(rel);
        if !keep {
            all.insert(rel.to_string(), seen);
        }
    }

    /// `rel` as the transaction sees it ([`Transaction::read`]): staged content, else the
    /// file, read from disk the first time only.
    pub fn read(&self, txn: &Transaction, rel: &str) -> Result<Option<Vec<u8>>, TxnError> {
        if txn.is_staged(rel) {
            return txn.read(rel);
        }
        if let Some(whole) = self.with_seen(rel, Seen::whole) {
            return Ok(whole);
        }
        let bytes = txn.read(rel)?;
        self.remember(rel, Seen::Bytes(bytes.clone()));
        Ok(bytes)
    }

    /// Whether `rel` exists as the transaction sees it ([`Transaction::exists`]), answered
    /// from an earlier read when there was one.
    pub fn exists(&self, txn: &Transaction, rel: &str) -> bool {
        if txn.is_staged(rel) {
            return true;
        }
        if let Some(exists) = self.with_seen(rel, |s| Some(s.exists())) {
            return exists;
        }
        let exists = txn.exists(rel);
        self.remember(rel, Seen::Exists(exists));
        exists
    }

    /// The last [`WHOLE_LOG_MAX`] bytes of the log `rel` as the transaction sees it, with the
    /// offset they start at ([`Transaction::read_tail`]); the whole log when the offset is 0.
    pub fn log_end(
        &self,
        txn: &Transaction,
        rel: &str,
    ) -> Result<Option<(u64, Vec<u8>)>, TxnError> {
        if txn.is_staged(rel) {
            return txn.read_tail(rel, WHOLE_LOG_MAX);
        }
        let end = |s: &Seen| match s {
            Seen::End(end) => Some(end.clone()),
            _ => None,
        };
        if let Some(end) = self.with_seen(rel, end) {
            return Ok(end);
        }
        let end = txn.read_tail(rel, WHOLE_LOG_MAX)?;
        self.remember(rel, Seen::End(end.clone()));
        Ok(end)
    }

    /// `rel` parsed as YAML, as the transaction sees it (`Ok(None)` if it does not exist).
    pub fn parse(&self, txn: &Transaction, rel: &str) -> Result<Option<Document>, TxnError> {
        parse_read(rel, self.read(txn, rel)?)
    }
}

/// Parse what was read of `rel` (`None`: it does not exist), as [`crate::authoring::handoff::parse_file`] does.
pub fn parse_read(rel: &str, bytes: Option<Vec<u8>>) -> Result<Option<Document>, TxnError> {
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    yaml::parse_bytes(&bytes, &Limits::default())
        .map(Some)
        .map_err(|e| TxnError::invalid(code::UNEDITABLE, format!("{rel} cannot be read: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(".small")).unwrap();
        std::fs::write(d.path().join(".small/a.yml"), b"a: 1\n").unwrap();
        d
    }

    /// The disk is read once; staged content wins while it is staged, and the file shows
    /// again once the change is discarded.
    #[test]
    fn reads_once_and_shows_staged_content() {
        let d = ws();
        let mut txn = Transaction::begin(d.path()).unwrap();
        let snap = Artifacts::new();
        let rel = ".small/a.yml";
        assert!(snap.exists(&txn, rel));
        assert_eq!(snap.read(&txn, rel).unwrap().unwrap(), b"a: 1\n");
        assert_eq!(snap.read(&txn, rel).unwrap().unwrap(), b"a: 1\n");
        assert!(!snap.exists(&txn, ".small/b.yml"));
        assert!(!snap.exists(&txn, ".small/b.yml"));
        txn.write(rel, b"a: 2\n".to_vec());
        assert_eq!(snap.read(&txn, rel).unwrap().unwrap(), b"a: 2\n");
        txn.discard(rel);
        let doc = snap.parse(&txn, rel).unwrap().unwrap();
        assert_eq!(doc.source, "a: 1\n");
        let counts = txn.disk_reads_by_path();
        assert_eq!(counts.get(rel), Some(&2), "{counts:?}");
        assert_eq!(counts.get(".small/b.yml"), Some(&1), "{counts:?}");
    }

    /// A log's end read once answers existence and, when short, the whole log.
    #[test]
    fn a_short_log_read_from_its_end_is_the_whole_log() {
        let d = ws();
        let txn = Transaction::begin(d.path()).unwrap();
        let snap = Artifacts::new();
        let rel = ".small/a.yml";
        assert_eq!(
            snap.log_end(&txn, rel).unwrap(),
            Some((0, b"a: 1\n".to_vec()))
        );
        assert!(snap.exists(&txn, rel));
        assert_eq!(snap.read(&txn, rel).unwrap().unwrap(), b"a: 1\n");
        assert_eq!(txn.disk_reads(), 1);
    }
}
