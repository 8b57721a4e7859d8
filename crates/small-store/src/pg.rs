//! The PostgreSQL backend (`postgres://…`): several servers can share one database. Migrations
//! run on connect under an advisory lock. Appenders of one artifact or manifest serialise on its
//! head row (`SELECT … FOR UPDATE`), lifecycle appenders on a per-artifact advisory lock, so
//! concurrent writers get contiguous versions and ordered events. Lineage appenders take one
//! advisory lock for the whole graph before the cycle check (a cycle can join any two
//! components), so lineage stays acyclic under any interleaving; transient failures
//! (serialisation, deadlock, unique races) retry the whole transaction.
//!
//! Connections come from a bounded pool ([`pool`]) with every statement prepared once per
//! connection; concurrent writes share one transaction and one commit ([`batch`]). A versioned
//! write costs one round trip in a batch: lock the head and read the latest version in one
//! statement; the batch inserts its new versions together ([`deferred`]). Alone, the insert
//! is a second round trip.

mod batch;
mod deferred;
mod pool;
mod replay;

pub use pool::PgOptions;
pub use replay::PgReplayStore;

use batch::{GroupCommit, Joined};
use deferred::Pending;
use pool::{Conn, Connector, Pool};

use crate::error::{Result, StoreError};
use crate::model::Record;
use crate::tx::{Backend, Tx, Versioned, Walk};
use postgres::error::SqlState;
use postgres::{Client, Statement};
use std::sync::Arc;
use std::time::Duration;

const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE small_schemas (
    id        TEXT PRIMARY KEY,
    body      TEXT NOT NULL,
    sha256    TEXT NOT NULL,
    stored_at TEXT NOT NULL
);
CREATE TABLE small_heads (
    kind   TEXT NOT NULL,
    id     TEXT NOT NULL,
    latest BIGINT NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE TABLE small_versions (
    kind      TEXT NOT NULL,
    id        TEXT NOT NULL,
    version   BIGINT NOT NULL,
    schema_id TEXT,
    body      TEXT NOT NULL,
    sha256    TEXT NOT NULL,
    resolved  TEXT,
    stored_at TEXT NOT NULL,
    PRIMARY KEY (kind, id, version)
);
CREATE TABLE small_lineage (
    seq         BIGSERIAL PRIMARY KEY,
    artifact_id TEXT NOT NULL,
    body        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    stored_at   TEXT NOT NULL,
    UNIQUE (artifact_id, sha256)
);
CREATE TABLE small_lineage_edges (
    child  TEXT NOT NULL,
    parent TEXT NOT NULL,
    PRIMARY KEY (child, parent)
);
CREATE INDEX small_lineage_edges_by_parent ON small_lineage_edges (parent, child);
CREATE TABLE small_lifecycle (
    artifact_id TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    type        TEXT NOT NULL,
    body        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    stored_at   TEXT NOT NULL,
    PRIMARY KEY (artifact_id, seq)
);
CREATE TABLE small_replay (
    replay_id        TEXT PRIMARY KEY,
    protocol_version TEXT NOT NULL,
    lineage_json     TEXT NOT NULL,
    lifecycle_json   TEXT NOT NULL,
    created_at       TEXT NOT NULL
);
"#];

/// Advisory lock key serialising migrations of concurrently starting servers.
const MIGRATION_LOCK: i64 = 0x534d_414c_4c00;

// Prepared statements, by index.
const SCHEMA_GET: usize = 0;
const SCHEMA_INSERT: usize = 1;
const SCHEMA_LIST: usize = 2;
const HEAD_CREATE: usize = 3;
const HEAD_GET: usize = 4;
const VERSION_GET: usize = 5;
const VERSION_INSERT: usize = 6;
const HEADS_LIST: usize = 7;
const VERSIONS_LIST: usize = 8;
const LINEAGE_FIND: usize = 9;
const LINEAGE_INSERT: usize = 10;
const EDGE_INSERT: usize = 11;
const LINEAGE_FOR: usize = 12;
const WALK_UP: usize = 13;
const WALK_DOWN: usize = 14;
const REACHES_DOWN: usize = 15;
const LIFECYCLE_LOCK: usize = 16;
const LIFECYCLE_EVENTS: usize = 17;
const LIFECYCLE_INSERT: usize = 18;
const LINEAGE_LOCK: usize = 19;
const HEAD_LATEST: usize = 20;
const HEAD_LOCK_LATEST: usize = 21;
const VERSIONS_FLUSH: usize = 22;

const SQL: &[&str] = &[
    "SELECT id, 1::BIGINT, body, sha256, stored_at, NULL::TEXT FROM small_schemas WHERE id = $1",
    "INSERT INTO small_schemas (id, body, sha256, stored_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
    "SELECT id, 1::BIGINT, body, sha256, stored_at, NULL::TEXT FROM small_schemas WHERE id > $1 ORDER BY id LIMIT $2",
    // Creates the head row when missing and locks it either way (ON CONFLICT DO UPDATE takes the
    // row lock, like SELECT ... FOR UPDATE), in one round trip.
    "INSERT INTO small_heads (kind, id, latest) VALUES ($1, $2, 0)
     ON CONFLICT (kind, id) DO UPDATE SET latest = small_heads.latest RETURNING latest",
    "SELECT latest FROM small_heads WHERE kind = $1 AND id = $2",
    "SELECT id, version, body, sha256, stored_at, resolved FROM small_versions WHERE kind = $1 AND id = $2 AND version = $3",
    "WITH inserted AS (
        INSERT INTO small_versions (kind, id, version, schema_id, body, sha256, resolved, stored_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     )
     INSERT INTO small_heads (kind, id, latest) VALUES ($1, $2, $3)
     ON CONFLICT (kind, id) DO UPDATE SET latest = EXCLUDED.latest",
    "SELECT v.id, v.version, v.body, v.sha256, v.stored_at, v.resolved
     FROM small_heads h JOIN small_versions v ON v.kind = h.kind AND v.id = h.id AND v.version = h.latest
     WHERE h.kind = $1 AND h.id > $2 ORDER BY h.id LIMIT $3",
    "SELECT id, version, body, sha256, stored_at, resolved FROM small_versions
     WHERE kind = $1 AND id = $2 AND version > $3 ORDER BY version LIMIT $4",
    "SELECT artifact_id, seq, body, sha256, stored_at, NULL::TEXT FROM small_lineage WHERE artifact_id = $1 AND sha256 = $2",
    "INSERT INTO small_lineage (artifact_id, body, sha256, stored_at) VALUES ($1, $2, $3, $4) RETURNING seq",
    "INSERT INTO small_lineage_edges (child, parent) SELECT $1::TEXT, unnest($2::TEXT[])
     ON CONFLICT DO NOTHING",
    "SELECT artifact_id, seq, body, sha256, stored_at, NULL::TEXT FROM small_lineage WHERE artifact_id = $1 ORDER BY seq",
    "WITH RECURSIVE walk(node, depth) AS (
        SELECT $1::TEXT, 0
        UNION
        SELECT e.parent, w.depth + 1 FROM walk w JOIN small_lineage_edges e ON e.child = w.node
        WHERE w.depth < $2::INT
     ),
     best(node, depth) AS (SELECT node, MIN(depth) FROM walk GROUP BY node)
     SELECT node, NULL, depth FROM best
     UNION ALL
     SELECT e.child, e.parent, -1 FROM best a
     JOIN small_lineage_edges e ON e.child = a.node
     WHERE a.depth < $2::INT",
    "WITH RECURSIVE walk(node, depth) AS (
        SELECT $1::TEXT, 0
        UNION
        SELECT e.child, w.depth + 1 FROM walk w JOIN small_lineage_edges e ON e.parent = w.node
        WHERE w.depth < $2::INT
     ),
     best(node, depth) AS (SELECT node, MIN(depth) FROM walk GROUP BY node)
     SELECT node, NULL, depth FROM best
     UNION ALL
     SELECT e.child, e.parent, -1 FROM best a
     JOIN small_lineage_edges e ON e.parent = a.node
     WHERE a.depth < $2::INT",
    "WITH RECURSIVE d(node) AS (
        SELECT $1::TEXT
        UNION
        SELECT e.child FROM d JOIN small_lineage_edges e ON e.parent = d.node
     ) SELECT node FROM d WHERE node = ANY($2::TEXT[])",
    "SELECT pg_advisory_xact_lock(hashtextextended('small-lifecycle:' || $1::TEXT, 0))",
    "SELECT artifact_id, seq, body, sha256, stored_at, NULL::TEXT FROM small_lifecycle WHERE artifact_id = $1 ORDER BY seq",
    "INSERT INTO small_lifecycle (artifact_id, seq, type, body, sha256, stored_at) VALUES ($1, $2, $3, $4, $5, $6)",
    // One lock for every lineage append (see `Tx::lineage_lock`).
    "SELECT pg_advisory_xact_lock(hashtextextended('small-lineage', 0))",
    // HEAD_CREATE and the latest version's record in one round trip. The join reads with the
    // statement's snapshot: a version committed by a writer this statement waited for is not
    // in it (its record is then read on its own).
    "WITH head AS (
        INSERT INTO small_heads (kind, id, latest) VALUES ($1, $2, 0)
        ON CONFLICT (kind, id) DO UPDATE SET latest = small_heads.latest
        RETURNING kind, id, latest
     )
     SELECT h.latest, v.id, v.version, v.body, v.sha256, v.stored_at, v.resolved
     FROM head h LEFT JOIN small_versions v
       ON v.kind = h.kind AND v.id = h.id AND v.version = h.latest",
    // HEAD_LATEST for a head that exists: a row lock instead of a new row version (no dead
    // tuple, less WAL). No row: the head is missing, and HEAD_LATEST creates it.
    "WITH head AS (
        SELECT kind, id, latest FROM small_heads WHERE kind = $1 AND id = $2 FOR UPDATE
     )
     SELECT h.latest, v.id, v.version, v.body, v.sha256, v.stored_at, v.resolved
     FROM head h LEFT JOIN small_versions v
       ON v.kind = h.kind AND v.id = h.id AND v.version = h.latest",
    deferred::FLUSH_SQL,
];

/// The PostgreSQL backend: a bounded pool of connections with prepared statements, and group
/// commit of writes (see [`batch`]).
pub struct PgBackend {
    pool: Arc<Pool>,
    group: Option<GroupCommit>,
}

/// Marker in backend error messages for failures worth retrying.
pub(crate) const RETRYABLE: &str = "(retryable)";

pub(crate) fn pg_error(e: postgres::Error) -> StoreError {
    let transient = matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE
            || *c == SqlState::T_R_DEADLOCK_DETECTED
            || *c == SqlState::UNIQUE_VIOLATION
            || *c == SqlState::LOCK_NOT_AVAILABLE
    );
    let detail = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    if transient {
        StoreError::Backend(format!("postgres {RETRYABLE}: {detail}"))
    } else {
        StoreError::Backend(format!("postgres: {detail}"))
    }
}

fn valid_schema_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Refuses a schema name that could not be used bare in SQL.
pub(crate) fn check_schema_name(schema: Option<&str>) -> Result<()> {
    match schema {
        Some(s) if !valid_schema_name(s) => Err(StoreError::Backend(format!(
            "invalid PostgreSQL schema name `{s}`"
        ))),
        _ => Ok(()),
    }
}

/// Runs the store migrations on `url` (in `schema` when given), on a helper thread.
pub(crate) fn migrate_database(url: &str, schema: Option<&str>) -> Result<()> {
    check_schema_name(schema)?;
    let connector = Connector {
        url: url.to_string(),
        schema: schema.map(str::to_string),
        read_only: false,
        sql: &[],
    };
    off_runtime(|| {
        let mut client = connector.client()?;
        migrate(&mut client)
    })
}

impl PgBackend {
    /// Connects to `url` and runs the migrations. With `schema`, every table lives in that
    /// PostgreSQL schema (created when missing), which isolates test runs sharing a database.
    /// Pool and committers are sized by [`PgOptions::from_env`].
    pub fn connect(url: &str, schema: Option<&str>) -> Result<Self> {
        Self::connect_with(url, schema, PgOptions::from_env()?)
    }

    /// As [`PgBackend::connect`], with explicit pool and committer sizes.
    pub fn connect_with(url: &str, schema: Option<&str>, options: PgOptions) -> Result<Self> {
        migrate_database(url, schema)?;
        let connector = Connector {
            url: url.to_string(),
            schema: schema.map(str::to_string),
            read_only: false,
            sql: SQL,
        };
        Self::start(connector, options)
    }

    /// Connects to `url` for reading only: no migration runs, no schema is created, and every
    /// transaction of every connection is read-only (`default_transaction_read_only`). A
    /// database without the store's tables is refused.
    pub fn connect_read_only(url: &str) -> Result<Self> {
        let connector = Connector {
            url: url.to_string(),
            schema: None,
            read_only: true,
            sql: SQL,
        };
        Self::start(connector, PgOptions::from_env()?)
    }

    /// Opens one connection to prove the database can be used (and, read-only, holds a store),
    /// then, unless read-only, starts the group committers. The pool opens its connections
    /// when first needed.
    fn start(connector: Connector, options: PgOptions) -> Result<Self> {
        let read_only = connector.read_only;
        // The blocking client runs its own small runtime, which cannot start (or stop) on a
        // thread that is driving an async runtime (a server opening its store): connect and
        // close on a helper thread.
        off_runtime(|| connector.conn().map(drop)).map_err(|e| {
            if read_only {
                StoreError::Backend(format!(
                    "{} does not hold a small store ({e})",
                    redact(&connector.url)
                ))
            } else {
                e
            }
        })?;
        let pool = Arc::new(Pool::new(connector, options.pool_size));
        let group = if read_only {
            None
        } else {
            Some(GroupCommit::start(&pool, options.committers)?)
        };
        Ok(PgBackend { pool, group })
    }

    /// Group commits so far: (batches committed, writes they held).
    pub fn group_commit_counts(&self) -> (u64, u64) {
        self.group.as_ref().map_or((0, 0), GroupCommit::counts)
    }

    /// Group commit batches rolled back so far because a write failed after writing (their
    /// writes ran again alone).
    pub fn group_commit_rollbacks(&self) -> u64 {
        self.group.as_ref().map_or(0, GroupCommit::rollbacks)
    }

    /// Runs `f` in a transaction of its own on a pooled connection, retrying transient
    /// failures up to `retries` times.
    fn run<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>, retries: u32) -> Result<R> {
        let mut attempt = 0;
        loop {
            match self.run_once(f) {
                Err(StoreError::Backend(m)) if attempt < retries && m.contains(RETRYABLE) => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(5 * u64::from(attempt)));
                }
                other => return other,
            }
        }
    }

    fn run_once<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        let mut pooled = self.pool.get()?;
        let conn: &mut Conn = &mut pooled;
        conn.client.batch_execute("BEGIN").map_err(pg_error)?;
        let out = f(&mut PgTx::new(&mut conn.client, &conn.stmts));
        let end = match out {
            Ok(_) => conn.client.batch_execute("COMMIT"),
            Err(_) => conn.client.batch_execute("ROLLBACK"),
        };
        if let Err(e) = end {
            conn.discard();
            return Err(out.err().unwrap_or_else(|| pg_error(e)));
        }
        out
    }
}

/// Runs `f` on a helper thread: blocking PostgreSQL calls must not run on a thread that drives
/// an async runtime (they start one of their own).
pub(crate) fn off_runtime<R: Send>(f: impl FnOnce() -> Result<R> + Send) -> Result<R> {
    std::thread::scope(|scope| {
        scope.spawn(f).join().unwrap_or_else(|_| {
            Err(StoreError::Backend(
                "PostgreSQL connection thread panicked".into(),
            ))
        })
    })
}

impl Drop for PgBackend {
    fn drop(&mut self) {
        // Stop the committers first (they commit what is open and release their pool); the
        // pool then closes its connections off the async runtime when dropped.
        drop(self.group.take());
    }
}

/// The URL without its password, for messages.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

fn migrate(client: &mut Client) -> Result<()> {
    let mut tx = client.transaction().map_err(pg_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(pg_error)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS small_store_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)",
    )
    .map_err(pg_error)?;
    let done: i64 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0)::BIGINT FROM small_store_migrations",
            &[],
        )
        .map_err(pg_error)?
        .get(0);
    if done as usize > MIGRATIONS.len() {
        return Err(StoreError::Backend(format!(
            "the database was written by a newer version of small (schema version {done}, this build knows {})",
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(done as usize) {
        tx.batch_execute(sql).map_err(pg_error)?;
        tx.execute(
            "INSERT INTO small_store_migrations (version, applied_at) VALUES ($1, $2)",
            &[&((i + 1) as i64), &crate::model::now_rfc3339()],
        )
        .map_err(pg_error)?;
    }
    tx.commit().map_err(pg_error)?;
    Ok(())
}

impl Backend for PgBackend {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn read<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.run(f, 3)
    }

    fn write<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        if let Some(group) = &self.group {
            if let Joined::Done(out) = group.write(f) {
                return out;
            }
        }
        self.run(f, 20)
    }
}

/// The store's operations on a session inside an open transaction (begun and ended by the
/// caller: alone, or in a group commit's batch), noting what they did to it.
pub(crate) struct PgTx<'a> {
    client: &'a mut Client,
    stmts: &'a [Statement],
    /// A statement that may write ran (see [`may_write`]).
    pub wrote: bool,
    /// A statement failed: the transaction is aborted.
    pub failed: bool,
    /// Where versions are held back in an optimistic batch (see [`deferred`]).
    pending: Option<&'a mut Pending>,
}

/// Whether a prepared statement may change the database. Only statements known to read (or to
/// take a lock and read) are listed, so a new statement counts as a write until listed here.
fn may_write(q: usize) -> bool {
    !matches!(
        q,
        SCHEMA_GET
            | SCHEMA_LIST
            | HEAD_GET
            | VERSION_GET
            | HEADS_LIST
            | VERSIONS_LIST
            | LINEAGE_FIND
            | LINEAGE_FOR
            | WALK_UP
            | WALK_DOWN
            | REACHES_DOWN
            | LIFECYCLE_LOCK
            | LIFECYCLE_EVENTS
            | LINEAGE_LOCK
            | HEAD_LOCK_LATEST
    )
}

fn kind(t: Versioned) -> &'static str {
    match t {
        Versioned::Artifact => "artifact",
        Versioned::Manifest => "manifest",
    }
}

fn rec(row: &postgres::Row) -> Record {
    Record {
        id: row.get(0),
        version: row.get::<_, i64>(1) as u64,
        json: row.get(2),
        sha256: row.get(3),
        stored_at: row.get(4),
        resolved: row.get(5),
    }
}

impl<'a> PgTx<'a> {
    pub fn new(client: &'a mut Client, stmts: &'a [Statement]) -> Self {
        PgTx {
            client,
            stmts,
            wrote: false,
            failed: false,
            pending: None,
        }
    }

    /// A transaction of a batch that holds versions back in `pending` (flushed before any
    /// statement that could read them; the caller flushes before COMMIT).
    pub fn deferring(
        client: &'a mut Client,
        stmts: &'a [Statement],
        pending: &'a mut Pending,
    ) -> Self {
        PgTx {
            pending: Some(pending),
            ..PgTx::new(client, stmts)
        }
    }

    /// Inserts the held-back versions before statement `q` runs, unless `q` only locks a head
    /// that holds none (the caller checked).
    fn flush_before(&mut self, q: usize) -> Result<()> {
        if matches!(q, HEAD_LOCK_LATEST | HEAD_LATEST) {
            return Ok(());
        }
        let Some(pending) = self.pending.as_deref_mut() else {
            return Ok(());
        };
        let flushed = pending.flush(self.client, &self.stmts[VERSIONS_FLUSH]);
        self.failed |= flushed.is_err();
        flushed.map_err(pg_error)
    }

    fn query(
        &mut self,
        q: usize,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>> {
        self.flush_before(q)?;
        self.wrote |= may_write(q);
        let rows = self.client.query(&self.stmts[q], params);
        self.failed |= rows.is_err();
        rows.map_err(pg_error)
    }
    fn execute(
        &mut self,
        q: usize,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<u64> {
        self.flush_before(q)?;
        self.wrote |= may_write(q);
        let n = self.client.execute(&self.stmts[q], params);
        self.failed |= n.is_err();
        n.map_err(pg_error)
    }
    fn records(
        &mut self,
        q: usize,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Record>> {
        Ok(self.query(q, params)?.iter().map(rec).collect())
    }
    fn record(
        &mut self,
        q: usize,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Option<Record>> {
        Ok(self.records(q, params)?.into_iter().next())
    }
}

impl Tx for PgTx<'_> {
    fn schema_get(&mut self, id: &str) -> Result<Option<Record>> {
        self.record(SCHEMA_GET, &[&id])
    }

    fn schema_insert(&mut self, r: &Record) -> Result<bool> {
        Ok(self.execute(SCHEMA_INSERT, &[&r.id, &r.json, &r.sha256, &r.stored_at])? == 1)
    }

    fn schema_list(&mut self, after: Option<&str>, limit: u32) -> Result<Vec<Record>> {
        self.records(SCHEMA_LIST, &[&after.unwrap_or(""), &i64::from(limit)])
    }

    fn lock_head(&mut self, t: Versioned, id: &str) -> Result<u64> {
        let rows = self.query(HEAD_CREATE, &[&kind(t), &id])?;
        Ok(rows.first().map(|r| r.get::<_, i64>(0)).unwrap_or(0) as u64)
    }

    fn lock_head_latest(&mut self, t: Versioned, id: &str) -> Result<(u64, Option<Record>)> {
        // A version held back here: this transaction locked the head when it wrote it.
        if let Some(held) = self.pending.as_deref().and_then(|p| p.latest(kind(t), id)) {
            return Ok((held.version, Some(held.clone())));
        }
        let mut rows = self.query(HEAD_LOCK_LATEST, &[&kind(t), &id])?;
        if rows.is_empty() {
            rows = self.query(HEAD_LATEST, &[&kind(t), &id])?;
        }
        let Some(row) = rows.first() else {
            return Ok((0, None));
        };
        let latest = row.get::<_, i64>(0) as u64;
        if latest == 0 {
            return Ok((0, None));
        }
        let rec = match row.get::<_, Option<String>>(1) {
            Some(id) => Some(Record {
                id,
                version: row.get::<_, i64>(2) as u64,
                json: row.get(3),
                sha256: row.get(4),
                stored_at: row.get(5),
                resolved: row.get(6),
            }),
            // Committed after this statement's snapshot was taken (see HEAD_LATEST).
            None => self.version_get(t, id, latest)?,
        };
        Ok((latest, rec))
    }

    fn latest_version(&mut self, t: Versioned, id: &str) -> Result<u64> {
        let rows = self.query(HEAD_GET, &[&kind(t), &id])?;
        Ok(rows.first().map(|r| r.get::<_, i64>(0)).unwrap_or(0) as u64)
    }

    fn version_get(&mut self, t: Versioned, id: &str, version: u64) -> Result<Option<Record>> {
        self.record(VERSION_GET, &[&kind(t), &id, &(version as i64)])
    }

    fn version_insert(&mut self, t: Versioned, r: &Record, schema_id: Option<&str>) -> Result<()> {
        if let Some(pending) = self.pending.as_deref_mut() {
            pending.hold(kind(t), r, schema_id);
            self.wrote = true;
            return Ok(());
        }
        let v = r.version as i64;
        self.execute(
            VERSION_INSERT,
            &[
                &kind(t),
                &r.id,
                &v,
                &schema_id,
                &r.json,
                &r.sha256,
                &r.resolved,
                &r.stored_at,
            ],
        )?;
        Ok(())
    }

    fn heads_list(&mut self, t: Versioned, after: Option<&str>, limit: u32) -> Result<Vec<Record>> {
        self.records(
            HEADS_LIST,
            &[&kind(t), &after.unwrap_or(""), &i64::from(limit)],
        )
    }

    fn versions_list(
        &mut self,
        t: Versioned,
        id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Record>> {
        self.records(
            VERSIONS_LIST,
            &[&kind(t), &id, &(after as i64), &i64::from(limit)],
        )
    }

    fn lineage_find(&mut self, artifact_id: &str, sha256: &str) -> Result<Option<Record>> {
        self.record(LINEAGE_FIND, &[&artifact_id, &sha256])
    }

    fn lineage_insert(&mut self, r: &Record, parents: &[String]) -> Result<u64> {
        let rows = self.query(LINEAGE_INSERT, &[&r.id, &r.json, &r.sha256, &r.stored_at])?;
        let seq: i64 = rows.first().map(|r| r.get(0)).unwrap_or(0);
        if !parents.is_empty() {
            self.execute(EDGE_INSERT, &[&r.id, &parents])?;
        }
        Ok(seq as u64)
    }

    fn lineage_for(&mut self, artifact_id: &str) -> Result<Vec<Record>> {
        self.records(LINEAGE_FOR, &[&artifact_id])
    }

    fn walk(&mut self, id: &str, depth: u32, up: bool) -> Result<Walk> {
        let d = depth.min(i32::MAX as u32) as i32;
        let rows = self.query(if up { WALK_UP } else { WALK_DOWN }, &[&id, &d])?;
        let mut walk: Walk = (Vec::new(), Vec::new());
        for r in &rows {
            match r.get::<_, Option<String>>(1) {
                None => walk.0.push((r.get(0), r.get::<_, i32>(2).max(0) as u32)),
                Some(parent) => walk.1.push((r.get(0), parent)),
            }
        }
        Ok(walk)
    }

    fn reaches_down(&mut self, id: &str, targets: &[String]) -> Result<Vec<String>> {
        if targets.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.query(REACHES_DOWN, &[&id, &targets])?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn lineage_lock(&mut self) -> Result<()> {
        self.query(LINEAGE_LOCK, &[])?;
        Ok(())
    }

    fn lifecycle_lock(&mut self, artifact_id: &str) -> Result<()> {
        self.query(LIFECYCLE_LOCK, &[&artifact_id])?;
        Ok(())
    }

    fn lifecycle_events(&mut self, artifact_id: &str) -> Result<Vec<Record>> {
        self.records(LIFECYCLE_EVENTS, &[&artifact_id])
    }

    fn lifecycle_insert(&mut self, r: &Record, kind: &str) -> Result<()> {
        self.execute(
            LIFECYCLE_INSERT,
            &[
                &r.id,
                &(r.version as i64),
                &kind,
                &r.json,
                &r.sha256,
                &r.stored_at,
            ],
        )?;
        Ok(())
    }
}
