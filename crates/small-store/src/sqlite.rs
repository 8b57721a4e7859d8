//! The embedded backend: one SQLite file in WAL mode, migrations on open. Writers take the
//! database write lock at the start of their transaction (`BEGIN IMMEDIATE`), so appends from
//! several threads or processes get contiguous versions.

use crate::error::{Result, StoreError};
use crate::model::Record;
use crate::tx::{Backend, Tx, Versioned, Walk};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Schema migrations, applied in order; `small_store_migrations` records which ran.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE small_schemas (
    id        TEXT PRIMARY KEY NOT NULL,
    body      TEXT NOT NULL,
    sha256    TEXT NOT NULL,
    stored_at TEXT NOT NULL
);
CREATE TABLE small_heads (
    kind   TEXT NOT NULL,
    id     TEXT NOT NULL,
    latest INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
CREATE TABLE small_versions (
    kind      TEXT NOT NULL,
    id        TEXT NOT NULL,
    version   INTEGER NOT NULL,
    schema_id TEXT,
    body      TEXT NOT NULL,
    sha256    TEXT NOT NULL,
    resolved  TEXT,
    stored_at TEXT NOT NULL,
    PRIMARY KEY (kind, id, version)
);
CREATE TABLE small_lineage (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
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
) WITHOUT ROWID;
CREATE INDEX small_lineage_edges_by_parent ON small_lineage_edges (parent, child);
CREATE TABLE small_lifecycle (
    artifact_id TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    type        TEXT NOT NULL,
    body        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    stored_at   TEXT NOT NULL,
    PRIMARY KEY (artifact_id, seq)
);
"#];

/// The SQLite backend: a small pool of connections to one file.
pub struct SqliteBackend {
    path: PathBuf,
    pool: Mutex<Vec<Connection>>,
    read_only: bool,
}

fn connect(path: &Path, read_only: bool) -> Result<Connection> {
    if read_only {
        // Never creates the file, never changes the journal mode, refuses every write.
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "query_only", "ON")?;
        return Ok(conn);
    }
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(30))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

impl SqliteBackend {
    /// Opens (creating the file and its directory when missing) and migrates the store.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    StoreError::Backend(format!(
                        "cannot create the store directory {}: {e}",
                        parent.display()
                    ))
                })?;
            }
        }
        let mut conn = connect(path, false).map_err(|e| {
            StoreError::Backend(format!("cannot open the store {}: {e}", path.display()))
        })?;
        migrate(&mut conn)?;
        Ok(SqliteBackend {
            path: path.to_owned(),
            pool: Mutex::new(vec![conn]),
            read_only: false,
        })
    }

    /// Opens an existing store for reading only: a missing path, or one that is not a regular
    /// file, is an error (nothing is created), no migration runs, and every connection is
    /// opened read-only. A store whose schema is older or newer than this build's is refused.
    pub fn open_read_only(path: &Path) -> Result<Self> {
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(StoreError::Backend(format!(
                    "the store {} is not a regular file",
                    path.display()
                )))
            }
            Err(e) => {
                return Err(StoreError::Backend(format!(
                    "cannot open the store {}: {e}",
                    path.display()
                )))
            }
        }
        let conn = connect(path, true).map_err(|e| {
            StoreError::Backend(format!("cannot open the store {}: {e}", path.display()))
        })?;
        let version: std::result::Result<i64, _> = conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM small_store_migrations",
            [],
            |r| r.get(0),
        );
        match version {
            Ok(v) if v as usize == MIGRATIONS.len() => {}
            Ok(v) if v as usize > MIGRATIONS.len() => {
                return Err(StoreError::Backend(format!(
                    "the store {} was written by a newer version of small (schema version {v}, this build knows {})",
                    path.display(),
                    MIGRATIONS.len()
                )))
            }
            Ok(v) => {
                return Err(StoreError::Backend(format!(
                    "the store {} has schema version {v}, older than this build's {} (open it once for writing to migrate it)",
                    path.display(),
                    MIGRATIONS.len()
                )))
            }
            Err(e) => {
                return Err(StoreError::Backend(format!(
                    "{} is not a small store: {e}",
                    path.display()
                )))
            }
        }
        Ok(SqliteBackend {
            path: path.to_owned(),
            pool: Mutex::new(vec![conn]),
            read_only: true,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with_conn<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R>) -> Result<R> {
        let taken = self
            .pool
            .lock()
            .map_err(|_| StoreError::Backend("pool lock poisoned".into()))?
            .pop();
        let mut conn = match taken {
            Some(c) => c,
            None => connect(&self.path, self.read_only)?,
        };
        let out = f(&mut conn);
        if let Ok(mut pool) = self.pool.lock() {
            if pool.len() < 8 {
                pool.push(conn);
            }
        }
        out
    }
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS small_store_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    )?;
    let done: i64 = tx.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM small_store_migrations",
        [],
        |r| r.get(0),
    )?;
    if done as usize > MIGRATIONS.len() {
        return Err(StoreError::Backend(format!(
            "the store was written by a newer version of small (schema version {done}, this build knows {})",
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(done as usize) {
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO small_store_migrations (version, applied_at) VALUES (?1, ?2)",
            params![(i + 1) as i64, crate::model::now_rfc3339()],
        )?;
    }
    tx.commit()?;
    Ok(())
}

fn is_busy(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend(m) if m.contains("database is locked") || m.contains("database is busy"))
}

impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn read<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.with_conn(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            let out = f(&mut SqliteTx { tx: &tx })?;
            tx.commit()?;
            Ok(out)
        })
    }

    fn write<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        let mut attempt = 0;
        loop {
            let result = self.with_conn(|conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let out = f(&mut SqliteTx { tx: &tx })?;
                tx.commit()?;
                Ok(out)
            });
            match result {
                Err(e) if attempt < 5 && is_busy(&e) => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(20 * attempt));
                }
                other => return other,
            }
        }
    }
}

struct SqliteTx<'a> {
    tx: &'a rusqlite::Transaction<'a>,
}

fn kind(t: Versioned) -> &'static str {
    match t {
        Versioned::Artifact => "artifact",
        Versioned::Manifest => "manifest",
    }
}

fn rec(row: &rusqlite::Row<'_>) -> rusqlite::Result<Record> {
    Ok(Record {
        id: row.get(0)?,
        version: row.get::<_, i64>(1)? as u64,
        json: row.get(2)?,
        sha256: row.get(3)?,
        stored_at: row.get(4)?,
        resolved: row.get(5)?,
    })
}

impl Tx for SqliteTx<'_> {
    fn schema_get(&mut self, id: &str) -> Result<Option<Record>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT id, 1, body, sha256, stored_at, NULL FROM small_schemas WHERE id = ?1",
            )?
            .query_row(params![id], rec)
            .optional()?)
    }

    fn schema_insert(&mut self, r: &Record) -> Result<bool> {
        let n = self
            .tx
            .prepare_cached(
                "INSERT INTO small_schemas (id, body, sha256, stored_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![r.id, r.json, r.sha256, r.stored_at])?;
        Ok(n == 1)
    }

    fn schema_list(&mut self, after: Option<&str>, limit: u32) -> Result<Vec<Record>> {
        let mut st = self.tx.prepare_cached(
            "SELECT id, 1, body, sha256, stored_at, NULL FROM small_schemas WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let rows = st.query_map(params![after.unwrap_or(""), limit], rec)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn lock_head(&mut self, t: Versioned, id: &str) -> Result<u64> {
        // The transaction already holds the database write lock (BEGIN IMMEDIATE).
        self.latest_version(t, id)
    }

    fn latest_version(&mut self, t: Versioned, id: &str) -> Result<u64> {
        let v: Option<i64> = self
            .tx
            .prepare_cached("SELECT latest FROM small_heads WHERE kind = ?1 AND id = ?2")?
            .query_row(params![kind(t), id], |r| r.get(0))
            .optional()?;
        Ok(v.unwrap_or(0) as u64)
    }

    fn version_get(&mut self, t: Versioned, id: &str, version: u64) -> Result<Option<Record>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT id, version, body, sha256, stored_at, resolved FROM small_versions
                 WHERE kind = ?1 AND id = ?2 AND version = ?3",
            )?
            .query_row(params![kind(t), id, version as i64], rec)
            .optional()?)
    }

    fn version_insert(&mut self, t: Versioned, r: &Record, schema_id: Option<&str>) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO small_versions (kind, id, version, schema_id, body, sha256, resolved, stored_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![kind(t), r.id, r.version as i64, schema_id, r.json, r.sha256, r.resolved, r.stored_at])?;
        self.tx
            .prepare_cached(
                "INSERT INTO small_heads (kind, id, latest) VALUES (?1, ?2, ?3)
                 ON CONFLICT (kind, id) DO UPDATE SET latest = excluded.latest",
            )?
            .execute(params![kind(t), r.id, r.version as i64])?;
        Ok(())
    }

    fn heads_list(&mut self, t: Versioned, after: Option<&str>, limit: u32) -> Result<Vec<Record>> {
        let mut st = self.tx.prepare_cached(
            "SELECT v.id, v.version, v.body, v.sha256, v.stored_at, v.resolved
             FROM small_heads h JOIN small_versions v ON v.kind = h.kind AND v.id = h.id AND v.version = h.latest
             WHERE h.kind = ?1 AND h.id > ?2 ORDER BY h.id LIMIT ?3",
        )?;
        let rows = st.query_map(params![kind(t), after.unwrap_or(""), limit], rec)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn versions_list(
        &mut self,
        t: Versioned,
        id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Record>> {
        let mut st = self.tx.prepare_cached(
            "SELECT id, version, body, sha256, stored_at, resolved FROM small_versions
             WHERE kind = ?1 AND id = ?2 AND version > ?3 ORDER BY version LIMIT ?4",
        )?;
        let rows = st.query_map(params![kind(t), id, after as i64, limit], rec)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn lineage_find(&mut self, artifact_id: &str, sha256: &str) -> Result<Option<Record>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT artifact_id, seq, body, sha256, stored_at, NULL FROM small_lineage
                 WHERE artifact_id = ?1 AND sha256 = ?2",
            )?
            .query_row(params![artifact_id, sha256], rec)
            .optional()?)
    }

    fn lineage_insert(&mut self, r: &Record, parents: &[String]) -> Result<u64> {
        self.tx
            .prepare_cached(
                "INSERT INTO small_lineage (artifact_id, body, sha256, stored_at) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![r.id, r.json, r.sha256, r.stored_at])?;
        let seq = self.tx.last_insert_rowid() as u64;
        let mut st = self
            .tx
            .prepare_cached("INSERT INTO small_lineage_edges (child, parent) VALUES (?1, ?2) ON CONFLICT DO NOTHING")?;
        for p in parents {
            st.execute(params![r.id, p])?;
        }
        Ok(seq)
    }

    fn lineage_for(&mut self, artifact_id: &str) -> Result<Vec<Record>> {
        let mut st = self.tx.prepare_cached(
            "SELECT artifact_id, seq, body, sha256, stored_at, NULL FROM small_lineage
             WHERE artifact_id = ?1 ORDER BY seq",
        )?;
        let rows = st.query_map(params![artifact_id], rec)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn walk(&mut self, id: &str, depth: u32, up: bool) -> Result<Walk> {
        let sql = if up {
            "WITH RECURSIVE walk(node, depth) AS (
                SELECT ?1, 0
                UNION
                SELECT e.parent, w.depth + 1 FROM walk w JOIN small_lineage_edges e ON e.child = w.node
                WHERE w.depth < ?2
             ),
             best(node, depth) AS (SELECT node, MIN(depth) FROM walk GROUP BY node)
             SELECT node, NULL, depth FROM best
             UNION ALL
             SELECT e.child, e.parent, -1 FROM best a
             CROSS JOIN small_lineage_edges e ON e.child = a.node
             WHERE a.depth < ?2"
        } else {
            "WITH RECURSIVE walk(node, depth) AS (
                SELECT ?1, 0
                UNION
                SELECT e.child, w.depth + 1 FROM walk w JOIN small_lineage_edges e ON e.parent = w.node
                WHERE w.depth < ?2
             ),
             best(node, depth) AS (SELECT node, MIN(depth) FROM walk GROUP BY node)
             SELECT node, NULL, depth FROM best
             UNION ALL
             SELECT e.child, e.parent, -1 FROM best a
             CROSS JOIN small_lineage_edges e ON e.parent = a.node
             WHERE a.depth < ?2"
        };
        let mut st = self.tx.prepare_cached(sql)?;
        let rows = st.query_map(params![id, depth], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?;
        let mut walk: Walk = (Vec::new(), Vec::new());
        for row in rows {
            match row? {
                (node, None, d) => walk.0.push((node, d.max(0) as u32)),
                (child, Some(parent), _) => walk.1.push((child, parent)),
            }
        }
        Ok(walk)
    }

    fn reaches_down(&mut self, id: &str, targets: &[String]) -> Result<Vec<String>> {
        let mut st = self.tx.prepare_cached(
            "WITH RECURSIVE d(node) AS (
                SELECT ?1
                UNION
                SELECT e.child FROM d JOIN small_lineage_edges e ON e.parent = d.node
             ) SELECT 1 FROM d WHERE node = ?2 LIMIT 1",
        )?;
        let mut reached = Vec::new();
        for t in targets {
            if st
                .query_row(params![id, t], |r| r.get::<_, i64>(0))
                .optional()?
                .is_some()
            {
                reached.push(t.clone());
            }
        }
        Ok(reached)
    }

    fn lifecycle_lock(&mut self, _artifact_id: &str) -> Result<()> {
        Ok(())
    }

    fn lifecycle_events(&mut self, artifact_id: &str) -> Result<Vec<Record>> {
        let mut st = self.tx.prepare_cached(
            "SELECT artifact_id, seq, body, sha256, stored_at, NULL FROM small_lifecycle
             WHERE artifact_id = ?1 ORDER BY seq",
        )?;
        let rows = st.query_map(params![artifact_id], rec)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn lifecycle_insert(&mut self, r: &Record, kind: &str) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO small_lifecycle (artifact_id, seq, type, body, sha256, stored_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                r.id,
                r.version as i64,
                kind,
                r.json,
                r.sha256,
                r.stored_at
            ])?;
        Ok(())
    }
}
