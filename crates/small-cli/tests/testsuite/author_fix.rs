//! `small fix`.

use crate::author_support;
use author_support::Ws;

#[test]
fn needs_a_choice() {
    let ws = Ws::new();
    ws.fails(2, &["fix"]);
}

#[test]
fn versions_are_quoted_in_place() {
    let ws = Ws::new();
    let plan = ws
        .read("plan.small.yml")
        .replace("small_version: \"1.0.0\"", "small_version: 1.0.0 # drift");
    ws.write("plan.small.yml", &plan);
    let meta = ws
        .read("workspace.small.yml")
        .replace("small_version: \"1.0.0\"", "small_version: '1.0.0'");
    ws.write("workspace.small.yml", &meta);
    let out = ws.ok(&["fix", "--versions"]);
    assert!(out.contains("2 file(s) rewritten"), "{out}");
    assert!(ws
        .read("plan.small.yml")
        .contains("small_version: \"1.0.0\" # drift"));
    assert!(ws
        .read("workspace.small.yml")
        .contains("small_version: \"1.0.0\"\n"));
    let out = ws.ok(&["fix", "--versions"]);
    assert!(out.contains("0 file(s) rewritten"), "{out}");
}

#[test]
fn runtime_layout_moves_legacy_dirs() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.path("runs/r1")).unwrap();
    std::fs::write(ws.path("runs/r1/a.txt"), "a").unwrap();
    std::fs::create_dir_all(ws.path("archive")).unwrap();
    std::fs::write(ws.path("archive/x.yml"), "x").unwrap();
    std::fs::create_dir_all(ws.root().join(".small-archive")).unwrap();
    std::fs::write(ws.root().join(".small-archive/x.yml"), "x").unwrap();
    ws.fails(1, &["check", "--strict"]);
    ws.ok(&["fix", "--runtime-layout"]);
    assert!(!ws.path("runs").exists() && !ws.path("archive").exists());
    assert_eq!(
        std::fs::read_to_string(ws.root().join(".small-runs/r1/a.txt")).unwrap(),
        "a"
    );
    assert_eq!(
        ws.entries().last().unwrap()["task_id"],
        "meta/reconcile-runtime-layout"
    );
    ws.strict_ok();
    let out = ws.ok(&["fix", "--runtime-layout"]);
    assert!(out.contains("no legacy"), "{out}");
}

#[test]
fn orphan_progress_is_renamed_to_meta_ids() {
    let ws = Ws::new();
    ws.ok(&["handoff"]);
    let id = ws.doc("handoff.small.yml")["replayId"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    ws.write("progress.small.yml", &format!("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: reset # old\n    status: completed\n    timestamp: \"2026-01-01T00:00:00.1Z\"\n    evidence: x\n    replayId: \"{id}\"\n  - task_id: task-9\n    timestamp: \"2026-01-01T00:00:00.2Z\"\n    evidence: y\n    replayId: \"{id}\"\n  - task_id: other run\n    timestamp: \"2026-01-01T00:00:00.3Z\"\n    evidence: z\n"));
    ws.fails(1, &["check", "--strict"]);
    let out = ws.ok(&["fix", "--orphan-progress"]);
    assert!(out.contains("reset -> meta/reset"), "{out}");
    let e = ws.entries();
    assert_eq!(e[0]["task_id"], "meta/reset");
    assert_eq!(e[1]["task_id"], "meta/historical/task-9");
    assert_eq!(
        e[2]["task_id"], "other run",
        "entries of other runs are left alone"
    );
    assert!(ws.read("progress.small.yml").contains("# old"));
    assert_eq!(e[3]["task_id"], "meta/reconcile-plan");
    ws.strict_ok();
}

#[test]
fn workspace_metadata_is_created_or_repaired() {
    let ws = Ws::new();
    std::fs::remove_file(ws.path("workspace.small.yml")).unwrap();
    let out = ws.ok(&["fix", "workspace"]);
    assert!(out.contains("Created"), "{out}");
    assert_eq!(ws.doc("workspace.small.yml")["kind"], "repo-root");
    ws.write(
        "workspace.small.yml",
        "# mine\nsmall_version: \"1.0.0\"\nkind: repo-root\ncreated_at: yesterday\n",
    );
    ws.ok(&["fix", "workspace"]);
    let m = ws.doc("workspace.small.yml");
    assert_eq!(m["owner"], "agent");
    assert!(small_core::ops::formats::timestamp::parse(m["created_at"].as_str().unwrap()).is_ok());
    assert!(m["updated_at"].as_str().is_some());
    assert!(ws.read("workspace.small.yml").starts_with("# mine\n"));
    ws.ok(&["fix", "workspace", "--force", "--kind", "examples"]);
    assert_eq!(ws.doc("workspace.small.yml")["kind"], "examples");
    ws.ok(&["fix", "--all", "--workspace", "any"]);
}

/// The runtime-layout moves are journaled with the entry that records them: `small fix`
/// killed between two moves leaves a journal, and the next command finishes every move and
/// records the repair once.
#[cfg(unix)]
#[test]
fn runtime_layout_killed_mid_move_is_finished_by_the_next_command() {
    use std::time::{Duration, Instant};
    let ws = Ws::new();
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        std::fs::create_dir_all(ws.path("runs/r1")).unwrap();
        std::fs::write(ws.path(&format!("runs/r1/{name}")), name).unwrap();
        std::fs::write(ws.path(&format!("runs/{name}")), name).unwrap();
    }
    let entries_before = ws.entries().len();
    let mut child = ws
        .cmd(&["fix", "--runtime-layout"])
        .env("SMALL_TEST_SLOW_COMMIT_MS", "400")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = ws.root().join(".small-cache/txn.journal");
    let runs = ws.root().join(".small-runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    // Wait for the commit point (the journal) and the first move, then kill before the rest.
    while !(journal.exists() && runs.join("a.txt").exists()) {
        assert!(Instant::now() < deadline, "the commit never started");
        assert!(
            child.try_wait().unwrap().is_none(),
            "fix ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(journal.exists(), "killed mid-commit: the journal is left");
    assert!(
        ws.path("runs/r1").exists(),
        "killed before every move was made"
    );
    assert_eq!(
        ws.entries().len(),
        entries_before,
        "the entry is not appended yet"
    );

    // The next command (any writer) finishes the commit first.
    let out = ws.ok(&["fix", "--runtime-layout"]);
    assert!(out.contains("no legacy"), "{out}");
    assert!(!journal.exists());
    assert!(!ws.path("runs").exists());
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        assert_eq!(std::fs::read_to_string(runs.join(name)).unwrap(), name);
        assert_eq!(
            std::fs::read_to_string(runs.join("r1").join(name)).unwrap(),
            name
        );
    }
    let recorded: Vec<_> = ws
        .entries()
        .into_iter()
        .filter(|e| e["task_id"] == "meta/reconcile-runtime-layout")
        .collect();
    assert_eq!(recorded.len(), 1, "the repair is recorded once");
    ws.strict_ok();
}

/// A refused runtime-layout repair (a conflicting file) moves nothing.
#[test]
fn a_refused_runtime_layout_repair_moves_nothing() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.path("runs")).unwrap();
    std::fs::write(ws.path("runs/a.txt"), "a").unwrap();
    std::fs::write(ws.path("runs/z.txt"), "legacy").unwrap();
    std::fs::create_dir_all(ws.root().join(".small-runs")).unwrap();
    std::fs::write(ws.root().join(".small-runs/z.txt"), "new").unwrap();
    let err = ws.fails(1, &["fix", "--runtime-layout"]);
    assert!(err.contains("different content"), "{err}");
    assert!(ws.path("runs/a.txt").exists(), "a.txt was not moved");
    assert!(!ws.root().join(".small-runs/a.txt").exists());
}
