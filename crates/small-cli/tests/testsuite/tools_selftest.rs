//! `small selftest`.

use crate::tools_support;
use predicates::prelude::*;
use tools_support::small;

#[test]
fn selftest_passes_and_cleans_up() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("st");
    small()
        .args(["selftest", "--dir"])
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicate::str::contains("All 7 steps passed"));
    assert!(!dir.exists(), "removed without --keep");
    small()
        .args(["selftest", "--keep", "--dir"])
        .arg(&dir)
        .assert()
        .success();
    assert!(
        dir.join(".small/handoff.small.yml").exists(),
        "kept with --keep"
    );
    small().arg("selftest").assert().success();
}

#[test]
fn selftest_never_uses_a_directory_with_files_in_it() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("precious.txt"), "keep me").unwrap();
    small()
        .args(["selftest", "--dir"])
        .arg(d.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not empty"));
    assert_eq!(
        std::fs::read_to_string(d.path().join("precious.txt")).unwrap(),
        "keep me"
    );
    assert!(!d.path().join(".small").exists());
}

#[test]
fn selftest_rejects_an_unknown_scope() {
    small()
        .args(["selftest", "--workspace", "nowhere"])
        .assert()
        .code(2);
}
