//! `reconstruct` of migrated 2.0.0 workspaces against what the reference CLI v1.1.2 prints
//! (`fixtures/reference-json/v2-reconstruct-migrated.json`, recorded by
//! `ci/record-v2-reconstruct.py` from the migrated trees of `../shared/conformance/v2/migrate`):
//! the same exit codes, the obligations in the same order (by id), `handoffs` of the same
//! JSON type (`null` when there is none), and `reconstruct --resume` with no session active
//! refused with the reference's error code (`ambiguous_session`).
//!
//! Skipped, with a notice, when the corpus is absent.

use std::path::Path;

use serde_json::Value;

use crate::conformance_v11::{copy_case, harness_command};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/v2/migrate"
);
const FACTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/reference-json/v2-reconstruct-migrated.json"
);

fn reconstruct(dir: &Path, home: &Path, args: &[&str]) -> (i32, Value) {
    let out = harness_command(dir, home)
        .arg("reconstruct")
        .args(args)
        .output()
        .expect("run small");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), doc)
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
    }
}

#[test]
fn reconstruct_of_migrated_workspaces_matches_the_reference() {
    let Some(corpus) = small_testkit::conformance_path(CORPUS) else {
        return;
    };
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(FACTS).expect("the facts")).expect("JSON");
    let cases = facts["cases"].as_object().expect("cases");
    assert!(cases.len() > 100, "{} cases recorded", cases.len());
    let mut diffs = Vec::new();
    for (case, want) in cases {
        let tmp = tempfile::tempdir().expect("temp dir");
        let home = tempfile::tempdir().expect("home");
        let work = tmp.path().join("w");
        copy_case(&corpus.join(case).join("output"), &work, false);
        let (code, doc) = reconstruct(&work, home.path(), &["--json"]);
        if i64::from(code) != want["exit"].as_i64().unwrap_or(-1) {
            diffs.push(format!("{case}: exit {code}, reference {}", want["exit"]));
            continue;
        }
        let ids: Vec<&str> = doc["obligations"]
            .as_array()
            .map(|a| a.iter().filter_map(|o| o["id"].as_str()).collect())
            .unwrap_or_default();
        let want_ids: Vec<&str> = want["obligations"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if ids != want_ids {
            diffs.push(format!(
                "{case}: obligations {ids:?}, reference {want_ids:?}"
            ));
        }
        if json_type(&doc["handoffs"]) != want["handoffs"] {
            diffs.push(format!(
                "{case}: handoffs {}, reference {}",
                json_type(&doc["handoffs"]),
                want["handoffs"]
            ));
        }
        let (code, doc) = reconstruct(&work, home.path(), &["--resume", "--json"]);
        if i64::from(code) != want["resume_exit"].as_i64().unwrap_or(-1)
            || doc["error"]["code"] != want["resume_error_code"]
        {
            diffs.push(format!(
                "{case}: --resume exit {code} error {}, reference exit {} error {}",
                doc["error"]["code"], want["resume_exit"], want["resume_error_code"]
            ));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
