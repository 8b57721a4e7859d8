//! Group commit of primitives writes on a real PostgreSQL database: concurrent writes share
//! optimistic batches (no savepoint per write). A write that fails after writing rolls its
//! whole batch back and every write of it runs again alone; a write refused before writing
//! leaves its batch alone. Either way each acknowledged write is stored exactly once.
//!
//! Needs `SMALL_TEST_POSTGRES_URL` (a visible skip when unset; a failure when
//! `SMALL_TEST_REQUIRE` lists `postgres`, as CI does).

mod common;

use serde_json::{json, Value};
use small_store::pg::PgBackend;
use small_store::{Page, PrimitiveStore, Put, Store, StoreError};
use std::sync::{Arc, Barrier};

/// One store on a fresh schema, dropped with it.
struct Db {
    store: Arc<Store<PgBackend>>,
    url: String,
    schema: String,
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

fn db(test: &str) -> Option<Db> {
    let url = common::pg_url()?;
    let schema = common::fresh_pg_schema(&url, test);
    let store = Arc::new(Store::new(PgBackend::connect(&url, Some(&schema)).unwrap()));
    store
        .register_schema(&json!({"$id": "schema:note:v1", "type": "object"}))
        .unwrap();
    Some(Db { store, url, schema })
}

fn note(id: &str, data: Value) -> Value {
    json!({"id": id, "kind": "note", "data": data, "schemaId": "schema:note:v1"})
}

/// `threads` threads each run `write(thread, round)` for `rounds` rounds, all threads
/// starting each round together; the results by thread, in round order.
fn together<R: Send + 'static>(
    store: &Arc<Store<PgBackend>>,
    threads: usize,
    rounds: usize,
    write: impl Fn(&Store<PgBackend>, usize, usize) -> R + Send + Sync + 'static,
) -> Vec<Vec<R>> {
    let barrier = Arc::new(Barrier::new(threads));
    let write = Arc::new(write);
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (store, barrier, write) = (store.clone(), barrier.clone(), write.clone());
            std::thread::spawn(move || {
                (0..rounds)
                    .map(|round| {
                        barrier.wait();
                        write(&store, i, round)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn all_versions(store: &Store<PgBackend>, id: &str) -> Vec<(u64, Value)> {
    let page = Page {
        after: None,
        limit: Some(1000),
    };
    store
        .list_artifact_versions(id, &page)
        .unwrap()
        .items
        .iter()
        .map(|r| (r.version, r.value()["data"].clone()))
        .collect()
}

/// Threads 0, 4, 8, … fail after writing on rounds 1, 4 and 7, so their batch rolls back;
/// every other put of their batches runs again alone and is stored once, as the next version.
fn conflict_round(i: usize, round: usize) -> bool {
    i.is_multiple_of(4) && round % 3 == 1
}

/// A write that stores a version of `id` and then fails: nothing of it may remain.
fn stray_write(s: &Store<PgBackend>, id: &str, round: usize) -> Result<Put, StoreError> {
    use small_store::tx::{Backend, Versioned};
    s.backend().write(&mut |tx| {
        let (latest, _) = tx.lock_head_latest(Versioned::Artifact, id)?;
        let json = json!({"data": {"stray": round}, "version": latest + 1}).to_string();
        let stray = small_store::Record {
            id: id.to_string(),
            version: latest + 1,
            sha256: format!("{:064x}", json.len()),
            stored_at: "2025-01-15T10:00:00Z".into(),
            json,
            resolved: None,
        };
        tx.version_insert(Versioned::Artifact, &stray, Some("schema:note:v1"))?;
        Err(StoreError::Conflict("refused after writing".into()))
    })
}

#[test]
fn a_write_failing_after_writing_rolls_its_batch_back_and_the_others_commit_once() {
    let Some(db) = db("batch_rollback") else {
        return;
    };
    let (threads, rounds) = (32, 10);
    let results = together(&db.store, threads, rounds, |s, i, round| {
        let id = format!("a{i}");
        if conflict_round(i, round) && i % 8 == 4 {
            stray_write(s, &id, round)
        } else if conflict_round(i, round) {
            // Refused after the head row was locked (a write).
            let mut n = note(&id, json!({"other": round}));
            n["version"] = json!(1);
            s.put_artifact(&n)
        } else {
            s.put_artifact(&note(&id, json!({"round": round})))
        }
    });
    for (i, puts) in results.iter().enumerate() {
        let mut expected = Vec::new();
        for (round, put) in puts.iter().enumerate() {
            if conflict_round(i, round) {
                assert!(
                    matches!(put, Err(StoreError::Conflict(_))),
                    "a{i} round {round}: {put:?}"
                );
                continue;
            }
            let Put { record, created } = put.as_ref().unwrap();
            expected.push((expected.len() as u64 + 1, json!({"round": round})));
            assert!(created, "a{i} round {round}: stored before its answer");
            assert_eq!(record.version, expected.len() as u64, "a{i} round {round}");
        }
        assert_eq!(all_versions(&db.store, &format!("a{i}")), expected, "a{i}");
    }
    let rollbacks = db.store.backend().group_commit_rollbacks();
    assert!(rollbacks > 0, "no batch was rolled back");
    let (batches, writes) = db.store.backend().group_commit_counts();
    assert!(batches < writes, "no commit was shared ({batches} batches)");
}

#[test]
fn concurrent_writers_of_the_same_artifacts_get_versions_without_gaps() {
    let Some(db) = db("batch_same_artifacts") else {
        return;
    };
    let (threads, rounds, hot) = (24, 20, 3);
    for h in 0..hot {
        db.store
            .put_artifact(&note(&format!("hot{h}"), json!({"first": true})))
            .unwrap();
    }
    // Every fifth write conflicts (an other version 1), rolling back the batch it is in.
    let results = together(&db.store, threads, rounds, move |s, i, round| {
        let id = format!("hot{}", (i + round) % hot);
        if (i + round).is_multiple_of(5) {
            let mut n = note(&id, json!({"other": [i, round]}));
            n["version"] = json!(1);
            let put = s.put_artifact(&n);
            (id, None, put)
        } else {
            let data = json!({"by": i, "round": round});
            let put = s.put_artifact(&note(&id, data.clone()));
            (id, Some(data), put)
        }
    });
    let mut got: Vec<Vec<(u64, Value)>> = vec![vec![(1, json!({"first": true}))]; hot];
    for (id, data, put) in results.into_iter().flatten() {
        let h: usize = id[3..].parse().unwrap();
        match data {
            None => assert!(matches!(put, Err(StoreError::Conflict(_))), "{put:?}"),
            Some(data) => {
                let put = put.unwrap();
                assert!(put.created, "{id}: {data} stored before its answer");
                got[h].push((put.record.version, data));
            }
        }
    }
    for (h, mut versions) in got.into_iter().enumerate() {
        versions.sort_by_key(|(v, _)| *v);
        let numbers: Vec<u64> = versions.iter().map(|(v, _)| *v).collect();
        assert_eq!(
            numbers,
            (1..=versions.len() as u64).collect::<Vec<_>>(),
            "hot{h}"
        );
        assert_eq!(
            all_versions(&db.store, &format!("hot{h}")),
            versions,
            "hot{h}"
        );
    }
}

#[test]
fn a_write_refused_before_writing_leaves_its_batch_committing() {
    let Some(db) = db("batch_refused_early") else {
        return;
    };
    let (threads, rounds) = (32, 10);
    for i in 0..threads {
        db.store
            .append_lifecycle(
                &format!("l{i}"),
                &json!({"type": "created", "at": "2025-01-15T09:00:00Z"}),
            )
            .unwrap();
    }
    // Refused after reading only: a schema id registered with other content, and `published`
    // before `validated` (after taking the stream's lock).
    let refused = |i: usize, round: usize| i.is_multiple_of(3) && round % 4 == 2;
    let results = together(&db.store, threads, rounds, move |s, i, round| {
        if !refused(i, round) {
            return s.put_artifact(&note(&format!("a{i}"), json!({"round": round})));
        }
        if i % 2 == 0 {
            s.register_schema(&json!({"$id": "schema:note:v1", "type": "object", "title": "other"}))
        } else {
            s.append_lifecycle(
                &format!("l{i}"),
                &json!({"type": "published", "at": "2025-01-15T10:00:00Z"}),
            )
        }
    });
    for (i, puts) in results.iter().enumerate() {
        let mut expected = Vec::new();
        for (round, put) in puts.iter().enumerate() {
            if refused(i, round) {
                assert!(
                    matches!(put, Err(StoreError::Conflict(_))),
                    "thread {i} round {round}: {put:?}"
                );
                continue;
            }
            let put = put.as_ref().unwrap();
            expected.push((expected.len() as u64 + 1, json!({"round": round})));
            assert!(put.created && put.record.version == expected.len() as u64);
        }
        assert_eq!(all_versions(&db.store, &format!("a{i}")), expected, "a{i}");
        assert_eq!(
            db.store.get_lifecycle(&format!("l{i}")).unwrap().len(),
            1,
            "l{i}"
        );
    }
    assert_eq!(
        db.store.backend().group_commit_rollbacks(),
        0,
        "a refusal before writing rolled a batch back"
    );
    let (batches, writes) = db.store.backend().group_commit_counts();
    let refusals = (0..threads)
        .flat_map(|i| (0..rounds).map(move |round| (i, round)))
        .filter(|&(i, round)| refused(i, round))
        .count();
    // Before the race: the schema and each lifecycle's `created`.
    let stored = 1 + threads + threads * rounds - refusals;
    assert_eq!(
        writes, stored as u64,
        "every stored write was group-committed once"
    );
    assert!(batches < writes, "no commit was shared ({batches} batches)");
}
