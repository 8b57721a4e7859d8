//! Group commit of primitives writes on a real PostgreSQL database: concurrent writes share
//! optimistic batches (no savepoint per write). A write that fails after writing rolls its
//! whole batch back and every write of it runs again alone; a write refused before writing
//! leaves its batch alone. Either way each acknowledged write is stored exactly once.
//!
//! Needs `SMALL_TEST_POSTGRES_URL` (a visible skip when unset; a failure when
//! `SMALL_TEST_REQUIRE` lists `postgres`, as CI does).

mod common;

use serde_json::{json, Value};
use small_store::pg::{PgBackend, PgOptions};
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
    db_with(test, PgOptions::default())
}

fn db_with(test: &str, options: PgOptions) -> Option<Db> {
    let url = common::pg_url()?;
    let schema = common::fresh_pg_schema(&url, test);
    let backend = PgBackend::connect_with(&url, Some(&schema), options).unwrap();
    let store = Arc::new(Store::new(backend));
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

/// Thread `i` put `{"round": round}` to `a{i}` each round, except where `refused(i, round)`
/// (checked by `check_refusal`): every other put was stored, answered as created, as the
/// next version of `a{i}`, and `a{i}` holds exactly those versions.
fn assert_each_stored_once(
    store: &Store<PgBackend>,
    results: &[Vec<Result<Put, StoreError>>],
    refused: impl Fn(usize, usize) -> bool,
    check_refusal: impl Fn(&Result<Put, StoreError>, usize, usize),
) {
    for (i, puts) in results.iter().enumerate() {
        let mut expected = Vec::new();
        for (round, put) in puts.iter().enumerate() {
            if refused(i, round) {
                check_refusal(put, i, round);
                continue;
            }
            let Put { record, created } = put.as_ref().unwrap();
            expected.push((expected.len() as u64 + 1, json!({"round": round})));
            assert!(created, "a{i} round {round}: stored before its answer");
            assert_eq!(record.version, expected.len() as u64, "a{i} round {round}");
        }
        assert_eq!(all_versions(store, &format!("a{i}")), expected, "a{i}");
    }
}

fn assert_conflict(put: &Result<Put, StoreError>, i: usize, round: usize) {
    assert!(
        matches!(put, Err(StoreError::Conflict(_))),
        "thread {i} round {round}: {put:?}"
    );
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
            // Refused after locking the head row (not a write: its batch goes on).
            let mut n = note(&id, json!({"other": round}));
            n["version"] = json!(1);
            s.put_artifact(&n)
        } else {
            s.put_artifact(&note(&id, json!({"round": round})))
        }
    });
    assert_each_stored_once(&db.store, &results, conflict_round, assert_conflict);
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
    assert_each_stored_once(&db.store, &results, refused, assert_conflict);
    for i in 0..threads {
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

#[test]
fn a_version_the_database_refuses_at_the_batch_end_fails_only_its_own_write() {
    let Some(db) = db("batch_flush_refused") else {
        return;
    };
    // Versions of a batch are inserted together before its COMMIT; this trigger makes that
    // insert fail for some of them, as a constraint of the database could.
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "CREATE FUNCTION {s}.refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.body LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned version'; END IF;
           RETURN NEW;
         END $$;
         CREATE TRIGGER refuse_poison BEFORE INSERT ON {s}.small_versions
           FOR EACH ROW EXECUTE FUNCTION {s}.refuse_poison();",
        s = db.schema
    ))
    .unwrap();
    let (threads, rounds) = (24, 8);
    let poisoned = |i: usize, round: usize| i.is_multiple_of(6) && round % 2 == 1;
    let results = together(&db.store, threads, rounds, move |s, i, round| {
        let data = if poisoned(i, round) {
            json!({"poison": round})
        } else {
            json!({"round": round})
        };
        s.put_artifact(&note(&format!("a{i}"), data))
    });
    assert_each_stored_once(&db.store, &results, poisoned, |put, i, _| {
        let err = put.as_ref().expect_err("a poisoned version was stored");
        assert!(err.to_string().contains("poisoned version"), "a{i}: {err}");
    });
    assert!(
        db.store.backend().group_commit_rollbacks() > 0,
        "no batch failed at its end"
    );
}

#[test]
fn writers_of_the_same_content_at_once_store_it_once() {
    // One lane: every write joins the one open batch, and batches never wait on each other's
    // row locks (a lock timeout would roll a batch back too).
    let one_lane = PgOptions {
        committers: 1,
        ..PgOptions::default()
    };
    let Some(db) = db_with("batch_same_content", one_lane) else {
        return;
    };
    // Four writers per artifact put the same new content each round: one stores it, the
    // others (in its batch, where it is not yet in the database, or after it) get that
    // version back.
    let (threads, rounds, per_id) = (24, 10, 4);
    let results = together(&db.store, threads, rounds, move |s, i, round| {
        let id = format!("s{}", i / per_id);
        (
            id.clone(),
            round,
            s.put_artifact(&note(&id, json!({"round": round}))).unwrap(),
        )
    });
    let mut by_id_round = std::collections::BTreeMap::<(String, usize), Vec<Put>>::new();
    for (id, round, put) in results.into_iter().flatten() {
        by_id_round.entry((id, round)).or_default().push(put);
    }
    let mut shared = 0;
    for ((id, round), puts) in &by_id_round {
        assert_eq!(puts.len(), per_id);
        assert_eq!(
            puts.iter().filter(|p| p.created).count(),
            1,
            "{id} round {round}: {puts:?}"
        );
        let first = &puts[0].record;
        assert_eq!(first.version, *round as u64 + 1, "{id} round {round}");
        for p in puts {
            assert_eq!(
                (p.record.version, &p.record.sha256),
                (first.version, &first.sha256)
            );
        }
        shared += 1;
    }
    assert_eq!(shared, rounds * threads / per_id);
    // A writer that missed a version held back in its batch would insert the same version
    // again, failing the batch at its end.
    assert_eq!(db.store.backend().group_commit_rollbacks(), 0);
    for k in 0..threads / per_id {
        let expected: Vec<(u64, Value)> = (0..rounds)
            .map(|r| (r as u64 + 1, json!({"round": r})))
            .collect();
        assert_eq!(all_versions(&db.store, &format!("s{k}")), expected, "s{k}");
    }
}

#[test]
fn a_write_reads_the_versions_its_batch_holds_back() {
    use small_store::tx::{Backend, Versioned};
    let Some(db) = db("batch_reads_held") else {
        return;
    };
    let record = |version: u64| {
        let json = json!({"data": {"n": version}, "id": "x", "kind": "note",
            "schemaId": "schema:note:v1", "version": version})
        .to_string();
        small_store::Record {
            id: "x".into(),
            version,
            sha256: format!("{:064x}", version),
            stored_at: "2025-01-15T10:00:00Z".into(),
            json,
            resolved: None,
        }
    };
    // What the write saw, checked after it ended (a panic inside it would leave its batch's
    // transaction open, holding locks the schema's cleanup waits for).
    let (_, writes_before) = db.store.backend().group_commit_counts();
    let seen = db
        .store
        .backend()
        .write(&mut |tx| {
            let a = Versioned::Artifact;
            let empty = tx.lock_head_latest(a, "x")?;
            tx.version_insert(a, &record(1), Some("schema:note:v1"))?;
            // Held back: its head is locked here, and the batch answers from what it holds.
            let (latest, held) = tx.lock_head_latest(a, "x")?;
            // A statement that reads versions sees it in the database.
            let got = tx.version_get(a, "x", 1)?.map(|r| r.json);
            tx.version_insert(a, &record(2), Some("schema:note:v1"))?;
            let now = tx.latest_version(a, "x")?;
            let listed: Vec<u64> = tx
                .versions_list(a, "x", 0, 10)?
                .iter()
                .map(|r| r.version)
                .collect();
            Ok((empty, latest, held.map(|r| r.json), got, now, listed))
        })
        .unwrap();
    let one = Some(record(1).json);
    assert_eq!(seen, ((0, None), 1, one.clone(), one, 2, vec![1, 2]));
    let (_, writes_after) = db.store.backend().group_commit_counts();
    assert_eq!(
        writes_after,
        writes_before + 1,
        "the write was not group-committed"
    );
    let stored: Vec<u64> = all_versions(&db.store, "x")
        .iter()
        .map(|(v, _)| *v)
        .collect();
    assert_eq!(stored, vec![1, 2]);
}

#[test]
fn a_write_after_the_server_ended_an_idle_transaction_is_stored() {
    let Some(url) = common::pg_url() else {
        return;
    };
    // A committer opens the lane's next transaction with each COMMIT. A server that ends
    // transactions left idle must not fail the write that comes after a quiet spell.
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}options=-c%20idle_in_transaction_session_timeout%3D150");
    let schema = common::fresh_pg_schema(&url, "batch_idle_spare");
    let one_lane = PgOptions {
        committers: 1,
        ..PgOptions::default()
    };
    let backend = PgBackend::connect_with(&url, Some(&schema), one_lane).unwrap();
    let db = Db {
        store: Arc::new(Store::new(backend)),
        url,
        schema,
    };
    db.store
        .register_schema(&json!({"$id": "schema:note:v1", "type": "object"}))
        .unwrap();
    for round in 0..3 {
        let put = db.store.put_artifact(&note("a", json!({"round": round})));
        assert_eq!(put.unwrap().record.version, round + 1);
        std::thread::sleep(std::time::Duration::from_millis(400));
    }
    let (_, writes) = db.store.backend().group_commit_counts();
    assert_eq!(writes, 4, "the writes were not group-committed");
}
