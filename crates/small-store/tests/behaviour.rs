//! One behaviour suite, run against both backends: every test below runs once on SQLite and
//! once on PostgreSQL (`SMALL_TEST_POSTGRES_URL`; a visible skip when unset, a failure when
//! `SMALL_TEST_REQUIRE` lists `postgres`).

mod common;

use serde_json::{json, Value};
use small_store::{Direction, Page, PrimitiveStore, StoreError};
use std::sync::Arc;

macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite_backend {
            $( #[test] fn $name() {
                let h = crate::common::sqlite(stringify!($name)).unwrap();
                super::$name(h.store.clone());
            } )*
        }
        mod postgres_backend {
            $( #[test] fn $name() {
                if let Some(h) = crate::common::postgres(stringify!($name)) {
                    super::$name(h.store.clone());
                }
            } )*
        }
    };
}

both_backends!(
    schemas_register_once_and_refuse_changes,
    invalid_schemas_are_refused_with_reason,
    artifacts_need_a_schema_and_valid_data,
    artifact_versions_are_immutable_and_contiguous,
    records_read_back_byte_for_byte,
    manifests_check_references_and_enforce_policies,
    lineage_is_append_only_and_queryable_as_a_graph,
    lifecycle_transitions_are_enforced,
    lifecycle_streams_sync_as_a_prefix,
    listings_paginate,
    concurrent_appenders_get_contiguous_versions,
    ids_that_cannot_exist_are_simply_not_found,
);

fn article_schema() -> Value {
    json!({
        "$id": "schema:article:v1",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Article",
        "type": "object",
        "required": ["id", "title", "content"],
        "properties": {
            "id": { "type": "string" },
            "title": { "type": "string", "minLength": 1 },
            "content": { "type": "string" },
            "publishedAt": { "type": "string", "format": "date-time" }
        }
    })
}

fn article(id: &str, version: Option<u64>, title: &str) -> Value {
    let mut a = json!({
        "id": id,
        "kind": "article",
        "data": {"id": id, "title": title, "content": "SMALL defines five primitives...", "publishedAt": "2025-01-15T10:00:00Z"},
        "schemaId": "schema:article:v1"
    });
    if let Some(v) = version {
        a["version"] = json!(v);
    }
    a
}

fn invalid_paths(e: &StoreError) -> Vec<String> {
    match e {
        StoreError::Invalid { errors, .. } => errors.iter().map(|e| e.path.clone()).collect(),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn is_conflict(r: Result<impl std::fmt::Debug, StoreError>) -> bool {
    matches!(r, Err(StoreError::Conflict(_)))
}

fn schemas_register_once_and_refuse_changes(s: Arc<dyn PrimitiveStore>) {
    let put = s.register_schema(&article_schema()).unwrap();
    assert!(put.created);
    assert_eq!(put.record.id, "schema:article:v1");
    let again = s.register_schema(&article_schema()).unwrap();
    assert!(!again.created, "identical re-registration is a no-op");
    assert_eq!(again.record, put.record);
    let mut changed = article_schema();
    changed["title"] = json!("Article (changed)");
    assert!(is_conflict(s.register_schema(&changed)));
    // Key order does not matter: canonical JSON is what is compared.
    let reordered: Value = serde_json::from_str(
        r#"{"type":"object","title":"Article","$schema":"https://json-schema.org/draft/2020-12/schema","$id":"schema:article:v1",
            "properties":{"publishedAt":{"format":"date-time","type":"string"},"content":{"type":"string"},
            "title":{"minLength":1,"type":"string"},"id":{"type":"string"}},"required":["id","title","content"]}"#,
    )
    .unwrap();
    assert!(!s.register_schema(&reordered).unwrap().created);
    assert_eq!(
        s.get_schema("schema:article:v1").unwrap().unwrap(),
        put.record
    );
    assert_eq!(s.get_schema("schema:missing").unwrap(), None);
}

fn invalid_schemas_are_refused_with_reason(s: Arc<dyn PrimitiveStore>) {
    let e = s
        .register_schema(&json!({"$id": "schema:x", "type": "objekt"}))
        .unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/type"]);
    let e = s.register_schema(&json!({"type": "object"})).unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/$id"]);
    let e = s
        .register_schema(
            &json!({"$id": "schema:y", "$schema": "http://json-schema.org/draft-07/schema#"}),
        )
        .unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/$schema"]);
    let e = s
        .register_schema(&json!({"$id": "schema:z", "minLength": -1}))
        .unwrap_err();
    assert!(e.to_string().contains("not a valid JSON Schema"), "{e}");
    assert!(s.register_schema(&json!([1])).is_err());
    assert_eq!(s.list_schemas(&Page::default()).unwrap().items.len(), 0);
}

fn artifacts_need_a_schema_and_valid_data(s: Arc<dyn PrimitiveStore>) {
    let e = s
        .put_artifact(&article("article:001", Some(1), "T"))
        .unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/schemaId"]);
    s.register_schema(&article_schema()).unwrap();
    // Every error, each with its JSON path; formats are asserted.
    let bad = json!({
        "id": "article:001", "version": 1, "kind": "article", "schemaId": "schema:article:v1",
        "data": {"title": "", "content": 5, "publishedAt": "yesterday"}
    });
    let e = s.put_artifact(&bad).unwrap_err();
    let mut paths = invalid_paths(&e);
    paths.sort();
    assert_eq!(
        paths,
        vec!["/data", "/data/content", "/data/publishedAt", "/data/title"],
        "{e}"
    );
    // The seed's own example artifact omits `id` from data, which its schema requires.
    let seed_example = json!({
        "id": "article:001", "version": 1, "kind": "article",
        "data": {"title": "SMALL Execution Model", "content": "SMALL defines five primitives...", "publishedAt": "2025-01-15T10:00:00Z"},
        "schemaId": "schema:article:v1"
    });
    assert_eq!(
        invalid_paths(&s.put_artifact(&seed_example).unwrap_err()),
        vec!["/data"]
    );
    // Shape errors.
    let e = s
        .put_artifact(&json!({"id": "", "version": 0, "extra": 1, "schemaId": "schema:article:v1"}))
        .unwrap_err();
    let mut paths = invalid_paths(&e);
    paths.sort();
    assert_eq!(paths, vec!["/data", "/extra", "/id", "/kind", "/version"]);
    assert_eq!(s.get_artifact("article:001", None).unwrap(), None);
    assert!(
        s.put_artifact(&article("article:001", Some(1), "T"))
            .unwrap()
            .created
    );
}

fn artifact_versions_are_immutable_and_contiguous(s: Arc<dyn PrimitiveStore>) {
    s.register_schema(&article_schema()).unwrap();
    // A first version must be 1.
    assert!(is_conflict(s.put_artifact(&article("a", Some(2), "T"))));
    let v1 = s.put_artifact(&article("a", Some(1), "T")).unwrap();
    assert!(v1.created);
    assert_eq!(v1.record.version, 1);
    assert!(!s.put_artifact(&article("a", Some(1), "T")).unwrap().created);
    assert!(is_conflict(s.put_artifact(&article("a", Some(1), "Other"))));
    assert!(is_conflict(s.put_artifact(&article("a", Some(3), "Other"))));
    let v2 = s.put_artifact(&article("a", Some(2), "Second")).unwrap();
    assert_eq!(v2.record.version, 2);
    // No version: the next one is assigned; the same content as the latest is a no-op.
    let v3 = s.put_artifact(&article("a", None, "Third")).unwrap();
    assert!(v3.created);
    assert_eq!(v3.record.version, 3);
    assert_eq!(v3.record.value()["version"], json!(3));
    let again = s.put_artifact(&article("a", None, "Third")).unwrap();
    assert!(!again.created);
    assert_eq!(again.record.version, 3);
    assert_eq!(s.get_artifact("a", None).unwrap().unwrap().version, 3);
    assert_eq!(s.get_artifact("a", Some(1)).unwrap().unwrap(), v1.record);
    assert_eq!(s.get_artifact("a", Some(9)).unwrap(), None);
    let versions = s.list_artifact_versions("a", &Page::default()).unwrap();
    assert_eq!(
        versions.items.iter().map(|r| r.version).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(matches!(
        s.list_artifact_versions("nope", &Page::default()),
        Err(StoreError::NotFound(_))
    ));
}

fn records_read_back_byte_for_byte(s: Arc<dyn PrimitiveStore>) {
    s.register_schema(&article_schema()).unwrap();
    let mut a = article("u", Some(1), "Ünïcødé \u{1F600} \"quoted\" \\ </script>");
    a["data"]["extra"] =
        json!({"z": 1.5, "a": [true, null, -0.25, 12345678901234567u64], "m": {"b": 1, "a": 2}});
    let put = s.put_artifact(&a).unwrap();
    let got = s.get_artifact("u", Some(1)).unwrap().unwrap();
    assert_eq!(got.json, put.record.json);
    assert_eq!(got.sha256, put.record.sha256);
    // Canonical: sorted keys, no whitespace; hash is of that text.
    assert!(
        got.json.starts_with(r#"{"data":{"content":"#),
        "{}",
        got.json
    );
    assert!(got.json.contains(r#""m":{"a":2,"b":1}"#));
    assert!(!got.json.contains(": "));
    let hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(got.json.as_bytes()))
    };
    assert_eq!(got.sha256, hash);
    let reparsed: Value = serde_json::from_str(&got.json).unwrap();
    assert_eq!(reparsed, a);
}

fn manifest(
    version: Option<u64>,
    schemas: &[&str],
    artifacts: &[&str],
    append_only: bool,
) -> Value {
    let mut m = json!({
        "id": "manifest:content-publishing:v1",
        "schemas": schemas,
        "artifacts": artifacts,
        "policies": {"deterministic": true, "appendOnly": append_only, "validationRequired": true}
    });
    if let Some(v) = version {
        m["version"] = json!(v);
    }
    m
}

fn manifests_check_references_and_enforce_policies(s: Arc<dyn PrimitiveStore>) {
    let e = s
        .put_manifest(&manifest(
            Some(1),
            &["schema:article:v1"],
            &["article:001"],
            true,
        ))
        .unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/schemas/0", "/artifacts/0"]);
    s.register_schema(&article_schema()).unwrap();
    s.register_schema(&json!({"$id": "schema:note:v1", "type": "object"}))
        .unwrap();
    s.put_artifact(&article("article:001", Some(1), "T"))
        .unwrap();
    s.put_artifact(
        &json!({"id": "note:1", "kind": "note", "data": {}, "schemaId": "schema:note:v1"}),
    )
    .unwrap();
    // validationRequired: the artifact's schema must be one the manifest lists.
    let e = s
        .put_manifest(&manifest(
            Some(1),
            &["schema:article:v1"],
            &["note:1"],
            true,
        ))
        .unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/artifacts/0"]);
    assert!(e.to_string().contains("validationRequired"));
    // Pinned versions must exist.
    let e = s
        .put_manifest(&manifest(
            Some(1),
            &["schema:article:v1"],
            &["article:001@2"],
            true,
        ))
        .unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/artifacts/0"]);
    let m1 = s
        .put_manifest(&manifest(
            Some(1),
            &["schema:article:v1"],
            &["article:001"],
            true,
        ))
        .unwrap();
    assert!(m1.created);
    // deterministic: the references are frozen with versions and hashes.
    let resolved: Value = serde_json::from_str(m1.record.resolved.as_deref().unwrap()).unwrap();
    assert_eq!(resolved["artifacts"][0]["version"], json!(1));
    s.put_artifact(&article("article:001", Some(2), "T2"))
        .unwrap();
    let again = s
        .get_manifest("manifest:content-publishing:v1", Some(1))
        .unwrap()
        .unwrap();
    assert_eq!(again.resolved, m1.record.resolved);
    assert!(
        !s.put_manifest(&manifest(
            Some(1),
            &["schema:article:v1"],
            &["article:001"],
            true
        ))
        .unwrap()
        .created
    );
    assert!(is_conflict(s.put_manifest(&manifest(
        Some(1),
        &["schema:article:v1", "schema:note:v1"],
        &["article:001"],
        true
    ))));
    // appendOnly: a later version cannot drop what an earlier one declared, nor the policy.
    let e = s
        .put_manifest(&manifest(Some(2), &["schema:note:v1"], &["note:1"], true))
        .unwrap_err();
    let mut paths = invalid_paths(&e);
    paths.sort();
    assert_eq!(paths, vec!["/artifacts", "/schemas"]);
    let e = s
        .put_manifest(&manifest(
            Some(2),
            &["schema:article:v1"],
            &["article:001"],
            false,
        ))
        .unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/policies/appendOnly"]);
    let m2 = s
        .put_manifest(&manifest(
            None,
            &["schema:article:v1", "schema:note:v1"],
            &["article:001@2", "note:1"],
            true,
        ))
        .unwrap();
    assert_eq!(m2.record.version, 2);
    let e = s
        .put_manifest(&manifest(
            None,
            &["schema:article:v1", "schema:note:v1"],
            &["article:001@1", "note:1"],
            true,
        ))
        .unwrap_err();
    assert!(e.to_string().contains("cannot go back"), "{e}");
    // Shape errors.
    let e = s.put_manifest(&json!({"id": "m", "schemas": "x", "artifacts": ["a a"], "policies": {"deterministic": 1}})).unwrap_err();
    let mut paths = invalid_paths(&e);
    paths.sort();
    assert_eq!(
        paths,
        vec![
            "/artifacts/0",
            "/policies/appendOnly",
            "/policies/deterministic",
            "/policies/validationRequired",
            "/schemas"
        ]
    );
    assert_eq!(s.list_manifests(&Page::default()).unwrap().items.len(), 1);
}

fn lineage(id: &str, from: &[&str]) -> Value {
    json!({
        "artifactId": id,
        "derivedFrom": from,
        "producedBy": {"actor": "agent", "name": "content-generator", "runId": "run_20250115_001"},
        "at": "2025-01-15T10:00:00Z"
    })
}

fn lineage_is_append_only_and_queryable_as_a_graph(s: Arc<dyn PrimitiveStore>) {
    // a <- b <- c <- d, and e derived from b and x.
    let first = s.append_lineage(&lineage("b", &["a"])).unwrap();
    assert!(first.created);
    assert!(
        !s.append_lineage(&lineage("b", &["a"])).unwrap().created,
        "identical record is a no-op"
    );
    s.append_lineage(&lineage("c", &["b"])).unwrap();
    s.append_lineage(&lineage("d", &["c"])).unwrap();
    s.append_lineage(&lineage("e", &["b", "x"])).unwrap();
    let g = s.lineage_graph("d", Direction::Ancestors, 10).unwrap();
    let nodes: Vec<(String, u32)> = g.nodes.iter().map(|n| (n.id.clone(), n.depth)).collect();
    assert_eq!(
        nodes,
        vec![("c".into(), 1), ("b".into(), 2), ("a".into(), 3)]
    );
    assert_eq!(g.edges.len(), 3);
    let g = s.lineage_graph("d", Direction::Ancestors, 2).unwrap();
    assert_eq!(
        g.nodes.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(),
        vec!["c", "b"]
    );
    let g = s.lineage_graph("a", Direction::Descendants, 10).unwrap();
    let nodes: Vec<(String, u32)> = g.nodes.iter().map(|n| (n.id.clone(), n.depth)).collect();
    assert_eq!(
        nodes,
        vec![
            ("b".into(), 1),
            ("c".into(), 2),
            ("e".into(), 2),
            ("d".into(), 3)
        ]
    );
    assert!(s
        .lineage_graph("zzz", Direction::Ancestors, 5)
        .unwrap()
        .nodes
        .is_empty());
    // Cycles are refused; so is self-derivation and a malformed record.
    let e = s.append_lineage(&lineage("a", &["d"])).unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/derivedFrom/0"]);
    let e = s.append_lineage(&lineage("q", &["q"])).unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/derivedFrom/0"]);
    let e = s.append_lineage(&json!({"artifactId": "q", "derivedFrom": [], "producedBy": {"actor": "agent"}, "at": "noon"})).unwrap_err();
    let mut paths = invalid_paths(&e);
    paths.sort();
    assert_eq!(paths, vec!["/at", "/producedBy/name"]);
    // Records are kept in order, byte for byte.
    let more = s.append_lineage(&lineage("b", &["a", "x"])).unwrap();
    let records = s.get_lineage("b").unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0], first.record);
    assert_eq!(records[1], more.record);
    assert!(records[0].version < records[1].version);
    // `at` is filled in when absent.
    let no_at = s.append_lineage(&json!({"artifactId": "n", "derivedFrom": [], "producedBy": {"actor": "human", "name": "me"}})).unwrap();
    assert!(no_at.record.value()["at"].as_str().unwrap().ends_with('Z'));
}

fn ev(kind: &str, at: &str) -> Value {
    json!({"type": kind, "at": at})
}

fn lifecycle_transitions_are_enforced(s: Arc<dyn PrimitiveStore>) {
    let id = "article:001";
    assert!(is_conflict(
        s.append_lifecycle(id, &ev("validated", "2025-01-15T09:00:00Z"))
    ));
    s.append_lifecycle(id, &ev("created", "2025-01-15T09:00:00Z"))
        .unwrap();
    assert!(is_conflict(
        s.append_lifecycle(id, &ev("created", "2025-01-15T09:10:00Z"))
    ));
    assert!(is_conflict(
        s.append_lifecycle(id, &ev("published", "2025-01-15T09:10:00Z"))
    ));
    // A schema named by an event must be registered.
    let e = s
        .append_lifecycle(id, &json!({"type": "validated", "at": "2025-01-15T09:30:00Z", "schema": "schema:article:v1"}))
        .unwrap_err();
    assert_eq!(invalid_paths(&e), vec!["/schema"]);
    s.register_schema(&article_schema()).unwrap();
    s.append_lifecycle(
        id,
        &json!({"type": "validated", "at": "2025-01-15T09:30:00Z", "schema": "schema:article:v1"}),
    )
    .unwrap();
    // Events are ordered in time.
    assert!(is_conflict(
        s.append_lifecycle(id, &ev("published", "2025-01-15T08:00:00Z"))
    ));
    let p = s
        .append_lifecycle(id, &ev("published", "2025-01-15T10:00:00Z"))
        .unwrap();
    assert_eq!(p.record.version, 3);
    // Re-sending the last event is a no-op (safe retries).
    assert!(
        !s.append_lifecycle(id, &ev("published", "2025-01-15T10:00:00Z"))
            .unwrap()
            .created
    );
    s.append_lifecycle(id, &ev("archived", "2025-01-16T00:00:00Z"))
        .unwrap();
    assert!(is_conflict(
        s.append_lifecycle(id, &ev("validated", "2025-01-17T00:00:00Z"))
    ));
    let e = s
        .append_lifecycle("other", &json!({"type": "exploded", "at": "x", "color": 1}))
        .unwrap_err();
    let mut paths = invalid_paths(&e);
    paths.sort();
    assert_eq!(paths, vec!["/at", "/color", "/type"]);
    let events = s.get_lifecycle(id).unwrap();
    assert_eq!(
        events
            .iter()
            .map(|r| r.value()["type"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        vec!["created", "validated", "published", "archived"]
    );
    assert_eq!(
        small_store::lifecycle_document(id, &events[..1]),
        r#"{"artifactId":"article:001","events":[{"at":"2025-01-15T09:00:00Z","type":"created"}]}"#
    );
}

fn lifecycle_streams_sync_as_a_prefix(s: Arc<dyn PrimitiveStore>) {
    s.register_schema(&article_schema()).unwrap();
    let doc = json!({
        "artifactId": "article:001",
        "events": [
            { "type": "created", "at": "2025-01-15T09:00:00Z" },
            { "type": "validated", "at": "2025-01-15T09:30:00Z", "schema": "schema:article:v1" }
        ]
    });
    let puts = s.put_lifecycle(&doc).unwrap();
    assert!(puts.iter().all(|p| p.created));
    let mut longer = doc.clone();
    longer["events"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "type": "published", "at": "2025-01-15T10:00:00Z" }));
    let puts = s.put_lifecycle(&longer).unwrap();
    assert_eq!(
        puts.iter().map(|p| p.created).collect::<Vec<_>>(),
        vec![false, false, true]
    );
    let mut rewritten = longer.clone();
    rewritten["events"][0]["at"] = json!("2025-01-15T08:00:00Z");
    assert!(is_conflict(s.put_lifecycle(&rewritten)));
    let bad = json!({"artifactId": "z", "events": [{ "type": "published", "at": "2025-01-15T10:00:00Z" }]});
    assert!(is_conflict(s.put_lifecycle(&bad)));
    assert!(
        s.get_lifecycle("z").unwrap().is_empty(),
        "a refused stream leaves nothing behind"
    );
    assert_eq!(s.get_lifecycle("article:001").unwrap().len(), 3);
}

fn listings_paginate(s: Arc<dyn PrimitiveStore>) {
    s.register_schema(&article_schema()).unwrap();
    for i in 0..7 {
        s.put_artifact(&article(&format!("art:{i}"), None, "T"))
            .unwrap();
    }
    for t in ["one", "two", "three"] {
        s.put_artifact(&article("art:3", None, t)).unwrap();
    }
    let mut seen = Vec::new();
    let mut page = Page {
        after: None,
        limit: Some(3),
    };
    loop {
        let l = s.list_artifacts(&page).unwrap();
        seen.extend(l.items.iter().map(|r| (r.id.clone(), r.version)));
        match l.next {
            Some(n) => page.after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen.len(), 7);
    assert_eq!(seen[3], ("art:3".to_string(), 4));
    let v = s
        .list_artifact_versions(
            "art:3",
            &Page {
                after: Some("1".into()),
                limit: Some(2),
            },
        )
        .unwrap();
    assert_eq!(
        v.items.iter().map(|r| r.version).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert_eq!(v.next.as_deref(), Some("3"));
    let v = s
        .list_artifact_versions(
            "art:3",
            &Page {
                after: Some("3".into()),
                limit: Some(2),
            },
        )
        .unwrap();
    assert_eq!(v.items.len(), 1);
    assert_eq!(v.next, None);
}

fn concurrent_appenders_get_contiguous_versions(s: Arc<dyn PrimitiveStore>) {
    s.register_schema(&article_schema()).unwrap();
    s.append_lifecycle("hot", &ev("created", "2025-01-15T09:00:00Z"))
        .unwrap();
    let threads = 8;
    let per = 15;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    s.put_artifact(&article("hot", None, &format!("t{t}-{i}"))).unwrap();
                    let e = json!({"type": "validated", "at": "2025-01-15T09:30:00Z", "note": format!("t{t}-{i}")});
                    s.append_lifecycle("hot", &e).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let versions = s
        .list_artifact_versions(
            "hot",
            &Page {
                after: None,
                limit: Some(1000),
            },
        )
        .unwrap();
    let got: Vec<u64> = versions.items.iter().map(|r| r.version).collect();
    assert_eq!(got, (1..=(threads * per) as u64).collect::<Vec<_>>());
    let mut titles: Vec<String> = versions
        .items
        .iter()
        .map(|r| r.value()["data"]["title"].as_str().unwrap().to_string())
        .collect();
    titles.sort();
    titles.dedup();
    assert_eq!(
        titles.len(),
        threads * per,
        "no lost or duplicated versions"
    );
    let events = s.get_lifecycle("hot").unwrap();
    assert_eq!(events.len(), 1 + threads * per);
    assert_eq!(
        events.iter().map(|r| r.version).collect::<Vec<_>>(),
        (1..=events.len() as u64).collect::<Vec<_>>()
    );
}

fn ids_that_cannot_exist_are_simply_not_found(s: Arc<dyn PrimitiveStore>) {
    // NUL and other control characters never reach the database (PostgreSQL refuses them).
    for id in ["a\u{0}b", "", "with space", "tab\t"] {
        assert_eq!(s.get_schema(id).unwrap(), None);
        assert_eq!(s.get_artifact(id, None).unwrap(), None);
        assert_eq!(s.get_manifest(id, Some(1)).unwrap(), None);
        assert!(s.get_lineage(id).unwrap().is_empty());
        assert!(s.get_lifecycle(id).unwrap().is_empty());
        assert!(s
            .lineage_graph(id, Direction::Descendants, 3)
            .unwrap()
            .nodes
            .is_empty());
        assert!(matches!(
            s.list_artifact_versions(id, &Page::default()),
            Err(StoreError::NotFound(_))
        ));
        assert!(s
            .append_lifecycle(id, &ev("created", "2025-01-15T09:00:00Z"))
            .is_err());
    }
    let bad = Page {
        after: Some("x\u{0}".into()),
        limit: None,
    };
    assert!(matches!(
        s.list_artifacts(&bad),
        Err(StoreError::Invalid { .. })
    ));
    assert!(matches!(
        s.list_schemas(&bad),
        Err(StoreError::Invalid { .. })
    ));
    // Stored text may contain any character: canonical JSON escapes control characters.
    s.register_schema(&json!({"$id": "schema:any:v1"})).unwrap();
    let a = json!({"id": "n:1", "kind": "k", "schemaId": "schema:any:v1", "data": {"s": "nul\u{0}here"}});
    let put = s.put_artifact(&a).unwrap();
    assert!(
        put.record.json.contains("nul\\u0000here"),
        "{}",
        put.record.json
    );
    assert_eq!(
        s.get_artifact("n:1", Some(1)).unwrap().unwrap().value()["data"],
        a["data"]
    );
}

// ---------------------------------------------------------------------------------------------
// Read-only opening (the viewer's open): SQLite

#[test]
fn a_read_only_open_never_creates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("sub").join("store.db");
    let e = small_store::open_read_only(missing.to_str().unwrap())
        .err()
        .unwrap();
    assert!(e.to_string().contains("cannot open the store"), "{e}");
    assert!(!missing.exists());
    assert!(!dir.path().join("sub").exists());
    // A directory is not a store; a file that is not a small store is refused.
    let e = small_store::open_read_only(dir.path().to_str().unwrap())
        .err()
        .unwrap();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let other = dir.path().join("other.db");
    std::fs::write(&other, b"").unwrap();
    let e = small_store::open_read_only(other.to_str().unwrap())
        .err()
        .unwrap();
    assert!(e.to_string().contains("not a small store"), "{e}");
    assert_eq!(std::fs::metadata(&other).unwrap().len(), 0);
}

#[test]
fn a_read_only_store_reads_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    {
        let s = small_store::open(path.to_str().unwrap()).unwrap();
        s.register_schema(&article_schema()).unwrap();
        s.put_artifact(&article("a", None, "first")).unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let s = small_store::open_read_only(path.to_str().unwrap()).unwrap();
    assert!(s.get_artifact("a", None).unwrap().is_some());
    assert_eq!(s.list_artifacts(&Page::default()).unwrap().items.len(), 1);
    assert!(s.put_artifact(&article("b", None, "second")).is_err());
    assert!(s.append_lineage(&lineage("a", &[])).is_err());
    drop(s);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}
