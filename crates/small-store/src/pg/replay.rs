//! Replay records in PostgreSQL (table `small_replay`, created by the store migrations), so
//! several servers sharing one database agree on the first materialisation of a replay ID.
//!
//! First replays are group-committed: callers queue their candidate record, and committer
//! threads each take every queued record, insert them all with one statement
//! (`INSERT … SELECT FROM unnest(…) ON CONFLICT DO NOTHING RETURNING`, its own transaction, so
//! one commit and one flush to disk), read back the records other writers stored first, and
//! answer every caller. A record the database refuses fails alone: the batch is then inserted
//! again one record per savepoint, in one transaction. A failed commit answers every caller of
//! the batch with an error; no caller is answered before its record is durable.

use super::pool::{Conn, Connector, PgOptions, Pool};
use super::{migrate_database, off_runtime, pg_error, redact};
use crate::replay::{ReplayRecord, ReplayStore, ReplayStoreError, Reply};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Records one committer takes at most in one batch.
const MAX_BATCH: usize = 1024;

const SELECT_ONE: usize = 0;
const INSERT_MANY: usize = 1;
const SELECT_MANY: usize = 2;
const INSERT_ONE: usize = 3;

const SQL: &[&str] = &[
    "SELECT replay_id, protocol_version, lineage_json, lifecycle_json, created_at
     FROM small_replay WHERE replay_id = $1",
    "INSERT INTO small_replay (replay_id, protocol_version, lineage_json, lifecycle_json, created_at)
     SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[])
     ON CONFLICT (replay_id) DO NOTHING RETURNING replay_id",
    "SELECT replay_id, protocol_version, lineage_json, lifecycle_json, created_at
     FROM small_replay WHERE replay_id = ANY($1::TEXT[])",
    "INSERT INTO small_replay (replay_id, protocol_version, lineage_json, lifecycle_json, created_at)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (replay_id) DO NOTHING",
];

fn other(e: impl std::fmt::Display) -> ReplayStoreError {
    ReplayStoreError::Other(e.to_string())
}

fn row_record(row: &postgres::Row) -> ReplayRecord {
    ReplayRecord {
        replay_id: row.get(0),
        protocol_version: row.get(1),
        lineage_json: row.get(2),
        lifecycle_json: row.get(3),
        created_at: row.get(4),
    }
}

/// The answer to one caller: the stored record and whether the caller's was the one inserted.
pub type Answer = Result<(ReplayRecord, bool), ReplayStoreError>;

/// A queued first replay and whom to answer.
struct Job {
    candidate: ReplayRecord,
    reply: Reply,
}

#[derive(Default)]
struct QueueState {
    jobs: Vec<Job>,
    closing: bool,
}

#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
    batches: AtomicU64,
    records: AtomicU64,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every queued job (up to [`MAX_BATCH`]), waiting for one; empty once closing and drained.
    fn take(&self) -> Vec<Job> {
        let mut st = self.lock();
        while st.jobs.is_empty() && !st.closing {
            st = self.ready.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        let n = st.jobs.len().min(MAX_BATCH);
        let batch: Vec<Job> = st.jobs.drain(..n).collect();
        if !st.jobs.is_empty() {
            self.ready.notify_one();
        }
        batch
    }
}

/// A [`ReplayStore`] on PostgreSQL, with group commit of first replays.
pub struct PgReplayStore {
    url: String,
    pool: Pool,
    queue: Arc<Queue>,
    committers: Vec<JoinHandle<()>>,
}

impl PgReplayStore {
    /// Connects to `url` (running the store migrations, which create the replay table).
    pub fn connect(url: &str) -> Result<Self, ReplayStoreError> {
        Self::connect_in_schema(url, None)
    }

    /// As [`PgReplayStore::connect`], with every table in the PostgreSQL schema `schema`.
    pub fn connect_in_schema(url: &str, schema: Option<&str>) -> Result<Self, ReplayStoreError> {
        let options = PgOptions::from_env().map_err(other)?;
        Self::connect_with(url, schema, options)
    }

    /// As [`PgReplayStore::connect_in_schema`], with explicit pool and committer counts.
    pub fn connect_with(
        url: &str,
        schema: Option<&str>,
        options: PgOptions,
    ) -> Result<Self, ReplayStoreError> {
        migrate_database(url, schema).map_err(other)?;
        let connector = Connector {
            url: url.to_string(),
            schema: schema.map(str::to_string),
            read_only: false,
            sql: SQL,
        };
        // Proves the database can be used; connect and close off the async runtime.
        off_runtime(|| connector.conn().map(drop)).map_err(other)?;
        let mut store = PgReplayStore {
            url: url.to_string(),
            pool: Pool::new(connector.clone(), options.pool_size),
            queue: Arc::default(),
            committers: Vec::new(),
        };
        for i in 0..options.committers.max(1) {
            let queue = store.queue.clone();
            let connector = connector.clone();
            let handle = std::thread::Builder::new()
                .name(format!("small-replay-commit-{i}"))
                .spawn(move || commit_loop(&queue, &connector))
                .map_err(|e| other(format!("cannot start a replay committer thread: {e}")))?;
            store.committers.push(handle);
        }
        Ok(store)
    }

    /// Group commits so far: (batches committed, records they held).
    pub fn group_commit_counts(&self) -> (u64, u64) {
        (
            self.queue.batches.load(Ordering::Relaxed),
            self.queue.records.load(Ordering::Relaxed),
        )
    }

    /// Stores a batch of candidates as one committer does, on a connection of the pool, and
    /// returns each candidate's answer in order (what the queued path answers each caller).
    pub fn store_batch(
        &self,
        candidates: &[ReplayRecord],
    ) -> Result<Vec<Answer>, ReplayStoreError> {
        let mut pooled = self.pool.get().map_err(other)?;
        let out = store_batch(&mut pooled, candidates).map_err(other)?;
        Ok(out.into_iter().map(|r| r.map_err(other)).collect())
    }
}

/// A committer: takes batches from the queue until it closes, on a connection of its own
/// (opened again after a failure).
fn commit_loop(queue: &Queue, connector: &Connector) {
    let mut conn: Option<Conn> = None;
    loop {
        let jobs = queue.take();
        if jobs.is_empty() {
            return;
        }
        let (candidates, replies): (Vec<ReplayRecord>, Vec<Reply>) =
            jobs.into_iter().map(|j| (j.candidate, j.reply)).unzip();
        if conn.as_ref().is_none_or(|c| c.client.is_closed()) {
            conn = None;
        }
        let answers = match &mut conn {
            Some(c) => store_batch(c, &candidates),
            None => match connector.conn() {
                Ok(c) => store_batch(conn.insert(c), &candidates),
                Err(e) => Err(e.to_string()),
            },
        };
        match answers {
            Ok(answers) => {
                queue.batches.fetch_add(1, Ordering::Relaxed);
                queue
                    .records
                    .fetch_add(candidates.len() as u64, Ordering::Relaxed);
                for (reply, answer) in replies.into_iter().zip(answers) {
                    reply(answer.map_err(other));
                }
            }
            Err(e) => {
                conn = None;
                for reply in replies {
                    reply(Err(other(format!("the group commit failed: {e}"))));
                }
            }
        }
    }
}

/// One answer per candidate: the record stored for its replay ID and whether this candidate
/// was the one inserted, or why its record could not be stored.
type Answers = Vec<Result<(ReplayRecord, bool), String>>;

/// Stores `candidates` (the first of each replay ID wins; stored records win over all), one
/// commit for the whole batch. `Err` when nothing can be said for any of them; the connection
/// is then discarded (it may be left inside a transaction).
fn store_batch(conn: &mut Conn, candidates: &[ReplayRecord]) -> Result<Answers, String> {
    let answers = try_store_batch(conn, candidates);
    if answers.is_err() {
        conn.discard();
    }
    answers
}

fn try_store_batch(conn: &mut Conn, candidates: &[ReplayRecord]) -> Result<Answers, String> {
    let firsts = first_of_each_id(candidates);
    // In replay ID order: two servers inserting overlapping batches wait on each other's rows
    // in the same order, never in a cycle.
    let mut distinct: Vec<&ReplayRecord> = firsts.values().map(|&i| &candidates[i]).collect();
    distinct.sort_by(|a, b| a.replay_id.cmp(&b.replay_id));
    let (inserted, refused) = match insert_many(conn, &distinct) {
        Ok(inserted) => (inserted, HashMap::new()),
        Err(e) if conn.client.is_closed() => return Err(e),
        Err(_) => insert_one_by_one(conn, &distinct)?,
    };
    let missing: Vec<String> = firsts
        .keys()
        .filter(|id| !inserted.contains(**id) && !refused.contains_key(**id))
        .map(|id| id.to_string())
        .collect();
    let stored = read_back(conn, &missing)?;
    Ok(candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let id = c.replay_id.as_str();
            if let Some(why) = refused.get(id) {
                return Err(format!("replay record `{id}` refused: {why}"));
            }
            if inserted.contains(id) {
                let first = firsts.get(id).copied().unwrap_or(i);
                return Ok((candidates[first].clone(), first == i));
            }
            match stored.get(id) {
                Some(r) => Ok((r.clone(), false)),
                None => Err(format!(
                    "replay record `{id}` vanished after a conflicting insert"
                )),
            }
        })
        .collect())
}

/// Index of the first candidate of each replay ID.
fn first_of_each_id(candidates: &[ReplayRecord]) -> HashMap<&str, usize> {
    let mut firsts = HashMap::with_capacity(candidates.len());
    for (i, c) in candidates.iter().enumerate() {
        firsts.entry(c.replay_id.as_str()).or_insert(i);
    }
    firsts
}

/// All records in one statement (its own transaction): the replay IDs it inserted.
fn insert_many(conn: &mut Conn, records: &[&ReplayRecord]) -> Result<HashSet<String>, String> {
    let column =
        |f: fn(&ReplayRecord) -> &str| -> Vec<&str> { records.iter().map(|r| f(r)).collect() };
    let ids = column(|r| &r.replay_id);
    let versions = column(|r| &r.protocol_version);
    let lineages = column(|r| &r.lineage_json);
    let lifecycles = column(|r| &r.lifecycle_json);
    let times = column(|r| &r.created_at);
    let rows = conn
        .client
        .query(
            &conn.stmts[INSERT_MANY],
            &[&ids, &versions, &lineages, &lifecycles, &times],
        )
        .map_err(|e| pg_error(e).to_string())?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The records one per savepoint in one transaction: the replay IDs inserted, and the ones
/// the database refused with its reason.
fn insert_one_by_one(
    conn: &mut Conn,
    records: &[&ReplayRecord],
) -> Result<(HashSet<String>, HashMap<String, String>), String> {
    let fail = |e: postgres::Error| pg_error(e).to_string();
    conn.client.batch_execute("BEGIN").map_err(fail)?;
    let mut inserted = HashSet::new();
    let mut refused = HashMap::new();
    for r in records {
        conn.client.batch_execute("SAVEPOINT r").map_err(fail)?;
        let done = conn.client.execute(
            &conn.stmts[INSERT_ONE],
            &[
                &r.replay_id,
                &r.protocol_version,
                &r.lineage_json,
                &r.lifecycle_json,
                &r.created_at,
            ],
        );
        match done {
            Ok(n) => {
                conn.client
                    .batch_execute("RELEASE SAVEPOINT r")
                    .map_err(fail)?;
                if n == 1 {
                    inserted.insert(r.replay_id.clone());
                }
            }
            Err(e) => {
                conn.client
                    .batch_execute("ROLLBACK TO SAVEPOINT r; RELEASE SAVEPOINT r")
                    .map_err(fail)?;
                refused.insert(r.replay_id.clone(), fail(e));
            }
        }
    }
    conn.client.batch_execute("COMMIT").map_err(fail)?;
    Ok((inserted, refused))
}

/// The stored records of `ids` (committed by other writers), by replay ID.
fn read_back(conn: &mut Conn, ids: &[String]) -> Result<HashMap<String, ReplayRecord>, String> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = conn
        .client
        .query(&conn.stmts[SELECT_MANY], &[&ids])
        .map_err(|e| pg_error(e).to_string())?;
    Ok(rows
        .iter()
        .map(row_record)
        .map(|r| (r.replay_id.clone(), r))
        .collect())
}

impl Drop for PgReplayStore {
    fn drop(&mut self) {
        // Committers answer what is queued, then stop; the pool then closes its connections
        // off the async runtime when dropped.
        self.queue.lock().closing = true;
        self.queue.ready.notify_all();
        for handle in self.committers.drain(..) {
            let _ = handle.join();
        }
    }
}

impl ReplayStore for PgReplayStore {
    fn get(&self, replay_id: &str) -> Result<Option<ReplayRecord>, ReplayStoreError> {
        let pooled = &mut self.pool.get().map_err(other)?;
        let conn: &mut Conn = pooled;
        let rows = conn
            .client
            .query(&conn.stmts[SELECT_ONE], &[&replay_id])
            .map_err(|e| other(pg_error(e)))?;
        Ok(rows.first().map(row_record))
    }

    fn get_or_insert(
        &self,
        candidate: ReplayRecord,
    ) -> Result<(ReplayRecord, bool), ReplayStoreError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.get_or_insert_queued(
            candidate,
            Box::new(move |answer| {
                let _ = tx.send(answer);
            }),
        );
        rx.recv()
            .map_err(|_| other("the replay committer stopped without answering"))?
    }

    fn queues_writes(&self) -> bool {
        true
    }

    fn get_or_insert_queued(&self, candidate: ReplayRecord, reply: Reply) {
        let mut st = self.queue.lock();
        if st.closing {
            drop(st);
            reply(Err(other("the replay store is closing")));
            return;
        }
        st.jobs.push(Job { candidate, reply });
        drop(st);
        self.queue.ready.notify_one();
    }

    fn describe(&self) -> String {
        format!("postgres:{}", redact(&self.url))
    }
}
