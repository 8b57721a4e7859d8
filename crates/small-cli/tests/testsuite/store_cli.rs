//! `small store …` through the real binary, on SQLite files and (when configured) PostgreSQL.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

fn small(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("small").unwrap();
    c.current_dir(dir).env_remove("SMALL_STORE");
    c
}

fn write(dir: &Path, name: &str, v: &Value) -> String {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p.to_string_lossy().into_owned()
}

fn schema() -> Value {
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

fn artifact() -> Value {
    json!({
        "id": "article:001",
        "version": 1,
        "kind": "article",
        "data": {
            "id": "article:001",
            "title": "SMALL Execution Model",
            "content": "SMALL defines five primitives...",
            "publishedAt": "2025-01-15T10:00:00Z"
        },
        "schemaId": "schema:article:v1"
    })
}

/// The seed 003 examples (the artifact's data completed with the `id` its schema requires).
fn seed_dir(dir: &Path) {
    write(dir, "import/schemas/article.json", &schema());
    write(dir, "import/artifacts/article-001.json", &artifact());
    write(
        dir,
        "import/manifest.json",
        &json!({
            "id": "manifest:content-publishing:v1",
            "version": 1,
            "schemas": ["schema:article:v1"],
            "artifacts": ["article:001"],
            "policies": {"deterministic": true, "appendOnly": true, "validationRequired": true}
        }),
    );
    write(
        dir,
        "import/lineage.json",
        &json!({
            "artifactId": "article:001",
            "derivedFrom": ["draft:abc123"],
            "producedBy": {"actor": "agent", "name": "content-generator", "runId": "run_20250115_001"},
            "at": "2025-01-15T10:00:00Z"
        }),
    );
    write(
        dir,
        "import/lifecycle.json",
        &json!({
            "artifactId": "article:001",
            "events": [
                { "type": "created", "at": "2025-01-15T09:00:00Z" },
                { "type": "validated", "at": "2025-01-15T09:30:00Z", "schema": "schema:article:v1" },
                { "type": "published", "at": "2025-01-15T10:00:00Z" }
            ]
        }),
    );
}

fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn default_store_is_an_embedded_file_in_small_cache() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "schema.json", &schema());
    small(t.path())
        .args(["store", "schema", "register", &f])
        .assert()
        .success();
    assert!(t.path().join(".small-cache/store.db").is_file());
    let out = stdout(small(t.path()).args(["store", "schema", "list"]));
    assert!(out.starts_with("schema:article:v1\tv1\t"), "{out}");
}

#[test]
fn schemas_register_once_and_print_back_as_stored() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "schema.json", &schema());
    let out = stdout(small(t.path()).args(["store", "--json", "schema", "register", &f]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["created"], json!(true));
    let out = stdout(small(t.path()).args(["store", "schema", "register", &f]));
    assert!(
        out.starts_with("unchanged schema schema:article:v1"),
        "{out}"
    );
    let stored = stdout(small(t.path()).args(["store", "schema", "get", "schema:article:v1"]));
    assert!(
        stored.starts_with(r#"{"$id":"schema:article:v1","$schema":"#),
        "{stored}"
    );
    let reparsed: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(reparsed, schema());
    let mut changed = schema();
    changed["title"] = json!("Changed");
    let f2 = write(t.path(), "changed.json", &changed);
    small(t.path())
        .args(["store", "schema", "register", &f2])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "already registered with other content",
        ));
    let out = small(t.path())
        .args(["store", "schema", "get", "schema:nope"])
        .assert()
        .code(1);
    let _ = out;
}

#[test]
fn invalid_artifacts_are_refused_with_every_error_located() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), "schema.json", &schema());
    small(t.path())
        .args(["store", "schema", "register", &s])
        .assert()
        .success();
    let mut bad = artifact();
    bad["data"] = json!({"title": "", "publishedAt": "tomorrow"});
    let f = write(t.path(), "bad.json", &bad);
    let out = small(t.path())
        .args(["store", "artifact", "put", &f])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    for path in ["/data/title", "/data/publishedAt", "/data:"] {
        assert!(err.contains(path), "{path} missing in: {err}");
    }
    let out = small(t.path())
        .args(["store", "--json", "artifact", "put", &f])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"], json!("invalid"));
    // Missing required properties are located at the object lacking them, named in the message.
    let messages = v["errors"].to_string();
    for name in ["id", "content"] {
        assert!(
            messages.contains(&format!("\\\"{name}\\\" is a required property")),
            "{messages}"
        );
    }
    let mut paths: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        vec!["/data", "/data", "/data/publishedAt", "/data/title"]
    );
    // Nothing was stored.
    small(t.path())
        .args(["store", "artifact", "get", "article:001"])
        .assert()
        .code(1);
    // Not JSON at all.
    std::fs::write(t.path().join("broken.json"), "{\"id\": ").unwrap();
    small(t.path())
        .args(["store", "artifact", "put", "broken.json"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("not valid JSON"));
}

#[test]
fn artifact_versions_from_stdin_and_listing() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), "schema.json", &schema());
    small(t.path())
        .args(["store", "schema", "register", &s])
        .assert()
        .success();
    let mut a = artifact();
    a.as_object_mut().unwrap().remove("version");
    for title in ["one", "two", "three"] {
        a["data"]["title"] = json!(title);
        small(t.path())
            .args(["store", "artifact", "put", "-"])
            .write_stdin(a.to_string())
            .assert()
            .success()
            .stdout(predicates::str::starts_with("stored artifact article:001"));
    }
    let out = stdout(small(t.path()).args([
        "store",
        "--json",
        "artifact",
        "versions",
        "article:001",
        "--limit",
        "2",
    ]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["items"].as_array().unwrap().len(), 2);
    assert_eq!(v["next"], json!("2"));
    let got =
        stdout(small(t.path()).args(["store", "artifact", "get", "article:001", "--version", "2"]));
    let got: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got["data"]["title"], json!("two"));
    assert_eq!(got["version"], json!(2));
    // Versions are immutable.
    let mut v1 = artifact();
    v1["data"]["title"] = json!("rewritten");
    small(t.path())
        .args(["store", "artifact", "put", "-"])
        .write_stdin(v1.to_string())
        .assert()
        .code(1)
        .stderr(predicates::str::contains("immutable"));
}

#[test]
fn lifecycle_and_lineage_commands() {
    let t = tempfile::tempdir().unwrap();
    let id = "article:9";
    small(t.path())
        .args(["store", "lifecycle", "append", id, "--type", "published"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("first event must be `created`"));
    small(t.path())
        .args([
            "store",
            "lifecycle",
            "append",
            id,
            "--type",
            "created",
            "--at",
            "2025-01-15T09:00:00Z",
        ])
        .assert()
        .success();
    small(t.path())
        .args([
            "store",
            "lifecycle",
            "append",
            id,
            "--type",
            "published",
            "--at",
            "2025-01-15T10:00:00Z",
        ])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("requires an earlier `validated`"));
    small(t.path())
        .args([
            "store",
            "lifecycle",
            "append",
            id,
            "--type",
            "validated",
            "--at",
            "2025-01-15T09:30:00Z",
        ])
        .assert()
        .success();
    small(t.path())
        .args([
            "store",
            "lifecycle",
            "append",
            id,
            "--type",
            "archived",
            "--at",
            "2025-01-16T00:00:00Z",
        ])
        .assert()
        .success();
    small(t.path())
        .args(["store", "lifecycle", "append", id, "--type", "validated"])
        .assert()
        .code(1);
    let out = stdout(small(t.path()).args(["store", "lifecycle", "get", id]));
    assert_eq!(
        out.trim_end(),
        r#"{"artifactId":"article:9","events":[{"at":"2025-01-15T09:00:00Z","type":"created"},{"at":"2025-01-15T09:30:00Z","type":"validated"},{"at":"2025-01-16T00:00:00Z","type":"archived"}]}"#
    );

    for (child, parent) in [("b", "a"), ("c", "b"), ("d", "c")] {
        small(t.path())
            .args(["store", "lineage", "append", "-"])
            .write_stdin(
                json!({"artifactId": child, "derivedFrom": [parent], "producedBy": {"actor": "agent", "name": "gen"}, "at": "2025-01-15T10:00:00Z"})
                    .to_string(),
            )
            .assert()
            .success();
    }
    let out = stdout(small(t.path()).args(["store", "lineage", "ancestors", "d", "--depth", "2"]));
    assert_eq!(out, "1\tc\n2\tb\n");
    let out = stdout(small(t.path()).args(["store", "--json", "lineage", "descendants", "a"]));
    let g: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(g["nodes"].as_array().unwrap().len(), 3);
    assert_eq!(g["edges"].as_array().unwrap().len(), 3);
    let out = stdout(small(t.path()).args(["store", "lineage", "get", "b"]));
    assert!(
        out.starts_with(r#"{"artifactId":"b","at":"2025-01-15T10:00:00Z","derivedFrom":["a"]"#),
        "{out}"
    );
}

fn import_roundtrip(dir: &Path, store: &str) {
    seed_dir(dir);
    let out = stdout(small(dir).args(["store", "--store", store, "--json", "import", "import"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(v["records"]["schema"]["stored"], json!(1));
    assert_eq!(v["records"]["artifact"]["stored"], json!(1));
    assert_eq!(v["records"]["manifest"]["stored"], json!(1));
    assert_eq!(v["records"]["lineage"]["stored"], json!(1));
    assert_eq!(v["records"]["lifecycle"]["stored"], json!(3));
    // Importing again changes nothing.
    let out = stdout(small(dir).args(["store", "--store", store, "import", "import"]));
    assert!(
        out.contains("0 records stored, 7 unchanged, 0 failed"),
        "{out}"
    );
    let m = stdout(small(dir).args([
        "store",
        "--store",
        store,
        "manifest",
        "get",
        "manifest:content-publishing:v1",
    ]));
    assert_eq!(
        m.trim_end(),
        r#"{"artifacts":["article:001"],"id":"manifest:content-publishing:v1","policies":{"appendOnly":true,"deterministic":true,"validationRequired":true},"schemas":["schema:article:v1"],"version":1}"#
    );
    // A bad file is reported, the rest is imported, the exit code says so.
    write(dir, "import/zz-bad.json", &json!({"hello": "world"}));
    let out = small(dir)
        .args(["store", "--store", store, "import", "import"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("zz-bad.json"));
}

#[test]
fn import_a_directory_on_sqlite() {
    let t = tempfile::tempdir().unwrap();
    import_roundtrip(t.path(), "db/custom.db");
    assert!(t.path().join("db/custom.db").is_file());
}

#[test]
fn import_a_directory_on_postgres() {
    let Some(url) = small_testkit::postgres_url() else {
        return;
    };
    // A schema of its own, selected through the connection string.
    let schema = format!("t_cli_import_{}", std::process::id());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))
    .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    let t = tempfile::tempdir().unwrap();
    import_roundtrip(t.path(), &store);
    let n: i64 = c
        .query_one(
            &format!("SELECT COUNT(*) FROM {schema}.small_versions"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 2, "artifact and manifest versions are in PostgreSQL");
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

#[test]
fn unreachable_postgres_is_a_usage_error() {
    let t = tempfile::tempdir().unwrap();
    small(t.path())
        .args([
            "store",
            "--store",
            "postgres://nobody:secret@127.0.0.1:1/none",
            "schema",
            "list",
        ])
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("cannot connect to PostgreSQL")
                .and(predicates::str::contains("secret").not()),
        );
}
