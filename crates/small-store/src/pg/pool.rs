//! PostgreSQL connections for the store: how to open one (session settings, prepared
//! statements), and a bounded pool of them sized for the machine, so a burst of requests waits
//! for a free connection instead of opening (and authenticating) a new one per request.

use super::{pg_error, redact};
use crate::error::{Result, StoreError};
use postgres::{Client, NoTls, Statement};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long a caller waits for a free pooled connection before giving up with an error.
const POOL_WAIT: Duration = Duration::from_secs(30);

/// Sizes of the connection pool and of the group committers, from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgOptions {
    /// Connections for reads and for writes that leave their group commit (`SMALL_PG_POOL_SIZE`;
    /// default four per CPU, from 4 to 32).
    pub pool_size: usize,
    /// Group committers: replay committer threads, and primitives write lanes
    /// (`SMALL_PG_COMMITTERS`; default two per CPU, from 2 to 8). More than one per CPU keeps
    /// a batch collecting while others wait for their flush.
    pub committers: usize,
}

impl Default for PgOptions {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        PgOptions {
            pool_size: (cpus * 4).clamp(4, 32),
            committers: (cpus * 2).clamp(2, 8),
        }
    }
}

impl PgOptions {
    /// The defaults, overridden by `SMALL_PG_POOL_SIZE` and `SMALL_PG_COMMITTERS` when set.
    pub fn from_env() -> Result<Self> {
        let mut o = PgOptions::default();
        if let Some(n) = env_count("SMALL_PG_POOL_SIZE", 256)? {
            o.pool_size = n;
        }
        if let Some(n) = env_count("SMALL_PG_COMMITTERS", 64)? {
            o.committers = n;
        }
        Ok(o)
    }
}

/// A whole number from 1 to `max` in the environment variable `name`, when it is set.
fn env_count(name: &str, max: usize) -> Result<Option<usize>> {
    let Ok(raw) = std::env::var(name) else {
        return Ok(None);
    };
    match raw.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(Some(n)),
        _ => Err(StoreError::Backend(format!(
            "{name} must be a whole number from 1 to {max}, not `{raw}`"
        ))),
    }
}

/// Where and how to open a connection.
#[derive(Debug, Clone)]
pub(crate) struct Connector {
    pub url: String,
    pub schema: Option<String>,
    pub read_only: bool,
    /// Statements prepared on every new connection, by index.
    pub sql: &'static [&'static str],
}

/// An open connection with its prepared statements.
pub(crate) struct Conn {
    pub client: Client,
    pub stmts: Vec<Statement>,
}

impl Connector {
    /// A session with the store's settings (no statements prepared).
    pub fn client(&self) -> Result<Client> {
        let mut client = Client::connect(&self.url, NoTls).map_err(|e| {
            StoreError::Backend(format!(
                "cannot connect to PostgreSQL ({}): {e}",
                redact(&self.url)
            ))
        })?;
        client.batch_execute(&self.setup_sql()).map_err(pg_error)?;
        Ok(client)
    }

    /// The session settings sent once per connection.
    fn setup_sql(&self) -> String {
        // Every query of the store touches a few rows through an index (point lookups, short
        // ranges, lineage walks a few steps at a time). Nested-loop index joins are right for
        // all of them, also when the planner's statistics are stale after a bulk load, when it
        // would otherwise pick hash joins that scan whole tables at every recursion step.
        // Commits wait for the disk whatever the database's default is: an acknowledged write
        // is durable.
        let mut setup = String::from(
            "SET enable_hashjoin = off; SET enable_mergejoin = off; SET synchronous_commit = on;",
        );
        if self.read_only {
            setup.push_str(" SET default_transaction_read_only = on;");
        }
        if let Some(s) = &self.schema {
            setup.push_str(&format!(
                " CREATE SCHEMA IF NOT EXISTS {s}; SET search_path TO {s};"
            ));
        }
        setup
    }

    /// A session with every statement of `sql` prepared.
    pub fn conn(&self) -> Result<Conn> {
        let mut client = self.client()?;
        let mut stmts = Vec::with_capacity(self.sql.len());
        for sql in self.sql {
            stmts.push(client.prepare(sql).map_err(pg_error)?);
        }
        Ok(Conn { client, stmts })
    }
}

struct Slots {
    idle: Vec<Conn>,
    /// Connections open, idle or lent.
    open: usize,
}

/// At most `max` connections, lent one at a time and kept open between uses.
pub(crate) struct Pool {
    connector: Connector,
    max: usize,
    slots: Mutex<Slots>,
    freed: Condvar,
}

/// A connection lent by the pool; returned when dropped (closed ones are let go).
pub(crate) struct Pooled {
    pool: Arc<Pool>,
    conn: Option<Conn>,
    broken: bool,
}

impl Pool {
    pub fn new(connector: Connector, max: usize) -> Self {
        Pool {
            connector,
            max: max.max(1),
            slots: Mutex::new(Slots {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
        }
    }

    pub fn connector(&self) -> &Connector {
        &self.connector
    }

    fn lock(&self) -> Result<MutexGuard<'_, Slots>> {
        self.slots
            .lock()
            .map_err(|_| StoreError::Backend("connection pool lock poisoned".into()))
    }

    /// Puts an already open connection in the pool (the one a backend opened to migrate).
    pub fn give(&self, conn: Conn) -> Result<()> {
        let mut slots = self.lock()?;
        slots.open += 1;
        slots.idle.push(conn);
        Ok(())
    }

    /// An idle connection, a new one while fewer than `max` are open, or the first one
    /// returned (waiting up to 30 s).
    pub fn get(self: &Arc<Self>) -> Result<Pooled> {
        let mut slots = self.lock()?;
        loop {
            while let Some(conn) = slots.idle.pop() {
                if !conn.client.is_closed() {
                    return Ok(self.lend(conn));
                }
                slots.open -= 1;
            }
            if slots.open < self.max {
                slots.open += 1;
                drop(slots);
                return self.open_new();
            }
            let (next, waited) = self
                .freed
                .wait_timeout(slots, POOL_WAIT)
                .map_err(|_| StoreError::Backend("connection pool lock poisoned".into()))?;
            slots = next;
            if waited.timed_out() && slots.idle.is_empty() {
                return Err(StoreError::Backend(format!(
                    "postgres: all {} pooled connections stayed busy for {} s (SMALL_PG_POOL_SIZE)",
                    self.max,
                    POOL_WAIT.as_secs()
                )));
            }
        }
    }

    fn open_new(self: &Arc<Self>) -> Result<Pooled> {
        match self.connector.conn() {
            Ok(conn) => Ok(self.lend(conn)),
            Err(e) => {
                self.forget_one();
                Err(e)
            }
        }
    }

    fn lend(self: &Arc<Self>, conn: Conn) -> Pooled {
        Pooled {
            pool: self.clone(),
            conn: Some(conn),
            broken: false,
        }
    }

    /// One lent connection will not come back.
    fn forget_one(&self) {
        if let Ok(mut slots) = self.slots.lock() {
            slots.open = slots.open.saturating_sub(1);
        }
        self.freed.notify_one();
    }

    fn put_back(&self, conn: Conn) {
        match self.slots.lock() {
            Ok(mut slots) => slots.idle.push(conn),
            Err(_) => return,
        }
        self.freed.notify_one();
    }

    /// Closes every idle connection (on a helper thread: closing a blocking client must not
    /// run on a thread that drives an async runtime).
    pub fn close_idle(&self) {
        let idle = match self.slots.lock() {
            Ok(mut slots) => {
                let idle = std::mem::take(&mut slots.idle);
                slots.open = slots.open.saturating_sub(idle.len());
                idle
            }
            Err(_) => return,
        };
        if !idle.is_empty() {
            let _ = super::off_runtime(move || {
                drop(idle);
                Ok(())
            });
        }
    }
}

impl Pooled {
    /// The connection (always present until dropped).
    pub fn conn(&mut self) -> Result<&mut Conn> {
        self.conn
            .as_mut()
            .ok_or_else(|| StoreError::Backend("pooled connection already returned".into()))
    }

    /// The session is in an unknown state: close it instead of returning it.
    pub fn discard(&mut self) {
        self.broken = true;
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if self.broken || conn.client.is_closed() {
            self.pool.forget_one();
            drop(conn);
        } else {
            self.pool.put_back(conn);
        }
    }
}
