//! Opening test stores on both backends.
#![allow(dead_code)]

use small_store::pg::PgBackend;
use small_store::sqlite::SqliteBackend;
use small_store::{PrimitiveStore, Store};
use std::sync::Arc;

/// The PostgreSQL URL for tests. Unset: a visible skip and `None` (the PostgreSQL variants do
/// not run), or a failure when `SMALL_TEST_REQUIRE` lists `postgres` (as CI does).
pub fn pg_url() -> Option<String> {
    small_testkit::postgres_url()
}

/// A fresh, empty PostgreSQL schema name for one test.
pub fn fresh_pg_schema(url: &str, test: &str) -> String {
    let name = format!(
        "t_{}_{}",
        test.to_lowercase()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        std::process::id()
    );
    let name: String = name.chars().take(60).collect();
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("connect to PostgreSQL");
    c.batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
        .expect("drop test schema");
    name
}

pub struct Harness {
    pub store: Arc<dyn PrimitiveStore>,
    _dir: Option<tempfile::TempDir>,
    /// PostgreSQL: (URL, schema) to drop when the test ends.
    pg: Option<(String, String)>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some((url, schema)) = &self.pg {
            if let Ok(mut c) = postgres::Client::connect(url, postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
            }
        }
    }
}

pub fn sqlite(_test: &str) -> Option<Harness> {
    let dir = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::open(&dir.path().join("store.db")).unwrap();
    Some(Harness {
        store: Arc::new(Store::new(backend)),
        _dir: Some(dir),
        pg: None,
    })
}

pub fn postgres(test: &str) -> Option<Harness> {
    let url = pg_url()?;
    let schema = fresh_pg_schema(&url, test);
    let backend = PgBackend::connect(&url, Some(&schema)).unwrap();
    Some(Harness {
        store: Arc::new(Store::new(backend)),
        _dir: None,
        pg: Some((url, schema)),
    })
}
