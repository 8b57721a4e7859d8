//! SQLite replay store: one file, WAL journal, shared safely by several processes.

use super::{ReplayRecord, ReplayStore, ReplayStoreError};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS small_replay (
    replay_id        TEXT PRIMARY KEY NOT NULL,
    protocol_version TEXT NOT NULL,
    lineage_json     TEXT NOT NULL,
    lifecycle_json   TEXT NOT NULL,
    created_at       TEXT NOT NULL
) WITHOUT ROWID";

/// Replay records in an SQLite file.
#[derive(Debug)]
pub struct SqliteReplayStore {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl SqliteReplayStore {
    /// Open (creating the file and its parent directories if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, ReplayStoreError> {
        if let Some(parent) = path.parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent)?;
            }
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)?;
        Ok(SqliteReplayStore {
            conn: Mutex::new(conn),
            path: path.to_owned(),
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Connection>, ReplayStoreError> {
        self.conn
            .lock()
            .map_err(|_| ReplayStoreError::Other("SQLite connection lock poisoned".into()))
    }
}

fn select(conn: &Connection, replay_id: &str) -> Result<Option<ReplayRecord>, rusqlite::Error> {
    conn.prepare_cached(
        "SELECT replay_id, protocol_version, lineage_json, lifecycle_json, created_at
         FROM small_replay WHERE replay_id = ?1",
    )?
    .query_row(params![replay_id], |row| {
        Ok(ReplayRecord {
            replay_id: row.get(0)?,
            protocol_version: row.get(1)?,
            lineage_json: row.get(2)?,
            lifecycle_json: row.get(3)?,
            created_at: row.get(4)?,
        })
    })
    .optional()
}

impl ReplayStore for SqliteReplayStore {
    fn get(&self, replay_id: &str) -> Result<Option<ReplayRecord>, ReplayStoreError> {
        let conn = self.lock()?;
        Ok(select(&conn, replay_id)?)
    }

    fn get_or_insert(
        &self,
        candidate: ReplayRecord,
    ) -> Result<(ReplayRecord, bool), ReplayStoreError> {
        let conn = self.lock()?;
        if let Some(r) = select(&conn, &candidate.replay_id)? {
            return Ok((r, false));
        }
        // The primary key makes this atomic across connections and processes.
        let inserted = conn
            .prepare_cached(
                "INSERT INTO small_replay (replay_id, protocol_version, lineage_json, lifecycle_json, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (replay_id) DO NOTHING",
            )?
            .execute(params![
                candidate.replay_id,
                candidate.protocol_version,
                candidate.lineage_json,
                candidate.lifecycle_json,
                candidate.created_at
            ])?;
        if inserted == 1 {
            return Ok((candidate, true));
        }
        match select(&conn, &candidate.replay_id)? {
            Some(r) => Ok((r, false)),
            None => Err(ReplayStoreError::Other(
                "record vanished after a conflicting insert".into(),
            )),
        }
    }

    fn describe(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }
}
