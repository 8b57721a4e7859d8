//! `small plan` and `small checkpoint`.

use crate::author_support;
use author_support::{assert_increasing, Ws};

const COMMENTED_PLAN: &str = "# The plan, written by a human.\nsmall_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  # first things first\n  - id: \"task-1\"\n    title: 'Set up' # single-quoted on purpose\n    steps: []\n  - id: task-2\n    title: Build it\n    status: pending   # aligned comment\n";

#[test]
fn add_creates_task_n_and_records_progress() {
    let ws = Ws::new();
    let out = ws.ok(&["plan", "--add", "Write the parser"]);
    assert!(out.contains("task-2"), "{out}");
    let t = ws.tasks();
    assert_eq!(t.len(), 2);
    assert_eq!(t[1]["id"], "task-2");
    assert_eq!(t[1]["title"], "Write the parser");
    assert_eq!(t[1]["status"], "pending");
    let e = ws.entries();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["task_id"], "task-2");
    assert_eq!(e[0]["status"], "pending");
    assert_eq!(e[0]["notes"], "Write the parser");
    // the run id was recorded and the entry bound to it
    let meta = ws.doc("workspace.small.yml");
    let id = meta["run"]["replay_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 64);
    assert_eq!(e[0]["replayId"], id.as_str());
    ws.strict_ok();
}

#[test]
fn comments_survive_plan_done() {
    let ws = Ws::new();
    ws.write("plan.small.yml", COMMENTED_PLAN);
    // Issue 14.2: --done invents no evidence; it points to checkpoint.
    let err = ws.fails(1, &["plan", "--done", "task-1"]);
    assert!(err.contains("small checkpoint --task task-1"), "{err}");
    assert!(ws.entries().is_empty());
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--test",
        "cargo test",
    ]);
    ws.ok(&["plan", "--done", "task-1"]);
    let text = ws.read("plan.small.yml");
    for keep in [
        "# The plan, written by a human.",
        "# first things first",
        "title: 'Set up' # single-quoted on purpose",
        "status: pending   # aligned comment",
        "id: task-2",
    ] {
        assert!(text.contains(keep), "lost {keep:?}:\n{text}");
    }
    assert_eq!(ws.tasks()[0]["status"], "completed");
    // --done writes no entry of its own
    let e = ws.entries();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["task_id"], "task-1");
    assert_eq!(e[0]["status"], "completed");
    ws.ok(&["plan", "--pending", "task-1"]);
    ws.ok(&["plan", "--done", "task-1"]);
    assert_eq!(ws.entries().len(), 2, "no second evidence entry for task-1");
    let text = ws.read("plan.small.yml");
    assert!(text.contains("status: pending   # aligned comment"));
    assert_eq!(ws.tasks()[1]["status"], "pending");
}

#[test]
fn pending_blocked_and_unknown_ids() {
    let ws = Ws::new();
    ws.write("plan.small.yml", COMMENTED_PLAN);
    ws.ok(&["plan", "--blocked", "task-2"]);
    assert_eq!(ws.tasks()[1]["status"], "blocked");
    assert!(ws.read("plan.small.yml").contains("# aligned comment"));
    ws.ok(&["plan", "--pending", "task-2"]);
    assert_eq!(ws.tasks()[1]["status"], "pending");
    let e = ws.entries();
    assert_eq!(
        e.iter()
            .map(|e| e["status"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["blocked", "pending"]
    );
    let before = ws.read("plan.small.yml");
    let err = ws.fails(1, &["plan", "--done", "task-9"]);
    assert!(err.contains("task-9"), "{err}");
    assert_eq!(
        ws.read("plan.small.yml"),
        before,
        "a failed command changes nothing"
    );
    assert_eq!(ws.entries().len(), 2);
}

#[test]
fn dependencies_are_checked() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Two"]);
    ws.ok(&["plan", "--add", "Three"]);
    ws.ok(&["plan", "--depends", "task-3:task-2"]);
    assert_eq!(ws.tasks()[2]["dependencies"], serde_json::json!(["task-2"]));
    ws.ok(&["plan", "--depends", "task-2:task-1"]);
    let err = ws.fails(1, &["plan", "--depends", "task-1:task-3"]);
    assert!(err.contains("cycle"), "{err}");
    let err = ws.fails(1, &["plan", "--depends", "task-3:task-2"]);
    assert!(err.contains("already"), "{err}");
    let err = ws.fails(1, &["plan", "--depends", "task-3:task-3"]);
    assert!(err.contains("itself"), "{err}");
    let err = ws.fails(1, &["plan", "--depends", "task-3:task-8"]);
    assert!(err.contains("task-8"), "{err}");
    ws.fails(2, &["plan", "--depends", "task-3"]);
    assert_eq!(
        ws.entries()
            .iter()
            .filter(|e| e["notes"] == "small plan --depends")
            .count(),
        2
    );
}

#[test]
fn no_flags_and_reset() {
    let ws = Ws::new();
    let out = ws.ok(&["plan"]);
    assert!(out.contains("No changes"), "{out}");
    ws.ok(&["plan", "--add", "x"]);
    ws.fails(2, &["plan", "--reset"]);
    assert_eq!(ws.tasks().len(), 2);
    ws.ok(&["plan", "--reset", "--yes"]);
    assert_eq!(ws.tasks().len(), 1);
    assert_eq!(ws.entries().last().unwrap()["task_id"], "meta/plan-reset");
    std::fs::remove_file(ws.path("plan.small.yml")).unwrap();
    ws.ok(&["plan"]);
    assert_eq!(ws.tasks()[0]["id"], "task-1");
    let err = ws.fails(2, &["plan", "--add", "x", "--workspace", "examples"]);
    assert!(err.contains("examples"), "{err}");
    ws.ok(&["plan", "--add", "y", "--workspace", "any"]);
}

#[test]
fn checkpoint_updates_plan_and_progress_together() {
    let ws = Ws::new();
    ws.write("plan.small.yml", COMMENTED_PLAN);
    let out = ws.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "tests pass",
    ]);
    assert!(out.contains("task-1 -> completed"), "{out}");
    assert_eq!(ws.tasks()[0]["status"], "completed");
    assert!(ws
        .read("plan.small.yml")
        .contains("# single-quoted on purpose"));
    let e = ws.entries();
    assert_eq!(e[0]["evidence"], "tests pass");
    let out = ws.ok(&[
        "checkpoint",
        "--task",
        "task-2",
        "--status",
        "Blocked",
        "--json",
        "--notes",
        "waiting",
        "--evidence",
        "API key not issued yet",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "blocked");
    assert_eq!(v["progress_entry"]["notes"], "waiting");
    assert_eq!(v["progress_entry"]["evidence"], "API key not issued yet");
    assert_eq!(v["checkpoint_at"], ws.entries()[1]["timestamp"]);
    assert_eq!(
        v["files"],
        serde_json::json!(["plan.small.yml", "progress.small.yml"])
    );
    assert_increasing(&ws.entries());
    ws.strict_ok();
}

#[test]
fn checkpoint_refusals_change_nothing() {
    let ws = Ws::new();
    let plan = ws.read("plan.small.yml");
    // An unknown or wrong status is refused (1), as the reference does.
    ws.fails(
        1,
        &["checkpoint", "--task", "task-1", "--status", "pending"],
    );
    let err = ws.fails(
        1,
        &[
            "checkpoint",
            "--task",
            "task-5",
            "--status",
            "completed",
            "--evidence",
            "x",
        ],
    );
    assert!(err.contains("task-5"), "{err}");
    // Issue 14.2: no evidence, no completion (and no canned text).
    let err = ws.fails(
        2,
        &["checkpoint", "--task", "task-1", "--status", "completed"],
    );
    assert!(err.contains("--evidence"), "{err}");
    assert!(ws.entries().is_empty());
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "done",
        "--at",
        "2030-01-01T00:00:00.1Z",
    ]);
    let plan2 = ws.read("plan.small.yml");
    ws.fails(
        1,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "blocked",
            "--evidence",
            "waiting",
            "--at",
            "2029-01-01T00:00:00.1Z",
        ],
    );
    assert_eq!(
        ws.read("plan.small.yml"),
        plan2,
        "plan unchanged when the progress entry is refused"
    );
    assert_ne!(plan, plan2);
    assert_eq!(ws.entries().len(), 1);
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "blocked",
        "--evidence",
        "waiting",
        "--after",
        "2029-01-01T00:00:00.1Z",
    ]);
    assert_eq!(
        ws.entries()[1]["timestamp"],
        "2030-01-01T00:00:00.100000001Z"
    );
}

#[test]
fn every_writing_command_takes_dir_and_quiet() {
    let ws = Ws::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = ws.root().join(".small").display().to_string(); // the .small dir itself works too
    let run = |args: &[&str]| {
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--dir", dir.as_str()]);
        let o = std::process::Command::new(author_support::bin())
            .args(&full)
            .current_dir(elsewhere.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{full:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = run(&["--quiet", "plan", "--add", "Quiet task"]);
    assert!(out.is_empty(), "--quiet printed {out:?}");
    run(&[
        "checkpoint",
        "--task",
        "task-2",
        "--status",
        "completed",
        "--evidence",
        "ok",
    ]);
    assert!(run(&["plan", "--pending", "task-2"]).contains("updated .small/plan.small.yml"));
    run(&["plan", "--done", "task-2"]);
    run(&[
        "progress",
        "add",
        "--task",
        "task-2",
        "--status",
        "completed",
        "--evidence",
        "again",
    ]);
    run(&["progress", "migrate"]);
    run(&["handoff"]);
    run(&["start"]);
    run(&["fix", "--versions"]);
    run(&["fix", "workspace"]);
    run(&["reset", "--yes", "--keep-intent"]);
    assert_eq!(ws.tasks().len(), 1);
    ws.strict_ok();
    assert!(
        !elsewhere.path().join(".small").exists()
            && !elsewhere.path().join(".small-cache").exists()
    );
}
