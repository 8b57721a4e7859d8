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

/// A batch with a record the database refuses (a NUL character, which PostgreSQL text cannot
/// hold), a duplicate replay ID, and an ID stored before: the refused record fails alone, the
/// others are stored once and answered with the stored record.
#[test]
fn postgres_replay_batch_with_a_failing_record() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_pg_schema(&url, "replay_batch_failing");
    let store = PgReplayStore::connect_in_schema(&url, Some(&schema)).unwrap();
    let (before, _) = store.get_or_insert(record("old", "t0")).unwrap();
    let mut bad = record("bad", "t1");
    bad.lineage_json = "{\"at\":\"t1\u{0}\"}".into();
    let batch = [
        record("a", "t1"),
        bad,
        record("b", "t1"),
        record("a", "t2"),
        record("old", "t3"),
    ];
    let answers = store.store_batch(&batch).unwrap();
    assert_eq!(answers.len(), 5);
    assert_eq!(answers[0].as_ref().unwrap(), &(record("a", "t1"), true));
    let refused = answers[1].as_ref().unwrap_err().to_string();
    assert!(refused.contains("`bad` refused"), "{refused}");
    assert_eq!(answers[2].as_ref().unwrap(), &(record("b", "t1"), true));
    assert_eq!(answers[3].as_ref().unwrap(), &(record("a", "t1"), false));
    assert_eq!(answers[4].as_ref().unwrap(), &(before.clone(), false));
    assert_eq!(store.get("a").unwrap(), Some(record("a", "t1")));
    assert_eq!(store.get("b").unwrap(), Some(record("b", "t1")));
    assert_eq!(store.get("old").unwrap(), Some(before));
    assert_eq!(store.get("bad").unwrap(), None);
    drop(store);
    drop_schema(&url, &schema);
}

/// Many concurrent first replays through two stores (two servers): each is answered with its
/// own record, a refused one fails alone, every record is stored, and commits were shared.
#[test]
fn postgres_replay_group_commit_under_concurrency() {
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_pg_schema(&url, "replay_group_commit");
    let a = Arc::new(PgReplayStore::connect_in_schema(&url, Some(&schema)).unwrap());
    let b = Arc::new(PgReplayStore::connect_in_schema(&url, Some(&schema)).unwrap());
    let barrier = Arc::new(std::sync::Barrier::new(64));
    let handles: Vec<_> = (0..64)
        .map(|i| {
            let s = if i % 2 == 0 { a.clone() } else { b.clone() };
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut results = Vec::new();
                for round in 0..10 {
                    let mut r = record(&format!("r{i}-{round}"), &format!("t{i}"));
                    if i == 7 && round == 3 {
                        r.lifecycle_json = "[\u{0}]".into();
                    }
                    barrier.wait();
                    results.push((r.clone(), s.get_or_insert(r)));
                }
                results
            })
        })
        .collect();
    for h in handles {
        for (candidate, result) in h.join().unwrap() {
            if candidate.lifecycle_json.contains('\u{0}') {
                assert!(result.is_err(), "the record with a NUL was stored");
                assert_eq!(a.get(&candidate.replay_id).unwrap(), None);
            } else {
                assert_eq!(result.unwrap(), (candidate.clone(), true));
                assert_eq!(a.get(&candidate.replay_id).unwrap(), Some(candidate));
            }
        }
    }
    let (batches, records) = a.group_commit_counts();
    let (batches_b, records_b) = b.group_commit_counts();
    assert_eq!(records + records_b, 640);
    assert!(
        batches + batches_b < records + records_b,
        "no commit was shared: {batches}+{batches_b} batches for 640 records"
    );
    drop((a, b));
    drop_schema(&url, &schema);
}

fn drop_schema(url: &str, schema: &str) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}
