//! The PostgreSQL stores' connection pools on a real database: a store holding open pooled
//! connections can be dropped on a thread that drives an async runtime (a server shutting
//! down), where closing a blocking client would panic.
//!
//! Needs `SMALL_TEST_POSTGRES_URL` (a visible skip when unset; a failure when
//! `SMALL_TEST_REQUIRE` lists `postgres`, as CI does).

mod common;

use small_store::pg::{PgBackend, PgReplayStore};
use small_store::replay::{ReplayRecord, ReplayStore};
use small_store::tx::Backend;

fn drop_on_runtime<T: Send + 'static>(value: T) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async move { drop(value) });
}

fn drop_schema(url: &str, schema: &str) {
    if let Ok(mut c) = postgres::Client::connect(url, postgres::NoTls) {
        let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    }
}

#[test]
fn a_primitives_store_with_open_connections_drops_on_an_async_runtime() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_pg_schema(&url, "pool_drop_store");
    let backend = PgBackend::connect(&url, Some(&schema)).unwrap();
    // A read (its own pooled connection) and a write (a lane's batch) leave connections open.
    backend
        .read(&mut |tx| tx.schema_get("schema:none"))
        .unwrap();
    backend
        .write(&mut |tx| tx.latest_version(small_store::tx::Versioned::Artifact, "a"))
        .unwrap();
    drop_on_runtime(backend);
    drop_schema(&url, &schema);
}

#[test]
fn a_replay_store_with_open_connections_drops_on_an_async_runtime() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_pg_schema(&url, "pool_drop_replay");
    let store = PgReplayStore::connect_in_schema(&url, Some(&schema)).unwrap();
    assert!(store.get("rpl_none").unwrap().is_none());
    let record = ReplayRecord {
        replay_id: "rpl_pool".into(),
        protocol_version: "1.0.0".into(),
        lineage_json: "[]".into(),
        lifecycle_json: "[]".into(),
        created_at: "2025-01-15T10:00:00Z".into(),
    };
    assert!(store.get_or_insert(record).unwrap().1);
    drop_on_runtime(store);
    drop_schema(&url, &schema);
}
