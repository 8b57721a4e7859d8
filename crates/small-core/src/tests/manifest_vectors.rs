//! All API vectors (../shared/conformance/api/*.jsonl) through the library: validation
//! result, error order and messages, canonical JSON and replay IDs.

use crate::api::manifest::{validate_request, ManifestRequest};
use crate::json::canonical;
use std::path::PathBuf;

fn api_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/api"
    ));
    small_testkit::conformance_path(dir)
}

/// Read a JSON string field from a vector (the vector files themselves are plain JSON, but
/// expected strings may hold lone surrogates, so they are read with our parser).
fn field<'a>(v: &'a canonical::Value, key: &str) -> Option<&'a canonical::Value> {
    v.get(key)
}

#[test]
fn every_api_vector_through_the_library() {
    let Some(dir) = api_dir() else { return };
    let mut checked = 0;
    for file in ["vectors.jsonl", "fuzz-1-unicode.jsonl"] {
        let text = std::fs::read(dir.join(file)).expect("read vectors");
        for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v = canonical::parse(line).expect("vector line parses");
            let name = field(&v, "name")
                .and_then(|n| n.as_js_str())
                .map(|s| s.to_string_lossy())
                .unwrap_or_default();
            let body = field(&v, "request_body")
                .and_then(|b| b.as_js_str())
                .expect("request_body");
            let expected = field(&v, "expected").expect("expected");
            // The body as sent is a JavaScript string: its UTF-8 form is what goes on the wire.
            let body_bytes = body
                .as_str()
                .expect("request bodies are valid UTF-8")
                .as_bytes();
            let out = validate_request(body_bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            let got = canonical::parse(out.to_json().as_bytes()).unwrap();
            assert_eq!(got.get("valid"), expected.get("valid"), "{name}: valid");
            assert_eq!(got.get("errors"), expected.get("errors"), "{name}: errors");
            match expected.get("replayId") {
                Some(canonical::Value::String(id)) => {
                    assert_eq!(
                        got.get("replayId").and_then(|x| x.as_js_str()),
                        Some(id),
                        "{name}: replayId"
                    )
                }
                _ => assert!(
                    got.get("replayId").is_none(),
                    "{name}: no replayId expected"
                ),
            }
            if let Ok(req) = ManifestRequest::parse(body_bytes) {
                if let (Some(m), Some(canonical::Value::String(want))) =
                    (req.manifest(), expected.get("canonical"))
                {
                    assert_eq!(&canonical::canonical_json(m), want, "{name}: canonical");
                }
                if let Some(canonical::Value::String(want)) = expected.get("replayIdUnvalidated") {
                    if let Some(m) = req.manifest() {
                        assert_eq!(
                            crate::api::manifest::replay_id("1.0.0", m).as_str(),
                            want.as_str().unwrap(),
                            "{name}: replayIdUnvalidated"
                        );
                    }
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 2421);
}
