//! Two stores (as two servers would have) on one PostgreSQL database, racing on every rule the
//! store checks across rows: lineage acyclicity, manifest appendOnly, lifecycle order and
//! version continuity must hold under any interleaving.
//!
//! Needs `SMALL_TEST_POSTGRES_URL` (a visible skip when unset; a failure when
//! `SMALL_TEST_REQUIRE` lists `postgres`, as CI does).

mod common;

use serde_json::{json, Value};
use small_store::pg::PgBackend;
use small_store::{Page, PrimitiveStore, Store, StoreError};
use std::sync::{Arc, Barrier};

/// Two independent stores (separate connection pools) on one fresh schema.
struct Pair {
    a: Arc<dyn PrimitiveStore>,
    b: Arc<dyn PrimitiveStore>,
    url: String,
    schema: String,
}

impl Drop for Pair {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

fn pair(test: &str) -> Option<Pair> {
    let url = common::pg_url()?;
    let schema = common::fresh_pg_schema(&url, test);
    let open = || -> Arc<dyn PrimitiveStore> {
        Arc::new(Store::new(PgBackend::connect(&url, Some(&schema)).unwrap()))
    };
    let a = open();
    let b = open();
    Some(Pair { a, b, url, schema })
}

/// Run `fa` on store A and `fb` on store B at the same moment, `rounds` times.
fn race<RA: Send + 'static, RB: Send + 'static>(
    p: &Pair,
    rounds: usize,
    fa: impl Fn(&dyn PrimitiveStore, usize) -> RA + Send + Sync + 'static,
    fb: impl Fn(&dyn PrimitiveStore, usize) -> RB + Send + Sync + 'static,
) -> Vec<(RA, RB)> {
    let barrier = Arc::new(Barrier::new(2));
    let (a, b) = (p.a.clone(), p.b.clone());
    let (ba, bb) = (barrier.clone(), barrier);
    let ta = std::thread::spawn(move || {
        (0..rounds)
            .map(|i| {
                ba.wait();
                fa(a.as_ref(), i)
            })
            .collect::<Vec<_>>()
    });
    let tb = std::thread::spawn(move || {
        (0..rounds)
            .map(|i| {
                bb.wait();
                fb(b.as_ref(), i)
            })
            .collect::<Vec<_>>()
    });
    ta.join()
        .unwrap()
        .into_iter()
        .zip(tb.join().unwrap())
        .collect()
}

fn lineage(id: &str, from: &str) -> Value {
    json!({"artifactId": id, "derivedFrom": [from], "producedBy": {"actor": "agent", "name": "racer"},
           "at": "2025-01-15T10:00:00Z"})
}

fn refused(r: &Result<impl Sized, StoreError>) -> bool {
    match r {
        Ok(_) => false,
        Err(StoreError::Backend(m)) => panic!("backend error: {m}"),
        Err(_) => true,
    }
}

#[test]
fn lineage_stays_acyclic_when_two_servers_race() {
    let Some(p) = pair("lineage_race") else {
        return;
    };
    let rounds = 150;
    let results = race(
        &p,
        rounds,
        |s, i| s.append_lineage(&lineage(&format!("x{i}"), &format!("y{i}"))),
        |s, i| s.append_lineage(&lineage(&format!("y{i}"), &format!("x{i}"))),
    );
    let mut both = 0;
    for (i, (ra, rb)) in results.iter().enumerate() {
        match (refused(ra), refused(rb)) {
            (false, false) => both += 1,
            (true, true) => panic!(
                "pair {i}: both refused: {:?} / {:?}",
                ra.as_ref().err(),
                rb.as_ref().err()
            ),
            _ => {}
        }
    }
    assert_eq!(both, 0, "{both} of {rounds} pairs stored a cycle");
    // And the stored graph has no cycle: from each x_i, y_i is reachable only one way.
    for i in 0..rounds {
        let x = p.a.get_lineage(&format!("x{i}")).unwrap().len();
        let y = p.a.get_lineage(&format!("y{i}")).unwrap().len();
        assert_eq!(x + y, 1, "pair {i}");
    }
}

fn schema() -> Value {
    json!({"$id": "schema:note:v1", "type": "object"})
}

fn note(id: &str) -> Value {
    json!({"id": id, "kind": "note", "data": {}, "schemaId": "schema:note:v1"})
}

fn manifest(id: &str, artifacts: &[String]) -> Value {
    json!({"id": id, "schemas": ["schema:note:v1"], "artifacts": artifacts,
           "policies": {"appendOnly": true, "deterministic": false, "validationRequired": false}})
}

#[test]
fn manifest_append_only_holds_when_two_servers_race() {
    let Some(p) = pair("manifest_race") else {
        return;
    };
    p.a.register_schema(&schema()).unwrap();
    let rounds = 40;
    for i in 0..rounds {
        for n in ["base", "b", "c"] {
            p.a.put_artifact(&note(&format!("{n}{i}"))).unwrap();
        }
        p.a.put_manifest(&manifest(&format!("m{i}"), &[format!("base{i}")]))
            .unwrap();
    }
    // Each side adds its own artifact to version 1; whichever is stored second drops the
    // other's addition, which appendOnly forbids: it must be refused.
    let results = race(
        &p,
        rounds,
        |s, i| {
            s.put_manifest(&manifest(
                &format!("m{i}"),
                &[format!("base{i}"), format!("b{i}")],
            ))
        },
        |s, i| {
            s.put_manifest(&manifest(
                &format!("m{i}"),
                &[format!("base{i}"), format!("c{i}")],
            ))
        },
    );
    for (i, (ra, rb)) in results.iter().enumerate() {
        assert!(
            refused(ra) != refused(rb),
            "manifest m{i}: exactly one of two conflicting versions may be stored ({:?} / {:?})",
            ra.as_ref().map(|p| p.record.version),
            rb.as_ref().map(|p| p.record.version)
        );
        let versions =
            p.a.list_manifest_versions(&format!("m{i}"), &Page::default())
                .unwrap();
        assert_eq!(versions.items.len(), 2, "m{i}");
    }
}

fn ev(kind: &str, at: &str) -> Value {
    json!({"type": kind, "at": at})
}

#[test]
fn lifecycle_order_holds_when_two_servers_race() {
    let Some(p) = pair("lifecycle_race") else {
        return;
    };
    let rounds = 60;
    for i in 0..rounds {
        let id = format!("a{i}");
        p.a.append_lifecycle(&id, &ev("created", "2025-01-15T09:00:00Z"))
            .unwrap();
        p.a.append_lifecycle(&id, &ev("validated", "2025-01-15T09:10:00Z"))
            .unwrap();
    }
    // `archived` ends a stream: `published` may come before it, never after.
    let results = race(
        &p,
        rounds,
        |s, i| s.append_lifecycle(&format!("a{i}"), &ev("archived", "2025-01-15T10:00:00Z")),
        |s, i| s.append_lifecycle(&format!("a{i}"), &ev("published", "2025-01-15T10:00:00Z")),
    );
    for (i, (ra, _)) in results.iter().enumerate() {
        assert!(!refused(ra), "a{i}: archiving is always allowed here");
        let kinds: Vec<String> =
            p.b.get_lifecycle(&format!("a{i}"))
                .unwrap()
                .iter()
                .map(|r| r.value()["type"].as_str().unwrap().to_owned())
                .collect();
        assert_eq!(
            kinds.last().map(String::as_str),
            Some("archived"),
            "a{i}: {kinds:?}"
        );
        let positions: Vec<u64> =
            p.b.get_lifecycle(&format!("a{i}"))
                .unwrap()
                .iter()
                .map(|r| r.version)
                .collect();
        assert_eq!(positions, (1..=kinds.len() as u64).collect::<Vec<_>>());
    }
}

#[test]
fn versions_stay_contiguous_when_two_servers_race() {
    let Some(p) = pair("version_race") else {
        return;
    };
    p.a.register_schema(&schema()).unwrap();
    let rounds = 60;
    let put = |s: &dyn PrimitiveStore, i: usize, who: &str| {
        let mut n = note("hot");
        n["data"] = json!({"by": who, "i": i});
        s.put_artifact(&n).unwrap().record.version
    };
    let results = race(
        &p,
        rounds,
        move |s, i| put(s, i, "a"),
        move |s, i| put(s, i, "b"),
    );
    let mut got: Vec<u64> = results.iter().flat_map(|(a, b)| [*a, *b]).collect();
    got.sort();
    assert_eq!(got, (1..=2 * rounds as u64).collect::<Vec<_>>());
    let listed =
        p.b.list_artifact_versions(
            "hot",
            &Page {
                after: None,
                limit: Some(1000),
            },
        )
        .unwrap();
    assert_eq!(listed.items.len(), 2 * rounds);
}

#[test]
fn identical_puts_store_one_version_when_two_servers_race() {
    let Some(p) = pair("identical_race") else {
        return;
    };
    p.a.register_schema(&schema()).unwrap();
    let rounds = 60;
    // Version 1 exists; both sides put the same version 2 without naming it. The one that
    // waits for the other's head lock must find version 2 stored (committed after its
    // statement began) and answer it, not store a copy as version 3.
    for i in 0..rounds {
        p.a.put_artifact(&note(&format!("same{i}"))).unwrap();
    }
    let put = |s: &dyn PrimitiveStore, i: usize| {
        let mut n = note(&format!("same{i}"));
        n["data"] = json!({"second": true});
        let put = s.put_artifact(&n).unwrap();
        (put.record.version, put.created)
    };
    let results = race(&p, rounds, put, put);
    for (i, (a, b)) in results.iter().enumerate() {
        assert_eq!((a.0, b.0), (2, 2), "same{i}: {a:?} {b:?}");
        assert!(
            a.1 != b.1,
            "same{i}: exactly one put stores version 2 ({a:?} {b:?})"
        );
        let versions =
            p.b.list_artifact_versions(&format!("same{i}"), &Page::default())
                .unwrap();
        assert_eq!(versions.items.len(), 2, "same{i}");
    }
}

fn schema_record(id: &str) -> small_store::Record {
    let json = format!("{{\"$id\":\"{id}\"}}");
    small_store::Record {
        id: id.into(),
        version: 1,
        sha256: format!("{:064x}", json.len()),
        stored_at: "2025-01-15T10:00:00Z".into(),
        json,
        resolved: None,
    }
}

/// How one concurrent write of the group commit test behaves.
fn group_write(backend: &PgBackend, i: usize, round: usize) -> Result<bool, StoreError> {
    use small_store::tx::Backend;
    let id = format!("schema:g{i}-{round}");
    match (i, round) {
        // Refused by the database (text cannot hold NUL): its savepoint rolls back.
        (5, 2) => backend.write(&mut |tx| tx.schema_insert(&schema_record(&format!("{id}\u{0}")))),
        // Fails after writing: what it wrote must not be committed with the others.
        (9, 4) => backend.write(&mut |tx| {
            tx.schema_insert(&schema_record(&id))?;
            Err(StoreError::Conflict("refused after writing".into()))
        }),
        _ => backend.write(&mut |tx| tx.schema_insert(&schema_record(&id))),
    }
}

/// Group commit of primitives writes: concurrent writes share commits, and a write that fails
/// (in the database, or after writing) is not committed while the others of its batch are,
/// once each (with its batch, or alone after the batch rolled back).
#[test]
fn group_commit_isolates_a_failing_write() {
    use small_store::tx::Backend;
    let Some(url) = common::pg_url() else { return };
    let schema = common::fresh_pg_schema(&url, "group_commit_failing");
    let backend = Arc::new(PgBackend::connect(&url, Some(&schema)).unwrap());
    let barrier = Arc::new(Barrier::new(32));
    let handles: Vec<_> = (0..32)
        .map(|i| {
            let backend = backend.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                (0..10)
                    .map(|round| {
                        barrier.wait();
                        (round, group_write(&backend, i, round))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        for (round, result) in h.join().unwrap() {
            let id = format!("schema:g{i}-{round}");
            let stored = backend.read(&mut |tx| tx.schema_get(&id)).unwrap();
            match (i, round) {
                (5, 2) => assert!(matches!(result, Err(StoreError::Backend(_))), "{result:?}"),
                (9, 4) => {
                    assert!(matches!(result, Err(StoreError::Conflict(_))), "{result:?}");
                    assert!(stored.is_none(), "a failed write was committed");
                }
                _ => {
                    assert!(result.unwrap(), "{id} not inserted");
                    assert_eq!(stored.unwrap().json, schema_record(&id).json);
                }
            }
        }
    }
    let (batches, writes) = backend.group_commit_counts();
    // A batch rolled back by one of the two failing writes held at most 47 others, which
    // then ran alone.
    let rollbacks = backend.group_commit_rollbacks();
    assert!(
        (1..=2).contains(&rollbacks),
        "{rollbacks} batches rolled back"
    );
    assert!(
        writes <= 318 && writes + 47 * rollbacks >= 318,
        "{writes} writes group-committed, {rollbacks} batches rolled back"
    );
    assert!(batches < writes, "no commit was shared ({batches} batches)");
    drop(backend);
    if let Ok(mut c) = postgres::Client::connect(&url, postgres::NoTls) {
        let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    }
}
