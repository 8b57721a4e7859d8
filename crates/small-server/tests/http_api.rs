//! The HTTP API through the real stack: a server bound to an ephemeral loopback port, plain
//! HTTP/1.1 over TCP, every response checked against our OpenAPI document.

mod common;

use common::{config, raw_exchange, TestServer};
use serde_json::{json, Value};
use small_server::StoreLocation;
use std::time::Duration;

const SEED: &[u8] =
    br#"{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":1}}"#;
const SEED_ID: &str = "LhKhb9nluL3hYsKIjYUQox1aLPTfL_-oefVbJLnA0XU";

#[test]
fn protocol_document_is_the_seed_contract() {
    let s = TestServer::memory();
    let r = s.get("/protocol/small/v1");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json(),
        json!({
          "protocol": "SMALL",
          "version": "1.0.0",
          "primitives": ["Schema", "Manifest", "Artifact", "Lineage", "Lifecycle"],
          "rules": {
            "materializationRequiresValidation": true,
            "artifactsAreImmutable": true,
            "lineageIsAppendOnly": true,
            "lifecycleIsEventBased": true,
            "explicitContractsOnly": true
          },
          "schemas": {
            "schema": "/schemas/small/v1/schema.schema.json",
            "manifest": "/schemas/small/v1/manifest.schema.json",
            "artifact": "/schemas/small/v1/artifact.schema.json",
            "lineage": "/schemas/small/v1/lineage.schema.json",
            "lifecycle": "/schemas/small/v1/lifecycle.schema.json"
          }
        })
    );
    // Every schema location the contract names is served.
    for (_, loc) in r.json()["schemas"].as_object().unwrap() {
        let sr = s.get(loc.as_str().unwrap());
        assert_eq!(sr.status, 200, "{loc}");
    }
}

#[test]
fn schemas_by_name_and_file_name() {
    let s = TestServer::memory();
    for name in [
        "schema",
        "manifest",
        "artifact",
        "lineage",
        "lifecycle",
        "intent",
        "constraints",
        "plan",
        "progress",
        "handoff",
    ] {
        let a = s.get(&format!("/schemas/small/v1/{name}"));
        let b = s.get(&format!("/schemas/small/v1/{name}.schema.json"));
        assert_eq!((a.status, b.status), (200, 200), "{name}");
        assert_eq!(a.body, b.body);
        assert_eq!(a.header("content-type"), Some("application/schema+json"));
        let schema = a.json();
        // Each one is a usable JSON Schema.
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // The manifest schema agrees with the validator on the seed manifest.
    let m = s.get("/schemas/small/v1/manifest").json();
    let v = jsonschema::validator_for(&m).unwrap();
    assert!(v.is_valid(&json!({"artifact":"track.audio","schema":"artifact.v1","version":1})));
    assert!(!v.is_valid(&json!({"artifact":"track.audio","schema":"artifact.v1","version":"1"})));

    let r = s.get("/schemas/small/v1/nope");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "not_found");
    assert!(r.json()["message"].as_str().unwrap().contains("manifest"));
    assert_eq!(s.get("/schemas/small/v1/nope.schema.json").status, 404);
}

#[test]
fn openapi_and_health() {
    let s = TestServer::memory();
    let r = s.get("/openapi/small.v1.yaml");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/yaml"));
    assert_eq!(r.text(), small_server::openapi::document());
    let doc = common::openapi();
    for p in [
        "/protocol/small/v1",
        "/schemas/small/v1/{name}",
        "/small/v1/validate-manifest",
        "/small/v1/replay",
        "/openapi/small.v1.yaml",
        "/healthz",
    ] {
        assert!(doc["paths"].get(p).is_some(), "{p} documented");
    }
    let h = s.get("/healthz");
    assert_eq!((h.status, h.json()), (200, json!({"status": "ok"})));
}

#[test]
fn validate_manifest_seed_example() {
    let s = TestServer::memory();
    let r = s.post_json("/small/v1/validate-manifest", SEED);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.text(),
        format!(r#"{{"valid":true,"replayId":"{SEED_ID}","errors":[]}}"#)
    );
    let bad = s.post_json(
        "/small/v1/validate-manifest",
        br#"{"manifest":{"artifact":1}}"#,
    );
    assert_eq!(bad.status, 200);
    assert_eq!(
        bad.json(),
        json!({"valid": false, "errors": [
            {"instancePath": "", "message": "must have required property 'schema'"},
            {"instancePath": "", "message": "must have required property 'version'"},
            {"instancePath": "/artifact", "message": "must be string"}]})
    );
    // Media type parameters and +json types are fine.
    let r = s.call(
        "POST",
        "/small/v1/validate-manifest",
        Some("application/json; charset=utf-8"),
        SEED,
    );
    assert_eq!(r.status, 200);
}

#[test]
fn error_paths_share_one_shape() {
    let s = TestServer::memory();
    let shape = |r: &common::Response, status: u16, code: &str| {
        assert_eq!(r.status, status, "{}", r.text());
        let j = r.json();
        assert_eq!(j["status"], status);
        assert_eq!(j["error"], code, "{j}");
        assert!(!j["message"].as_str().unwrap().is_empty());
        assert_eq!(r.header("content-type"), Some("application/json"));
    };
    for path in ["/small/v1/validate-manifest", "/small/v1/replay"] {
        // Malformed JSON names the position.
        let r = s.post_json(path, b"{\n  \"manifest\": {,}\n}");
        shape(&r, 400, "invalid_json");
        assert_eq!(
            r.json()["position"],
            json!({"line": 2, "column": 16, "offset": 17})
        );
        assert!(r.json()["message"]
            .as_str()
            .unwrap()
            .contains("line 2, column 16"));
        shape(&s.post_json(path, b""), 400, "invalid_json");
        shape(&s.post_json(path, b"[1]"), 400, "body_not_object");
        shape(
            &s.post_json(path, b"{\"a\":\"\xff\"}"),
            400,
            "invalid_encoding",
        );
        let deep = format!(
            "{{\"manifest\":{{\"metadata\":{}{}}}}}",
            "[".repeat(3000),
            "]".repeat(3000)
        );
        shape(&s.post_json(path, deep.as_bytes()), 400, "too_deep");
        // Wrong or missing media type.
        shape(
            &s.call("POST", path, Some("text/plain"), SEED),
            415,
            "unsupported_media_type",
        );
        shape(
            &s.call("POST", path, None, SEED),
            415,
            "unsupported_media_type",
        );
        // Too large: declared and streamed (chunked) bodies alike.
        let big = vec![b' '; 1024 * 1024 + 1];
        shape(&s.post_json(path, &big), 413, "payload_too_large");
        let mut chunked = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        .into_bytes();
        for _ in 0..20 {
            chunked.extend_from_slice(format!("{:x}\r\n", 65536).as_bytes());
            chunked.extend_from_slice(&vec![b' '; 65536]);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let r = raw_exchange(s.addr, &chunked);
        common::check_against_openapi("POST", path, &r);
        shape(&r, 413, "payload_too_large");
        // Wrong method: 405 with Allow.
        let r = s.call("GET", path, None, b"");
        shape(&r, 405, "method_not_allowed");
        assert_eq!(r.header("allow"), Some("POST"));
    }
    let r = s.call(
        "POST",
        "/protocol/small/v1",
        Some("application/json"),
        b"{}",
    );
    shape(&r, 405, "method_not_allowed");
    assert!(r.header("allow").unwrap().contains("GET"));
    shape(
        &s.call("DELETE", "/healthz", None, b""),
        405,
        "method_not_allowed",
    );
    // Unknown routes.
    shape(&s.get("/nope"), 404, "not_found");
    shape(&s.get("/small/v1"), 404, "not_found");
    shape(
        &s.call("POST", "/small/v1/nope", Some("application/json"), b"{}"),
        404,
        "not_found",
    );
}

#[test]
fn body_limit_is_configurable() {
    let mut c = config(StoreLocation::Memory);
    c.body_limit = 64;
    let s = TestServer::start(c);
    assert_eq!(
        s.post_json("/small/v1/validate-manifest", &[b' '; 65])
            .status,
        413
    );
    assert_eq!(
        s.post_json("/small/v1/validate-manifest", br#"{"manifest":1}"#)
            .status,
        200
    );
}

#[test]
fn slow_requests_time_out() {
    let mut c = config(StoreLocation::Memory);
    c.request_timeout = Duration::from_millis(300);
    let s = TestServer::start(c);
    // Promise a body and never send it.
    let started = std::time::Instant::now();
    let r = raw_exchange(
        s.addr,
        b"POST /small/v1/validate-manifest HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    );
    common::check_against_openapi("POST", "/small/v1/validate-manifest", &r);
    assert_eq!(r.status, 408);
    assert_eq!(r.json()["error"], "request_timeout");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn replay_is_idempotent_and_matches_the_contract() {
    let s = TestServer::memory();
    let first = s.post_json("/small/v1/replay", SEED);
    assert_eq!(first.status, 200, "{}", first.text());
    let j = first.json();
    assert_eq!(j["replayId"], SEED_ID);
    assert_eq!(j["valid"], true);
    assert_eq!(j["errors"], json!([]));
    assert_eq!(j["lineage"]["artifact"], "track.audio");
    assert_eq!(j["lineage"]["derivedFrom"], "artifact.v1");
    assert_eq!(j["lineage"]["replayId"], SEED_ID);
    let at = j["lineage"]["generatedAt"].clone();
    assert_eq!(
        j["lifecycle"],
        json!([
            {"type": "validated", "at": at, "replayId": SEED_ID},
            {"type": "materialized", "at": at, "replayId": SEED_ID}
        ])
    );
    std::thread::sleep(Duration::from_millis(20));
    // Same manifest, other key order and whitespace: the same bytes.
    let again = s.post_json(
        "/small/v1/replay",
        br#"{ "manifest": {"version": 1.0, "schema": "artifact.v1", "artifact": "track.audio"}, "protocolVersion": "1.0.0" }"#,
    );
    assert_eq!(again.status, 200);
    assert_eq!(again.body, first.body);
    // The validate endpoint agrees on the ID.
    assert_eq!(
        s.post_json("/small/v1/validate-manifest", SEED).json()["replayId"],
        SEED_ID
    );
    // A different version is a different replay.
    let other = s.post_json(
        "/small/v1/replay",
        br#"{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":2}}"#,
    );
    assert_ne!(other.json()["replayId"], SEED_ID);
}

#[test]
fn replay_rejections() {
    let s = TestServer::memory();
    let r = s.post_json(
        "/small/v1/replay",
        br#"{"manifest":{"artifact":"a","schema":"s","version":1}}"#,
    );
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json(),
        json!({"valid": false, "errors": [{"instancePath": "", "message": "must have required property 'protocolVersion'"}]})
    );
    let r = s.post_json(
        "/small/v1/replay",
        br#"{"protocolVersion":"2.0.0","manifest":{"artifact":"a","schema":"s","version":1}}"#,
    );
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["errors"][0]["message"],
        "Unsupported protocol version: 2.0.0. Supported versions: 1.0.0"
    );
    let r = s.post_json(
        "/small/v1/replay",
        br#"{"protocolVersion":"1.0.0","manifest":{"artifact":"a"}}"#,
    );
    assert_eq!(r.status, 422);
    assert_eq!(r.json()["errors"].as_array().unwrap().len(), 2);
    assert!(r.json().get("lineage").is_none());
}

#[test]
fn concurrent_first_replays_record_once() {
    let s = TestServer::start(config(StoreLocation::Memory));
    let dir = tempfile::tempdir().unwrap();
    let sq = TestServer::start(config(StoreLocation::Sqlite(dir.path().join("store.db"))));
    for server in [&s, &sq] {
        let addr = server.addr;
        let body = br#"{"protocolVersion":"1.0.0","manifest":{"artifact":"race","schema":"s","version":1}}"#;
        let handles: Vec<_> = (0..16)
            .map(|_| {
                std::thread::spawn(move || {
                    common::raw_request(
                        addr,
                        "POST",
                        "/small/v1/replay",
                        Some("application/json"),
                        body,
                    )
                })
            })
            .collect();
        let bodies: Vec<Vec<u8>> = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .map(|r| {
                assert_eq!(r.status, 200);
                r.body
            })
            .collect();
        assert!(
            bodies.iter().all(|b| *b == bodies[0]),
            "all concurrent first replays see one record"
        );
    }
}

#[test]
fn replay_survives_a_restart_with_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/store.db");
    let s1 = TestServer::start(config(StoreLocation::Sqlite(path.clone())));
    let first = s1.post_json("/small/v1/replay", SEED);
    assert_eq!(first.status, 200);
    s1.stop();
    std::thread::sleep(Duration::from_millis(50));
    let s2 = TestServer::start(config(StoreLocation::Sqlite(path)));
    let second = s2.post_json("/small/v1/replay", SEED);
    assert_eq!(second.status, 200);
    assert_eq!(second.body, first.body, "byte for byte after a restart");
    // A memory store starts empty: new timestamps are allowed there, the ID is the same.
    let m = TestServer::memory();
    assert_eq!(
        m.post_json("/small/v1/replay", SEED).json()["replayId"],
        SEED_ID
    );
}

#[test]
fn lone_surrogates_and_infinities_survive_replay() {
    let s = TestServer::memory();
    let body = br#"{"protocolVersion":"1.0.0","manifest":{"artifact":"\ud800x","schema":"s\udfff","version":1,"metadata":{"n":1e400}}}"#;
    let r = s.post_json("/small/v1/replay", body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text()
            .contains(r#""artifact":"\ud800x","derivedFrom":"s\udfff""#),
        "{}",
        r.text()
    );
    let v = s.post_json("/small/v1/validate-manifest", body).json();
    assert_eq!(v["replayId"], r.json()["replayId"]);
}

#[test]
fn every_api_vector_through_http() {
    let Some(dir) = common::api_vectors_dir() else {
        return;
    };
    let mut c = config(StoreLocation::Memory);
    c.body_limit = 4 * 1024 * 1024;
    let s = TestServer::start(c);
    let mut n = 0;
    for file in ["vectors.jsonl", "fuzz-1-unicode.jsonl"] {
        let text = std::fs::read(dir.join(file)).unwrap();
        for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            // Vector files may hold lone surrogates: read them with the JavaScript-exact parser.
            let v = small_core::ops::formats::canonical::parse(line).unwrap();
            let name = v
                .get("name")
                .and_then(|x| x.as_js_str())
                .unwrap()
                .to_string_lossy();
            let body = v
                .get("request_body")
                .and_then(|x| x.as_js_str())
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned();
            let expected = v.get("expected").unwrap();
            let r = s.post_json("/small/v1/validate-manifest", body.as_bytes());
            if let Some(small_core::ops::formats::canonical::Value::String(kind)) =
                expected.get("requestError")
            {
                // Oracle-defined bodies (not an object): our documented 400.
                assert_eq!(kind.as_str(), Some("body_not_object"), "{name}");
                assert_eq!(r.status, 400, "{name}");
                assert_eq!(r.json()["error"], "body_not_object", "{name}");
                n += 1;
                continue;
            }
            assert_eq!(r.status, 200, "{name}: {}", r.text());
            let got = small_core::ops::formats::canonical::parse(&r.body).unwrap();
            assert_eq!(got.get("valid"), expected.get("valid"), "{name}");
            assert_eq!(got.get("errors"), expected.get("errors"), "{name}");
            match expected.get("replayId") {
                Some(small_core::ops::formats::canonical::Value::String(id)) => assert_eq!(
                    got.get("replayId").and_then(|x| x.as_js_str()),
                    Some(id),
                    "{name}"
                ),
                _ => assert!(got.get("replayId").is_none(), "{name}"),
            }
            n += 1;
        }
    }
    assert_eq!(n, 2421);
}

#[test]
fn json_body_helper_rejects_and_accepts_media_types() {
    use axum::http::{header, HeaderMap, HeaderValue};
    let mut h = HeaderMap::new();
    assert!(!small_server::body::is_json_content_type(&h));
    for (ct, ok) in [
        ("application/json", true),
        ("Application/JSON; charset=utf-8", true),
        ("application/merge-patch+json", true),
        ("text/json", false),
        ("application/jsonx", false),
    ] {
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
        assert_eq!(small_server::body::is_json_content_type(&h), ok, "{ct}");
    }
    let _: Value = json!(null);
}

#[test]
fn graceful_shutdown_finishes_requests_in_flight() {
    use std::io::{Read, Write};
    let s = TestServer::memory();
    let addr = s.addr;
    // Start a request and send only half of its body.
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST /small/v1/validate-manifest HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        SEED.len()
    );
    conn.write_all(head.as_bytes()).unwrap();
    conn.write_all(&SEED[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // Shut down (stop() waits for the server to finish) while the request is in flight.
    let stopper = std::thread::spawn(move || s.stop());
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !stopper.is_finished(),
        "shutdown waits for the request in flight"
    );
    conn.write_all(&SEED[10..]).unwrap();
    let mut resp = Vec::new();
    conn.read_to_end(&mut resp).unwrap();
    let r = common::parse_response(&resp);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains(SEED_ID));
    stopper.join().unwrap();
}

#[test]
fn errors_never_quote_a_credential_back() {
    let s = TestServer::memory();
    // Built from parts so that the source holds no scanner-shaped credential.
    let token = ["ghp", "_", "0123456789abcdefghijABCDEFGHIJ012345"].concat();
    let hidden = &token[4..];
    // An unsupported protocolVersion is quoted by the error: a token pasted there is masked.
    let body = format!(
        r#"{{"protocolVersion":"{token}","manifest":{{"artifact":"a","schema":"s","version":1}}}}"#
    );
    let r = s.post_json("/small/v1/validate-manifest", body.as_bytes());
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["valid"], json!(false));
    let msg = v["errors"][0]["message"].as_str().unwrap();
    assert!(!r.text().contains(hidden), "{}", r.text());
    assert!(
        msg.starts_with("Unsupported protocol version: ghp_…[36 chars redacted]"),
        "{msg}"
    );
    let r = s.post_json("/small/v1/replay", body.as_bytes());
    assert_eq!(r.status, 422);
    assert!(!r.text().contains(hidden), "{}", r.text());
    // A route that does not exist is quoted by the 404.
    let r = s.get(&format!("/small/v1/{token}"));
    assert_eq!(r.status, 404);
    assert!(!r.text().contains(hidden), "{}", r.text());
    assert!(r.text().contains("ghp_…["), "{}", r.text());
    // Ordinary values are quoted as they are.
    let r = s.post_json(
        "/small/v1/validate-manifest",
        br#"{"protocolVersion":"2.0.0","manifest":{"artifact":"a","schema":"s","version":1}}"#,
    );
    assert!(
        r.text().contains("Unsupported protocol version: 2.0.0"),
        "{}",
        r.text()
    );
}
