//! The primitives store over HTTP: a real server on an ephemeral port, every response checked
//! against our OpenAPI document (the same checks as the rest of the API).

use crate::server_common as common;

use common::TestServer;
use serde_json::{json, Value};
use small_server::StoreLocation;

fn server() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(common::config(StoreLocation::Sqlite(
        dir.path().join("store.db"),
    )));
    (s, dir)
}

fn post(s: &TestServer, path: &str, v: &Value) -> common::Response {
    s.post_json(path, v.to_string().as_bytes())
}

fn put(s: &TestServer, path: &str, v: &Value) -> common::Response {
    s.call(
        "PUT",
        path,
        Some("application/json"),
        v.to_string().as_bytes(),
    )
}

fn schema() -> Value {
    json!({
        "$id": "schema:article:v1",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
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

fn article(version: Option<u64>, title: &str) -> Value {
    let mut a = json!({
        "id": "article:001", "kind": "article", "schemaId": "schema:article:v1",
        "data": {"id": "article:001", "title": title, "content": "c", "publishedAt": "2025-01-15T10:00:00Z"}
    });
    if let Some(v) = version {
        a["version"] = json!(v);
    }
    a
}

#[test]
fn schemas_over_http() {
    let (s, _d) = server();
    let r = post(&s, "/small/v1/schemas", &schema());
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["created"], json!(true));
    let r = post(&s, "/small/v1/schemas", &schema());
    assert_eq!(r.status, 200);
    let mut changed = schema();
    changed["title"] = json!("x");
    let r = post(&s, "/small/v1/schemas", &changed);
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["error"], json!("conflict"));
    let r = post(
        &s,
        "/small/v1/schemas",
        &json!({"$id": "schema:bad", "type": 12}),
    );
    assert_eq!(r.status, 422);
    assert_eq!(r.json()["errors"][0]["path"], json!("/type"));
    let r = s.get("/small/v1/schemas/schema:article:v1");
    assert_eq!(r.status, 200);
    assert!(r
        .text()
        .starts_with(r#"{"$id":"schema:article:v1","$schema""#));
    let etag = r.header("etag").unwrap().to_string();
    assert!(etag.starts_with("\"sha256:"), "{etag}");
    assert_eq!(s.get("/small/v1/schemas/schema:none").status, 404);
    let r = s.get("/small/v1/schemas?limit=1");
    assert_eq!(r.json()["items"][0]["id"], json!("schema:article:v1"));
    assert_eq!(s.get("/small/v1/schemas?limit=0").status, 400);
    // Bad bodies get the server's error shape.
    assert_eq!(s.post_json("/small/v1/schemas", b"{\"a\":").status, 400);
    assert_eq!(
        s.call("POST", "/small/v1/schemas", Some("text/plain"), b"{}")
            .status,
        415
    );
    assert_eq!(s.call("DELETE", "/small/v1/schemas", None, b"").status, 405);
}

#[test]
fn artifacts_and_manifests_over_http() {
    let (s, _d) = server();
    let r = post(&s, "/small/v1/artifacts", &article(Some(1), "T"));
    assert_eq!(r.status, 422, "no schema registered yet");
    assert_eq!(r.json()["errors"][0]["path"], json!("/schemaId"));
    post(&s, "/small/v1/schemas", &schema());
    let r = post(
        &s,
        "/small/v1/artifacts",
        &json!({"id": "article:001", "kind": "article", "schemaId": "schema:article:v1", "data": {"title": ""}}),
    );
    assert_eq!(r.status, 422);
    let paths: Vec<String> = r.json()["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    assert!(paths.contains(&"/data/title".to_string()), "{paths:?}");
    let r = post(&s, "/small/v1/artifacts", &article(Some(1), "T"));
    assert_eq!(r.status, 201);
    let hash = r.json()["sha256"].as_str().unwrap().to_string();
    assert_eq!(
        post(&s, "/small/v1/artifacts", &article(Some(1), "T")).status,
        200
    );
    assert_eq!(
        post(&s, "/small/v1/artifacts", &article(Some(1), "other")).status,
        409
    );
    assert_eq!(
        post(&s, "/small/v1/artifacts", &article(Some(3), "other")).status,
        409
    );
    let r = put(
        &s,
        "/small/v1/artifacts/article:001/versions/2",
        &article(None, "two"),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["version"], json!(2));
    assert_eq!(
        put(
            &s,
            "/small/v1/artifacts/article:002/versions/1",
            &article(None, "x")
        )
        .status,
        422
    );
    let r = post(&s, "/small/v1/artifacts", &article(None, "three"));
    assert_eq!(r.json()["version"], json!(3));
    let r = s.get("/small/v1/artifacts/article:001/versions/1");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-small-sha256"), Some(hash.as_str()));
    use sha2::Digest;
    assert_eq!(
        hex::encode(sha2::Sha256::digest(&r.body)),
        hash,
        "the body is exactly the hashed record"
    );
    assert_eq!(
        s.get("/small/v1/artifacts/article:001").json()["version"],
        json!(3)
    );
    assert_eq!(
        s.get("/small/v1/artifacts/article:001/versions/9").status,
        404
    );
    assert_eq!(
        s.get("/small/v1/artifacts/article:001/versions/zero")
            .status,
        400
    );
    assert_eq!(s.get("/small/v1/artifacts/none").status, 404);
    let r = s.get("/small/v1/artifacts/article:001/versions?limit=2");
    assert_eq!(r.json()["next"], json!("2"));
    let r = s.get("/small/v1/artifacts/article:001/versions?after=2");
    assert_eq!(r.json()["items"][0]["version"], json!(3));
    assert!(r.json().get("next").is_none());
    assert_eq!(
        s.get("/small/v1/artifacts").json()["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let m = json!({
        "id": "manifest:content-publishing:v1", "version": 1,
        "schemas": ["schema:article:v1"], "artifacts": ["article:001@2"],
        "policies": {"deterministic": true, "appendOnly": true, "validationRequired": true}
    });
    let r = post(&s, "/small/v1/manifests", &m);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["resolved"]["artifacts"][0]["version"], json!(2));
    let mut missing = m.clone();
    missing["version"] = json!(2);
    missing["artifacts"] = json!(["article:001", "article:404"]);
    let r = post(&s, "/small/v1/manifests", &missing);
    assert_eq!(r.status, 422);
    assert_eq!(r.json()["errors"][0]["path"], json!("/artifacts/1"));
    let r = s.get("/small/v1/manifests/manifest:content-publishing:v1");
    assert_eq!(r.json()["artifacts"], json!(["article:001@2"]));
    assert_eq!(
        s.get("/small/v1/manifests/manifest:content-publishing:v1/versions")
            .json()["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        s.get("/small/v1/manifests/manifest:content-publishing:v1/versions/1")
            .status,
        200
    );
    assert_eq!(
        s.get("/small/v1/manifests").json()["items"][0]["version"],
        json!(1)
    );
}

#[test]
fn lineage_and_lifecycle_over_http() {
    let (s, _d) = server();
    for (child, parents) in [("b", vec!["a"]), ("c", vec!["b"]), ("d", vec!["c", "x"])] {
        let r = post(
            &s,
            "/small/v1/lineage",
            &json!({"artifactId": child, "derivedFrom": parents, "producedBy": {"actor": "agent", "name": "gen", "runId": "r1"}, "at": "2025-01-15T10:00:00Z"}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = post(
        &s,
        "/small/v1/lineage",
        &json!({"artifactId": "a", "derivedFrom": ["d"], "producedBy": {"actor": "agent", "name": "gen"}}),
    );
    assert_eq!(r.status, 422, "cycle");
    let r = s.get("/small/v1/lineage/d/ancestors?depth=2");
    let g = r.json();
    assert_eq!(
        g["nodes"],
        json!([{"id": "c", "depth": 1}, {"id": "x", "depth": 1}, {"id": "b", "depth": 2}])
    );
    let g = s.get("/small/v1/lineage/a/descendants").json();
    assert_eq!(g["nodes"].as_array().unwrap().len(), 3);
    assert_eq!(s.get("/small/v1/lineage/a/descendants?depth=0").status, 400);
    let r = s.get("/small/v1/lineage/d");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["records"][0]["derivedFrom"], json!(["c", "x"]));
    assert_eq!(s.get("/small/v1/lineage/zz").status, 404);

    let id = "article:001";
    let ev = |t: &str, at: &str| json!({"type": t, "at": at});
    let path = format!("/small/v1/lifecycle/{id}/events");
    assert_eq!(
        post(&s, &path, &ev("published", "2025-01-15T09:00:00Z")).status,
        409
    );
    assert_eq!(
        post(&s, &path, &ev("created", "2025-01-15T09:00:00Z")).status,
        201
    );
    assert_eq!(
        post(&s, &path, &ev("created", "2025-01-15T09:00:00Z")).status,
        200
    );
    let r = post(&s, &path, &ev("published", "2025-01-15T10:00:00Z"));
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["error"], json!("conflict"));
    assert_eq!(post(&s, &path, &json!({"type": "nope"})).status, 422);
    let doc = json!({"artifactId": id, "events": [
        ev("created", "2025-01-15T09:00:00Z"), ev("validated", "2025-01-15T09:30:00Z"), ev("published", "2025-01-15T10:00:00Z")
    ]});
    let r = post(&s, "/small/v1/lifecycle", &doc);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["appended"], json!(2));
    assert_eq!(post(&s, "/small/v1/lifecycle", &doc).status, 200);
    let r = s.get(&format!("/small/v1/lifecycle/{id}"));
    assert_eq!(
        r.text(),
        r#"{"artifactId":"article:001","events":[{"at":"2025-01-15T09:00:00Z","type":"created"},{"at":"2025-01-15T09:30:00Z","type":"validated"},{"at":"2025-01-15T10:00:00Z","type":"published"}]}"#
    );
    assert_eq!(s.get("/small/v1/lifecycle/none").status, 404);
}
