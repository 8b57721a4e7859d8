//! `small handoff` next to other agents' claims, with real git: a handoff writes on no task,
//! so another agent's lease never refuses it; it resumes at the next ready task nobody else
//! holds (a live lease or a done record this checkout has seen), or keeps its task when
//! every ready task is held.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::claims_support::{clone, json, seeded, small, text};

/// A bare remote whose `main` holds a workspace planning task-1 … task-`n`, and a clone of
/// it under `top` for each name.
fn team(top: &Path, n: usize, names: &[&str]) -> Vec<PathBuf> {
    let remote = seeded(top, "Handoffs", n);
    let url = remote.to_str().unwrap();
    names.iter().map(|name| clone(top, url, name)).collect()
}

/// `small handoff --json` in `dir` (it must exit 0): the task it resumes at, as its outcome
/// and the written handoff (read back by `small resume`) say.
fn handoff(dir: &Path) -> (Value, String) {
    let v = json(dir, 0, &["handoff", "--json"]);
    assert_eq!(v["written"], true, "{v}");
    let current = v["current_task_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(v["resume"]["CurrentTaskID"], current.as_str(), "{v}");
    let r = json(dir, 0, &["resume", "--json", "--no-check"]);
    assert_eq!(
        r["handoff"]["current_task_id"],
        current.as_str(),
        "the handoff file: {r}"
    );
    (v, current)
}

#[test]
fn a_handoff_resumes_at_a_task_nobody_else_holds() {
    let d = tempfile::tempdir().unwrap();
    let dirs = team(d.path(), 3, &["alice", "bob"]);
    let (alice, bob) = (&dirs[0], &dirs[1]);
    let (_, current) = handoff(alice);
    assert_eq!(current, "task-1", "nothing held: the first ready task");
    small(bob, 0, &["claim", "task-1", "--as", "bob"]);
    // Alice's checkout learns of the lease when it reads the claims.
    small(alice, 0, &["claims"]);
    let (v, current) = handoff(alice);
    assert_eq!(current, "task-2", "bob holds task-1: {v}");
    assert_eq!(v["status"], "in_progress", "{v}");
    assert_eq!(
        v["next_steps"][0], "Continue with task-2",
        "the steps follow: {v}"
    );
    let handoff_file = std::fs::read_to_string(alice.join(".small/handoff.small.yml")).unwrap();
    assert!(
        handoff_file.contains("task-2") && !handoff_file.contains("task-1"),
        "{handoff_file}"
    );
    // The text output too, and the handoff passes the strict check.
    let o = small(alice, 0, &["handoff"]);
    assert!(!text(&o).contains("claimed"), "{}", text(&o));
    small(alice, 0, &["check", "--strict"]);
    // Bob's own lease does not keep bob off task-1.
    let (_, current) = handoff(bob);
    assert_eq!(current, "task-1");
    // Every ready task held: alice's handoff keeps the task it would resume at, and writes.
    small(bob, 0, &["claim", "task-2", "--as", "bob"]);
    small(bob, 0, &["claim", "task-3", "--as", "bob"]);
    small(alice, 0, &["claims"]);
    let (v, current) = handoff(alice);
    assert_eq!(current, "task-1", "all held: {v}");
    // Released, task-2 is free again.
    small(bob, 0, &["unclaim", "task-2"]);
    small(alice, 0, &["claims"]);
    let (_, current) = handoff(alice);
    assert_eq!(current, "task-2");
}

#[test]
fn a_done_record_elsewhere_is_skipped_like_a_lease() {
    let d = tempfile::tempdir().unwrap();
    let dirs = team(d.path(), 3, &["alice", "bob", "carol"]);
    let (alice, bob, carol) = (&dirs[0], &dirs[1], &dirs[2]);
    // Carol completes task-1 and does not push her work: the done record holds the task.
    small(carol, 0, &["claim", "task-1", "--as", "carol"]);
    small(
        carol,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "done"],
    );
    // Bob holds task-2.
    small(bob, 0, &["claim", "task-2", "--as", "bob"]);
    let list = json(alice, 0, &["claims", "--json"]);
    let states: Vec<(&str, &str)> = list["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["task_id"].as_str().unwrap(), c["state"].as_str().unwrap()))
        .collect();
    assert!(states.contains(&("task-1", "done")), "{list}");
    // Alice's plan still shows task-1 pending; her handoff resumes at task-3.
    let (v, current) = handoff(alice);
    assert_eq!(current, "task-3", "task-1 done by carol, task-2 bob's: {v}");
    // Carol's own handoff: task-1 is completed in her plan; bob's task-2 is skipped.
    small(carol, 0, &["claims"]);
    let (_, current) = handoff(carol);
    assert_eq!(current, "task-3");
}
