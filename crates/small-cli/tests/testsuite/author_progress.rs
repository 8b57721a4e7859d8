//! `small progress add` and `small progress migrate`.

use crate::author_support;
use author_support::{assert_increasing, Ws};

#[test]
fn add_appends_one_entry_with_generated_timestamp() {
    let ws = Ws::new();
    let before = ws.read("progress.small.yml");
    let out = ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "started: \"quoted\" # not a comment",
    ]);
    assert!(
        out.contains("task-1") && out.contains("in_progress"),
        "{out}"
    );
    let e = ws.entries();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["task_id"], "task-1");
    assert_eq!(e[0]["status"], "in_progress");
    assert_eq!(e[0]["evidence"], "started: \"quoted\" # not a comment");
    // the comments of the template survive the first append (entries: [] rewritten in place)
    let after = ws.read("progress.small.yml");
    for line in before.lines().filter(|l| l.starts_with('#')) {
        assert!(after.contains(line), "lost comment {line}");
    }
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--notes",
        "done",
        "--commit",
        "abc1234",
    ]);
    let after2 = ws.read("progress.small.yml");
    assert!(
        after2.starts_with(&after),
        "second append must only add bytes at the end"
    );
    let e = ws.entries();
    assert_eq!(e.len(), 2);
    assert_eq!(e[1]["commit"], "abc1234");
    assert!(
        e[1].get("evidence").is_none(),
        "no canned evidence: {}",
        e[1]
    );
    assert_eq!(e[1]["notes"], "done");
    assert_increasing(&e);
    ws.strict_ok();
}

#[test]
fn add_binds_entries_to_the_run_and_leaves_metadata_alone() {
    let ws = Ws::new();
    let id = "ab".repeat(32);
    ws.write("workspace.small.yml", &format!("# meta\nsmall_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\ncreated_at: \"2026-01-01T00:00:00Z\"\nupdated_at: \"2026-01-01T00:00:00Z\"\nrun:\n  replay_id: \"{id}\"\n"));
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "meta/note",
        "--status",
        "completed",
        "--evidence",
        "noted",
    ]);
    assert_eq!(ws.entries()[0]["replayId"], id.as_str());
    let meta = ws.read("workspace.small.yml");
    assert!(
        meta.contains("updated_at: \"2026-01-01T00:00:00Z\""),
        "a progress append writes only the log: {meta}"
    );
}

#[test]
fn add_json_output() {
    let ws = Ws::new();
    let out = ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "COMPLETED",
        "--evidence",
        "e",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["entry"]["status"], "completed");
    assert_eq!(v["entry"]["task_id"], "task-1");
    assert_eq!(v["task_exists_in_plan"], true);
    assert!(v["workspace"].as_str().is_some());
    let out = ws.ok(&[
        "progress",
        "add",
        "--task",
        "meta/note",
        "--status",
        "pending",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["task_exists_in_plan"], false);
    assert_eq!(v["entry"]["timestamp"], ws.entries()[1]["timestamp"]);
}

/// Issue 14.2: a typo in --task is refused before anything is appended, with the closest ids.
#[test]
fn unknown_task_is_refused_with_the_closest_ids() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Two"]);
    let before = ws.read("progress.small.yml");
    let err = ws.fails(
        1,
        &[
            "progress", "add", "--task", "task-99", "--status", "pending",
        ],
    );
    assert!(err.contains("task-99 is not in plan"), "{err}");
    assert!(err.contains("did you mean task-1"), "{err}");
    assert_eq!(ws.read("progress.small.yml"), before, "nothing appended");
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "meta/notes",
        "--status",
        "pending",
    ]);
}

/// Issue 14.2: completing a task whose dependencies are open is refused unless forced, and
/// the force is recorded.
#[test]
fn completing_before_dependencies_needs_force() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Two", "--depends", "task-2:task-1"]);
    let before = ws.read("progress.small.yml");
    let err = ws.fails(
        1,
        &[
            "checkpoint",
            "--task",
            "task-2",
            "--status",
            "completed",
            "--evidence",
            "ok",
        ],
    );
    assert!(err.contains("task-1") && err.contains("--force"), "{err}");
    let err = ws.fails(
        1,
        &[
            "progress",
            "add",
            "--task",
            "task-2",
            "--status",
            "completed",
            "--evidence",
            "ok",
        ],
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(ws.read("progress.small.yml"), before);
    let out = ws.ok(&[
        "checkpoint",
        "--task",
        "task-2",
        "--status",
        "completed",
        "--evidence",
        "ok",
        "--force",
    ]);
    assert!(out.contains("forced"), "{out}");
    let last = ws.entries().last().unwrap().clone();
    assert!(
        last["notes"].as_str().unwrap().contains("--force")
            && last["notes"].as_str().unwrap().contains("task-1"),
        "{last}"
    );
}

#[test]
fn at_and_after() {
    let ws = Ws::new();
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "pending",
        "--at",
        "2030-01-01T00:00:00.5+02:00",
    ]);
    assert_eq!(
        ws.entries()[0]["timestamp"],
        "2029-12-31T22:00:00.500000000Z"
    );
    let err = ws.fails(
        1,
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "pending",
            "--at",
            "2029-12-31T22:00:00.5Z",
        ],
    );
    assert!(err.contains("not after"), "{err}");
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "pending",
        "--after",
        "2001-01-01T00:00:00.0Z",
    ]);
    assert_eq!(
        ws.entries()[1]["timestamp"],
        "2029-12-31T22:00:00.500000001Z"
    );
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "pending",
        "--after",
        "2031-01-01T00:00:00.0Z",
    ]);
    assert_eq!(
        ws.entries()[2]["timestamp"],
        "2031-01-01T00:00:00.000000001Z"
    );
    // a clock behind the log still gives increasing timestamps
    ws.ok(&["progress", "add", "--task", "task-1", "--status", "pending"]);
    assert_eq!(
        ws.entries()[3]["timestamp"],
        "2031-01-01T00:00:00.000000002Z"
    );
    ws.fails(
        2,
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "pending",
            "--at",
            "2031-01-01T00:00:00.1Z",
            "--after",
            "2031-01-01T00:00:00.1Z",
        ],
    );
    ws.fails(
        1,
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "pending",
            "--at",
            "2040-01-01T00:00:00Z",
        ],
    );
    assert_eq!(ws.entries().len(), 4);
}

#[test]
fn bad_flags_and_no_workspace() {
    let ws = Ws::new();
    // A status the protocol does not know is refused (1), as the reference does.
    ws.fails(
        1,
        &["progress", "add", "--task", "task-1", "--status", "done"],
    );
    ws.fails(2, &["progress", "add", "--status", "pending"]);
    ws.fails(2, &["progress", "add", "--task", "task-1"]);
    let empty = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(author_support::bin())
        .args(["progress", "add", "--task", "t", "--status", "pending"])
        .current_dir(empty.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(ws.entries().is_empty());
}

#[test]
fn dir_flag_and_workspace_scope() {
    let ws = Ws::new();
    let other = tempfile::tempdir().unwrap();
    let dir = ws.root().display().to_string();
    let o = std::process::Command::new(author_support::bin())
        .args([
            "progress", "add", "--task", "task-1", "--status", "pending", "--dir", &dir,
        ])
        .current_dir(other.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(ws.entries().len(), 1);
    let err = ws.fails(
        1,
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "pending",
            "--workspace",
            "examples",
        ],
    );
    assert!(err.contains("repo-root"), "{err}");
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "pending",
        "--workspace",
        "any",
    ]);
    std::fs::remove_file(ws.path("workspace.small.yml")).unwrap();
    let err = ws.fails(
        1,
        &["progress", "add", "--task", "task-1", "--status", "pending"],
    );
    assert!(err.contains("fix workspace"), "{err}");
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "pending",
        "--workspace",
        "any",
    ]);
    assert_eq!(ws.entries().len(), 3);
}

#[test]
fn appends_to_hand_written_logs_without_touching_them() {
    let ws = Ws::new();
    let base = "small_version: \"1.0.0\"\r\nowner: agent\r\nentries:\r\n    # the first\r\n    - task_id: task-1\r\n      timestamp: 2026-01-01T00:00:00.5Z # unquoted\r\n      evidence: |\r\n        - looks like an item\r\n      status: completed";
    ws.write("progress.small.yml", base);
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "done",
    ]);
    let text = ws.read("progress.small.yml");
    assert!(text.starts_with(base), "{text}");
    assert!(
        text[base.len()..].starts_with("\r\n    - task_id: \"task-1\"\r\n"),
        "{text}"
    );
    assert_eq!(ws.entries().len(), 2);
    assert_eq!(ws.entries()[0]["evidence"], "- looks like an item\n");
}

#[test]
fn refuses_to_append_after_a_broken_last_entry() {
    let ws = Ws::new();
    ws.write("progress.small.yml", "small_version: \"1.0.0\"\nowner: agent\nentries:\n  - task_id: a\n    timestamp: \"not a time\"\n    evidence: x\n");
    let err = ws.fails(
        1,
        &["progress", "add", "--task", "task-1", "--status", "pending"],
    );
    assert!(err.contains("progress migrate"), "{err}");
}

#[test]
fn migrate_rewrites_timestamps_only() {
    let ws = Ws::new();
    let src = "# log\nsmall_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: task-1 # c1\n    status: completed\n    timestamp: 2026-01-02T00:00:00Z\n    evidence: one\n  - task_id: task-1\n    timestamp: \"2026-01-01 00:00:00.25+00:00\"\n    evidence: two\n";
    ws.write("progress.small.yml", src);
    let out = ws.ok(&["progress", "migrate"]);
    assert!(out.contains("Rewrote 2 of 2"), "{out}");
    let text = ws.read("progress.small.yml");
    assert!(text.contains("task_id: task-1 # c1\n"));
    assert!(
        text.contains("timestamp: \"2026-01-02T00:00:00.000000000Z\""),
        "{text}"
    );
    assert!(
        text.contains("timestamp: \"2026-01-02T00:00:00.000000001Z\""),
        "{text}"
    );
    assert_increasing(&ws.entries());
    let out = ws.ok(&["progress", "migrate"]);
    assert!(out.contains("nothing to do"), "{out}");
    // after migrate, appending works again
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "done",
    ]);
    assert_increasing(&ws.entries());
}
