//! Replay records: the lineage and lifecycle a replay ID materialised, recorded once.
//!
//! The first replay of a replay ID stores its records (with the time of that first
//! materialisation); every later replay returns the stored records byte for byte. The
//! operation is one atomic "insert if absent, then read": concurrent first replays of the
//! same ID end with one record, whichever insert won.
//!
//! The trait is synchronous; async callers run it on a blocking thread. An implementation
//! needs only a table keyed by replay ID with an insert that ignores conflicts
//! (`INSERT … ON CONFLICT (replay_id) DO NOTHING` in SQLite and PostgreSQL alike).

mod memory;
mod sqlite;

pub use memory::MemoryReplayStore;
pub use sqlite::SqliteReplayStore;

/// One materialised replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRecord {
    /// The replay ID (43 characters, base64url).
    pub replay_id: String,
    /// The protocol version the ID was computed with.
    pub protocol_version: String,
    /// The lineage record, as the exact JSON text served.
    pub lineage_json: String,
    /// The lifecycle events, as the exact JSON text served (an array).
    pub lifecycle_json: String,
    /// When the record was first materialised (RFC 3339, UTC).
    pub created_at: String,
}

/// An error from a replay store.
#[derive(Debug, thiserror::Error)]
pub enum ReplayStoreError {
    #[error("replay store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("replay store: {0}")]
    Io(#[from] std::io::Error),
    #[error("replay store: {0}")]
    Other(String),
}

/// Receives the answer of a queued [`ReplayStore::get_or_insert_queued`].
pub type Reply = Box<dyn FnOnce(Result<(ReplayRecord, bool), ReplayStoreError>) + Send>;

/// Storage for replay records.
pub trait ReplayStore: Send + Sync + 'static {
    /// The stored record for `replay_id`, if any.
    fn get(&self, replay_id: &str) -> Result<Option<ReplayRecord>, ReplayStoreError>;

    /// Store `candidate` unless a record with its replay ID exists, atomically, and return
    /// the record that is stored now, with `true` when `candidate` was the one inserted.
    fn get_or_insert(
        &self,
        candidate: ReplayRecord,
    ) -> Result<(ReplayRecord, bool), ReplayStoreError>;

    /// Whether [`ReplayStore::get_or_insert_queued`] returns at once (the store answers later
    /// from a thread of its own), so async callers need no blocking thread for it.
    fn queues_writes(&self) -> bool {
        false
    }

    /// As [`ReplayStore::get_or_insert`], answering through `reply`. Stores that queue writes
    /// (group commit) return at once and call `reply` once the record is durable; the others
    /// call it before returning.
    fn get_or_insert_queued(&self, candidate: ReplayRecord, reply: Reply) {
        reply(self.get_or_insert(candidate));
    }

    /// A short description for logs (`sqlite:/path`, `memory`).
    fn describe(&self) -> String;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn record(id: &str, at: &str) -> ReplayRecord {
        ReplayRecord {
            replay_id: id.into(),
            protocol_version: small_core::ops::formats::PROTOCOL_VERSION.into(),
            lineage_json: format!(r#"{{"at":"{at}"}}"#),
            lifecycle_json: "[]".into(),
            created_at: at.into(),
        }
    }

    fn first_wins(store: Arc<dyn ReplayStore>) {
        assert_eq!(store.get("a").unwrap(), None);
        let (r, created) = store.get_or_insert(record("a", "t1")).unwrap();
        assert!(created);
        assert_eq!(r.created_at, "t1");
        let (r, created) = store.get_or_insert(record("a", "t2")).unwrap();
        assert!(!created);
        assert_eq!(r, record("a", "t1"));
        assert_eq!(store.get("a").unwrap(), Some(record("a", "t1")));

        // Concurrent first inserts: exactly one wins, all see the winner.
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let s = store.clone();
                std::thread::spawn(move || s.get_or_insert(record("b", &format!("t{i}"))).unwrap())
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(results.iter().filter(|(_, created)| *created).count(), 1);
        assert!(results.iter().all(|(r, _)| *r == results[0].0));
    }

    #[test]
    fn memory_store_first_wins() {
        first_wins(Arc::new(MemoryReplayStore::new()));
    }

    #[test]
    fn sqlite_store_first_wins_and_persists() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/replay.db");
        first_wins(Arc::new(SqliteReplayStore::open(&path).unwrap()));
        let reopened = SqliteReplayStore::open(&path).unwrap();
        assert_eq!(reopened.get("a").unwrap(), Some(record("a", "t1")));
    }

    #[test]
    fn sqlite_two_handles_one_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replay.db");
        let a = SqliteReplayStore::open(&path).unwrap();
        let b = SqliteReplayStore::open(&path).unwrap();
        let (ra, ca) = a.get_or_insert(record("x", "t1")).unwrap();
        let (rb, cb) = b.get_or_insert(record("x", "t2")).unwrap();
        assert!(ca && !cb);
        assert_eq!(ra, rb);
    }
}
