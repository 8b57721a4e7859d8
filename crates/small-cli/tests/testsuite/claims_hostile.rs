//! Claims against a hostile peer: anyone who can push to the remote can write anything
//! under `refs/small/claims/`. Each test plants what such a peer could (bytes that are not
//! UTF-8, thousands of refs, an over-sized blob, a record naming another task, forged
//! labels, numbers at their limits) in a bare remote with real git, and runs the real
//! binary in clones of it: every command a user needs still works, the planted record is
//! reported as `damaged` (blocking nothing), and the other leases keep holding.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::claims_support::{clones, command, git, json, seeded, small, small_env, text, BIN};

/// A lease end no test outlives.
const FAR: &str = "2999-01-01T00:00:00Z";
/// The hang guard of the commands that read thousands of refs (not a speed bound).
const HANG: Duration = Duration::from_secs(60);

/// `git args` in `dir` with `input` on its stdin (written on a thread of its own); it must
/// succeed. Its stdout.
fn git_input(dir: &Path, args: &[&str], input: &[u8]) -> String {
    let mut child = command(dir, "git", args)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The claim ref of `task` in the top-level workspace.
fn claim_ref(task: &str) -> String {
    format!("refs/small/claims/_/{task}")
}

/// What a hostile peer does: store `bytes` as a blob in the bare `remote` and point the
/// claim ref of `task` at it, whatever it held. The blob's id.
fn plant(remote: &Path, task: &str, bytes: &[u8]) -> String {
    plant_ref(remote, &claim_ref(task), bytes)
}

/// [`plant`] at the ref `name`.
fn plant_ref(remote: &Path, name: &str, bytes: &[u8]) -> String {
    let sha = git_input(remote, &["hash-object", "-w", "--stdin"], bytes);
    let sha = sha.trim().to_string();
    git(remote, &["update-ref", name, &sha]);
    sha
}

/// A lease record in the shape small writes, naming `task`, held by `holder` as `label`
/// until `ends`.
fn record(task: &str, holder: &str, label: &str, ends: &str, generation: u64) -> Vec<u8> {
    let r = serde_json::json!({
        "version": 1,
        "task": task,
        "holder": holder,
        "label": label,
        "host": "peer-box",
        "taken": "2026-01-01T00:00:00Z",
        "renewed": "2026-01-01T00:00:00Z",
        "ends": ends,
        "ttl_seconds": 1800,
        "generation": generation,
    });
    let mut b = serde_json::to_vec(&r).unwrap();
    b.push(b'\n');
    b
}

/// The leases of a `claims --json` document.
fn leases(doc: &Value) -> &Vec<Value> {
    doc["claims"].as_array().expect("a claims array")
}

/// The lease on `task_id` in a `claims --json` document.
fn lease<'a>(doc: &'a Value, task_id: &str) -> &'a Value {
    leases(doc)
        .iter()
        .find(|l| l["task_id"] == task_id)
        .unwrap_or_else(|| panic!("no lease on {task_id}: {doc}"))
}

/// Asserts `l` is the damaged lease of `task`, its problem naming the ref and saying `why`.
fn assert_damaged(l: &Value, task: &str, why: &str) {
    let r = claim_ref(task);
    assert_eq!(l["state"], "damaged", "{l}");
    assert_eq!(l["live"], false, "{l}");
    assert_eq!(l["ref"], r.as_str(), "{l}");
    let problem = l["problem"].as_str().unwrap_or_else(|| panic!("{l}"));
    assert!(problem.starts_with(&format!("{r}: ")), "{l}");
    assert!(problem.contains(why), "{l}");
}

/// Asserts a `resume --json` document names no task as claimed by another agent.
fn assert_no_others(r: &Value) {
    let others = r.get("claimed_by_others").and_then(Value::as_array);
    assert!(others.is_none_or(Vec::is_empty), "{r}");
}

/// Run `small args` in `dir`, killed (with all it started) if it runs past `limit`: the
/// guard of a command that must not hang. Its output, with any exit code.
fn bounded(dir: &Path, args: &[&str], limit: Duration) -> Output {
    let child = command(dir, BIN, args).process_group(0).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
            panic!("small {args:?} ran longer than {limit:?}: it hangs");
        }
    }
}

/// [`bounded`], which must exit 0.
fn bounded_ok(dir: &Path, args: &[&str]) -> Output {
    let o = bounded(dir, args, HANG);
    assert_eq!(o.status.code(), Some(0), "small {args:?}: {}", text(&o));
    o
}

/// Attack 1, two bytes that are not UTF-8 at a claim ref: every command works, the lease
/// is reported damaged naming its ref, and the task can be taken over.
#[test]
fn a_record_that_is_not_utf8_breaks_nothing_and_can_be_taken_over() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 3);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "utf8", 3);
    let junk = plant(&remote, "task-1", b"\xff\xfe");
    let a = &dirs[0];

    let o = small(a, 0, &["claims"]);
    assert!(
        text(&o).contains("task-1  damaged: refs/small/claims/_/task-1: not UTF-8"),
        "{}",
        text(&o)
    );
    let list = json(a, 0, &["claims", "--json"]);
    assert_eq!(leases(&list).len(), 1, "{list}");
    assert_damaged(lease(&list, "task-1"), "task-1", "not UTF-8");

    // The reports read it as seen.
    small(a, 0, &["status"]);
    let st = json(a, 0, &["status", "--json"]);
    assert_eq!(st["claims"][0]["state"], "damaged", "{st}");
    small(a, 0, &["resume", "--no-check"]);
    small(a, 0, &["resume", "--hook"]);
    let r = json(a, 0, &["resume", "--json", "--no-check"]);
    assert_eq!(
        r["next_task"]["id"], "task-1",
        "a damaged record holds nothing: {r}"
    );
    assert_no_others(&r);

    // The fenced writes on that task go on.
    small(
        a,
        0,
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            "started",
        ],
    );
    small(a, 0, &["handoff"]);
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
            "done",
        ],
    );
    let progress = std::fs::read_to_string(a.join(".small/progress.small.yml")).unwrap();
    assert!(progress.contains("started"), "{progress}");
    // Nothing was written over the damaged record on the remote.
    assert_eq!(
        git(&remote, &["rev-parse", &claim_ref("task-1")]).trim(),
        junk
    );

    // Another clone's `claim --next` takes the task the damaged record is on.
    let next = json(&dirs[1], 0, &["claim", "--next", "--as", "bob", "--json"]);
    assert_eq!(next["status"], "claimed", "{next}");
    assert_eq!(next["task"], "task-1", "{next}");
    assert_eq!(next["generation"], 1, "{next}");
    assert_eq!(next["took_over"]["state"], "damaged", "{next}");

    // Damaged again by the peer: `claim task-1` takes it over.
    plant(&remote, "task-1", b"\xff\xfe");
    let taken = json(&dirs[2], 0, &["claim", "task-1", "--as", "carol", "--json"]);
    assert_eq!(taken["status"], "claimed", "{taken}");
    assert_eq!(taken["label"], "carol", "{taken}");
    assert_damaged(&taken["took_over"], "task-1", "not UTF-8");
    let list = json(&dirs[1], 0, &["claims", "--json"]);
    assert_eq!(lease(&list, "task-1")["label"], "carol", "{list}");
    assert_eq!(lease(&list, "task-1")["state"], "held", "{list}");
}

/// Attacks 2 and 7, two thousand claim refs on the remote (far more than a pipe holds, both
/// ways): the reads and a claim finish, every lease is listed, and `small ui` serves its
/// page and stops on SIGTERM.
#[test]
fn two_thousand_claim_refs_are_read_without_a_hang() {
    const N: usize = 2000;
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 3);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "many", 1);
    let dir = &dirs[0];
    // The records as files, stored in one `hash-object`, their refs set in one update-ref.
    let blobs = d.path().join("blobs");
    std::fs::create_dir(&blobs).unwrap();
    let tasks: Vec<String> = (0..N).map(|i| format!("task-{}", i + 10)).collect();
    let mut paths = String::new();
    for t in &tasks {
        let p = blobs.join(t);
        std::fs::write(&p, record(t, "peer", &format!("peer {t}"), FAR, 1)).unwrap();
        paths.push_str(&format!("{}\n", p.display()));
    }
    let shas = git_input(
        &remote,
        &["hash-object", "-w", "--stdin-paths"],
        paths.as_bytes(),
    );
    let updates: String = tasks
        .iter()
        .zip(shas.lines())
        .map(|(t, sha)| format!("create {} {sha}\n", claim_ref(t)))
        .collect();
    git_input(&remote, &["update-ref", "--stdin"], updates.as_bytes());
    let refs = git(
        &remote,
        &["for-each-ref", "--format=%(refname)", "refs/small/claims"],
    );
    assert_eq!(refs.lines().count(), N);

    let o = bounded_ok(dir, &["claims"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with(&format!("Claims: {N} (origin)")),
        "{}",
        text(&o)
    );
    let o = bounded_ok(dir, &["claims", "--json"]);
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(leases(&list).len(), N);
    assert!(
        leases(&list)
            .iter()
            .all(|l| l["state"] == "held" && l["holder"] == "peer"),
        "every planted lease reads as held"
    );
    assert_eq!(lease(&list, "task-2009")["label"], "peer task-2009");
    bounded_ok(dir, &["status"]);
    let o = bounded_ok(dir, &["claim", "--next", "--json"]);
    let next: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(next["task"], "task-1", "{next}");
    let o = bounded_ok(dir, &["claims", "--json"]);
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(leases(&list).len(), N + 1);

    // The page reads every lease seen, and the server stops when asked to.
    let mut ui = Reaped(
        command(dir, BIN, &["ui"])
            .env("RUST_LOG", "warn")
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let port = ui_port(&mut ui.0);
    let page = http_get(port, "/w/0/");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("Task 1"), "{page}");
    assert!(
        page.contains("held by"),
        "the page shows the lease on task-1: {page}"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &ui.0.id().to_string()])
        .status();
    let start = Instant::now();
    while ui.0.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "small ui did not stop within 10 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process killed and reaped when dropped (a failed test leaves no server behind).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The port `small ui` listens on, from its first line (within the hang guard).
fn ui_port(ui: &mut Child) -> u16 {
    let stdout = ui.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        let _ = r.read_line(&mut line);
        let _ = tx.send(line);
        // Keep reading, so that the server never blocks on a full pipe.
        let _ = std::io::copy(&mut r, &mut std::io::sink());
    });
    let Ok(line) = rx.recv_timeout(HANG) else {
        panic!("small ui printed no address");
    };
    line.trim()
        .strip_prefix("listening on http://")
        .and_then(|u| u.trim_end_matches('/').rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("first line: {line:?}"))
}

/// A plain HTTP/1.1 GET of `path`: the raw answer.
fn http_get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(HANG)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    String::from_utf8_lossy(&raw).into_owned()
}

/// Attack 3, a 5 MB blob at one claim ref and the leases after it (in ref order) held by
/// another clone: those still read as its live leases, and still fence a third clone's
/// writes.
#[test]
fn an_over_sized_blob_does_not_hide_the_leases_after_it() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 3);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "big", 3);
    let (alice, bob, carol) = (&dirs[0], &dirs[1], &dirs[2]);
    let held = json(bob, 0, &["claim", "task-2", "--as", "bob", "--json"]);
    json(bob, 0, &["claim", "task-3", "--as", "bob", "--json"]);
    // A record held by mallory, its label 5 MB.
    let big = record("task-1", "mallory", &"m".repeat(5 << 20), FAR, 1);
    plant(&remote, "task-1", &big);

    let list = json(alice, 0, &["claims", "--json"]);
    assert_eq!(leases(&list).len(), 3, "{list}");
    assert_damaged(lease(&list, "task-1"), "task-1", "over the 4096");
    for t in ["task-2", "task-3"] {
        let l = lease(&list, t);
        assert_eq!(l["label"], "bob", "{l}");
        assert_eq!(l["holder"], held["holder"], "{l}");
        assert_eq!(l["state"], "held", "{l}");
        assert_eq!(l["live"], true, "{l}");
    }
    let o = small(alice, 0, &["status"]);
    let st = String::from_utf8_lossy(&o.stdout).into_owned();
    for t in ["task-2", "task-3"] {
        let row = format!("  {t}      bob  ");
        assert!(st.lines().any(|l| l.starts_with(&row)), "{st}");
    }
    assert!(!st.contains("mallory"), "{st}");

    // A third clone is still fenced off bob's tasks, and may take the damaged one.
    small(carol, 0, &["claims"]);
    let add = [
        "progress",
        "add",
        "--task",
        "task-2",
        "--status",
        "in_progress",
        "--evidence",
        "x",
        "--json",
    ];
    let e = json(carol, 1, &add);
    assert_eq!(e["errors"][0]["code"], "claimed", "{e}");
    assert!(
        e["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("claimed by bob"),
        "{e}"
    );
    let e = json(carol, 1, &["claim", "task-3", "--json"]);
    assert_eq!(e["errors"][0]["code"], "claimed", "{e}");
    let taken = json(carol, 0, &["claim", "task-1", "--as", "carol", "--json"]);
    assert_eq!(taken["took_over"]["state"], "damaged", "{taken}");
}

/// Attack 4, a decoy: the ref of task-2 holds a live record that names task-1. task-1 is
/// free (listed, fenced, claimed by its own ref alone) and task-2 is damaged.
#[test]
fn a_record_naming_another_task_holds_neither() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 3);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "decoy", 2);
    plant(
        &remote,
        "task-2",
        &record("task-1", "mallory", "mallory", FAR, 1),
    );
    let a = &dirs[0];
    let list = json(a, 0, &["claims", "--json"]);
    assert_eq!(leases(&list).len(), 1, "{list}");
    let l = lease(&list, "task-2");
    assert_damaged(l, "task-2", "names the task \"task-1\", not its ref's");
    assert_eq!(l["task"], "task-2", "{l}");
    let r = json(a, 0, &["resume", "--json", "--no-check"]);
    assert_no_others(&r);
    assert_eq!(r["next_task"]["id"], "task-1", "{r}");
    // Writes on task-1 are not fenced by the decoy.
    small(
        a,
        0,
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            "mine",
        ],
    );
    let taken = json(a, 0, &["claim", "task-1", "--as", "alice", "--json"]);
    assert_eq!(taken["status"], "claimed", "{taken}");
    assert_eq!(taken["generation"], 1, "{taken}");
    assert!(taken.get("took_over").is_none(), "{taken}");
    // Another clone's `claim --next` passes alice's task-1 and takes the decoy's ref.
    let next = json(&dirs[1], 0, &["claim", "--next", "--as", "bob", "--json"]);
    assert_eq!(next["task"], "task-2", "{next}");
    assert_damaged(&next["took_over"], "task-2", "not its ref's");
    let list = json(&dirs[1], 0, &["claims", "--json"]);
    assert_eq!(lease(&list, "task-1")["label"], "alice", "{list}");
    assert_eq!(lease(&list, "task-2")["label"], "bob", "{list}");
}

/// Attack 5, labels: a new one must be one line; a stored one with a newline forges no
/// row, one over the record bound is damaged, and long ones are cut so that resume's
/// context keeps its next task.
#[test]
fn labels_forge_no_rows_and_crowd_out_no_next_task() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 6);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "label", 1);
    let a = &dirs[0];
    let o = small(a, 2, &["claim", "task-1", "--as", "a\nb"]);
    assert!(text(&o).contains("control character"), "{}", text(&o));
    assert_eq!(git(&remote, &["for-each-ref", "refs/small/claims"]), "");

    // Rows as `claims` and `status` print them.
    let forged = format!(
        "alice\n  task-9  mallory  held until {FAR}  generation 1\n  \
         task-9      mallory  until {FAR}"
    );
    plant(
        &remote,
        "task-1",
        &record("task-1", "mallory", &forged, FAR, 1),
    );
    plant(
        &remote,
        "task-2",
        &record("task-2", "mallory", &"m".repeat(5 << 20), FAR, 1),
    );
    let long = "l".repeat(3000);
    for t in ["task-3", "task-4", "task-5"] {
        plant(&remote, t, &record(t, "mallory", &long, FAR, 1));
    }

    let o = small(a, 0, &["claims"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(out.lines().count(), 6, "one line a lease: {out}");
    assert!(out.starts_with("Claims: 5 (origin)\n"), "{out}");
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with("task-9")),
        "{out}"
    );
    let list = json(a, 0, &["claims", "--json"]);
    let l1 = lease(&list, "task-1");
    assert!(!l1["label"].as_str().unwrap().contains('\n'), "{l1}");
    assert!(
        l1["label"].as_str().unwrap().starts_with("alice\\n"),
        "{l1}"
    );
    assert_damaged(lease(&list, "task-2"), "task-2", "over the 4096");
    let l3 = lease(&list, "task-3")["label"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        l3.chars().count(),
        101,
        "cut to 100 characters and `…`: {l3}"
    );
    assert!(l3.ends_with('…'), "{l3}");

    let o = small(a, 0, &["status"]);
    let st = String::from_utf8_lossy(&o.stdout).into_owned();
    let section = st
        .split("Claims (as last seen")
        .nth(1)
        .unwrap_or_else(|| panic!("a claims section: {st}"));
    let rows: Vec<&str> = section.lines().skip(1).filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 5, "one row a lease: {st}");
    assert!(
        !st.lines().any(|l| l.trim_start().starts_with("task-9")),
        "{st}"
    );

    // Three labels of 3000 characters would take 9000 of the 8000: cut, they leave room
    // for the next task (task-2: its damaged record holds nothing).
    let o = small(a, 0, &["resume", "--hook", "--max-chars", "8000"]);
    let hook: Value = serde_json::from_slice(&o.stdout).unwrap();
    let context = hook["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("{hook}"));
    assert!(context.chars().count() <= 8000);
    assert!(context.contains("## Next task: task-2"), "{context}");
    assert!(context.contains("- task-5: "), "{context}");
    assert!(!context.contains("\n  task-9"), "{context}");
}

/// Attack 5, a task name from a ref: the ref's name decodes (`%0A`) to a task whose id holds
/// a newline and a forged row, its record naming that task. The rows of `claims`, `status`
/// and resume's context stay one a lease.
#[test]
fn a_task_name_from_a_ref_forges_no_rows() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 2);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "refname", 1);
    let a = &dirs[0];
    let task = format!("task-9\n  task-2      mallory  until {FAR}");
    let name = format!(
        "refs/small/claims/_/task-9%0A%20%20task-2%20%20%20%20%20%20mallory%20%20until%20{}",
        FAR.replace(':', "%3A")
    );
    plant_ref(&remote, &name, &record(&task, "mallory", "mallory", FAR, 1));
    plant(&remote, "task-1", &record("task-1", "bob", "bob", FAR, 1));

    let o = small(a, 0, &["claims"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.starts_with("Claims: 2 (origin)\n"), "{out}");
    assert_eq!(out.lines().count(), 3, "one line a lease: {out}");
    let list = json(a, 0, &["claims", "--json"]);
    assert_eq!(lease(&list, &task)["ref"], name.as_str(), "{list}");
    assert_eq!(lease(&list, &task)["state"], "held", "{list}");

    let o = small(a, 0, &["status"]);
    let st = String::from_utf8_lossy(&o.stdout).into_owned();
    let section = st
        .split("Claims (as last seen")
        .nth(1)
        .unwrap_or_else(|| panic!("a claims section: {st}"));
    let rows: Vec<&str> = section.lines().skip(1).filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 2, "one row a lease: {st}");
    assert!(
        !rows.iter().any(|l| l.trim_start().starts_with("task-2")),
        "{st}"
    );

    // Resume's context (what an agent reads first) names task-2 as the next task, and no
    // line of it says task-2 is claimed.
    let o = small(a, 0, &["resume", "--hook"]);
    let hook: Value = serde_json::from_slice(&o.stdout).unwrap();
    let context = hook["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("{hook}"));
    assert!(context.contains("## Next task: task-2"), "{context}");
    assert!(
        !context
            .lines()
            .any(|l| l.trim_start().starts_with("task-2")),
        "{context}"
    );
    // Nor does a write on task-2 take the forged row for a lease.
    small(
        a,
        0,
        &[
            "progress",
            "add",
            "--task",
            "task-2",
            "--status",
            "in_progress",
            "--evidence",
            "x",
        ],
    );
}

/// Attack 6, smaller holes: a remote named like an option, a generation at its limit, a
/// TTL no clock reaches, and a skew or timeout that is not a duration.
#[test]
fn remote_names_generations_ttls_and_variables_at_their_limits() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 3);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "limits", 2);
    let a = &dirs[0];
    let url = remote.to_str().unwrap();

    // Remotes whose names git would read as options: refused by name, never run.
    git(a, &["config", "remote.-x.url", url]);
    git(a, &["config", "remote.--upload-pack=touch pwned.url", url]);
    let o = small(a, 2, &["claim", "task-1", "--remote=-x"]);
    assert!(
        text(&o).contains("starts with `-`, which git would read as an option"),
        "{}",
        text(&o)
    );
    let o = small(a, 2, &["claims", "--remote=--upload-pack=touch pwned"]);
    assert!(text(&o).contains("starts with `-`"), "{}", text(&o));
    small(a, 2, &["unclaim", "task-1", "--remote=-x"]);
    assert!(
        !a.join("pwned").exists(),
        "git ran a remote's name as an option"
    );
    let list = json(a, 0, &["claims", "--json"]);
    assert_eq!(list["remote"], "origin", "{list}");
    small(a, 0, &["status"]);
    small(a, 0, &["resume", "--no-check"]);

    // A generation at its limit: taken over once ended, renewed and finished, held there.
    let max = u64::MAX;
    plant(
        &remote,
        "task-1",
        &record("task-1", "old", "old", "2000-01-01T00:00:00Z", max),
    );
    let taken = json(a, 0, &["claim", "task-1", "--as", "alice", "--json"]);
    assert_eq!(taken["status"], "claimed", "{taken}");
    assert_eq!(taken["generation"].as_u64(), Some(max), "{taken}");
    assert_eq!(
        taken["took_over"]["generation"].as_u64(),
        Some(max),
        "{taken}"
    );
    assert_eq!(taken["took_over"]["state"], "expired", "{taken}");
    let again = json(a, 0, &["claim", "task-1", "--json"]);
    assert_eq!(again["status"], "renewed", "{again}");
    assert_eq!(again["generation"].as_u64(), Some(max), "{again}");
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
            "done",
        ],
    );
    let list = json(&dirs[1], 0, &["claims", "--json"]);
    assert_eq!(lease(&list, "task-1")["state"], "done", "{list}");
    assert_eq!(
        lease(&list, "task-1")["generation"].as_u64(),
        Some(max),
        "{list}"
    );

    // A TTL past the longest lease, however long.
    for ttl in ["999999999999d", "8d"] {
        let o = small(a, 2, &["claim", "task-2", "--ttl", ttl]);
        assert!(!text(&o).contains("internal error"), "{}", text(&o));
    }
    let o = small(a, 2, &["claim", "task-2", "--ttl", "8d"]);
    assert!(text(&o).contains("at most 7 days"), "{}", text(&o));

    // A timeout or skew longer than any clock counts is no bound, not an internal error.
    let forever = "18446744073709551615s";
    small_env(a, 0, &["claims"], &[("SMALL_CLAIM_TIMEOUT", forever)]);
    small_env(a, 0, &["claims"], &[("SMALL_CLAIM_SKEW", forever)]);

    // A skew or timeout that is not a duration: a usage error naming it, nothing claimed.
    for (var, value) in [
        ("SMALL_CLAIM_SKEW", "-5"),
        ("SMALL_CLAIM_SKEW", "garbage"),
        ("SMALL_CLAIM_TIMEOUT", "-5"),
        ("SMALL_CLAIM_TIMEOUT", "garbage"),
    ] {
        for args in [
            &["claim", "task-2"][..],
            &["claims"],
            &["unclaim", "task-1"],
        ] {
            let o = small_env(a, 2, args, &[(var, value)]);
            let said = format!("{var}={value:?} is not a ");
            assert!(text(&o).contains(&said), "{args:?}: {}", text(&o));
        }
    }
    assert!(
        !git(&remote, &["for-each-ref", "refs/small/claims"]).contains("task-2"),
        "a claim with a bad variable took a lease"
    );
}

/// Attack 6, a done record whose commit is not a commit id (readers shorten it by bytes,
/// and `é` has two): damaged, not an internal error, and the task can be taken over.
#[test]
fn a_done_record_with_a_strange_commit_is_damaged() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 1);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "commit", 1);
    let a = &dirs[0];
    let mut r: Value = serde_json::from_slice(&record("task-1", "m", "m", FAR, 1)).unwrap();
    r["done"] = serde_json::json!({
        "outcome": "completed",
        "at": "2026-01-01T00:00:00Z",
        "commit": format!("a{}", "\u{e9}".repeat(8)),
        "branch": "main",
    });
    plant(&remote, "task-1", &serde_json::to_vec(&r).unwrap());
    let o = small(a, 0, &["claims"]);
    assert!(!text(&o).contains("internal"), "{}", text(&o));
    let list = json(a, 0, &["claims", "--json"]);
    assert_damaged(lease(&list, "task-1"), "task-1", "commit");
    small(a, 0, &["status"]);
    let taken = json(a, 0, &["claim", "task-1", "--json"]);
    assert_eq!(taken["took_over"]["state"], "damaged", "{taken}");
}

/// Attack 6, a fenced write with a skew or timeout that is not a duration: refused as a
/// usage error naming the variable. It never writes over another's live lease (a bad
/// timeout used to hide every lease from the fence).
#[test]
fn a_fenced_write_with_a_bad_variable_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    let remote = seeded(d.path(), "Hostile", 2);
    let dirs = clones(d.path(), remote.to_str().unwrap(), "fencevar", 2);
    let (alice, bob) = (&dirs[0], &dirs[1]);
    small(alice, 0, &["claim", "task-1", "--as", "alice"]);
    small(bob, 0, &["claims"]);
    let add = [
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "sneaky",
    ];
    for (var, value) in [
        ("SMALL_CLAIM_SKEW", "-5"),
        ("SMALL_CLAIM_SKEW", "garbage"),
        ("SMALL_CLAIM_TIMEOUT", "-5"),
        ("SMALL_CLAIM_TIMEOUT", "garbage"),
    ] {
        let o = small_env(bob, 2, &add, &[(var, value)]);
        assert!(text(&o).contains(var), "{var}={value}: {}", text(&o));
    }
    let progress = std::fs::read_to_string(bob.join(".small/progress.small.yml")).unwrap();
    assert!(
        !progress.contains("sneaky"),
        "a refused write wrote: {progress}"
    );
    // The holder's own writes too.
    let mine = [
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "mine",
    ];
    small_env(alice, 2, &mine, &[("SMALL_CLAIM_SKEW", "garbage")]);
    small_env(alice, 2, &mine, &[("SMALL_CLAIM_TIMEOUT", "garbage")]);
    small(alice, 0, &mine);
}
