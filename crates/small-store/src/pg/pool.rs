//! PostgreSQL connections for the store, so a burst of requests waits for a free connection
//! instead of opening (and authenticating) a new one per request: how to open one (session
//! settings, prepared statements), and a bounded [`r2d2`] pool of them sized for the machine.
//!
//! Connections open lazily (on r2d2's worker threads) and each keeps its prepared statements
//! for its whole life. A connection left in an unknown transaction state is marked with
//! [`Conn::discard`] and closed instead of returning to the pool. A blocking client must not
//! be closed on a thread that drives an async runtime, so the pool is dropped on a helper
//! thread.

use super::{off_runtime, pg_error, redact};
use crate::error::{Result, StoreError};
use postgres::{Client, NoTls, Statement};
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

/// Where and how to open a connection (no `Debug`: the URL may hold a password).
#[derive(Clone)]
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
    /// The session is in an unknown state: close it instead of returning it to the pool.
    broken: bool,
}

impl Conn {
    /// Marks the session as being in an unknown state (a transaction that may still be open):
    /// it is closed when returned instead of going back to the pool.
    pub fn discard(&mut self) {
        self.broken = true;
    }
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
        Ok(Conn {
            client,
            stmts,
            broken: false,
        })
    }
}

impl r2d2::ManageConnection for Connector {
    type Connection = Conn;
    type Error = StoreError;

    fn connect(&self) -> Result<Conn> {
        self.conn()
    }

    /// Checked at every checkout, so only what is known without a round trip.
    fn is_valid(&self, conn: &mut Conn) -> Result<()> {
        if conn.client.is_closed() {
            return Err(StoreError::Backend(
                "postgres: a pooled connection was closed".into(),
            ));
        }
        Ok(())
    }

    /// Discarded, closed, or returned by a panicking thread (which may have left a
    /// transaction open).
    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.broken || conn.client.is_closed() || std::thread::panicking()
    }
}

/// A connection lent by the pool: returned when dropped, or closed if it was discarded.
pub(crate) type Pooled = r2d2::PooledConnection<Connector>;

/// At most `size` connections, opened when first needed, lent one at a time and kept open
/// between uses (r2d2 closes one left idle for ten minutes).
pub(crate) struct Pool {
    inner: Option<r2d2::Pool<Connector>>,
    size: usize,
    wait: Duration,
}

impl Pool {
    pub fn new(connector: Connector, size: usize) -> Self {
        Self::with_wait(connector, size, POOL_WAIT)
    }

    fn with_wait(connector: Connector, size: usize, wait: Duration) -> Self {
        let size = size.clamp(1, u32::MAX as usize);
        let inner = r2d2::Pool::builder()
            .max_size(size as u32)
            .min_idle(Some(0))
            .connection_timeout(wait)
            .build_unchecked(connector);
        Pool {
            inner: Some(inner),
            size,
            wait,
        }
    }

    /// An idle connection, a new one while fewer than `size` are open, or the first one
    /// returned (waiting up to 30 s, then an error naming `SMALL_PG_POOL_SIZE`).
    pub fn get(&self) -> Result<Pooled> {
        let pool = self
            .inner
            .as_ref()
            .ok_or_else(|| StoreError::Backend("postgres: the pool is closed".into()))?;
        pool.get().map_err(|e| {
            let (n, wait) = (self.size, self.wait.as_secs_f32());
            // r2d2 appends the last failed connection attempt, if any, to its own words.
            match e.to_string().split_once(": ") {
                Some((_, last)) => StoreError::Backend(format!(
                    "postgres: no pooled connection within {wait} s (pool of {n}, SMALL_PG_POOL_SIZE); the last attempt failed: {last}"
                )),
                None => StoreError::Backend(format!(
                    "postgres: all {n} pooled connections stayed busy for {wait} s (SMALL_PG_POOL_SIZE)"
                )),
            }
        })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Dropping the pool closes its idle connections: not on an async runtime's thread.
        if let Some(inner) = self.inner.take() {
            let _ = off_runtime(move || {
                drop(inner);
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connector(url: &str) -> Connector {
        Connector {
            url: url.to_string(),
            schema: None,
            read_only: false,
            sql: &["SELECT pg_backend_pid()"],
        }
    }

    fn backend_pid(pooled: &mut Pooled) -> i32 {
        let conn: &mut Conn = pooled;
        conn.client.query_one(&conn.stmts[0], &[]).unwrap().get(0)
    }

    #[test]
    fn connections_open_when_needed_and_are_reused() {
        let Some(url) = small_testkit::postgres_url() else {
            return;
        };
        let pool = Pool::new(connector(&url), 2);
        let inner = pool.inner.as_ref().unwrap();
        assert_eq!(inner.state().connections, 0, "nothing opened before use");
        let first = backend_pid(&mut pool.get().unwrap());
        let again = backend_pid(&mut pool.get().unwrap());
        assert_eq!(first, again, "the returned connection was lent again");
        assert_eq!(inner.state().connections, 1);
    }

    #[test]
    fn a_discarded_connection_is_closed_instead_of_returned() {
        let Some(url) = small_testkit::postgres_url() else {
            return;
        };
        let pool = Pool::new(connector(&url), 1);
        let mut pooled = pool.get().unwrap();
        let first = backend_pid(&mut pooled);
        pooled.client.batch_execute("BEGIN").unwrap();
        pooled.discard();
        drop(pooled);
        let mut next = pool.get().unwrap();
        assert_ne!(
            backend_pid(&mut next),
            first,
            "a session left in a transaction came back"
        );
    }

    #[test]
    fn a_busy_pool_fails_after_its_wait_naming_the_setting() {
        let Some(url) = small_testkit::postgres_url() else {
            return;
        };
        let pool = Pool::with_wait(connector(&url), 1, Duration::from_millis(300));
        let _held = pool.get().unwrap();
        let e = pool.get().err().unwrap().to_string();
        assert!(e.contains("all 1 pooled connections stayed busy"), "{e}");
        assert!(e.contains("SMALL_PG_POOL_SIZE"), "{e}");
    }

    #[test]
    fn a_failed_connection_is_reported_without_the_password() {
        let Some(url) = small_testkit::postgres_url() else {
            return;
        };
        let (Some(s), Some(at)) = (url.find("://"), url.rfind('@')) else {
            return;
        };
        let user = url[s + 3..at].split(':').next().unwrap_or("small");
        let wrong = format!("{}{user}:not-the-password{}", &url[..s + 3], &url[at..]);
        let pool = Pool::with_wait(connector(&wrong), 1, Duration::from_millis(1500));
        let e = pool.get().err().unwrap().to_string();
        assert!(e.contains("the last attempt failed"), "{e}");
        assert!(e.contains(":***@"), "{e}");
        assert!(!e.contains("not-the-password"), "{e}");
    }
}
