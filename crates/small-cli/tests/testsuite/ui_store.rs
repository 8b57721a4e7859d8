//! `small ui --store`: the primitives store on the page, read-only (SQLite, and PostgreSQL
//! when `SMALL_TEST_POSTGRES_URL` names a server).

use std::process::Command;

use serde_json::json;
use small_store::PrimitiveStore;

use crate::ui_http::{small, UiServer};

const BIN: &str = env!("CARGO_BIN_EXE_small");

/// A store with a derivation chain a → b → c (c also from a), lifecycle events on a, and an
/// artifact whose data, kind, producer and notes hold XSS payloads.
pub fn fill(s: &dyn PrimitiveStore) {
    s.register_schema(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "doc", "type": "object"
    }))
    .unwrap();
    for id in ["dataset-a", "summary-b", "report-c"] {
        s.put_artifact(&json!({"id": id, "kind": "doc", "schemaId": "doc", "data": {"title": id}}))
            .unwrap();
    }
    s.put_artifact(&json!({
        "id": "evil<img>",
        "kind": "<script>window.__xss=11</script>",
        "schemaId": "doc",
        "data": {"t": "<img src=x onerror=\"window.__xss=12\">"}
    }))
    .unwrap();
    let by = |name: &str| json!({"actor": "agent", "name": name});
    s.append_lineage(&json!({"artifactId": "summary-b", "derivedFrom": ["dataset-a"], "producedBy": by("summarise")}))
        .unwrap();
    s.append_lineage(&json!({"artifactId": "report-c", "derivedFrom": ["dataset-a", "summary-b"], "producedBy": by("write-report")}))
        .unwrap();
    s.append_lineage(&json!({"artifactId": "evil<img>", "derivedFrom": ["report-c"], "producedBy": by("<script>window.__xss=13</script>")}))
        .unwrap();
    for (t, at, note) in [
        ("created", "2025-01-01T00:00:00Z", "first"),
        ("validated", "2025-01-02T00:00:00Z", "checked"),
        (
            "published",
            "2025-01-03T00:00:00Z",
            "<img src=x onerror=\"window.__xss=14\">",
        ),
    ] {
        s.append_lifecycle("dataset-a", &json!({"type": t, "at": at, "note": note}))
            .unwrap();
    }
}

fn no_raw_payload(body: &str) {
    assert!(!body.contains("<script>window"), "{body}");
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(!body.contains("evil<img>"), "{body}");
}

fn check_pages(ui: &UiServer) {
    let r = ui.get("/store");
    assert_eq!(r.status, 200, "{}", r.body);
    no_raw_payload(&r.body);
    // A node per artifact, an edge per derivation.
    assert_eq!(r.body.matches("<a class=\"node ").count(), 4, "{}", r.body);
    for (from, to) in [
        ("dataset-a", "summary-b"),
        ("dataset-a", "report-c"),
        ("summary-b", "report-c"),
        ("report-c", "evil&lt;img&gt;"),
    ] {
        assert!(
            r.body
                .contains(&format!("data-from=\"{from}\" data-to=\"{to}\"")),
            "edge {from} -> {to}"
        );
    }
    assert!(r.body.contains("validated") || r.body.contains("published (3 events)"));
    // An artifact's lifecycle, oldest first, and its lineage records.
    let a = ui.get("/store/artifact?id=dataset-a");
    assert_eq!(a.status, 200, "{}", a.body);
    let (c, v, p) = (
        a.body.find("data-event=\"created\"").unwrap(),
        a.body.find("data-event=\"validated\"").unwrap(),
        a.body.find("data-event=\"published\"").unwrap(),
    );
    assert!(c < v && v < p);
    assert!(a.body.contains("checked"));
    no_raw_payload(&a.body);
    let e = ui.get("/store/artifact?id=evil%3Cimg%3E");
    assert_eq!(e.status, 200, "{}", e.body);
    no_raw_payload(&e.body);
    assert!(e.body.contains("&lt;script&gt;window.__xss=13"));
    let r = ui.get("/store/artifact?id=report-c");
    assert!(r.body.contains("write-report"));
    assert_eq!(ui.get("/store/artifact?id=nope").status, 404);
    assert_eq!(ui.get("/store/fragment").status, 200);
}

#[test]
fn the_store_page_shows_lineage_and_lifecycle_escaped() {
    let d = tempfile::tempdir().unwrap();
    small(d.path(), &["init", "--intent", "x", "--task", "a"]);
    let db = d.path().join("primitives.db");
    fill(small_store::open(db.to_str().unwrap()).unwrap().as_ref());
    let before = std::fs::read(&db).unwrap();
    let ui = UiServer::start(&["--store", db.to_str().unwrap()], d.path());
    check_pages(&ui);
    // The workspace pages link to the store.
    let w = ui.get("/w/0/");
    assert!(w.body.contains("href=\"/store\""));
    // Read-only: every other method refused, and the file unchanged.
    assert_eq!(ui.request("POST", "/store", Some(&ui.host())).status, 405);
    drop(ui);
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn the_artifact_list_is_paged() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("many.db");
    {
        let s = small_store::open(db.to_str().unwrap()).unwrap();
        s.register_schema(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "doc", "type": "object"
        }))
        .unwrap();
        for i in 0..60 {
            s.put_artifact(
                &json!({"id": format!("art-{i:03}"), "kind": "doc", "schemaId": "doc", "data": {}}),
            )
            .unwrap();
        }
    }
    // No workspace here: the store alone.
    let ui = UiServer::start(&["--store", db.to_str().unwrap()], d.path());
    let r = ui.get("/");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/store"));
    let r = ui.get("/store");
    assert_eq!(r.body.matches("<tr data-artifact=").count(), 50);
    let row = |id: &str| format!("<tr data-artifact=\"{id}\"");
    assert!(r.body.contains(&row("art-049")) && !r.body.contains(&row("art-050")));
    let next = r.body.split("rel=\"next\" href=\"").nth(1).unwrap();
    let next = next.split('"').next().unwrap().replace("&amp;", "&");
    let r = ui.get(&next);
    assert_eq!(r.body.matches("<tr data-artifact=").count(), 10);
    assert!(r.body.contains(&row("art-059")) && !r.body.contains(&row("art-049")));
}

#[test]
fn a_missing_store_is_refused_and_never_created() {
    let d = tempfile::tempdir().unwrap();
    small(d.path(), &["init", "--intent", "x", "--task", "a"]);
    let missing = d.path().join("nope").join("store.db");
    let out = Command::new(BIN)
        .args(["ui", "--store", missing.to_str().unwrap()])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot open the store"), "{err}");
    assert!(!missing.exists() && !d.path().join("nope").exists());
    // A file that is not a store is refused too, and left as it was.
    let other = d.path().join("other.db");
    std::fs::write(&other, "not a database").unwrap();
    let out = Command::new(BIN)
        .args(["ui", "--store", other.to_str().unwrap()])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "not a database");
}

#[test]
fn a_store_write_is_pushed_as_an_event() {
    use std::io::{BufRead, BufReader, Write};
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("live.db");
    let s = small_store::open(db.to_str().unwrap()).unwrap();
    fill(s.as_ref());
    let ui = UiServer::start(&["--store", db.to_str().unwrap()], d.path());
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", ui.port)).unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(sock, "GET /events HTTP/1.1\r\nHost: {}\r\n\r\n", ui.host()).unwrap();
    let mut reader = BufReader::new(sock);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0);
        if line.contains("event: ready") {
            break;
        }
    }
    s.put_artifact(&json!({"id": "late", "kind": "doc", "schemaId": "doc", "data": {}}))
        .unwrap();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "stream ended");
        if line.starts_with("data:") && line.contains("\"store\"") {
            assert!(line.contains("\"ws\":\"store\""), "{line}");
            break;
        }
    }
    assert!(ui.get("/store").body.contains("late"));
}

#[test]
fn the_store_page_reads_postgres() {
    let Some(url) = small_testkit::postgres_url() else {
        return;
    };
    let schema = format!("t_ui_store_{}", std::process::id());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))
    .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    fill(small_store::open(&store).unwrap().as_ref());
    let d = tempfile::tempdir().unwrap();
    let ui = UiServer::start(&["--store", &store], d.path());
    check_pages(&ui);
    drop(ui);
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}
