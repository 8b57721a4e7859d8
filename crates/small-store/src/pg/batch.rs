//! Group commit of primitives writes on PostgreSQL. Each write waits for its commit to reach
//! disk; done one transaction per write, the disk flush (milliseconds) bounds the write rate.
//! Here concurrent writes join one open transaction, each inside its own savepoint, and a
//! committer thread commits that transaction once for all of them: one flush acknowledges many
//! writes, and a write that fails rolls back to its savepoint without touching the others.
//!
//! A write runs its closure on the caller's thread (the closures borrow the caller's data), on
//! the connection of a "lane"; several lanes run writes side by side, each with one open batch
//! while its previous batch commits. A write whose closure meets a transient conflict (deadlock,
//! unique race, a lock held too long by another batch) leaves the group and runs alone with
//! retries, so batches never wait on each other for long.

use super::pool::{Conn, Pool, Pooled};
use super::{PgTx, RETRYABLE};
use crate::error::{Result, StoreError};
use crate::tx::Tx;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Writes in one batch at most: each savepoint that writes takes a subtransaction ID, and
/// PostgreSQL slows every snapshot down once a transaction holds more than 64 of them.
const MAX_MEMBERS: usize = 48;

/// Committer threads per lane: one, so a lane's next batch collects writes while the
/// previous one waits for its flush (a second committer would take it at once, one write
/// at a time, and batches would not grow).
const COMMITTERS_PER_LANE: usize = 1;

/// Session settings of a batch: a write waiting this long for a row lock leaves the batch
/// (and retries alone) instead of holding up every other write of the batch.
const BEGIN: &str = "BEGIN; SET LOCAL lock_timeout = '100ms'";

/// What became of a write offered to the group.
pub(crate) enum Joined<R> {
    /// Committed with its batch, or refused (nothing of it stored).
    Done(Result<R>),
    /// A transient conflict: run it alone, with retries.
    Leave,
}

/// The commit result of one batch, awaited by each of its writers.
#[derive(Default)]
struct Outcome {
    result: Mutex<Option<std::result::Result<(), String>>>,
    done: Condvar,
}

impl Outcome {
    fn set(&self, r: std::result::Result<(), String>) {
        let mut slot = self.result.lock().unwrap_or_else(|p| p.into_inner());
        *slot = Some(r);
        self.done.notify_all();
    }

    fn wait(&self) -> Result<()> {
        let mut slot = self.result.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(r) = slot.as_ref() {
                return r.clone().map_err(|e| {
                    StoreError::Backend(format!(
                        "postgres: the group commit of this write failed: {e}"
                    ))
                });
            }
            slot = self.done.wait(slot).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// An open transaction collecting writes.
struct Batch {
    conn: Pooled,
    /// Writes that succeeded in it.
    members: usize,
    /// A savepoint `w` of the last successful write is still open.
    savepoint: bool,
    /// A closure is running (still true afterwards only if it panicked: the batch is tainted).
    running: bool,
    /// Committed: the connection goes back to the pool instead of being closed.
    committed: bool,
    outcome: Arc<Outcome>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        // An uncommitted transaction must not reach the pool: closing the session rolls it back.
        if !self.committed {
            self.conn.discard();
        }
    }
}

/// How one closure went inside a batch.
enum Ran<R> {
    Ok(R),
    /// The closure failed; the batch is intact.
    Failed(StoreError),
    /// The connection failed; the batch is lost.
    Broken(StoreError),
}

impl Batch {
    fn begin(pool: &Arc<Pool>) -> Result<Batch> {
        let mut conn = pool.get()?;
        let started = conn.client.batch_execute(BEGIN);
        if let Err(e) = started {
            conn.discard();
            return Err(super::pg_error(e));
        }
        Ok(Batch {
            conn,
            members: 0,
            savepoint: false,
            running: false,
            committed: false,
            outcome: Arc::default(),
        })
    }

    fn run<R>(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Ran<R> {
        let mark = if self.savepoint {
            "RELEASE SAVEPOINT w; SAVEPOINT w"
        } else {
            "SAVEPOINT w"
        };
        let conn: &mut Conn = &mut self.conn;
        if let Err(e) = conn.client.batch_execute(mark) {
            return Ran::Broken(super::pg_error(e));
        }
        self.savepoint = true;
        self.running = true;
        let out = f(&mut PgTx {
            client: &mut conn.client,
            stmts: &conn.stmts,
        });
        self.running = false;
        match out {
            Ok(v) => Ran::Ok(v),
            Err(e) => {
                self.savepoint = false;
                match conn
                    .client
                    .batch_execute("ROLLBACK TO SAVEPOINT w; RELEASE SAVEPOINT w")
                {
                    Ok(()) => Ran::Failed(e),
                    Err(_) => Ran::Broken(e),
                }
            }
        }
    }

    /// Fails every writer of a batch that will not commit (its transaction rolls back when its
    /// connection closes).
    fn abandon(self, why: &str) {
        self.outcome.set(Err(why.to_string()));
    }
}

struct LaneState {
    open: Option<Batch>,
    closing: bool,
}

/// One connection's worth of group commit: an open batch, and a committer thread.
struct Lane {
    pool: Arc<Pool>,
    state: Mutex<LaneState>,
    /// A write joined the open batch (or the lane is closing).
    joined: Condvar,
    /// The committer took the open batch.
    taken: Condvar,
    batches: AtomicU64,
    writes: AtomicU64,
}

impl Lane {
    fn lock(&self) -> MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` in this lane's open batch (opening one when needed) and waits for its commit.
    fn write<R>(
        &self,
        mut st: MutexGuard<'_, LaneState>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>,
    ) -> Joined<R> {
        while st.open.as_ref().is_some_and(|b| b.members >= MAX_MEMBERS) {
            st = self.taken.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if st.open.as_ref().is_some_and(|b| b.running) {
            if let Some(b) = st.open.take() {
                b.abandon("a write of the same batch panicked");
            }
        }
        if st.open.is_none() {
            match Batch::begin(&self.pool) {
                Ok(b) => st.open = Some(b),
                Err(e) => return Joined::Done(Err(e)),
            }
        }
        let Some(batch) = st.open.as_mut() else {
            return Joined::Leave;
        };
        match batch.run(f) {
            Ran::Ok(out) => {
                batch.members += 1;
                let outcome = batch.outcome.clone();
                drop(st);
                self.joined.notify_one();
                Joined::Done(outcome.wait().map(|()| out))
            }
            Ran::Failed(e) if is_transient(&e) => Joined::Leave,
            Ran::Failed(e) => Joined::Done(Err(e)),
            Ran::Broken(e) => {
                if let Some(b) = st.open.take() {
                    b.abandon(&format!("the connection failed during another write ({e})"));
                }
                Joined::Done(Err(e))
            }
        }
    }

    /// The next batch with writes in it, or `None` once the lane is closing and empty.
    fn next_batch(&self) -> Option<Batch> {
        let mut st = self.lock();
        loop {
            // Holding the lock, a closure still marked running has panicked.
            if st.open.as_ref().is_some_and(|b| b.running) {
                if let Some(b) = st.open.take() {
                    b.abandon("a write of the same batch panicked");
                }
            }
            if st.open.as_ref().is_some_and(|b| b.members > 0) {
                let batch = st.open.take();
                drop(st);
                self.taken.notify_all();
                return batch;
            }
            if st.closing {
                if let Some(b) = st.open.take() {
                    b.abandon("the store is closing");
                }
                return None;
            }
            st = self.joined.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Commits batches until the lane closes: one COMMIT (one flush) answers every writer.
    fn commit_loop(&self) {
        while let Some(mut batch) = self.next_batch() {
            let members = batch.members as u64;
            let committed = batch
                .conn
                .client
                .batch_execute("COMMIT")
                .map_err(super::pg_error);
            match committed {
                Ok(()) => {
                    batch.committed = true;
                    self.batches.fetch_add(1, Ordering::Relaxed);
                    self.writes.fetch_add(members, Ordering::Relaxed);
                    batch.outcome.set(Ok(()));
                }
                Err(e) => batch.abandon(&e.to_string()),
            }
        }
    }
}

fn is_transient(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend(m) if m.contains(RETRYABLE))
}

/// The lanes of a backend and their committer threads.
pub(crate) struct GroupCommit {
    lanes: Vec<Arc<Lane>>,
    next: AtomicUsize,
    committers: Vec<JoinHandle<()>>,
}

impl GroupCommit {
    /// `lanes` lanes over connections of `pool`.
    pub fn start(pool: &Arc<Pool>, lanes: usize) -> Result<GroupCommit> {
        let mut group = GroupCommit {
            lanes: Vec::new(),
            next: AtomicUsize::new(0),
            committers: Vec::new(),
        };
        for i in 0..lanes.max(1) {
            let lane = Arc::new(Lane {
                pool: pool.clone(),
                state: Mutex::new(LaneState {
                    open: None,
                    closing: false,
                }),
                joined: Condvar::new(),
                taken: Condvar::new(),
                batches: AtomicU64::new(0),
                writes: AtomicU64::new(0),
            });
            for k in 0..COMMITTERS_PER_LANE {
                let committer = lane.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("small-pg-commit-{i}-{k}"))
                    .spawn(move || committer.commit_loop())
                    .map_err(|e| {
                        StoreError::Backend(format!("cannot start a group commit thread: {e}"))
                    })?;
                group.committers.push(handle);
            }
            group.lanes.push(lane);
        }
        Ok(group)
    }

    /// Offers a write to a lane: the first lane not running a write now (starting from the
    /// next in turn), else the next in turn.
    pub fn write<R>(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Joined<R> {
        let n = self.lanes.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
        for k in 0..n {
            let lane = &self.lanes[(first + k) % n];
            if let Ok(st) = lane.state.try_lock() {
                return lane.write(st, f);
            }
        }
        let lane = &self.lanes[first];
        lane.write(lane.lock(), f)
    }

    /// Batches committed and writes they held, since the start.
    pub fn counts(&self) -> (u64, u64) {
        self.lanes.iter().fold((0, 0), |(b, w), l| {
            (
                b + l.batches.load(Ordering::Relaxed),
                w + l.writes.load(Ordering::Relaxed),
            )
        })
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        for lane in &self.lanes {
            lane.lock().closing = true;
            lane.joined.notify_all();
        }
        for handle in self.committers.drain(..) {
            let _ = handle.join();
        }
    }
}
