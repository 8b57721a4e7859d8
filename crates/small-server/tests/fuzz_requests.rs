//! Fuzzing the HTTP API's handlers: damaged, hostile and random requests to every route,
//! straight through the application (no socket), asserting that every request gets an answer
//! in bounded time, that no answer is a 500 (a panic in a handler, caught by the server, or
//! an internal error), and that every refusal is JSON: the error shape, or the contract's
//! `{valid: false, errors}` for manifests.
//!
//! Bodies start from valid requests of each route and are damaged the way clients and
//! attackers damage them: bytes cut or inserted, the JSON truncated, values replaced by other
//! types, huge numbers, deep nesting, long strings, invalid UTF-8, lone surrogates. Paths
//! carry odd ids (traversal, percent-escapes, NUL, long ids, unicode).

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use small_server::{router, AppState, StoreLocation};
use tower::ServiceExt as _;

/// Valid requests, one per route that takes a body, to damage.
const BODIES: &[(&str, &str)] = &[
    (
        "/small/v1/validate-manifest",
        r#"{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":1}}"#,
    ),
    (
        "/small/v1/replay",
        r#"{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":1,"metadata":{"n":1}}}"#,
    ),
    (
        "/small/v1/schemas",
        r#"{"$id":"schema:article:v1","$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","required":["id","title"],"properties":{"id":{"type":"string"},"title":{"type":"string","minLength":1},"publishedAt":{"type":"string","format":"date-time"}}}"#,
    ),
    (
        "/small/v1/artifacts",
        r#"{"id":"article:001","kind":"article","schemaId":"schema:article:v1","version":1,"data":{"id":"article:001","title":"T","publishedAt":"2025-01-15T10:00:00Z"}}"#,
    ),
    (
        "/small/v1/manifests",
        r#"{"id":"manifest:m:v1","version":1,"schemas":["schema:article:v1"],"artifacts":["article:001@1"],"policies":{"deterministic":true,"appendOnly":true,"validationRequired":true}}"#,
    ),
    (
        "/small/v1/lineage",
        r#"{"artifactId":"b","derivedFrom":["a"],"producedBy":{"actor":"agent","name":"gen","runId":"r1"},"at":"2025-01-15T10:00:00Z"}"#,
    ),
    (
        "/small/v1/lifecycle",
        r#"{"artifactId":"article:001","events":[{"type":"created","at":"2025-01-15T09:00:00Z"},{"type":"validated","at":"2025-01-15T09:30:00Z"}]}"#,
    ),
    (
        "/small/v1/lifecycle/article:001/events",
        r#"{"type":"published","at":"2025-01-15T10:00:00Z"}"#,
    ),
    (
        "/small/v1/artifacts/article:001/versions/2",
        r#"{"id":"article:001","kind":"article","schemaId":"schema:article:v1","data":{"id":"article:001","title":"U"}}"#,
    ),
    (
        "/small/v1/manifests/manifest:m:v1/versions/2",
        r#"{"id":"manifest:m:v1","schemas":["schema:article:v1"],"artifacts":["article:001@1"]}"#,
    ),
];

/// Routes read with GET; `{id}` is replaced by a drawn id.
const GETS: &[&str] = &[
    "/protocol/small/v1",
    "/schemas/small/v1/{id}",
    "/openapi/small.v1.yaml",
    "/healthz",
    "/small/v1/schemas",
    "/small/v1/schemas/{id}",
    "/small/v1/artifacts?limit={id}&cursor={id}",
    "/small/v1/artifacts/{id}",
    "/small/v1/artifacts/{id}/versions",
    "/small/v1/artifacts/{id}/versions/{id}",
    "/small/v1/manifests/{id}",
    "/small/v1/manifests/{id}/versions/{id}",
    "/small/v1/lineage/{id}",
    "/small/v1/lineage/{id}/ancestors?depth={id}",
    "/small/v1/lineage/{id}/descendants?depth={id}",
    "/small/v1/lifecycle/{id}",
];

/// Ids put into paths: ordinary, hostile and odd.
const IDS: &[&str] = &[
    "article:001",
    "a",
    "..",
    "..%2F..%2Fetc%2Fpasswd",
    "%00",
    "%ff%fe",
    "%C3%A9t%C3%A9",
    "0",
    "-1",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e9",
    "%20",
    "article:001@2",
    "schema:article:v1",
    "manifest.v1.json",
    "%7B%7D",
    "a%2Fb",
];

/// What is put into a body.
const INSERTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    "\\u",
    "\\ud800",
    "null",
    "true",
    "1e999",
    "-0",
    "1.5",
    "\u{0}",
    "\u{feff}",
    "é",
    "\"x\":",
    "[[[[[[[[",
    "{\"a\":",
    "NaN",
    "Infinity",
    "123456789012345678901234567890",
];

#[derive(Debug, Clone)]
enum Damage {
    Truncate(Index),
    Cut(Index, u8),
    Insert(Index, Index),
    Bytes(Index, Vec<u8>),
    /// Replace the whole body by something else entirely.
    Replace(u8),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        1 => any::<Index>().prop_map(Damage::Truncate),
        1 => (any::<Index>(), 1u8..20).prop_map(|(a, n)| Damage::Cut(a, n)),
        3 => (any::<Index>(), any::<Index>()).prop_map(|(a, w)| Damage::Insert(a, w)),
        1 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(a, b)| Damage::Bytes(a, b)),
        1 => (0u8..8).prop_map(Damage::Replace),
    ]
}

fn apply(d: &Damage, body: &mut Vec<u8>) {
    let at = |i: &Index, len: usize| i.index(len + 1);
    match d {
        Damage::Truncate(i) => body.truncate(at(i, body.len())),
        Damage::Cut(i, n) => {
            let from = at(i, body.len()).min(body.len());
            let to = (from + usize::from(*n)).min(body.len());
            body.drain(from..to);
        }
        Damage::Insert(i, w) => {
            let p = at(i, body.len());
            let text = INSERTS[w.index(INSERTS.len())].as_bytes();
            body.splice(p..p, text.iter().copied());
        }
        Damage::Bytes(i, b) => {
            let p = at(i, body.len());
            body.splice(p..p, b.iter().copied());
        }
        Damage::Replace(k) => {
            *body = match k {
                0 => Vec::new(),
                1 => b"[]".to_vec(),
                2 => b"\"just a string\"".to_vec(),
                3 => "[".repeat(100_000).into_bytes(),
                4 => format!("{{\"a\":\"{}\"}}", "x".repeat(200_000)).into_bytes(),
                5 => format!("{}1{}", "{\"a\":".repeat(5000), "}".repeat(5000)).into_bytes(),
                6 => b"{\"protocolVersion\":1,\"manifest\":[]}".to_vec(),
                _ => vec![0xff, 0xfe, 0x00, 0x7b],
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Req {
    post: Option<Index>,
    get: Index,
    ids: (Index, Index),
    damage: Vec<Damage>,
    content_type: u8,
    method: u8,
}

fn request() -> impl Strategy<Value = Req> {
    (
        proptest::option::weighted(0.7, any::<Index>()),
        any::<Index>(),
        (any::<Index>(), any::<Index>()),
        proptest::collection::vec(damage(), 0..4),
        0u8..4,
        0u8..10,
    )
        .prop_map(|(post, get, ids, damage, content_type, method)| Req {
            post,
            get,
            ids,
            damage,
            content_type,
            method,
        })
}

/// Build the HTTP request for `r`.
fn build(r: &Req) -> Request<Body> {
    let id = |i: &Index| IDS[i.index(IDS.len())];
    let (path, body) = match &r.post {
        Some(p) => {
            let (path, body) = BODIES[p.index(BODIES.len())];
            let mut body = body.as_bytes().to_vec();
            for d in &r.damage {
                apply(d, &mut body);
            }
            (path.to_string(), body)
        }
        None => {
            let template = GETS[r.get.index(GETS.len())];
            let mut path = template.replacen("{id}", id(&r.ids.0), 1);
            path = path.replace("{id}", id(&r.ids.1));
            (path, Vec::new())
        }
    };
    let method = match (r.post.is_some(), r.method) {
        (_, 0) => Method::DELETE,
        (_, 1) => Method::PATCH,
        (true, 2) if path.contains("/versions/") => Method::PUT,
        (true, _) if path.contains("/versions/") => Method::PUT,
        (true, _) => Method::POST,
        (false, 2) => Method::HEAD,
        (false, _) => Method::GET,
    };
    let mut b = Request::builder().method(method).uri(path);
    match r.content_type {
        0 => b = b.header("content-type", "application/json"),
        1 => b = b.header("content-type", "text/plain"),
        2 => b = b.header("content-type", "application/json; charset=latin1"),
        _ => {}
    }
    b.body(Body::from(body)).expect("a request")
}

#[test]
fn no_request_gets_a_500_or_hangs() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let stores = StoreLocation::Memory.open_all().expect("stores");
    let state = AppState {
        primitives: Some(stores.primitives.clone()),
        ..AppState::new(stores.replay.clone())
    };
    let app = router(state);
    // A schema and an artifact to find, so that the GETs and PUTs reach their stores.
    rt.block_on(async {
        for (path, body) in &BODIES[2..4] {
            let req = Request::post(*path)
                .header("content-type", "application/json")
                .body(Body::from(*body))
                .expect("a request");
            let resp = app.clone().oneshot(req).await.expect("a response");
            assert!(
                resp.status().is_success(),
                "setting up {path}: {}",
                resp.status()
            );
        }
    });
    let cases: u32 = std::env::var("SMALL_FUZZ_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let statuses = std::cell::RefCell::new(std::collections::BTreeMap::<u16, usize>::new());
    let result = runner.run(&request(), |r| {
        let req = build(&r);
        let shown = format!("{} {}", req.method(), req.uri());
        let resp = rt
            .block_on(async {
                tokio::time::timeout(Duration::from_secs(10), app.clone().oneshot(req)).await
            })
            .map_err(|_| TestCaseError::fail(format!("{shown}: no answer within 10 s")))?
            .map_err(|e| TestCaseError::fail(format!("{shown}: {e}")))?;
        let status = resp.status();
        *statuses.borrow_mut().entry(status.as_u16()).or_default() += 1;
        if status.is_server_error() && status.as_u16() != 503 {
            return Err(TestCaseError::fail(format!("{shown}: {status}")));
        }
        if status.is_client_error() {
            let ct = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let bytes = rt
                .block_on(axum::body::to_bytes(resp.into_body(), 1 << 20))
                .map_err(|e| TestCaseError::fail(format!("{shown}: body: {e}")))?;
            // The project's own JSON reader: error messages may quote a lone surrogate from
            // the request as `\ud800`, which JSON allows and serde_json refuses.
            let json = small_core::ops::formats::canonical::parse(&bytes);
            let shaped = ct.starts_with("application/json")
                && json
                    .as_ref()
                    .is_ok_and(|j| j.get("error").is_some() || j.get("errors").is_some())
                || bytes.is_empty();
            if !shaped {
                return Err(TestCaseError::fail(format!(
                    "{shown}: {status} is not the JSON error shape: {}",
                    String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                )));
            }
        }
        Ok(())
    });
    let statuses = statuses.into_inner();
    eprintln!("fuzz requests: {cases} requests, statuses {statuses:?}");
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(
        statuses.len() >= 4,
        "the requests reached too few outcomes: {statuses:?}"
    );
}

#[test]
fn a_panicking_handler_is_a_json_500_and_the_server_goes_on() {
    use axum::routing::get;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let api = axum::Router::new()
        .route(
            "/boom",
            get(|| async {
                let v: Vec<u8> = Vec::new();
                // An index past the end, as a bug would have it.
                std::hint::black_box(&v)[3].to_string()
            }),
        )
        .route("/fine", get(|| async { "ok" }));
    let app = small_server::framed(api, Duration::from_secs(5));
    rt.block_on(async {
        let resp = app
            .clone()
            .oneshot(
                Request::get("/boom")
                    .body(Body::empty())
                    .expect("a request"),
            )
            .await
            .expect("a response");
        assert_eq!(resp.status().as_u16(), 500);
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .expect("body");
        let json: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(json["error"], "internal_error", "{json}");
        let resp = app
            .oneshot(
                Request::get("/fine")
                    .body(Body::empty())
                    .expect("a request"),
            )
            .await
            .expect("a response");
        assert_eq!(resp.status().as_u16(), 200);
    });
}
