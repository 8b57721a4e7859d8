//! `small migrate` against the reference CLI v1.1.2's migrations of the v1 corpus
//! (`../shared/conformance/v2/migrate/<case>/`).
//!
//! For every case: a fresh copy of `input/`, `migrate --to 2.0.0 --preview --namespace
//! conformance/<case> --json` (exit code and, on success, stdout compared with
//! `preview.json`), the reference's plan written to the copy, `migrate --apply preview.json
//! --expect-state <digest> --json` (stdout compared with `apply.json`, `backup_path` modulo
//! the copy's path), the migrated `.small/` compared byte for byte with `output/.small/`
//! (file list and contents), then the same apply again (idempotent, stdout as
//! `apply-again.json`, tree unchanged).
//!
//! Deliberate difference: where the reference's apply fails on a fractional number in a v1
//! progress entry, small refuses already at preview
//! (docs/decisions/0110-migrate-preview-refuses.md); those cases expect preview to exit 1 and
//! are not applied.
//!
//! Skipped, with a notice, when the corpus is absent.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::conformance_v11::{copy_case, harness_command};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/v2/migrate"
);

/// Cases whose migrated tree is known to differ from the reference's, with the reason.
const KNOWN_DIFFERENT: &[(&str, &str)] = &[];

fn small(dir: &Path, home: &Path, args: &[&str]) -> Output {
    harness_command(dir, home)
        .args(args)
        .output()
        .expect("run small")
}

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if e.path().is_dir() {
                walk(&e.path(), &rel, out);
            } else {
                out.insert(rel, std::fs::read(e.path()).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, "", &mut out);
    out
}

fn differences(got: &BTreeMap<String, Vec<u8>>, want: &BTreeMap<String, Vec<u8>>) -> String {
    let mut out = Vec::new();
    for (path, bytes) in want {
        match got.get(path) {
            None => out.push(format!("missing {path}")),
            Some(b) if b != bytes => out.push(format!(
                "differs {path}:\n  got  {}\n  want {}",
                String::from_utf8_lossy(b).trim_end(),
                String::from_utf8_lossy(bytes).trim_end()
            )),
            _ => {}
        }
    }
    for path in got.keys().filter(|p| !want.contains_key(*p)) {
        out.push(format!("extra {path}"));
    }
    out.join("\n")
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

/// One case; `Err` says how it differs from the reference.
fn run_case(dir: &Path, name: &str) -> Result<bool, String> {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tempfile::tempdir().expect("home");
    let ws = tmp.path().join("ws");
    copy_case(&dir.join("input"), &ws, false);
    let ns = format!("conformance/{name}");
    let preview = small(
        &ws,
        home.path(),
        &[
            "migrate",
            "--to",
            "2.0.0",
            "--preview",
            "--namespace",
            &ns,
            "--json",
        ],
    );
    let outcome = expected["outcome"].as_str().unwrap_or_default();
    let fractional = expected["runs"]["apply"]["stderr"]
        .as_str()
        .is_some_and(|s| s.contains("non-integer numeric value"));
    let want_exit = if fractional {
        1
    } else {
        expected["runs"]["preview"]["exit"].as_i64().unwrap_or(-1)
    };
    let got_exit = i64::from(preview.status.code().unwrap_or(-1));
    if got_exit != want_exit {
        return Err(format!(
            "preview exit {got_exit}, want {want_exit}: {}",
            String::from_utf8_lossy(&preview.stderr)
        ));
    }
    if got_exit != 0 {
        return Ok(false);
    }
    let want_preview = std::fs::read(dir.join("preview.json")).map_err(|e| e.to_string())?;
    if preview.stdout != want_preview {
        return Err(format!(
            "preview stdout differs:\n{}",
            String::from_utf8_lossy(&preview.stdout)
        ));
    }
    std::fs::write(ws.join("preview.json"), &want_preview).expect("write plan");
    let digest = expected["expected_input_digest"]
        .as_str()
        .unwrap_or_default();
    let args = [
        "migrate",
        "--apply",
        "preview.json",
        "--expect-state",
        digest,
        "--json",
    ];
    let apply = small(&ws, home.path(), &args);
    let want_apply_exit = expected["runs"]["apply"]["exit"].as_i64().unwrap_or(-1);
    if i64::from(apply.status.code().unwrap_or(-1)) != want_apply_exit || outcome != "migrated" {
        return Err(format!(
            "apply exit {:?} (want {want_apply_exit}, outcome {outcome}): {}",
            apply.status.code(),
            String::from_utf8_lossy(&apply.stderr)
        ));
    }
    let mut got = json(&apply.stdout);
    let mut want = json(&std::fs::read(dir.join("apply.json")).map_err(|e| e.to_string())?);
    let root = std::fs::canonicalize(&ws).expect("canonical");
    let got_backup = got["backup_path"].as_str().unwrap_or_default().to_string();
    let want_backup = want["backup_path"]
        .as_str()
        .unwrap_or_default()
        .replace("{{CASE_DIR}}", &root.to_string_lossy());
    if got_backup != want_backup {
        return Err(format!("backup_path {got_backup}, want {want_backup}"));
    }
    got["backup_path"] = Value::Null;
    want["backup_path"] = Value::Null;
    if got != want {
        return Err(format!("apply stdout {got}, want {want}"));
    }
    let got_tree = tree(&ws.join(".small"));
    let want_tree = tree(&dir.join("output/.small"));
    let diff = differences(&got_tree, &want_tree);
    if !diff.is_empty() {
        return Err(format!("tree differs:\n{diff}"));
    }
    let again = small(&ws, home.path(), &args);
    let want_again = std::fs::read(dir.join("apply-again.json")).map_err(|e| e.to_string())?;
    if !again.status.success() || again.stdout != want_again {
        return Err(format!(
            "second apply: exit {:?}, stdout {}",
            again.status.code(),
            String::from_utf8_lossy(&again.stdout)
        ));
    }
    if tree(&ws.join(".small")) != want_tree {
        return Err("the second apply changed .small/".into());
    }
    Ok(true)
}

#[test]
fn migrations_match_the_reference_byte_for_byte() {
    let Some(corpus) = small_testkit::conformance_path(CORPUS) else {
        return;
    };
    let mut cases: Vec<_> = std::fs::read_dir(&corpus)
        .expect("list cases")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    cases.sort();
    let (mut identical, mut failures) = (0, Vec::new());
    for dir in &cases {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let known = KNOWN_DIFFERENT.iter().find(|(n, _)| *n == name);
        match (run_case(dir, &name), known) {
            (Ok(true), None) => identical += 1,
            (Ok(false), None) => {}
            (Ok(_), Some(_)) => {
                failures.push(format!("{name}: now matches; drop it from KNOWN_DIFFERENT"))
            }
            (Err(_), Some(_)) => {}
            (Err(e), None) => failures.push(format!("{name}: {e}")),
        }
    }
    eprintln!(
        "migrate conformance: {identical} migrated trees byte-identical, {} known different, {} cases",
        KNOWN_DIFFERENT.len(),
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// SIGKILL at random moments of an apply leaves the untouched v1 tree, the complete migrated
/// tree, or no `.small/` that `migrate --recover` turns into one of the two; an apply after
/// that always ends at the reference's tree.
#[cfg(unix)]
#[test]
fn a_killed_apply_leaves_v1_v2_or_a_recoverable_state() {
    let Some(corpus) = small_testkit::conformance_path(CORPUS) else {
        return;
    };
    let dir = corpus.join("valid-with-dependencies");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json"),
    )
    .expect("parse expected.json");
    let digest = expected["expected_input_digest"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let v1 = tree(&dir.join("input/.small"));
    let v2 = tree(&dir.join("output/.small"));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    eprintln!("migrate crash test seed: {seed}");
    let mut rng = seed | 1;
    let (mut seen_v1, mut seen_v2, mut seen_recovered) = (0, 0, 0);
    for _ in 0..12 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = std::time::Duration::from_millis(rng % 300);
        let tmp = tempfile::tempdir().expect("temp dir");
        let home = tempfile::tempdir().expect("home");
        let ws = tmp.path().join("ws");
        copy_case(&dir.join("input"), &ws, false);
        std::fs::copy(dir.join("preview.json"), ws.join("preview.json")).expect("plan");
        let args = [
            "migrate",
            "--apply",
            "preview.json",
            "--expect-state",
            digest.as_str(),
        ];
        let mut child = harness_command(&ws, home.path())
            .args(args)
            .env("SMALL_TEST_SLOW_MIGRATION_MS", "40")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn small");
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let small_dir = ws.join(".small");
        if small_dir.join("profile.json").is_file() {
            assert!(tree(&small_dir) == v2, "a torn 2.0.0 tree after a kill");
            seen_v2 += 1;
        } else if small_dir.is_dir() {
            assert!(tree(&small_dir) == v1, "the v1 tree changed after a kill");
            seen_v1 += 1;
        } else {
            let r = small(&ws, home.path(), &["migrate", "--recover"]);
            assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
            let now = tree(&small_dir);
            assert!(now == v2 || now == v1, "recovery left neither tree");
            seen_recovered += 1;
        }
        let again = small(&ws, home.path(), &args);
        assert!(
            again.status.success(),
            "{}",
            String::from_utf8_lossy(&again.stderr)
        );
        assert!(
            tree(&small_dir) == v2,
            "apply after a kill did not reach the tree"
        );
    }
    eprintln!("after a kill: v1 {seen_v1}, 2.0.0 {seen_v2}, recovered {seen_recovered}");
}

/// `--to` names the one profile migrate writes: another version is a refused value (exit 1,
/// as the reference), a preview without `--to` a malformed command line (exit 2).
#[test]
fn migrate_refuses_another_target_version_with_1() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tempfile::tempdir().expect("home");
    let ws = tmp.path();
    assert!(
        small(ws, home.path(), &["init", "--intent", "x", "--no-agents"])
            .status
            .success()
    );
    let o = small(
        ws,
        home.path(),
        &[
            "migrate",
            "--to",
            "9.9.9",
            "--preview",
            "--namespace",
            "n",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&o.stdout)["error"]["message"], "--to must be 2.0.0");
    let o = small(
        ws,
        home.path(),
        &["migrate", "--preview", "--namespace", "n"],
    );
    assert_eq!(o.status.code(), Some(2));
}
