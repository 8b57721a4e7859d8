//! `small draft` and `small accept`: drafts live in .small-cache/, accept is the human step.

use crate::tools_support;
use predicates::prelude::*;
use tools_support::{assert_check_strict, init, progress_entries, read, small, yaml_json};

const NEW_INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Ship the importer\"\nscope:\n  include: [src/]\n  exclude: []\nsuccess_criteria: [\"imports run\"]\n";
const NEW_CONSTRAINTS: &str = "small_version: \"1.0.0\"\nowner: human\nconstraints:\n  - id: no-network\n    rule: Tests never use the network\n    severity: warn\n";

#[test]
fn draft_is_kept_outside_small_and_leaves_the_canonical_file_alone() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let before = read(d.path().join(".small/intent.small.yml"));
    let src = d.path().join("proposal.yml");
    std::fs::write(&src, NEW_INTENT).unwrap();
    small()
        .args(["draft", "intent", "--from"])
        .arg(&src)
        .arg("--dir")
        .arg(d.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            ".small-cache/drafts/intent.small.yml",
        ))
        .stdout(predicate::str::contains("small accept intent"));
    assert_eq!(
        read(d.path().join(".small-cache/drafts/intent.small.yml")),
        NEW_INTENT
    );
    assert_eq!(read(d.path().join(".small/intent.small.yml")), before);
    assert_check_strict(d.path());
}

#[test]
fn draft_reads_standard_input() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    small()
        .args(["draft", "constraints", "--from", "-", "--dir"])
        .arg(d.path())
        .write_stdin(NEW_CONSTRAINTS)
        .assert()
        .success();
    assert_eq!(
        read(d.path().join(".small-cache/drafts/constraints.small.yml")),
        NEW_CONSTRAINTS
    );
    small()
        .args(["draft", "constraints", "--from", "stdin", "--dir"])
        .arg(d.path())
        .write_stdin("   \n")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("empty"));
}

#[test]
fn accept_replaces_the_file_and_records_a_meta_entry() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let ws_before = yaml_json(d.path().join(".small/workspace.small.yml"));
    small()
        .args(["draft", "intent", "--from", "-", "--dir"])
        .arg(d.path())
        .write_stdin(NEW_INTENT)
        .assert()
        .success();
    small()
        .args(["accept", "intent", "--dir"])
        .arg(d.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Accepted .small-cache/drafts/intent.small.yml into .small/intent.small.yml",
        ))
        .stdout(predicate::str::contains("meta/accept-intent"));
    assert_eq!(read(d.path().join(".small/intent.small.yml")), NEW_INTENT);
    let entries = progress_entries(d.path());
    let last = entries.last().unwrap();
    assert_eq!(last["task_id"], "meta/accept-intent");
    assert_eq!(last["status"], "completed");
    assert!(last["evidence"]
        .as_str()
        .unwrap()
        .contains(".small-cache/drafts/intent.small.yml"));
    assert!(
        last.get("replayId").is_none(),
        "bootstrap accept is not bound to a run"
    );
    assert_eq!(entries.len(), 2, "init entry kept, one new entry");
    let ws_after = yaml_json(d.path().join(".small/workspace.small.yml"));
    assert_ne!(ws_before["updated_at"], ws_after["updated_at"]);
    assert_eq!(ws_before["created_at"], ws_after["created_at"]);
    assert_check_strict(d.path());

    // Accepting the same draft again changes nothing.
    small()
        .args(["accept", "intent", "--dir"])
        .arg(d.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("nothing to accept"));
    assert_eq!(progress_entries(d.path()).len(), 2);
}

#[test]
fn constraints_round_trip() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    small()
        .args(["draft", "constraints", "--from", "-", "--dir"])
        .arg(d.path())
        .write_stdin(NEW_CONSTRAINTS)
        .assert()
        .success();
    small()
        .args(["accept", "constraints", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    assert_eq!(
        read(d.path().join(".small/constraints.small.yml")),
        NEW_CONSTRAINTS
    );
    assert_eq!(
        progress_entries(d.path()).last().unwrap()["task_id"],
        "meta/accept-constraints"
    );
    assert_check_strict(d.path());
}

#[test]
fn an_invalid_draft_is_saved_with_a_warning_and_refused_by_accept() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let before = read(d.path().join(".small/intent.small.yml"));
    let bad = "small_version: \"1.0.0\"\nowner: agent\nintent: \"\"\n";
    small()
        .args(["draft", "intent", "--from", "-", "--dir"])
        .arg(d.path())
        .write_stdin(bad)
        .assert()
        .success()
        .stderr(predicate::str::contains("warning"));
    small()
        .args(["accept", "intent", "--dir"])
        .arg(d.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a valid intent.small.yml"));
    assert_eq!(read(d.path().join(".small/intent.small.yml")), before);
    assert_eq!(progress_entries(d.path()).len(), 1);
    // Not YAML at all
    small()
        .args(["draft", "intent", "--from", "-", "--dir"])
        .arg(d.path())
        .write_stdin("a: [unclosed\n")
        .assert()
        .success();
    small()
        .args(["accept", "intent", "--dir"])
        .arg(d.path())
        .assert()
        .code(1);
    assert_eq!(read(d.path().join(".small/intent.small.yml")), before);
}

#[test]
fn accept_without_a_draft_and_commands_without_a_workspace() {
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["draft", "intent", "--from", "-", "--dir"])
        .arg(d.path())
        .write_stdin(NEW_INTENT)
        .assert()
        .code(2);
    small()
        .args(["accept", "intent", "--dir"])
        .arg(d.path())
        .assert()
        .code(2);
    init(d.path());
    small()
        .args(["accept", "intent", "--dir"])
        .arg(d.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("small draft intent"));
    small()
        .args(["draft", "intent", "--dir"])
        .arg(d.path())
        .assert()
        .code(2); // --from is required
    small()
        .args([
            "draft",
            "intent",
            "--from",
            "/nonexistent/file.yml",
            "--dir",
        ])
        .arg(d.path())
        .assert()
        .code(2);
}

#[test]
fn workspace_scope_is_enforced() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join(".git")).unwrap();
    let ex = d.path().join("examples/demo");
    init(&ex);
    small()
        .args(["draft", "intent", "--from", "-", "--dir"])
        .arg(&ex)
        .write_stdin(NEW_INTENT)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("examples"));
    for scope in ["examples", "any"] {
        small()
            .args([
                "draft",
                "intent",
                "--from",
                "-",
                "--workspace",
                scope,
                "--dir",
            ])
            .arg(&ex)
            .write_stdin(NEW_INTENT)
            .assert()
            .success();
    }
    small()
        .args(["accept", "intent", "--workspace", "any", "--dir"])
        .arg(&ex)
        .assert()
        .success();
    small()
        .args(["accept", "intent", "--workspace", "bogus", "--dir"])
        .arg(&ex)
        .assert()
        .code(2);
}

#[test]
fn accept_dry_run_shows_the_diff_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let before = read(d.path().join(".small/intent.small.yml"));
    small()
        .args(["draft", "intent", "--from", "-", "--dir"])
        .arg(d.path())
        .write_stdin(NEW_INTENT)
        .assert()
        .success();
    small()
        .args(["accept", "intent", "--dry-run", "--dir"])
        .arg(d.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("+intent: \"Ship the importer\""));
    assert_eq!(read(d.path().join(".small/intent.small.yml")), before);
    assert_eq!(progress_entries(d.path()).len(), 1);
}
