//! Snapshot tests of the human output of the read-only commands on two representative
//! workspaces: one that passes everything, one with several kinds of problem. The expected
//! output lives in `tests/golden/`; after a deliberate change of wording, regenerate it with
//! `SMALL_UPDATE_GOLDEN=1 cargo test -p small-cli --test gate_golden` and review the diff.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_small");

const INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Add a --dry-run flag to the mailer\"\nscope:\n  include:\n    - \"scripts/**\"\n  exclude: []\nsuccess_criteria:\n  - \"--dry-run sends nothing\"\n";
const CONSTRAINTS: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"no-real-mail\"\n    rule: \"Never send real email while testing\"\n    severity: \"error\"\n";
const PLAN: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"task-1\"\n    title: \"Parse the flag\"\n    status: \"completed\"\n  - id: \"task-2\"\n    title: \"Skip SMTP when set\"\n    status: \"pending\"\n    dependencies: [\"task-1\"]\n  - id: \"task-3\"\n    title: \"Document it\"\n    status: \"pending\"\n    dependencies: [\"task-2\"]\n";
const PROGRESS: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"meta/init\"\n    timestamp: \"2026-03-01T09:00:00.000001Z\"\n    status: \"completed\"\n    evidence: \"Created the workspace\"\n  - task_id: \"task-1\"\n    timestamp: \"2026-03-01T10:30:00.250000Z\"\n    status: \"completed\"\n    evidence: \"cargo test: 14 passed\"\n    commit: \"3f2a9c1\"\n";
const HANDOFF: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"Flag parsed; next: skip SMTP\"\nresume:\n  current_task_id: \"task-2\"\n  next_steps:\n    - \"Skip SMTP when --dry-run is set\"\nlinks: []\nreplayId:\n  value: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n  source: \"manual\"\n";
const WORKSPACE: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\ncreated_at: \"2026-03-01T09:00:00.000001Z\"\nupdated_at: \"2026-03-01T10:30:00.250000Z\"\n";

/// The invalid workspace: a completed task without evidence (S1), a secret in a note, a
/// timestamp going backwards, an insecure link and an unknown file under `.small/`.
const BAD_PLAN: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"task-1\"\n    title: \"Parse the flag\"\n    status: \"completed\"\n  - id: \"task-2\"\n    title: \"Skip SMTP when set\"\n    status: \"completed\"\n";
const BAD_PROGRESS: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-03-01T10:30:00.250000Z\"\n    status: \"completed\"\n    evidence: \"cargo test: 14 passed\"\n    notes: \"used key sk_live_4eC39HqLyjWDarjtT1zdp7dc for the test\"\n  - task_id: \"task-1\"\n    timestamp: \"2026-03-01T10:00:00.100000Z\"\n    status: \"completed\"\n    link: \"http://ci.example.com/run/7\"\n";

fn workspace(dir: &Path, bad: bool) {
    let small = dir.join(".small");
    fs::create_dir_all(&small).unwrap();
    let files = [
        ("intent.small.yml", INTENT),
        ("constraints.small.yml", CONSTRAINTS),
        ("plan.small.yml", if bad { BAD_PLAN } else { PLAN }),
        (
            "progress.small.yml",
            if bad { BAD_PROGRESS } else { PROGRESS },
        ),
        ("handoff.small.yml", HANDOFF),
        ("workspace.small.yml", WORKSPACE),
    ];
    for (name, text) in files {
        fs::write(small.join(name), text).unwrap();
    }
    if bad {
        fs::write(small.join("notes.txt"), "scratch\n").unwrap();
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Run `small ARGS` in a fresh copy of the workspace and compare exit code, stdout and stderr
/// with the snapshot `name`.
fn snapshot(name: &str, bad: bool, args: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    workspace(tmp.path(), bad);
    let out = Command::new(BIN)
        .args(args)
        .current_dir(tmp.path())
        .env("NO_COLOR", "1")
        .env_remove("SMALL_SPEC_DIR")
        .env_remove("SMALL_PROGRESS_MODE")
        .output()
        .unwrap();
    let root = tmp.path().to_string_lossy().to_string();
    let text = format!(
        "$ small {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
    .replace(&root, "<WORKSPACE>");
    let path = golden_dir().join(format!("{name}.txt"));
    if std::env::var_os("SMALL_UPDATE_GOLDEN").is_some() {
        fs::create_dir_all(golden_dir()).unwrap();
        fs::write(&path, &text).unwrap();
        return;
    }
    let expected = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with SMALL_UPDATE_GOLDEN=1)", path.display()));
    assert_eq!(
        text,
        expected,
        "output of `small {}` changed ({})",
        args.join(" "),
        path.display()
    );
}

#[test]
fn valid_workspace_reports() {
    snapshot("valid-lint-strict", false, &["lint", "--strict"]);
    snapshot("valid-verify-strict", false, &["verify", "--strict"]);
    snapshot("valid-check-strict", false, &["check", "--strict"]);
    snapshot("valid-status", false, &["status"]);
    snapshot("valid-emit", false, &["emit"]);
    snapshot("valid-doctor", false, &["doctor"]);
}

#[test]
fn invalid_workspace_reports() {
    snapshot("invalid-validate", true, &["validate"]);
    snapshot("invalid-lint", true, &["lint"]);
    snapshot("invalid-lint-strict", true, &["lint", "--strict"]);
    snapshot("invalid-verify-strict", true, &["verify", "--strict"]);
    snapshot("invalid-check-strict", true, &["check", "--strict"]);
    snapshot("invalid-status", true, &["status"]);
}
