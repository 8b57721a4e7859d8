//! Claims with real git: many clones racing for one task or for the next free one, over a
//! bare repository on disk and over `git daemon`; expiry and take-over, renewal, release,
//! worktrees sharing local refs, and a remote that goes away.
#![cfg(unix)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::claims_support::{
    clones, command, daemon_or_skip, git, json, json_env, json_output_section, seeded, small,
    small_env, text, BIN,
};

/// Fails unless docs/json-output.md's claims section names every top-level key of `doc` (in
/// a code span or its example).
fn documented(doc: &Value) {
    let section = json_output_section("Claims");
    // Every word inside a code span or the fenced example.
    let spans = section.replace("```", "`");
    let named: BTreeSet<&str> = spans
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|span| span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .collect();
    for key in doc.as_object().unwrap().keys() {
        assert!(
            named.contains(key.as_str()),
            "docs/json-output.md does not name `{key}` in its claims section"
        );
    }
}

/// Start `small args` in each dir at once, then wait for all: the outputs in order.
fn all_at_once(dirs: &[PathBuf], args: impl Fn(usize) -> Vec<String>) -> Vec<Output> {
    let children: Vec<Child> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let a = args(i);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            command(d, BIN, &a).spawn().unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

/// 16 clones of `url` claim task-1 at the same instant: exactly one holds it, every other
/// one is refused with the winner's label, and the remote holds the winner's lease.
fn one_winner(top: &Path, url: &str, name: &str) {
    let dirs = clones(top, url, name, 16);
    let outs = all_at_once(&dirs, |i| {
        ["claim", "task-1", "--as", &format!("agent-{i}")]
            .map(String::from)
            .to_vec()
    });
    let winners: Vec<usize> = (0..outs.len())
        .filter(|&i| outs[i].status.code() == Some(0))
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "{:#?}",
        outs.iter().map(text).collect::<Vec<_>>()
    );
    let winner = format!("agent-{}", winners[0]);
    assert!(
        text(&outs[winners[0]]).contains("claimed task-1 until "),
        "{}",
        text(&outs[winners[0]])
    );
    for (i, o) in outs.iter().enumerate().filter(|(i, _)| *i != winners[0]) {
        assert_eq!(o.status.code(), Some(1), "agent-{i}: {}", text(o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("task-1 is claimed by {winner} (holder ")),
            "agent-{i}: {err}"
        );
    }
    let list = json(&dirs[3], 0, &["claims", "--json"]);
    let claims = list["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 1, "{list}");
    assert_eq!(claims[0]["label"], winner.as_str());
    assert_eq!(claims[0]["generation"], 1);
    assert_eq!(claims[0]["live"], true);
    assert_eq!(claims[0]["ref"], "refs/small/claims/_/task-1");
}

#[test]
fn sixteen_clones_race_for_one_task_over_a_bare_path() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 3);
    one_winner(d.path(), remote.to_str().unwrap(), "path");
}

#[test]
fn sixteen_clones_race_for_one_task_over_git_daemon() {
    let d = tempfile::tempdir().unwrap();
    seeded(d.path(), "Claims", 3);
    let Some(daemon) = daemon_or_skip(d.path()) else {
        return;
    };
    one_winner(d.path(), &daemon.url("remote.git"), "daemon");
}

#[test]
fn eight_clones_take_twenty_tasks_each_exactly_once() {
    let d = tempfile::tempdir().unwrap();
    seeded(d.path(), "Claims", 20);
    let Some(daemon) = daemon_or_skip(d.path()) else {
        return;
    };
    let dirs = clones(d.path(), &daemon.url("remote.git"), "next", 8);
    let threads: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut taken = Vec::new();
                loop {
                    let label = format!("agent-{i}");
                    let args = ["claim", "--next", "--as", &label, "--json"];
                    let o = command(&dir, BIN, &args).output().unwrap();
                    match o.status.code() {
                        Some(0) => {
                            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
                            assert_eq!(v["status"], "claimed", "{v}");
                            assert_eq!(v["label"], label.as_str());
                            taken.push(v["task"].as_str().unwrap().to_string());
                        }
                        Some(1) => {
                            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
                            assert_eq!(v["errors"][0]["code"], "no-free-task", "{v}");
                            return taken;
                        }
                        _ => panic!("agent-{i}: {}", text(&o)),
                    }
                }
            })
        })
        .collect();
    let mut all: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let count = all.len();
    all.sort();
    all.dedup();
    assert_eq!(count, 20, "a task was claimed twice: {all:?}");
    let expected: BTreeSet<String> = (1..=20).map(|i| format!("task-{i}")).collect();
    assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), expected);
    let list = json(&dirs[0], 0, &["claims", "--json"]);
    assert_eq!(list["claims"].as_array().unwrap().len(), 20);
    small(&dirs[5], 1, &["claim", "--next"]);
}

#[test]
fn an_ended_lease_is_taken_over_one_generation_later() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 2);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "ttl", 2);
    let no_skew = [("SMALL_CLAIM_SKEW", "0s")];
    let first = json_env(
        &dirs[0],
        0,
        &["claim", "task-1", "--ttl", "1s", "--as", "alice", "--json"],
        &no_skew,
    );
    assert_eq!(first["generation"], 1);
    assert_eq!(first["ttl_seconds"], 1);
    // Within the default skew the ended lease still holds.
    std::thread::sleep(Duration::from_millis(2200));
    let o = small(&dirs[1], 1, &["claim", "task-1", "--as", "bob"]);
    assert!(text(&o).contains("claimed by alice"), "{}", text(&o));
    let taken = json_env(
        &dirs[1],
        0,
        &["claim", "task-1", "--as", "bob", "--json"],
        &no_skew,
    );
    assert_eq!(taken["status"], "claimed");
    assert_eq!(taken["label"], "bob");
    assert_eq!(taken["generation"], 2);
    assert_eq!(taken["took_over"]["label"], "alice");
    documented(&taken);
    assert_ne!(taken["holder"], first["holder"]);
    // The one it was taken from no longer holds it.
    let o = small(&dirs[0], 1, &["unclaim", "task-1"]);
    assert!(text(&o).contains("held by bob"), "{}", text(&o));
}

#[test]
fn renewal_by_the_holder_keeps_it_and_moves_the_end() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 2);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "renew", 1);
    let first = json(&dirs[0], 0, &["claim", "task-2", "--as", "alice", "--json"]);
    std::thread::sleep(Duration::from_millis(1100));
    let again = json(&dirs[0], 0, &["claim", "task-2", "--json"]);
    assert_eq!(again["status"], "renewed");
    assert_eq!(again["holder"], first["holder"]);
    assert_eq!(again["taken"], first["taken"]);
    assert_eq!(again["generation"], 2);
    assert!(
        again["ends"].as_str().unwrap() > first["ends"].as_str().unwrap(),
        "{first} {again}"
    );
    assert!(again.get("took_over").is_none());
}

#[test]
fn only_the_holder_releases_and_then_another_can_claim() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 3);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "release", 2);
    small(&dirs[0], 0, &["claim", "task-3", "--as", "alice"]);
    let o = small(&dirs[1], 1, &["unclaim", "task-3"]);
    assert!(text(&o).contains("held by alice"), "{}", text(&o));
    small(&dirs[1], 1, &["claim", "task-3", "--as", "bob"]);
    let released = json(&dirs[0], 0, &["unclaim", "task-3", "--json"]);
    assert_eq!(released["status"], "released");
    assert_eq!(released["label"], "alice");
    assert_eq!(released["remote"], "origin");
    documented(&released);
    let o = small(&dirs[0], 1, &["unclaim", "task-3"]);
    assert!(text(&o).contains("task-3 is not claimed"), "{}", text(&o));
    let bob = json(&dirs[1], 0, &["claim", "task-3", "--as", "bob", "--json"]);
    assert_eq!(bob["status"], "claimed");
    assert_eq!(bob["generation"], 1);
    let list = json(&dirs[0], 0, &["claims", "--json"]);
    documented(&list);
    documented(&list["claims"][0]);
    assert!(git(&remote, &["for-each-ref", "refs/small/claims"]).contains("task-3"));
}

#[test]
fn worktrees_share_local_leases() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 2);
    let main = clones(d.path(), remote.to_str().unwrap(), "wt", 1).remove(0);
    let trees: Vec<PathBuf> = (1..=2)
        .map(|i| {
            let dir = d.path().join(format!("tree-{i}"));
            git(
                &main,
                &[
                    "worktree",
                    "add",
                    "-q",
                    "-b",
                    &format!("w{i}"),
                    dir.to_str().unwrap(),
                ],
            );
            dir
        })
        .collect();
    let outs = all_at_once(&trees, |i| {
        ["claim", "task-1", "--local", "--as", &format!("tree-{i}")]
            .map(String::from)
            .to_vec()
    });
    let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    let won = codes.iter().position(|c| *c == Some(0)).expect("one wins");
    assert_eq!(
        codes[1 - won],
        Some(1),
        "{:?}",
        outs.iter().map(text).collect::<Vec<_>>()
    );
    assert!(
        text(&outs[1 - won]).contains(&format!("claimed by tree-{won}")),
        "{}",
        text(&outs[1 - won])
    );
    // One lease in the repository's refs, seen from every worktree; none on the remote.
    for dir in [&main, &trees[0], &trees[1]] {
        let list = json(dir, 0, &["claims", "--local", "--json"]);
        assert_eq!(list["claims"].as_array().unwrap().len(), 1, "{list}");
        assert_eq!(list["remote"], Value::Null);
    }
    assert_eq!(git(&remote, &["for-each-ref", "refs/small"]), "");
    // Each worktree is its own holder.
    let holder = |dir: &Path| {
        let p = git(dir, &["rev-parse", "--git-path", "small/claim-holder"]);
        std::fs::read_to_string(dir.join(p.trim())).unwrap()
    };
    assert_ne!(holder(&trees[0]), holder(&trees[1]));
    assert!(!trees[0].join(".small/claim-holder").exists());
}

#[test]
fn a_remote_that_is_gone_claims_nothing() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 2);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "gone", 1);
    let gone = d.path().join("gone.git");
    git(
        &dirs[0],
        &["remote", "set-url", "origin", gone.to_str().unwrap()],
    );
    let o = small(&dirs[0], 2, &["claim", "task-1", "--as", "alice"]);
    assert!(
        text(&o).contains("cannot reach the remote `origin`"),
        "{}",
        text(&o)
    );
    small(&dirs[0], 2, &["claim", "--next"]);
    let list = json(&dirs[0], 0, &["claims", "--local", "--json"]);
    assert_eq!(list["claims"], serde_json::json!([]));
    assert_eq!(git(&dirs[0], &["for-each-ref", "refs/small"]), "");
    // A remote the repository does not have, and no repository at all.
    small(&dirs[0], 2, &["claim", "task-1", "--remote", "upstream"]);
    let bare = d.path().join("no-git");
    std::fs::create_dir(&bare).unwrap();
    small(&bare, 0, &["init", "--no-agents", "--task", "One"]);
    let o = small(&bare, 2, &["claim", "task-1"]);
    assert!(text(&o).contains("not in a git repository"), "{}", text(&o));
}

#[test]
fn a_daemon_that_stops_claims_nothing() {
    let d = tempfile::tempdir().unwrap();
    seeded(d.path(), "Claims", 2);
    let Some(daemon) = daemon_or_skip(d.path()) else {
        return;
    };
    let dirs = clones(d.path(), &daemon.url("remote.git"), "stop", 1);
    drop(daemon);
    let o = small_env(
        &dirs[0],
        2,
        &["claim", "task-1", "--json"],
        &[("SMALL_CLAIM_TIMEOUT", "10s")],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["errors"][0]["code"], "claim-store", "{v}");
    let list = json(&dirs[0], 0, &["claims", "--local", "--json"]);
    assert_eq!(list["claims"], serde_json::json!([]));
}

#[test]
fn unknown_tasks_and_bad_flags() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 1);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "flags", 1);
    let o = small(&dirs[0], 1, &["claim", "task-9"]);
    assert!(text(&o).contains("unknown-task"), "{}", text(&o));
    small(&dirs[0], 2, &["claim", "task-1", "--ttl", "soon"]);
    small(
        &dirs[0],
        2,
        &["claim", "task-1", "--local", "--remote", "origin"],
    );
    small(&dirs[0], 2, &["claim"]);
    small(&dirs[0], 2, &["claim", "task-1", "--next"]);
}

#[test]
fn writes_on_a_task_another_agent_holds_are_fenced() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 3);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "fence", 2);
    let (alice, bob) = (&dirs[0], &dirs[1]);
    small(alice, 0, &["claim", "task-1", "--as", "alice"]);
    // Bob's checkout learns of the lease when it reads the claims.
    small(bob, 0, &["claims"]);
    let add = [
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "started",
    ];
    let o = small(bob, 1, &add);
    assert!(
        text(&o).contains("task-1 is claimed by alice"),
        "{}",
        text(&o)
    );
    let done = [
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "done",
    ];
    let o = small(bob, 1, &done);
    assert!(text(&o).contains("claimed by alice"), "{}", text(&o));
    let o = small(bob, 1, &["apply", "--cmd", "true", "--task", "task-1"]);
    assert!(text(&o).contains("claimed by alice"), "{}", text(&o));
    let before = std::fs::read_to_string(bob.join(".small/progress.small.yml")).unwrap();
    assert!(
        !before.contains("started"),
        "a refused write wrote: {before}"
    );
    // --force goes on, and the entry says what it overrode.
    let mut forced = add.to_vec();
    forced.push("--force");
    small(bob, 0, &forced);
    let after = std::fs::read_to_string(bob.join(".small/progress.small.yml")).unwrap();
    assert!(
        after.contains("claim overridden with --force: task-1 was held by alice"),
        "{after}"
    );
    small(
        bob,
        0,
        &["apply", "--cmd", "true", "--task", "task-1", "--force"],
    );
    let after = std::fs::read_to_string(bob.join(".small/progress.small.yml")).unwrap();
    assert!(
        after.contains("apply --force: claim overridden with --force: task-1 was held by alice"),
        "{after}"
    );
    // status shows the lease; resume's next task skips it and says who has it.
    let st = json(bob, 0, &["status", "--json"]);
    assert_eq!(st["claims"][0]["task"], "task-1", "{st}");
    assert_eq!(st["claims"][0]["label"], "alice");
    let o = small(bob, 0, &["status"]);
    assert!(
        text(&o).contains("task-1      alice  held until"),
        "{}",
        text(&o)
    );
    let r = json(alice, 0, &["resume", "--json", "--no-check"]);
    assert_eq!(
        r["next_task"]["id"], "task-1",
        "the holder's own lease: {r}"
    );
    let r = json(bob, 0, &["resume", "--json", "--no-check"]);
    assert_eq!(r["claimed_by_others"][0]["task"], "task-1", "{r}");
    assert_eq!(r["claimed_by_others"][0]["label"], "alice");
    assert_ne!(r["next_task"]["id"], "task-1", "{r}");
    assert_eq!(r["claim_with"], "small claim --next", "{r}");
    let o = small(bob, 0, &["resume", "--no-check"]);
    assert!(
        text(&o).contains(
            "Claim it before you start, so no other agent starts it too: `small claim --next`; \
             after the work, `small checkpoint --status completed --evidence \"…\"` and \
             `small sync`"
        ),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("- task-1: alice until"), "{}", text(&o));
    // The holder's completion turns the lease on the remote into a done record, which
    // keeps bob (who has not pulled) off the task.
    small(alice, 0, &done);
    assert!(git(&remote, &["for-each-ref", "refs/small/claims"]).contains("task-1"));
    let list = json(bob, 0, &["claims", "--json"]);
    assert_eq!(list["claims"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["claims"][0]["state"], "done", "{list}");
    assert_eq!(list["claims"][0]["live"], false, "{list}");
    assert_eq!(list["claims"][0]["done"]["outcome"], "completed", "{list}");
}

#[test]
fn a_holder_whose_lease_ended_must_claim_again() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 2);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "stale", 2);
    let no_skew = [("SMALL_CLAIM_SKEW", "0s")];
    small_env(
        &dirs[0],
        0,
        &["claim", "task-2", "--ttl", "1s", "--as", "alice"],
        &no_skew,
    );
    std::thread::sleep(Duration::from_millis(1300));
    let add = [
        "progress",
        "add",
        "--task",
        "task-2",
        "--status",
        "in_progress",
        "--evidence",
        "late",
    ];
    let o = small_env(&dirs[0], 1, &add, &no_skew);
    assert!(text(&o).contains("claim it again"), "{}", text(&o));
    // Meanwhile bob takes it; alice's new claim then names him.
    small_env(&dirs[1], 0, &["claim", "task-2", "--as", "bob"], &no_skew);
    let o = small_env(&dirs[0], 1, &["claim", "task-2"], &no_skew);
    assert!(text(&o).contains("claimed by bob"), "{}", text(&o));
    small_env(&dirs[0], 1, &add, &no_skew);
}

#[test]
fn the_holders_writes_renew_a_lease_past_half_its_ttl() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 2);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "renewal", 1);
    let first = json_env(
        &dirs[0],
        0,
        &["claim", "task-1", "--ttl", "10s", "--as", "alice", "--json"],
        &[("SMALL_CLAIM_SKEW", "0s")],
    );
    let add = [
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "step",
    ];
    // Before half the TTL a write costs no renewal.
    small_env(&dirs[0], 0, &add, &[("SMALL_CLAIM_SKEW", "0s")]);
    let list = json(&dirs[0], 0, &["claims", "--json"]);
    assert_eq!(list["claims"][0]["generation"], 1, "{list}");
    // Past half the TTL (5 s; the first write came well before it, even on a loaded machine).
    std::thread::sleep(Duration::from_millis(5300));
    small_env(&dirs[0], 0, &add, &[("SMALL_CLAIM_SKEW", "0s")]);
    let list = json(&dirs[0], 0, &["claims", "--json"]);
    assert_eq!(list["claims"][0]["generation"], 2, "{list}");
    assert!(
        list["claims"][0]["ends"].as_str().unwrap() > first["ends"].as_str().unwrap(),
        "{list}"
    );
}

/// The MCP tools take, list and give back leases as the commands do, and an agent over MCP
/// is fenced like one in a shell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_over_mcp_are_the_commands_documents() {
    use crate::agents_mcp::{call, connect};
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Claims", 2);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "mcp", 2);
    let c = connect(&dirs[0]).await;
    let (ok, v) = call(
        &c,
        "claim",
        serde_json::json!({"next": true, "as": "mcp-agent"}),
    )
    .await;
    assert!(ok, "{v}");
    assert_eq!(v["status"], "claimed");
    assert_eq!(v["task"], "task-1");
    assert_eq!(v["label"], "mcp-agent");
    documented(&v);
    let (ok, v) = call(&c, "claims", serde_json::json!({})).await;
    assert!(ok, "{v}");
    assert_eq!(v["claims"][0]["label"], "mcp-agent", "{v}");
    // Another clone's agent is refused, naming the MCP agent.
    let o = small(&dirs[1], 1, &["claim", "task-1"]);
    assert!(text(&o).contains("claimed by mcp-agent"), "{}", text(&o));
    let c2 = connect(&dirs[1]).await;
    let (ok, v) = call(
        &c2,
        "progress_add",
        serde_json::json!({"task": "task-1", "status": "in_progress", "evidence": "x"}),
    )
    .await;
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "claimed", "{v}");
    let (ok, v) = call(&c, "unclaim", serde_json::json!({"task": "task-1"})).await;
    assert!(ok, "{v}");
    assert_eq!(v["status"], "released");
    let (ok, v) = call(&c2, "claim", serde_json::json!({"task": "task-1"})).await;
    assert!(ok, "{v}");
    c.cancel().await.unwrap();
    c2.cancel().await.unwrap();
}

/// The remote goes away while eight claims are in flight. Afterwards, every claim reported
/// held is on the remote with its claimant's holder id, and every lease the remote has
/// belongs to a checkout that can release it: none is left that nobody holds.
#[test]
fn the_remote_going_away_mid_claim_leaves_no_orphan_lease() {
    let d = tempfile::tempdir().unwrap();
    let bare = seeded(d.path(), "Claims", 8);
    let Some(daemon) = daemon_or_skip(d.path()) else {
        return;
    };
    let dirs = clones(d.path(), &daemon.url("remote.git"), "away", 8);
    let procs: Vec<Child> = dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            let task = format!("task-{}", i + 1);
            let label = format!("agent-{i}");
            command(dir, BIN, &["claim", &task, "--as", &label])
                .env("SMALL_CLAIM_TIMEOUT", "5s")
                .spawn()
                .unwrap()
        })
        .collect();
    // Stop the server as soon as the first lease has landed: the others are in flight.
    let start = Instant::now();
    while git(&bare, &["for-each-ref", "refs/small/claims"]).is_empty()
        && start.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(daemon);
    let outs: Vec<Output> = procs
        .into_iter()
        .map(|p| p.wait_with_output().unwrap())
        .collect();
    let held = outs.iter().filter(|o| o.status.success()).count();
    eprintln!("remote gone mid-claim: {held} of 8 claims held");
    for (i, (dir, o)) in dirs.iter().zip(&outs).enumerate() {
        let task = format!("task-{}", i + 1);
        let holder_file = git(dir, &["rev-parse", "--git-path", "small/claim-holder"]);
        let holder = std::fs::read_to_string(dir.join(holder_file.trim()))
            .unwrap_or_default()
            .trim()
            .to_string();
        let refs = git(
            &bare,
            &["for-each-ref", "--format=%(objectname) %(refname)"],
        );
        let on_remote = refs
            .lines()
            .find(|l| l.ends_with(&format!("/{task}")))
            .map(|l| {
                let sha = l.split(' ').next().unwrap();
                let rec: Value =
                    serde_json::from_str(&git(&bare, &["cat-file", "blob", sha])).unwrap();
                rec["holder"].as_str().unwrap().to_string()
            });
        match o.status.code() {
            Some(0) => assert_eq!(
                on_remote.as_deref(),
                Some(holder.as_str()),
                "{task} reported held: {}",
                text(o)
            ),
            Some(2) => {
                if let Some(h) = on_remote {
                    // The push landed but its answer was lost: the lease is this checkout's,
                    // and it can give it back.
                    assert_eq!(h, holder, "{task}");
                    git(
                        dir,
                        &["remote", "set-url", "origin", bare.to_str().unwrap()],
                    );
                    small(dir, 0, &["unclaim", &task]);
                }
            }
            other => panic!("{task}: exit {other:?}: {}", text(o)),
        }
    }
}
