//! Evidence blobs and v1 import archives on copies of the 2.0.0 corpus, each damaged one way:
//! `check --strict --json` exits 1 and names the rule and the file; the untouched copy passes.
//! (The reference's check passes on all of these:
//! docs/decisions/0114-v2-evidence-blobs-and-imports-checked.md.)

use std::path::Path;

use serde_json::Value;

use crate::conformance_v11::run_small;
use crate::conformance_v2::{copy_case_links, load_cases};

/// Copy `case`, damage it with `damage`, and return (exit, the errors of `check --strict
/// --json`). `None` when the corpus is absent (the loader has said so).
fn checked(case: &str, damage: impl Fn(&Path)) -> Option<(i32, Vec<Value>)> {
    let case = load_cases().into_iter().find(|c| c.name == case)?;
    let work = tempfile::tempdir().expect("tmp");
    let home = tempfile::tempdir().expect("home");
    copy_case_links(&case.dir, work.path());
    damage(&work.path().join(".small"));
    let args: Vec<String> = ["check", "--strict", "--json", "--workspace", "any"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (code, stdout, _) = run_small(work.path(), home.path(), &args);
    let report: Value = serde_json::from_str(&stdout).expect("one JSON report");
    let errors = ["validate", "lint", "verify"]
        .iter()
        .flat_map(|s| {
            report[s]["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|d| d["severity"] == "error")
        .collect();
    Some((code, errors))
}

fn one_dir(p: &Path) -> std::path::PathBuf {
    std::fs::read_dir(p)
        .expect("list")
        .next()
        .expect("one entry")
        .expect("entry")
        .path()
}

fn blob(small: &Path) -> std::path::PathBuf {
    one_dir(&small.join("evidence/blobs/sha256"))
}

fn import(small: &Path) -> std::path::PathBuf {
    one_dir(&small.join("imports/v1"))
}

fn assert_names(case: &str, damage: impl Fn(&Path), code: &str, file_part: &str) {
    let Some((exit, errors)) = checked(case, damage) else {
        return;
    };
    assert_eq!(exit, 1, "{case}: {errors:?}");
    assert!(
        errors.iter().any(|e| e["code"] == code
            && e["help"].is_string()
            && e["file"].as_str().is_some_and(|f| f.contains(file_part))),
        "{case}: {code} on {file_part} expected: {errors:#?}"
    );
}

#[test]
fn v2_untouched_cases_with_blobs_and_imports_pass() {
    for case in [
        "wf-single-session",
        "durable-session",
        "wf-open-session-policy-mode",
    ] {
        if let Some((exit, errors)) = checked(case, |_| {}) {
            assert_eq!(exit, 0, "{case}: {errors:#?}");
        }
    }
}

#[test]
fn v2_changed_evidence_blob_is_named() {
    assert_names(
        "wf-single-session",
        |s| {
            let p = blob(s);
            let mut bytes = std::fs::read(&p).expect("read blob");
            bytes.push(b'x');
            std::fs::write(&p, bytes).expect("write blob");
        },
        "V2-BLOB",
        ".small/evidence/blobs/sha256/",
    );
}

#[test]
fn v2_missing_evidence_blob_is_named_on_its_receipt() {
    assert_names(
        "wf-single-session",
        |s| std::fs::remove_file(blob(s)).expect("remove blob"),
        "V2-EVIDENCE",
        ".small/receipts/sha256/",
    );
}

#[test]
fn v2_symlinked_evidence_blob_is_refused() {
    assert_names(
        "wf-single-session",
        |s| {
            let p = blob(s);
            let outside = s.parent().expect("root").join("outside-blob");
            std::fs::rename(&p, &outside).expect("move");
            std::os::unix::fs::symlink(&outside, &p).expect("link");
        },
        "V2-SYMLINK",
        ".small/evidence/blobs/sha256/",
    );
}

/// `evidence verify --json` on a copy of `case` damaged by `damage`: (exit, the JSON
/// documents on stdout). `None` when the corpus is absent.
fn verified(case: &str, damage: impl Fn(&Path)) -> Option<(i32, Vec<Value>)> {
    let case = load_cases().into_iter().find(|c| c.name == case)?;
    let work = tempfile::tempdir().expect("tmp");
    let home = tempfile::tempdir().expect("home");
    copy_case_links(&case.dir, work.path());
    damage(&work.path().join(".small"));
    let args = ["evidence", "verify", "--json"].map(String::from);
    let (code, stdout, _) = run_small(work.path(), home.path(), &args);
    let docs = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .expect("JSON documents");
    Some((code, docs))
}

/// `evidence verify --json` after `damage` reports one receipt `failed` with its reason, then
/// the error document (as the reference prints them), and exits 1.
fn assert_one_failed(what: &str, damage: impl Fn(&Path)) {
    let Some((exit, docs)) = verified("wf-single-session", damage) else {
        return;
    };
    assert_eq!(exit, 1, "{what}: {docs:#?}");
    assert_eq!(docs.len(), 2, "{what}: {docs:#?}");
    assert_eq!(docs[0]["all_verified"], false, "{what}");
    assert_eq!(docs[0]["profile"], "2.0.0", "{what}");
    let failed: Vec<&Value> = docs[0]["receipts"]
        .as_array()
        .expect("receipts")
        .iter()
        .filter(|r| r["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{what}: {docs:#?}");
    assert!(failed[0]["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert_eq!(docs[1]["error"]["code"], "invalid_request", "{what}");
}

/// A missing blob is evidence that cannot be shown: `unavailable`, as the reference reports
/// it (the report, then the error document, exit 1), not damage that stops the report.
#[test]
fn v2_evidence_verify_reports_a_missing_blob_as_unavailable() {
    let Some((exit, docs)) = verified("wf-single-session", |s| {
        std::fs::remove_file(blob(s)).expect("remove blob");
    }) else {
        return;
    };
    assert_eq!((exit, docs.len()), (1, 2), "{docs:#?}");
    let missing: Vec<&Value> = docs[0]["receipts"]
        .as_array()
        .expect("receipts")
        .iter()
        .filter(|r| r["status"] == "unavailable" && r["artifact_path"].is_string())
        .collect();
    assert_eq!(missing.len(), 1, "{docs:#?}");
    assert_eq!(docs[1]["error"]["code"], "invalid_request");
}

/// A changed or linked blob is what `evidence verify` reports, not damage that stops it.
#[test]
fn v2_evidence_verify_reports_a_changed_or_linked_blob_as_failed() {
    assert_one_failed("changed", |s| {
        let p = blob(s);
        let mut bytes = std::fs::read(&p).expect("read blob");
        bytes.push(b'x');
        std::fs::write(&p, bytes).expect("write blob");
    });
    assert_one_failed("linked", |s| {
        let p = blob(s);
        let outside = s.parent().expect("root").join("outside-blob");
        std::fs::rename(&p, &outside).expect("move");
        std::os::unix::fs::symlink(&outside, &p).expect("link");
    });
}

#[test]
fn v2_changed_import_original_is_named() {
    assert_names(
        "durable-session",
        |s| {
            let p = import(s).join("originals/plan.small.yml");
            let mut bytes = std::fs::read(&p).expect("read original");
            bytes.extend_from_slice(b"# edited\n");
            std::fs::write(&p, bytes).expect("write original");
        },
        "V2-IMPORT",
        "originals/plan.small.yml",
    );
}

#[test]
fn v2_missing_and_unlisted_import_originals_are_named() {
    assert_names(
        "durable-session",
        |s| std::fs::remove_file(import(s).join("originals/progress.small.yml")).expect("rm"),
        "V2-IMPORT",
        "originals/progress.small.yml",
    );
    assert_names(
        "durable-session",
        |s| std::fs::write(import(s).join("originals/notes.md"), "x").expect("write"),
        "V2-IMPORT",
        "originals/notes.md",
    );
}

#[test]
fn v2_missing_import_manifest_or_archive_is_named() {
    assert_names(
        "durable-session",
        |s| std::fs::remove_file(import(s).join("manifest.json")).expect("rm"),
        "V2-IMPORT",
        "manifest.json",
    );
    assert_names(
        "durable-session",
        |s| std::fs::remove_dir_all(s.join("imports")).expect("rm"),
        "V2-IMPORT",
        ".small/profile.json",
    );
}
