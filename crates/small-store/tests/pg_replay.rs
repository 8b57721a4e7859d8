//! The PostgreSQL replay store: first materialisation wins, also under concurrency and across
//! handles (two servers on one database).

mod common;

use small_store::pg::PgReplayStore;
use small_store::replay::{ReplayRecord, ReplayStore};
use std::sync::Arc;

fn record(id: &str, at: &str) -> ReplayRecord {
    ReplayRecord {
        replay_id: id.into(),
        protocol_version: "1.0.0".into(),
        lineage_json: format!(r#"{{"at":"{at}"}}"#),
        lifecycle_json: "[]".into(),
        created_at: at.into(),
    }
}

#[test]
fn postgres_replay_store_first_wins() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_pg_schema(&url, "replay_first_wins");
    let a: Arc<dyn ReplayStore> =
        Arc::new(PgReplayStore::connect_in_schema(&url, Some(&schema)).unwrap());
    let b: Arc<dyn ReplayStore> =
        Arc::new(PgReplayStore::connect_in_schema(&url, Some(&schema)).unwrap());
    assert_eq!(a.get("x").unwrap(), None);
    let (r, created) = a.get_or_insert(record("x", "t1")).unwrap();
    assert!(created);
    let (r2, created2) = b.get_or_insert(record("x", "t2")).unwrap();
    assert!(!created2);
    assert_eq!(r, r2);
    assert_eq!(b.get("x").unwrap(), Some(record("x", "t1")));
    assert!(a.describe().starts_with("postgres:") && !a.describe().contains(":small@"));

    let handles: Vec<_> = (0..8)
        .map(|i| {
            let s = if i % 2 == 0 { a.clone() } else { b.clone() };
            std::thread::spawn(move || s.get_or_insert(record("y", &format!("t{i}"))).unwrap())
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|(_, c)| *c).count(), 1);
    assert!(results.iter().all(|(r, _)| *r == results[0].0));

    drop((a, b));
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}
