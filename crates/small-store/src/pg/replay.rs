//! Replay records in PostgreSQL (table `small_replay`, created by the store migrations), so
//! several servers sharing one database agree on the first materialisation of a replay ID.

use super::{pg_error, redact, PgBackend};
use crate::replay::{ReplayRecord, ReplayStore, ReplayStoreError};
use postgres::Client;
use std::sync::Mutex;

/// A [`ReplayStore`] on PostgreSQL.
pub struct PgReplayStore {
    url: String,
    backend: PgBackend,
    pool: Mutex<Vec<Client>>,
}

fn other(e: impl std::fmt::Display) -> ReplayStoreError {
    ReplayStoreError::Other(e.to_string())
}

const SELECT: &str = "SELECT replay_id, protocol_version, lineage_json, lifecycle_json, created_at
                      FROM small_replay WHERE replay_id = $1";

fn row_record(row: &postgres::Row) -> ReplayRecord {
    ReplayRecord {
        replay_id: row.get(0),
        protocol_version: row.get(1),
        lineage_json: row.get(2),
        lifecycle_json: row.get(3),
        created_at: row.get(4),
    }
}

impl PgReplayStore {
    /// Connects to `url` (running the store migrations, which create the replay table).
    pub fn connect(url: &str) -> Result<Self, ReplayStoreError> {
        Self::connect_in_schema(url, None)
    }

    /// As [`PgReplayStore::connect`], with every table in the PostgreSQL schema `schema`.
    pub fn connect_in_schema(url: &str, schema: Option<&str>) -> Result<Self, ReplayStoreError> {
        let backend = PgBackend::connect(url, schema).map_err(other)?;
        Ok(PgReplayStore {
            url: url.to_string(),
            backend,
            pool: Mutex::new(Vec::new()),
        })
    }

    fn with_client<R>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<R, ReplayStoreError>,
    ) -> Result<R, ReplayStoreError> {
        let taken = self
            .pool
            .lock()
            .map_err(|_| other("pool lock poisoned"))?
            .pop();
        let mut client = match taken {
            Some(c) if !c.is_closed() => c,
            _ => self.backend.raw_client().map_err(other)?,
        };
        let out = f(&mut client);
        if !client.is_closed() {
            if let Ok(mut pool) = self.pool.lock() {
                if pool.len() < 16 {
                    pool.push(client);
                }
            }
        }
        out
    }
}

impl Drop for PgReplayStore {
    fn drop(&mut self) {
        let clients = match self.pool.get_mut() {
            Ok(pool) => std::mem::take(pool),
            Err(_) => return,
        };
        if !clients.is_empty() {
            let _ = super::off_runtime(move || {
                drop(clients);
                Ok(())
            });
        }
    }
}

impl ReplayStore for PgReplayStore {
    fn get(&self, replay_id: &str) -> Result<Option<ReplayRecord>, ReplayStoreError> {
        self.with_client(|c| {
            let rows = c
                .query(SELECT, &[&replay_id])
                .map_err(|e| other(pg_error(e)))?;
            Ok(rows.first().map(row_record))
        })
    }

    fn get_or_insert(
        &self,
        candidate: ReplayRecord,
    ) -> Result<(ReplayRecord, bool), ReplayStoreError> {
        self.with_client(|c| {
            let inserted = c
                .execute(
                    "INSERT INTO small_replay (replay_id, protocol_version, lineage_json, lifecycle_json, created_at)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (replay_id) DO NOTHING",
                    &[
                        &candidate.replay_id,
                        &candidate.protocol_version,
                        &candidate.lineage_json,
                        &candidate.lifecycle_json,
                        &candidate.created_at,
                    ],
                )
                .map_err(|e| other(pg_error(e)))?;
            if inserted == 1 {
                return Ok((candidate, true));
            }
            let rows = c.query(SELECT, &[&candidate.replay_id]).map_err(|e| other(pg_error(e)))?;
            match rows.first() {
                Some(r) => Ok((row_record(r), false)),
                None => Err(other("replay record vanished after a conflicting insert")),
            }
        })
    }

    fn describe(&self) -> String {
        format!("postgres:{}", redact(&self.url))
    }
}
