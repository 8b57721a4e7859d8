//! Group commit of primitives writes on PostgreSQL. Each write waits for its commit to reach
//! disk; done one transaction per write, the disk flush (milliseconds) bounds the write rate.
//! Here concurrent writes join one open transaction (a batch), and a committer thread commits
//! it once for all of them: one flush acknowledges many writes. No write is answered before
//! the COMMIT holding it succeeded.
//!
//! A write runs its closure on the caller's thread (the closures borrow the caller's data), on
//! the connection of a "lane"; several lanes run writes side by side, each with one open batch
//! while its previous batch commits.
//!
//! Batches are optimistic: a write joins the transaction directly, and costs only its own
//! statements' round trips. [`PgTx`] notes whether the closure ran a statement that may write
//! and whether a statement failed. A closure that fails before either happened leaves the
//! batch as it was: it is answered with its error and the batch goes on. One that fails after
//! writing, or on any SQL error, taints the batch (its writes cannot be undone alone, and a
//! failed statement aborts the transaction): the batch rolls back whole, and every write in
//! it, this one included, leaves the group and runs alone with retries. Writes that already
//! joined are waiting for the batch's outcome; they are told to run alone, not failed, and run
//! their closure again in a transaction of their own.
//!
//! So that a stream of failing writes does not turn every batch into re-runs, a lane that
//! rolled a batch back is careful for a while: its next [`CAREFUL_BATCHES`] batches, and any
//! opened within [`CAREFUL_FOR`] of the last write that failed after writing, give each write a
//! savepoint of its own (one more round trip per write). A write that fails there rolls back
//! to its savepoint without touching the others. Then the lane tries optimistic batches again.
//!
//! A write whose closure meets a transient conflict (deadlock, unique race, a lock held too
//! long by another batch) leaves the group and runs alone with retries, so batches never wait
//! on each other for long.

use super::deferred::Pending;
use super::pool::{Conn, Pool, Pooled};
use super::{PgTx, RETRYABLE, VERSIONS_FLUSH};
use crate::error::{Result, StoreError};
use crate::tx::Tx;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Writes in one batch at most: in a careful batch each savepoint that writes takes a
/// subtransaction ID, and PostgreSQL slows every snapshot down once a transaction holds more
/// than 64 of them; in an optimistic batch, a rollback re-runs at most this many writes.
const MAX_MEMBERS: usize = 48;

/// Committer threads per lane: one, so a lane's next batch collects writes while the
/// previous one waits for its flush (a second committer would take it at once, one write
/// at a time, and batches would not grow).
const COMMITTERS_PER_LANE: usize = 1;

/// Session settings of a batch: a write waiting this long for a row lock leaves the batch
/// (and retries alone) instead of holding up every other write of the batch.
const BEGIN: &str = "BEGIN; SET LOCAL lock_timeout = '100ms'";

/// A committer commits a batch and opens the lane's next transaction in one round trip, off
/// the writers' path (see [`Lane::spare`]).
const COMMIT_BEGIN: &str = "COMMIT; BEGIN; SET LOCAL lock_timeout = '100ms'";

/// A spare transaction idle longer than this is rolled back rather than used: a server's
/// `idle_in_transaction_session_timeout` may have ended it.
const SPARE_FOR: Duration = Duration::from_millis(100);

/// Careful batches (a savepoint per write) a lane opens after rolling a batch back.
const CAREFUL_BATCHES: u32 = 8;

/// A lane also stays careful this long after a write failed after writing.
const CAREFUL_FOR: Duration = Duration::from_millis(100);

/// What became of a write offered to the group.
pub(crate) enum Joined<R> {
    /// Committed with its batch, or refused (nothing of it stored).
    Done(Result<R>),
    /// Not committed: run it alone, with retries.
    Leave,
}

/// How a batch ended, for each of its writers.
#[derive(Clone)]
enum End {
    Committed,
    /// Rolled back (or lost) before its COMMIT was sent: nothing of it is stored.
    RunAlone,
    /// The COMMIT failed, or the store closed: the writers get this error.
    Failed(String),
}

/// The end of one batch, awaited by each of its writers.
#[derive(Default)]
struct Outcome {
    end: Mutex<Option<End>>,
    done: Condvar,
}

impl Outcome {
    fn set(&self, end: End) {
        let mut slot = self.end.lock().unwrap_or_else(|p| p.into_inner());
        *slot = Some(end);
        self.done.notify_all();
    }

    fn wait(&self) -> End {
        let mut slot = self.end.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(end) = slot.as_ref() {
                return end.clone();
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
    /// Careful: each write runs in a savepoint `w` of its own.
    savepoints: bool,
    /// A savepoint `w` of the last successful write is still open.
    savepoint: bool,
    /// A closure is running (still true afterwards only if it panicked: the batch is tainted).
    running: bool,
    /// Committed or rolled back: the connection goes back to the pool instead of being closed.
    ended: bool,
    /// Versions held back (optimistic batches only), inserted before COMMIT.
    pending: Pending,
    outcome: Arc<Outcome>,
    /// When its transaction began.
    begun: Instant,
}

impl Drop for Batch {
    fn drop(&mut self) {
        // An open transaction must not reach the pool: closing the session rolls it back.
        if !self.ended {
            self.conn.discard();
        }
    }
}

/// How one closure went inside a batch.
enum Ran<R> {
    Ok(R),
    /// The closure failed; the batch is as before it. `true`: it failed after writing (or on
    /// an SQL error), and its savepoint undid that.
    Failed(StoreError, bool),
    /// The closure failed after writing, or a statement failed, in an optimistic batch: the
    /// batch must roll back whole.
    Tainted,
    /// The connection failed; the batch is lost.
    Broken(StoreError),
}

impl Batch {
    fn begin(pool: &Pool, savepoints: bool) -> Result<Batch> {
        let mut conn = pool.get()?;
        let started = conn.client.batch_execute(BEGIN);
        if let Err(e) = started {
            conn.discard();
            return Err(super::pg_error(e));
        }
        Ok(Batch {
            conn,
            members: 0,
            savepoints,
            savepoint: false,
            running: false,
            ended: false,
            pending: Pending::default(),
            outcome: Arc::default(),
            begun: Instant::now(),
        })
    }

    /// The lane's spare transaction as its next batch, or a new one when there is no spare
    /// or it idled too long.
    fn next(pool: &Pool, spare: Option<Batch>, savepoints: bool) -> Result<Batch> {
        if let Some(mut b) = spare {
            if b.begun.elapsed() < SPARE_FOR {
                b.savepoints = savepoints;
                return Ok(b);
            }
            b.ended = b.conn.client.batch_execute("ROLLBACK").is_ok();
        }
        Batch::begin(pool, savepoints)
    }

    /// After `COMMIT_BEGIN` succeeded: the same connection, in its new transaction, as an
    /// empty batch.
    fn reopened(&mut self) {
        self.members = 0;
        self.savepoints = false;
        self.savepoint = false;
        self.ended = false;
        self.outcome = Arc::default();
        self.begun = Instant::now();
    }

    fn run<R>(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Ran<R> {
        let conn: &mut Conn = &mut self.conn;
        if self.savepoints {
            let mark = if self.savepoint {
                "RELEASE SAVEPOINT w; SAVEPOINT w"
            } else {
                "SAVEPOINT w"
            };
            if let Err(e) = conn.client.batch_execute(mark) {
                return Ran::Broken(super::pg_error(e));
            }
            self.savepoint = true;
        }
        self.running = true;
        // A careful batch undoes a failed write to its savepoint, which held-back versions
        // would outlive: it inserts each at once.
        let mut tx = if self.savepoints {
            PgTx::new(&mut conn.client, &conn.stmts)
        } else {
            PgTx::deferring(&mut conn.client, &conn.stmts, &mut self.pending)
        };
        let out = f(&mut tx);
        // Spoiled: the closure may have changed the transaction (a statement that may write
        // ran), or a statement failed and aborted it.
        let spoiled = tx.wrote || tx.failed;
        let failed = tx.failed;
        self.running = false;
        if conn.client.is_closed() {
            return Ran::Broken(out.err().unwrap_or_else(|| {
                StoreError::Backend("postgres: the connection closed during a write".into())
            }));
        }
        match out {
            // A closure that returned despite a failed statement: the transaction is aborted.
            Ok(_) if failed => self.undo(
                StoreError::Backend(format!(
                    "postgres {RETRYABLE}: a statement of this write failed"
                )),
                true,
            ),
            Ok(v) => Ran::Ok(v),
            Err(e) if !spoiled && !self.savepoints => Ran::Failed(e, false),
            Err(e) => self.undo(e, spoiled),
        }
    }

    /// Takes back what the closure that just ran did: to its savepoint, or (when `spoiled`
    /// and without savepoints) the whole batch.
    fn undo<R>(&mut self, e: StoreError, spoiled: bool) -> Ran<R> {
        if !self.savepoints {
            return Ran::Tainted;
        }
        self.savepoint = false;
        match self
            .conn
            .client
            .batch_execute("ROLLBACK TO SAVEPOINT w; RELEASE SAVEPOINT w")
        {
            Ok(()) => Ran::Failed(e, spoiled),
            Err(_) => Ran::Broken(e),
        }
    }

    /// Rolls the batch back (closing the session if that fails) and tells its writers to run
    /// alone: nothing of theirs is stored.
    fn roll_back(mut self) {
        self.ended = self.conn.client.batch_execute("ROLLBACK").is_ok();
        self.outcome.set(End::RunAlone);
    }

    /// Closes the connection of a batch that will not commit (which rolls its transaction
    /// back), then answers its writers.
    fn abandon(self, end: End) {
        let outcome = self.outcome.clone();
        drop(self);
        outcome.set(end);
    }
}

struct LaneState {
    open: Option<Batch>,
    closing: bool,
    /// Careful batches still to open.
    careful_batches: u32,
    /// Batches opened before this instant are careful.
    careful_until: Option<Instant>,
}

impl LaneState {
    /// After a write failed having written: careful batches for a while.
    fn be_careful(&mut self) {
        self.careful_batches = CAREFUL_BATCHES;
        self.careful_until = Some(Instant::now() + CAREFUL_FOR);
    }

    /// Whether the next batch gives each write a savepoint (counting it as one of the careful
    /// batches).
    fn next_is_careful(&mut self) -> bool {
        let recent = self.careful_until.is_some_and(|t| Instant::now() < t);
        if self.careful_batches > 0 {
            self.careful_batches -= 1;
            return true;
        }
        recent
    }
}

/// One connection's worth of group commit: an open batch, and a committer thread.
struct Lane {
    pool: Arc<Pool>,
    state: Mutex<LaneState>,
    /// A transaction the committer opened with its last COMMIT, for the next batch: a batch
    /// then starts without a round trip of its own. A lock of its own: the committer must
    /// never wait for `state`, which a writer holds while it waits for a row lock that the
    /// batch being committed holds.
    spare: Mutex<Option<Batch>>,
    /// A write joined the open batch (or the lane is closing).
    joined: Condvar,
    /// The committer took the open batch.
    taken: Condvar,
    /// Writers waiting to run a write on the lane: the committer lets them join the open
    /// batch before it commits it, so one flush answers all of them.
    queued: AtomicUsize,
    batches: AtomicU64,
    writes: AtomicU64,
    rollbacks: AtomicU64,
}

impl Lane {
    fn lock(&self) -> MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn spare_slot(&self) -> MutexGuard<'_, Option<Batch>> {
        self.spare.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take_spare(&self) -> Option<Batch> {
        self.spare_slot().take()
    }

    /// Runs `f` in this lane's open batch (opening one when needed) and waits for its commit.
    fn write<R>(
        &self,
        mut st: MutexGuard<'_, LaneState>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>,
    ) -> Joined<R> {
        // However this write leaves the lane, the committer looks again: it may be waiting
        // for this writer to join.
        let _wake = WakeOnDrop(&self.joined);
        while st.open.as_ref().is_some_and(|b| b.members >= MAX_MEMBERS) {
            st = self.taken.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if st.open.as_ref().is_some_and(|b| b.running) {
            if let Some(b) = st.open.take() {
                // A write of the batch panicked; its transaction closes with the connection.
                b.abandon(End::RunAlone);
            }
        }
        if st.open.is_none() {
            let careful = st.next_is_careful();
            let spare = self.take_spare();
            match Batch::next(&self.pool, spare, careful) {
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
                match outcome.wait() {
                    End::Committed => Joined::Done(Ok(out)),
                    End::RunAlone => Joined::Leave,
                    End::Failed(e) => Joined::Done(Err(StoreError::Backend(format!(
                        "postgres: the group commit of this write failed: {e}"
                    )))),
                }
            }
            Ran::Failed(e, spoiled) => {
                if spoiled {
                    st.be_careful();
                }
                // Without a savepoint, what the closure locked (an advisory lock before a
                // refusal) stays locked until the batch ends: end one that no write joined,
                // which the committer would not take.
                if st
                    .open
                    .as_ref()
                    .is_some_and(|b| !b.savepoints && b.members == 0)
                {
                    if let Some(b) = st.open.take() {
                        b.roll_back();
                    }
                }
                if is_transient(&e) {
                    Joined::Leave
                } else {
                    Joined::Done(Err(e))
                }
            }
            Ran::Tainted => {
                st.be_careful();
                let batch = st.open.take();
                drop(st);
                if let Some(b) = batch {
                    b.roll_back();
                    self.rollbacks.fetch_add(1, Ordering::Relaxed);
                }
                Joined::Leave
            }
            Ran::Broken(e) => {
                if let Some(b) = st.open.take() {
                    b.abandon(End::RunAlone);
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
                    b.abandon(End::RunAlone);
                }
            }
            let members = st.open.as_ref().map_or(0, |b| b.members);
            let queued = self.queued.load(Ordering::Acquire);
            if members > 0 && (queued == 0 || members >= MAX_MEMBERS || st.closing) {
                let batch = st.open.take();
                drop(st);
                self.taken.notify_all();
                return batch;
            }
            if st.closing {
                if let Some(b) = st.open.take() {
                    b.abandon(End::Failed("the store is closing".into()));
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
            let conn: &mut Conn = &mut batch.conn;
            let flushed = batch
                .pending
                .flush(&mut conn.client, &conn.stmts[VERSIONS_FLUSH]);
            if flushed.is_err() {
                // Nothing of the batch is stored: its writes run again alone, where a refusal
                // reaches its own writer, and the next batches insert each version at once.
                // Rolled back first: a writer may hold the lane while it waits for a row lock
                // of this batch.
                batch.roll_back();
                self.lock().be_careful();
                self.rollbacks.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // Only this thread fills the spare slot.
            let reopen = self.spare_slot().is_none();
            let committed = batch
                .conn
                .client
                .batch_execute(if reopen { COMMIT_BEGIN } else { "COMMIT" })
                .map_err(super::pg_error);
            match committed {
                Ok(()) => {
                    batch.ended = true;
                    self.batches.fetch_add(1, Ordering::Relaxed);
                    self.writes.fetch_add(members, Ordering::Relaxed);
                    batch.outcome.set(End::Committed);
                    if reopen {
                        batch.reopened();
                        *self.spare_slot() = Some(batch);
                    }
                }
                // Whether it committed is unknown: running the writes again could store them
                // twice.
                Err(e) => batch.abandon(End::Failed(e.to_string())),
            }
        }
    }
}

/// Wakes the committer of a lane when dropped.
struct WakeOnDrop<'a>(&'a Condvar);

impl Drop for WakeOnDrop<'_> {
    fn drop(&mut self) {
        self.0.notify_one();
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
                spare: Mutex::new(None),
                state: Mutex::new(LaneState {
                    open: None,
                    closing: false,
                    careful_batches: 0,
                    careful_until: None,
                }),
                joined: Condvar::new(),
                taken: Condvar::new(),
                queued: AtomicUsize::new(0),
                batches: AtomicU64::new(0),
                writes: AtomicU64::new(0),
                rollbacks: AtomicU64::new(0),
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
        lane.queued.fetch_add(1, Ordering::AcqRel);
        let st = lane.lock();
        lane.queued.fetch_sub(1, Ordering::AcqRel);
        lane.write(st, f)
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

    /// Optimistic batches rolled back (their writes re-run alone), since the start.
    pub fn rollbacks(&self) -> u64 {
        self.lanes
            .iter()
            .map(|l| l.rollbacks.load(Ordering::Relaxed))
            .sum()
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
        // The spare transactions end on a helper thread: this one may drive an async runtime,
        // where a blocking client must not close.
        let lanes = &self.lanes;
        let _ = super::off_runtime(|| {
            for lane in lanes {
                if let Some(mut spare) = lane.take_spare() {
                    spare.ended = spare.conn.client.batch_execute("ROLLBACK").is_ok();
                }
            }
            Ok(())
        });
    }
}
