//! Done records and `small sync` with real git: a completion holds its task until the
//! remote's default branch shows it, is pruned only then, is reopened only explicitly; sync
//! publishes through the merge driver, retries when others pushed first, and refuses with
//! the rebase aborted where a person must decide.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::claims_support::{
    bare_remote, clone_env, command, git_env, init_seed, json_env, json_output_section, small_env,
    text, BIN,
};

/// What every command here runs with: a claim timeout of 1 s, so that a done record's grace
/// passes within the test, and no clock skew.
// A grace long enough that a record outlives the steps between its push and a peer's use of
// it on a loaded machine, short enough that pruning is seen within the test.
const ENV: &[(&str, &str)] = &[("SMALL_CLAIM_TIMEOUT", "3s"), ("SMALL_CLAIM_SKEW", "0s")];

/// [`small_env`] with [`ENV`].
fn small(dir: &Path, code: i32, args: &[&str]) -> Output {
    small_env(dir, code, args, ENV)
}

/// [`json_env`] with [`ENV`].
fn json(dir: &Path, code: i32, args: &[&str]) -> Value {
    json_env(dir, code, args, ENV)
}

/// [`git_env`] with [`ENV`].
fn git(dir: &Path, args: &[&str]) -> String {
    git_env(dir, args, ENV)
}

/// The code and message of a refusal printed with `--json` (exit 1).
fn refusal(dir: &Path, args: &[&str]) -> (String, String) {
    let doc = json(dir, 1, args);
    (
        doc["errors"][0]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        doc["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// A bare remote whose `main` holds a workspace planning task-1 … task-`n` (task-3
/// depends on task-1), and `clones` clones of it.
fn team(top: &Path, n: usize, clones: &[&str]) -> (PathBuf, Vec<PathBuf>) {
    let seed = init_seed(top, "Done records", ENV);
    for i in 2..=n {
        small(&seed, 0, &["plan", "--add", &format!("Task {i}")]);
    }
    if n >= 3 {
        small(&seed, 0, &["plan", "--depends", "task-3:task-1"]);
    }
    std::fs::write(seed.join("src.txt"), "one\ntwo\nthree\n").unwrap();
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "plan"]);
    let remote = bare_remote(top, &seed, ENV);
    let url = remote.to_str().unwrap();
    let dirs = clones
        .iter()
        .map(|name| clone_env(top, url, name, ENV))
        .collect();
    (remote, dirs)
}

fn lease<'a>(list: &'a Value, task: &str) -> Option<&'a Value> {
    list["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["task_id"] == task)
}

#[test]
fn a_done_record_holds_the_task_until_the_branch_shows_it_then_is_pruned() {
    let d = tempfile::tempdir().unwrap();
    let (remote, dirs) = team(d.path(), 3, &["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    small(a, 0, &["claim", "task-1", "--as", "alice"]);
    small(
        a,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "done"],
    );
    // Not pushed: b, which has not pulled, is kept off task-1 by the done record, and
    // task-3 (which waits on task-1) is ready for it.
    let (code, message) = refusal(b, &["claim", "task-1", "--as", "bob", "--json"]);
    assert_eq!(code, "done", "{message}");
    assert!(
        message.contains("alice") && message.contains("not pushed yet"),
        "{message}"
    );
    let got = json(b, 0, &["claim", "--next", "--as", "bob", "--json"]);
    assert_eq!(got["task_id"], "task-2");
    // task-3 waits on task-1, whose work is not on the remote yet.
    let (code, _) = refusal(b, &["claim", "--next", "--as", "bob", "--json"]);
    assert_eq!(code, "no-free-task");
    // Published: the record names the commit, and goes only when the branch shows it and
    // the grace has passed.
    let out = json(a, 0, &["sync", "--commit", "--json"]);
    assert_eq!(out["status"], "pushed", "{out}");
    assert_eq!(out["stamped"][0]["task_id"], "task-1", "{out}");
    let head = out["head"].as_str().unwrap().to_string();
    // Pushed: task-3 is ready for b, which is told to pull task-1's work first, and may
    // complete it before it has pulled (the entry says so).
    let got = json(b, 0, &["claim", "--next", "--as", "bob", "--json"]);
    assert_eq!(got["task_id"], "task-3", "{got}");
    assert_eq!(got["pull_first"], serde_json::json!(["task-1"]), "{got}");
    let cp = json(
        b,
        0,
        &[
            "checkpoint",
            "--task",
            "task-3",
            "--status",
            "completed",
            "--evidence",
            "x",
            "--json",
        ],
    );
    let notes = cp["progress_entry"]["notes"].as_str().unwrap_or_default();
    assert!(notes.contains("task-1 by alice"), "{cp}");
    let list = json(b, 0, &["claims", "--json"]);
    let rec = lease(&list, "task-1").expect("the done record");
    assert_eq!(rec["state"], "done");
    assert_eq!(rec["done"]["commit"], head.as_str());
    let (code, message) = refusal(b, &["claim", "task-1", "--json"]);
    assert_eq!(code, "done");
    assert!(message.contains(&head[..12]), "{message}");
    // The grace is SMALL_CLAIM_TIMEOUT (3 s here) plus the skew (0) after the stamp, to the
    // second: the record goes within a few seconds (by --prune, or by a claim that found
    // it), never before the branch shows it.
    let mut pruned = json(b, 0, &["claims", "--prune", "--json"]);
    for _ in 0..40 {
        if lease(&pruned, "task-1").is_none() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        pruned = json(b, 0, &["claims", "--prune", "--json"]);
    }
    assert!(lease(&pruned, "task-1").is_none(), "{pruned}");
    for p in pruned["pruned"].as_array().unwrap() {
        assert_eq!(p["task_id"], "task-1", "{pruned}");
    }
    assert!(!git(&remote, &["for-each-ref", "refs/small/claims"]).contains("task-1"));
    // Without the record, b (still not pulled) is kept off task-1 by the branch it fetched
    // with the leases.
    let (code, message) = refusal(b, &["claim", "task-1", "--json"]);
    assert_eq!(code, "done");
    assert!(message.contains("origin/main"), "{message}");
    let (code, _) = refusal(b, &["claim", "--next", "--json"]);
    assert_eq!(code, "no-free-task");
}

#[test]
fn a_record_is_not_pruned_before_the_branch_shows_it() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 2, &["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    small(a, 0, &["claim", "task-1", "--as", "alice"]);
    small(
        a,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "done"],
    );
    std::thread::sleep(Duration::from_millis(3200));
    let pruned = json(b, 0, &["claims", "--prune", "--json"]);
    assert_eq!(pruned["pruned"], serde_json::json!([]), "{pruned}");
    assert_eq!(lease(&pruned, "task-1").unwrap()["state"], "done");
    // Once pushed, --prune removes it (after the grace).
    small(a, 0, &["sync", "--commit"]);
    let mut pruned = json(b, 0, &["claims", "--prune", "--json"]);
    for _ in 0..40 {
        if !pruned["pruned"].as_array().unwrap().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        pruned = json(b, 0, &["claims", "--prune", "--json"]);
    }
    assert_eq!(pruned["pruned"][0]["task_id"], "task-1", "{pruned}");
    assert_eq!(pruned["pruned"][0]["state"], "done", "{pruned}");
    assert!(lease(&pruned, "task-1").is_none(), "{pruned}");
}

#[test]
fn a_lost_completion_is_reopened_only_explicitly_and_after_its_ttl() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 2, &["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    small(a, 0, &["claim", "task-1", "--as", "alice", "--ttl", "2s"]);
    small(
        a,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "done"],
    );
    // The completion is lost: alice resets to the remote.
    git(a, &["reset", "-q", "--hard", "origin/main"]);
    let (code, message) = refusal(b, &["claim", "task-1", "--reopen", "--json"]);
    assert_eq!(code, "done", "{message}");
    assert!(message.contains("can be reopened from"), "{message}");
    std::thread::sleep(Duration::from_millis(2500));
    // Still never silent: a plain claim is refused.
    let (code, _) = refusal(b, &["claim", "task-1", "--json"]);
    assert_eq!(code, "done");
    let out = json(
        b,
        0,
        &["claim", "task-1", "--reopen", "--as", "bob", "--json"],
    );
    assert_eq!(out["status"], "reopened", "{out}");
    assert_eq!(out["label"], "bob");
    assert_eq!(out["reopened"]["label"], "alice", "{out}");
    assert_eq!(out["reopened"]["outcome"], "completed");
    assert_eq!(out["state"], "held");
}

#[test]
fn a_completion_on_the_branch_cannot_be_reopened() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 2, &["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    // A TTL long enough that the lease is still live at the checkpoint on a loaded machine.
    small(a, 0, &["claim", "task-1", "--as", "alice", "--ttl", "3s"]);
    small(
        a,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "done"],
    );
    small(a, 0, &["sync", "--commit"]);
    std::thread::sleep(Duration::from_millis(3200));
    let (code, message) = refusal(b, &["claim", "task-1", "--reopen", "--json"]);
    assert_eq!(code, "done");
    assert!(message.contains("nothing to reopen"), "{message}");
}

#[test]
fn blocked_checkpoints_and_unclaim_release_the_lease() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 2, &["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    small(a, 0, &["claim", "task-1", "--as", "alice"]);
    small(
        a,
        0,
        &[
            "checkpoint",
            "--status",
            "blocked",
            "--evidence",
            "waiting on a key",
        ],
    );
    let list = json(b, 0, &["claims", "--json"]);
    assert!(lease(&list, "task-1").is_none(), "{list}");
    // The holder may take back its own done record (its completion will not be pushed).
    small(a, 0, &["claim", "task-2", "--as", "alice"]);
    small(
        a,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "done"],
    );
    let (code, _) = refusal(b, &["unclaim", "task-2", "--json"]);
    assert_eq!(code, "not-holder");
    small(a, 0, &["unclaim", "task-2"]);
    let list = json(b, 0, &["claims", "--json"]);
    assert!(lease(&list, "task-2").is_none(), "{list}");
}

#[test]
fn checkpoint_without_a_task_uses_the_one_this_checkout_holds() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 3, &["a"]);
    let a = &dirs[0];
    let o = small(
        a,
        2,
        &["checkpoint", "--status", "completed", "--evidence", "x"],
    );
    assert!(text(&o).contains("holds no live lease"), "{}", text(&o));
    small(a, 0, &["claim", "task-2"]);
    let out = json(
        a,
        0,
        &[
            "checkpoint",
            "--status",
            "completed",
            "--evidence",
            "x",
            "--json",
        ],
    );
    assert_eq!(out["task_id"], "task-2", "{out}");
    small(a, 0, &["claim", "task-1"]);
    small(a, 0, &["claim", "task-3", "--ttl", "1h"]);
    let o = small(
        a,
        2,
        &["checkpoint", "--status", "completed", "--evidence", "x"],
    );
    assert!(
        text(&o).contains("task-1") && text(&o).contains("task-3"),
        "{}",
        text(&o)
    );
}

#[test]
fn another_holders_done_task_fences_writes() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 2, &["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    small(a, 0, &["claim", "task-1", "--as", "alice"]);
    small(
        a,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "done"],
    );
    small(b, 0, &["claims"]);
    let (code, _) = refusal(
        b,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "again",
            "--json",
        ],
    );
    assert_eq!(code, "done");
    let out = json(
        b,
        0,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "again",
            "--force",
            "--json",
        ],
    );
    let notes = out["progress_entry"]["notes"].as_str().unwrap_or_default();
    assert!(
        notes.contains("done record overridden with --force"),
        "{out}"
    );
}

// ---- small sync ----

#[test]
fn sync_publishes_both_agents_records_through_the_merge_driver() {
    let d = tempfile::tempdir().unwrap();
    let (remote, dirs) = team(d.path(), 2, &["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    small(a, 0, &["claim", "task-1", "--as", "alice"]);
    small(b, 0, &["claim", "task-2", "--as", "bob"]);
    small(
        a,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "a"],
    );
    small(
        b,
        0,
        &["checkpoint", "--status", "completed", "--evidence", "b"],
    );
    let out = json(a, 0, &["sync", "--commit", "--json"]);
    assert_eq!(
        (out["status"].as_str(), out["rebased"].as_bool()),
        (Some("pushed"), Some(false))
    );
    assert!(out["committed"].is_string(), "{out}");
    let out = json(b, 0, &["sync", "--commit", "--json"]);
    assert_eq!(
        (out["status"].as_str(), out["rebased"].as_bool()),
        (Some("pushed"), Some(true))
    );
    documented(&out);
    assert_eq!(
        git(&remote, &["rev-parse", "main"]).trim(),
        out["head"].as_str().unwrap()
    );
    // Nothing new: up to date.
    let out = json(b, 0, &["sync", "--json"]);
    assert_eq!(out["status"], "up-to-date", "{out}");
    let fresh = d.path().join("fresh");
    git(
        d.path(),
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            fresh.to_str().unwrap(),
        ],
    );
    small(&fresh, 0, &["check", "--strict"]);
    let status = json(&fresh, 0, &["status", "--json"]);
    let done = status.to_string().matches("\"completed\"").count();
    assert!(done >= 2, "{status}");
}

#[test]
fn sync_refuses_changes_it_was_not_asked_to_commit() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 2, &["a"]);
    let a = &dirs[0];
    small(
        a,
        0,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "x",
        ],
    );
    let (code, message) = refusal(a, &["sync", "--json"]);
    assert_eq!(code, "uncommitted");
    assert!(message.contains(".small/plan.small.yml"), "{message}");
    std::fs::write(a.join("src.txt"), "changed\n").unwrap();
    let (code, message) = refusal(a, &["sync", "--commit", "--json"]);
    assert_eq!(code, "uncommitted");
    assert!(message.contains("src.txt"), "{message}");
    // --commit committed the .small/ changes alone; the code change is left as it was.
    assert_eq!(
        git(a, &["status", "--porcelain", "--untracked-files=no"]).trim(),
        "M src.txt"
    );
    assert!(git(a, &["log", "-1", "--name-only"]).contains(".small/plan.small.yml"));
    git(a, &["checkout", "--", "src.txt"]);
    small(a, 0, &["sync"]);
}

#[test]
fn sync_stops_on_a_code_conflict_with_the_rebase_aborted_and_the_work_kept() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 2, &["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    for (dir, line) in [(a, "alice"), (b, "bob")] {
        std::fs::write(dir.join("src.txt"), format!("one\n{line}\nthree\n")).unwrap();
        git(dir, &["commit", "-q", "-am", line]);
    }
    small(a, 0, &["sync"]);
    let before = git(b, &["rev-parse", "HEAD"]);
    let (code, message) = refusal(b, &["sync", "--json"]);
    assert_eq!(code, "conflict");
    assert!(message.contains("src.txt"), "{message}");
    assert_eq!(git(b, &["rev-parse", "HEAD"]), before, "the work is kept");
    assert!(std::fs::read_to_string(b.join("src.txt"))
        .unwrap()
        .contains("bob"));
    assert!(!b.join(".git/rebase-merge").exists() && !b.join(".git/rebase-apply").exists());
    assert_eq!(git(b, &["status", "--porcelain"]).trim(), "");
}

#[test]
fn sync_refuses_a_detached_head() {
    let d = tempfile::tempdir().unwrap();
    let (_remote, dirs) = team(d.path(), 1, &["a"]);
    let a = &dirs[0];
    git(a, &["checkout", "-q", "--detach"]);
    let (code, _) = refusal(a, &["sync", "--json"]);
    assert_eq!(code, "not-ready");
}

#[test]
fn racing_syncs_all_land_with_retries() {
    let d = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..6).map(|i| format!("c{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (remote, dirs) = team(d.path(), 1, &refs);
    for (i, dir) in dirs.iter().enumerate() {
        std::fs::write(dir.join(format!("work-{i}.txt")), "work\n").unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", &format!("work {i}")]);
    }
    let children: Vec<_> = dirs
        .iter()
        .map(|dir| {
            command(dir, BIN, &["sync", "--json", "--attempts", "30"])
                .envs(ENV.iter().copied())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut heads = Vec::new();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc["status"], "pushed", "{doc}");
        assert!(
            (1..=30).contains(&doc["attempts"].as_u64().unwrap()),
            "{doc}"
        );
        heads.push(doc["head"].as_str().unwrap().to_string());
    }
    // Each sync's pushed commit is on the remote's branch, none lost to a later push.
    for head in &heads {
        git(&remote, &["merge-base", "--is-ancestor", head, "main"]);
    }
    let log = git(&remote, &["log", "--oneline", "main"]);
    for i in 0..6 {
        assert!(log.contains(&format!("work {i}")), "{log}");
    }
}

/// Fails unless docs/json-output.md's sync section names every top-level key of `doc`.
fn documented(doc: &Value) {
    let section = json_output_section("Sync");
    for key in doc.as_object().unwrap().keys() {
        assert!(
            section.contains(&format!("`{key}`")) || section.contains(&format!("\"{key}\"")),
            "docs/json-output.md does not name `{key}` in its sync section"
        );
    }
}
