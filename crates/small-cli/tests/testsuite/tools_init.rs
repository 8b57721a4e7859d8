//! `small init` on real directories.

use crate::tools_support;
use predicates::prelude::*;
use sha2::{Digest, Sha256};
use tools_support::{assert_check_strict, progress_entries, read, small, yaml_json};

const FILES: [&str; 6] = [
    "intent.small.yml",
    "constraints.small.yml",
    "plan.small.yml",
    "progress.small.yml",
    "handoff.small.yml",
    "workspace.small.yml",
];

fn lf(b: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(b)
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .into_bytes()
}

#[test]
fn init_creates_the_six_files_agents_md_and_gitignore() {
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["init", "--dir"])
        .arg(d.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Initialized a SMALL v1.0.0 workspace",
        ))
        .stdout(predicate::str::contains(".small/workspace.small.yml"))
        .stdout(predicate::str::contains("Created AGENTS.md"));
    for f in FILES {
        let v = yaml_json(d.path().join(".small").join(f));
        assert_eq!(v["small_version"], "1.0.0", "{f}");
    }
    let names: Vec<_> = std::fs::read_dir(d.path().join(".small"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names.len(),
        6,
        "nothing but the six files under .small/: {names:?}"
    );
    assert!(read(d.path().join("AGENTS.md")).contains("<!-- BEGIN SMALL HARNESS v1.0.0 -->"));
    let gi = read(d.path().join(".gitignore"));
    for l in [".small-cache/", ".small-runs/", ".small-archive/"] {
        assert!(gi.lines().any(|x| x == l), "{l} in .gitignore");
    }
    assert_check_strict(d.path());
}

#[test]
fn init_records_the_bootstrap_entry_without_replay_id() {
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let entries = progress_entries(d.path());
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    assert_eq!(e["task_id"], "meta/init");
    assert_eq!(e["status"], "completed");
    assert_eq!(e["command"], "small init");
    assert!(e["evidence"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(e.get("replayId").is_none());
    let ts = e["timestamp"].as_str().unwrap();
    assert!(
        small_core::ops::formats::timestamp::parse(ts).is_ok(),
        "{ts}"
    );
    assert_eq!(
        ts.len(),
        "2026-01-01T00:00:00.000000000Z".len(),
        "nine fraction digits, UTC"
    );
}

#[test]
fn init_handoff_carries_the_auto_replay_id_of_the_new_files() {
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let s = d.path().join(".small");
    let mut h = Sha256::new();
    h.update(lf(&std::fs::read(s.join("intent.small.yml")).unwrap()));
    h.update(b"\n");
    h.update(lf(&std::fs::read(s.join("plan.small.yml")).unwrap()));
    h.update(b"\n");
    h.update(lf(&std::fs::read(s.join("constraints.small.yml")).unwrap()));
    let expected = hex::encode(h.finalize());
    let handoff = yaml_json(s.join("handoff.small.yml"));
    assert_eq!(handoff["replayId"]["value"], expected.as_str());
    assert_eq!(handoff["replayId"]["source"], "auto");
    assert_eq!(handoff["summary"], "Project initialized.");
    assert!(handoff["resume"].get("current_task_id").is_none());
    assert_eq!(handoff["resume"]["next_steps"].as_array().unwrap().len(), 3);
    assert_eq!(handoff["links"], serde_json::json!([]));
    let ws = yaml_json(s.join("workspace.small.yml"));
    assert_eq!(ws["kind"], "repo-root");
    assert_eq!(ws["owner"], "agent");
    assert!(small_core::ops::formats::timestamp::parse(ws["created_at"].as_str().unwrap()).is_ok());
    assert!(ws.get("run").is_none());
}

#[test]
fn intent_text_is_stored_exactly_even_with_yaml_special_characters() {
    for intent in [
        "Build: a \"thing\" # not a comment",
        "multi\nline",
        "  - looks like a list",
        "émoji ✓ 'quotes'",
    ] {
        let d = tempfile::tempdir().unwrap();
        small()
            .args(["init", "--no-agents", "--intent", intent, "--dir"])
            .arg(d.path())
            .assert()
            .success();
        let v = yaml_json(d.path().join(".small/intent.small.yml"));
        assert_eq!(v["intent"], intent.trim());
        assert_check_strict(d.path());
    }
}

#[test]
fn init_refuses_an_existing_workspace_and_force_overwrites() {
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let intent = d.path().join(".small/intent.small.yml");
    std::fs::write(&intent, "changed by a human\n").unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--force"));
    assert_eq!(read(&intent), "changed by a human\n");
    small()
        .args(["init", "--no-agents", "--force", "--dir"])
        .arg(d.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("overwrote"))
        .stdout(predicate::str::contains("extended"));
    assert!(read(&intent).contains("small_version"));
    // Progress is append-only: the old entry is still there, a second meta/init follows.
    let entries = progress_entries(d.path());
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|e| e["task_id"] == "meta/init"));
    assert_check_strict(d.path());
}

#[test]
fn force_moves_a_damaged_progress_log_aside_instead_of_deleting_it() {
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let progress = d.path().join(".small/progress.small.yml");
    std::fs::write(&progress, "entries: [oops\n").unwrap();
    small()
        .args(["init", "--no-agents", "--force", "--dir"])
        .arg(d.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("moved to .small-cache/backup/"));
    assert_eq!(progress_entries(d.path()).len(), 1);
    let backups: Vec<_> = std::fs::read_dir(d.path().join(".small-cache/backup"))
        .unwrap()
        .collect();
    assert_eq!(backups.len(), 1);
    let kept = std::fs::read_to_string(backups[0].as_ref().unwrap().path()).unwrap();
    assert_eq!(kept, "entries: [oops\n");
    assert_check_strict(d.path());
}

#[test]
fn dir_pointing_at_dot_small_means_its_parent_and_missing_dirs_are_created() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("a/b");
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(target.join(".small"))
        .assert()
        .success();
    assert!(target.join(".small/plan.small.yml").exists());
    assert!(!target.join(".small/.small").exists());
}

#[test]
fn existing_agents_md_without_block_stops_init_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("AGENTS.md"), "# team rules\n").unwrap();
    small()
        .args(["init", "--dir"])
        .arg(d.path())
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("--agents-mode append")
                .and(predicate::str::contains("--no-agents")),
        );
    assert!(!d.path().join(".small").exists(), "no half-made workspace");
    assert!(!d.path().join(".gitignore").exists());
    assert_eq!(read(d.path().join("AGENTS.md")), "# team rules\n");
}

#[test]
fn agents_flags_of_init() {
    let original = "# team rules\n\nbe kind\n";
    // append
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("AGENTS.md"), original).unwrap();
    small()
        .args(["init", "--agents-mode", "append", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let t = read(d.path().join("AGENTS.md"));
    assert!(t.starts_with(original) && t.contains("BEGIN SMALL HARNESS"));
    // prepend
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("AGENTS.md"), original).unwrap();
    small()
        .args(["init", "--agents-mode=prepend", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let t = read(d.path().join("AGENTS.md"));
    assert!(t.ends_with(original) && t.starts_with("<!-- BEGIN SMALL HARNESS"));
    // overwrite
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("AGENTS.md"), original).unwrap();
    small()
        .args(["init", "--overwrite-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    assert!(!read(d.path().join("AGENTS.md")).contains("be kind"));
    // no-agents
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("AGENTS.md"), original).unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    assert_eq!(read(d.path().join("AGENTS.md")), original);
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    assert!(!d.path().join("AGENTS.md").exists());
}

/// `init --force` over a workspace `init` made, AGENTS.md included: the file already holds the
/// current block, so no agents flag is needed (the reference exits 1 there, after rewriting
/// `.small/`; docs/decisions/0144-init-force-over-current-block.md).
#[test]
fn init_force_over_its_own_agents_md_needs_no_agents_flag() {
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["init", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let agents = read(d.path().join("AGENTS.md"));
    small()
        .args(["init", "--force", "--intent", "Again, forced", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    assert_eq!(read(d.path().join("AGENTS.md")), agents);
    let intent = yaml_json(d.path().join(".small/intent.small.yml"));
    assert_eq!(intent["intent"], "Again, forced");
    assert_check_strict(d.path());
}

#[test]
fn an_existing_block_is_replaced_in_place_by_init() {
    let d = tempfile::tempdir().unwrap();
    let original = "head\n\n<!-- BEGIN SMALL HARNESS v1.0.0 -->\nold\n<!-- END SMALL HARNESS v1.0.0 -->\n\ntail\n";
    std::fs::write(d.path().join("AGENTS.md"), original).unwrap();
    small()
        .args(["init", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let t = read(d.path().join("AGENTS.md"));
    assert!(t.starts_with("head\n\n<!-- BEGIN SMALL HARNESS v1.0.0 -->\n"));
    assert!(t.ends_with("<!-- END SMALL HARNESS v1.0.0 -->\n\ntail\n"));
    assert!(!t.contains("\nold\n"));
}

#[test]
fn conflicting_agents_flags_are_usage_errors() {
    let d = tempfile::tempdir().unwrap();
    for args in [
        &["--no-agents", "--overwrite-agents"][..],
        &["--no-agents", "--agents-mode", "append"][..],
        &["--overwrite-agents", "--agents-mode", "prepend"][..],
        &["--agents-mode", "overwrite"][..],
    ] {
        small()
            .arg("init")
            .args(args)
            .arg("--dir")
            .arg(d.path())
            .assert()
            .code(2);
    }
    assert!(!d.path().join(".small").exists());
}

#[test]
fn gitignore_keeps_existing_lines_and_adds_only_missing_ones() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join(".gitignore"), "target\n.small-cache/").unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    assert_eq!(
        read(d.path().join(".gitignore")),
        "target\n.small-cache/\n.small-runs/\n.small-archive/\n"
    );
}

#[test]
fn workspaces_under_a_repository_examples_dir_are_of_kind_examples() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join(".git")).unwrap();
    let ex = d.path().join("examples/demo");
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(&ex)
        .assert()
        .success()
        .stdout(predicate::str::contains("kind: examples"));
    assert_eq!(
        yaml_json(ex.join(".small/workspace.small.yml"))["kind"],
        "examples"
    );
    // An `examples` directory that is not inside a repository is just a name.
    let d2 = tempfile::tempdir().unwrap();
    let plain = d2.path().join("examples/demo");
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(&plain)
        .assert()
        .success();
    assert_eq!(
        yaml_json(plain.join(".small/workspace.small.yml"))["kind"],
        "repo-root"
    );
}

#[test]
fn a_file_named_dot_small_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join(".small"), "not a dir").unwrap();
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .code(2);
}

#[test]
fn quiet_init_prints_nothing() {
    let d = tempfile::tempdir().unwrap();
    small()
        .args(["--quiet", "init", "--no-agents", "--dir"])
        .arg(d.path())
        .assert()
        .success()
        .stdout("");
    assert!(d.path().join(".small/handoff.small.yml").exists());
}

#[test]
fn concurrent_inits_make_exactly_one_workspace() {
    let d = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..6)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_small"))
                .args(["init", "--no-agents", "--dir"])
                .arg(d.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<i32> = children
        .into_iter()
        .map(|mut c| c.wait().unwrap().code().unwrap())
        .collect();
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    assert!(codes.iter().all(|&c| c == 0 || c == 1), "{codes:?}");
    assert_eq!(progress_entries(d.path()).len(), 1);
    assert_check_strict(d.path());
}

#[test]
fn a_directory_that_does_not_exist_yet_is_created_with_agents_md() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("new/project");
    small()
        .args(["init", "--dir"])
        .arg(&target)
        .assert()
        .success();
    assert!(target.join(".small/progress.small.yml").exists());
    assert!(target.join("AGENTS.md").exists());
    assert_check_strict(&target);
}
