//! `small handoff`, `small start`, `small reset`.

use crate::author_support;
use author_support::Ws;

#[test]
fn handoff_auto_replay_id_and_state() {
    let ws = Ws::new();
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "done",
    ]);
    let out = ws.ok(&["handoff"]);
    assert!(out.contains("replayId"), "{out}");
    let h = ws.doc("handoff.small.yml");
    let meta = ws.doc("workspace.small.yml");
    assert_eq!(h["replayId"]["source"], "auto");
    assert_eq!(h["replayId"]["value"], meta["run"]["replay_id"]);
    assert_eq!(
        h["summary"],
        "Run complete. strict check passed. All plan tasks completed."
    );
    assert_eq!(h["resume"]["next_steps"], serde_json::json!([]));
    // comments of the previous handoff (the template's) are kept
    assert!(ws.read("handoff.small.yml").starts_with('#'));
    ws.strict_ok();
}

#[test]
fn handoff_uses_the_hash_when_the_workspace_has_no_run() {
    let ws = Ws::new();
    let small = ws.root().join(".small");
    let expected = small_core::ops::formats::auto_replay_id_in(&small).unwrap();
    ws.ok(&["handoff", "--summary", "Custom summary"]);
    let h = ws.doc("handoff.small.yml");
    assert_eq!(h["replayId"]["value"], expected.as_str());
    assert_eq!(h["summary"], "Custom summary");
    assert_eq!(h["resume"]["current_task_id"], "task-1");
    assert_eq!(
        ws.doc("workspace.small.yml")["run"]["replay_id"],
        expected.as_str()
    );
}

#[test]
fn handoff_manual_replay_id_is_lowercased() {
    let ws = Ws::new();
    let upper = "AB1B9B30FD05B96E8884D59D023A8E10F8704090E6A26CE3CECDA744579DDD22";
    ws.ok(&["handoff", "--replay-id", upper]);
    let h = ws.doc("handoff.small.yml");
    assert_eq!(h["replayId"]["value"], upper.to_ascii_lowercase().as_str());
    assert_eq!(h["replayId"]["source"], "manual");
    // A bad value is a refused request (1), not a malformed command line.
    let err = ws.fails(1, &["handoff", "--replay-id", "abc"]);
    assert!(err.contains("64"), "{err}");
}

/// Issue 14.1: a handoff mid-run succeeds and records the run's state; bookkeeping entries
/// (`plan --add`) never make a task open; the end-of-run check is `handoff --final`.
#[test]
fn handoff_works_mid_run_and_final_is_the_end_of_run_check() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Second"]);
    ws.ok(&["plan", "--add", "Third"]);
    // Only bookkeeping so far: nothing is open, even for --final.
    ws.ok(&["handoff", "--final"]);
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "cargo test: 3 passed",
    ]);
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-2",
        "--status",
        "in_progress",
        "--evidence",
        "parser half done",
    ]);
    let before = ws.read("handoff.small.yml");
    let out = ws.ok(&["handoff"]);
    assert!(out.contains("Open in this run: task-2"), "{out}");
    let h = ws.doc("handoff.small.yml");
    assert_eq!(h["resume"]["current_task_id"], "task-2");
    let steps = h["resume"]["next_steps"].to_string();
    assert!(steps.contains("Continue with task-2"), "{steps}");
    assert!(
        steps.contains("Last evidence: task-2: parser half done"),
        "{steps}"
    );
    ws.strict_ok();
    // --final refuses and changes nothing.
    let now = ws.read("handoff.small.yml");
    assert_ne!(now, before);
    let err = ws.fails(1, &["handoff", "--final"]);
    assert!(err.contains("task-2") && err.contains("--final"), "{err}");
    assert_eq!(ws.read("handoff.small.yml"), now);
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-2",
        "--status",
        "blocked",
        "--evidence",
        "needs input",
    ]);
    ws.ok(&["handoff", "--final"]);
    let h = ws.doc("handoff.small.yml");
    assert_eq!(h["resume"]["current_task_id"], "task-3");
    assert!(h["resume"]["next_steps"]
        .to_string()
        .contains("Blocked: task-2"));
    ws.strict_ok();
}

/// Issue 14.1: entries of an earlier run do not count after `reset`.
#[test]
fn entries_of_an_earlier_run_do_not_count() {
    let ws = Ws::new();
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "old run work",
    ]);
    let err = ws.fails(1, &["handoff", "--final"]);
    assert!(err.contains("task-1"), "{err}");
    ws.ok(&["reset", "--yes", "--keep-intent"]);
    let out = ws.ok(&["handoff", "--final", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["open"], serde_json::json!([]));
    assert_eq!(v["last_evidence"], serde_json::Value::Null);
    assert_eq!(v["current_task_id"], "task-1");
}

/// Issue 14.1: a summary written with --summary survives plain handoffs and `start` while the
/// state is unchanged, and gives way (saying so) when it changes.
#[test]
fn a_written_summary_is_kept_until_the_state_changes() {
    let ws = Ws::new();
    ws.ok(&["handoff", "--summary", "Waiting on the API review"]);
    let out = ws.ok(&["handoff"]);
    assert!(out.contains("summary: kept"), "{out}");
    assert_eq!(
        ws.doc("handoff.small.yml")["summary"],
        "Waiting on the API review"
    );
    let out = ws.ok(&["start"]);
    assert!(out.contains("summary: kept"), "{out}");
    assert_eq!(
        ws.doc("handoff.small.yml")["summary"],
        "Waiting on the API review"
    );
    ws.ok(&["plan", "--add", "Second"]);
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "reviewed",
    ]);
    let out = ws.ok(&["handoff"]);
    assert!(
        out.contains("replaced \"Waiting on the API review\""),
        "{out}"
    );
    assert_eq!(
        ws.doc("handoff.small.yml")["summary"],
        "Run in progress. Next task: task-2."
    );
    let out = ws.ok(&["handoff", "--summary", "New words"]);
    assert!(out.contains("summary: as given"), "{out}");
}

#[test]
fn handoff_scope_flags() {
    let ws = Ws::new();
    let err = ws.fails(2, &["handoff", "--workspace", "examples"]);
    assert!(err.contains("--workspace any"), "{err}");
    ws.write(
        "workspace.small.yml",
        "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"examples\"\n",
    );
    ws.fails(1, &["handoff"]);
    ws.ok(&["handoff", "--workspace", "any"]);
}

#[test]
fn start_repairs_missing_files_and_self_heals_the_replay_id() {
    let ws = Ws::new();
    std::fs::remove_file(ws.path("handoff.small.yml")).unwrap();
    std::fs::remove_file(ws.path("progress.small.yml")).unwrap();
    let intent = ws.read("intent.small.yml");
    let out = ws.ok(&["start"]);
    assert!(out.contains("Strict check passed"), "{out}");
    let h = ws.doc("handoff.small.yml");
    assert_eq!(h["run"]["transition_reason"], "self_heal");
    assert_eq!(
        ws.entries().last().unwrap()["task_id"],
        "meta/replayid-self-heal"
    );
    assert_eq!(
        ws.read("intent.small.yml"),
        intent,
        "start never rewrites the intent"
    );
    ws.ok(&["start", "--summary", "again"]);
    let h = ws.doc("handoff.small.yml");
    assert_eq!(h["run"]["transition_reason"], "manual");
    assert_eq!(h["summary"], "again");
    ws.strict_ok();
}

#[test]
fn reset_starts_a_new_run_and_keeps_history() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Two"]);
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-2",
        "--status",
        "completed",
        "--evidence",
        "done",
    ]);
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "done",
    ]);
    ws.ok(&["handoff"]);
    let old_id = ws.doc("handoff.small.yml")["replayId"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    let progress_before = ws.read("progress.small.yml");
    let constraints = ws.read("constraints.small.yml");
    let intent = ws.read("intent.small.yml");

    // without --yes it asks; "n" on stdin cancels
    let mut c = ws.cmd(&["reset"]);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"n\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("cancelled"));
    assert_eq!(ws.tasks().len(), 2);

    ws.ok(&["reset", "--yes", "--keep-intent"]);
    assert_eq!(ws.read("intent.small.yml"), intent);
    assert_eq!(ws.read("constraints.small.yml"), constraints);
    assert!(
        ws.read("progress.small.yml").starts_with(&progress_before),
        "progress is only appended to"
    );
    assert_eq!(ws.tasks().len(), 1);
    let h = ws.doc("handoff.small.yml");
    assert_eq!(h["run"]["transition_reason"], "reset");
    assert_eq!(h["run"]["previous_replay_id"], old_id.as_str());
    assert_ne!(h["replayId"]["value"], old_id.as_str());
    assert_eq!(
        h["replayId"]["value"],
        ws.doc("workspace.small.yml")["run"]["replay_id"]
    );
    let last = ws.entries().last().cloned().unwrap();
    assert_eq!(last["task_id"], "meta/reset");
    assert_eq!(last["replayId"], h["replayId"]["value"]);
    ws.strict_ok();

    ws.ok(&["reset", "-y"]);
    assert_ne!(ws.read("intent.small.yml"), intent);
    ws.strict_ok();
}

#[test]
fn start_fix_repairs_orphan_progress() {
    let ws = Ws::new();
    ws.ok(&["start"]);
    let id = ws.doc("handoff.small.yml")["replayId"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    // An orphan entry (written by hand: `progress add` refuses unknown task ids).
    let mut log = ws
        .read("progress.small.yml")
        .replace("entries: []", "entries:");
    log.push_str(&format!(
        "  - task_id: \"task-42\"\n    status: \"completed\"\n    timestamp: \"2030-01-01T00:00:00.000000000Z\"\n    evidence: \"old work\"\n    replayId: \"{id}\"\n"
    ));
    ws.write("progress.small.yml", &log);
    // bind it to the handoff's run so strict S2 sees it
    let text = ws.read("progress.small.yml");
    assert!(text.contains(&id) || ws.doc("workspace.small.yml")["run"]["replay_id"] == id.as_str());
    let err = ws.fails(1, &["start"]);
    assert!(err.contains("start --fix"), "{err}");
    let out = ws.ok(&["start", "--fix"]);
    assert!(out.contains("task-42 -> meta/historical/task-42"), "{out}");
    ws.strict_ok();
}
