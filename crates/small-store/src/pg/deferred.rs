//! Versions written in an optimistic batch, held back and inserted together: one statement
//! for the whole batch instead of one round trip per write. A write's versioned put then
//! costs a single round trip (locking the head), which on a small machine is what bounds the
//! write rate.
//!
//! Held-back versions are invisible to the database until flushed, so [`super::PgTx`]
//! flushes before any statement that could read them, and the committer flushes before
//! COMMIT. The head of every held-back version is already locked by this transaction (a put
//! locks its head first), so a later write to the same id in the batch reads its latest
//! version here, without a statement. A flush that fails fails the batch: it rolls back whole
//! and its writes run again alone, where nothing is held back.

use crate::model::Record;
use postgres::{Client, Statement};

/// Inserts held-back versions and moves each head to its highest one, in one statement.
pub(super) const FLUSH_SQL: &str = "WITH inserted AS (
    INSERT INTO small_versions (kind, id, version, schema_id, body, sha256, resolved, stored_at)
    SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::TEXT[], $5::TEXT[],
                         $6::TEXT[], $7::TEXT[], $8::TEXT[])
 )
 INSERT INTO small_heads (kind, id, latest)
 SELECT k, i, MAX(v) FROM unnest($1::TEXT[], $2::TEXT[], $3::BIGINT[]) AS u(k, i, v)
 GROUP BY k, i
 ON CONFLICT (kind, id) DO UPDATE SET latest = EXCLUDED.latest";

struct Held {
    kind: &'static str,
    rec: Record,
    schema_id: Option<String>,
}

/// The versions a batch holds back, in the order written.
#[derive(Default)]
pub(crate) struct Pending {
    held: Vec<Held>,
}

impl Pending {
    /// The latest held-back version of `kind`/`id`, if any.
    pub fn latest(&self, kind: &str, id: &str) -> Option<&Record> {
        self.held
            .iter()
            .rev()
            .find(|h| h.kind == kind && h.rec.id == id)
            .map(|h| &h.rec)
    }

    pub fn hold(&mut self, kind: &'static str, rec: &Record, schema_id: Option<&str>) {
        self.held.push(Held {
            kind,
            rec: rec.clone(),
            schema_id: schema_id.map(str::to_string),
        });
    }

    /// Inserts every held-back version with `flush` (a prepared [`FLUSH_SQL`]). Empty
    /// afterwards either way: after a failure the batch is rolled back.
    pub fn flush(&mut self, client: &mut Client, flush: &Statement) -> Result<(), postgres::Error> {
        if self.held.is_empty() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.held);
        let kinds: Vec<&str> = held.iter().map(|h| h.kind).collect();
        let ids: Vec<&str> = held.iter().map(|h| h.rec.id.as_str()).collect();
        let versions: Vec<i64> = held.iter().map(|h| h.rec.version as i64).collect();
        let schemas: Vec<Option<&str>> = held.iter().map(|h| h.schema_id.as_deref()).collect();
        let bodies: Vec<&str> = held.iter().map(|h| h.rec.json.as_str()).collect();
        let hashes: Vec<&str> = held.iter().map(|h| h.rec.sha256.as_str()).collect();
        let resolved: Vec<Option<&str>> = held.iter().map(|h| h.rec.resolved.as_deref()).collect();
        let stored: Vec<&str> = held.iter().map(|h| h.rec.stored_at.as_str()).collect();
        client.execute(
            flush,
            &[
                &kinds, &ids, &versions, &schemas, &bodies, &hashes, &resolved, &stored,
            ],
        )?;
        Ok(())
    }
}
