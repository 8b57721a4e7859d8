//! The narrow set of database operations the store's rules are written against. Each backend
//! implements [`Tx`] over one open transaction; [`crate::engine`] holds every rule once, so both
//! backends behave the same.

use crate::error::Result;
use crate::model::Record;

/// Nodes with their distance, and (child, parent) edges, of a lineage walk.
pub type Walk = (Vec<(String, u32)>, Vec<(String, String)>);

/// Tables holding versioned records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versioned {
    Artifact,
    Manifest,
}

/// Operations inside one transaction. Writes run in a transaction that serialises writers of
/// the same artifact or manifest (see `lock_head`).
pub trait Tx {
    fn schema_get(&mut self, id: &str) -> Result<Option<Record>>;
    /// Inserts a schema; `false` when the id already exists (the caller re-reads and compares).
    fn schema_insert(&mut self, rec: &Record) -> Result<bool>;
    fn schema_list(&mut self, after: Option<&str>, limit: u32) -> Result<Vec<Record>>;

    /// Locks the head row of an artifact or manifest until the transaction ends (creating it
    /// when absent) and returns the latest version stored (0 when none).
    fn lock_head(&mut self, t: Versioned, id: &str) -> Result<u64>;
    /// [`Tx::lock_head`], and the record of the latest version (`None` when there is none).
    /// A backend may do both in one round trip.
    fn lock_head_latest(&mut self, t: Versioned, id: &str) -> Result<(u64, Option<Record>)> {
        let latest = self.lock_head(t, id)?;
        if latest == 0 {
            return Ok((0, None));
        }
        Ok((latest, self.version_get(t, id, latest)?))
    }
    fn latest_version(&mut self, t: Versioned, id: &str) -> Result<u64>;
    fn version_get(&mut self, t: Versioned, id: &str, version: u64) -> Result<Option<Record>>;
    /// Inserts a version and moves the head to it. `schema_id` is recorded for artifacts.
    fn version_insert(&mut self, t: Versioned, rec: &Record, schema_id: Option<&str>)
        -> Result<()>;
    /// The latest version of each id, ordered by id, ids after `after`.
    fn heads_list(&mut self, t: Versioned, after: Option<&str>, limit: u32) -> Result<Vec<Record>>;
    fn versions_list(
        &mut self,
        t: Versioned,
        id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Record>>;

    /// The lineage record of this artifact with this hash, if one is stored.
    fn lineage_find(&mut self, artifact_id: &str, sha256: &str) -> Result<Option<Record>>;
    /// Appends a lineage record and its derivation edges; returns its sequence number.
    fn lineage_insert(&mut self, rec: &Record, parents: &[String]) -> Result<u64>;
    fn lineage_for(&mut self, artifact_id: &str) -> Result<Vec<Record>>;
    /// Walks the derivation graph from `id` within `depth` steps, to parents (`up`) or to
    /// children: every node reached with its smallest distance (the start node at 0), and
    /// every edge walked as (child, parent).
    fn walk(&mut self, id: &str, depth: u32, up: bool) -> Result<Walk>;
    /// Which of `targets` are reachable from `id` walking to children (any depth).
    fn reaches_down(&mut self, id: &str, targets: &[String]) -> Result<Vec<String>>;

    /// Serialises lineage appends until the transaction ends: the cycle check reads edges
    /// anywhere in the graph, so two appends that would close a cycle between them must not
    /// both pass it. A no-op where writers are serialised anyway (SQLite).
    fn lineage_lock(&mut self) -> Result<()> {
        Ok(())
    }

    /// Locks the lifecycle stream of an artifact until the transaction ends.
    fn lifecycle_lock(&mut self, artifact_id: &str) -> Result<()>;
    /// Events of the stream, oldest first (`version` = position, 1-based).
    fn lifecycle_events(&mut self, artifact_id: &str) -> Result<Vec<Record>>;
    fn lifecycle_insert(&mut self, rec: &Record, kind: &str) -> Result<()>;
}

/// A database that runs closures in transactions. `write` retries the closure when the database
/// reports a transient conflict (serialisation failure, deadlock, unique race).
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    fn read<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R>;
    fn write<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R>;
}
