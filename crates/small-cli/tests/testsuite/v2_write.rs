//! Writing to a SMALL 2.0.0 workspace with the real binary, on copies of the recorded
//! reference workspaces: the session loop, take-over, compare-and-swap refusals, writers in
//! parallel processes that wait for each other, SIGKILL while writing, and merged clones.
//! Every tree written is then checked with small's strict check.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_small");
const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/v2/cases"
);

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Ws {
    /// A copy of a recorded reference workspace, or `None` after a visible skip.
    fn case(name: &str) -> Option<Ws> {
        let src = small_testkit::conformance_path(Path::new(CASES).join(name))?;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        crate::conformance_v11::copy_case(&src, &root, true);
        Some(Ws { _dir: dir, root })
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(&self.root)
            .env("NO_COLOR", "1")
            .env_remove("SMALL_LOCK_TIMEOUT")
            .stdin(std::process::Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "small {args:?} failed ({:?}): {}{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    fn fails(&self, args: &[&str], code: i32) -> String {
        let o = self.run(args);
        assert_eq!(
            o.status.code(),
            Some(code),
            "small {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    fn strict_ok(&self) {
        self.ok(&["check", "--strict", "--workspace", "any"]);
    }

    fn start(&self) -> String {
        let v = self.json(&["session", "start", "--label", "t", "--json"]);
        v["session"]["session_id"].as_str().unwrap().to_string()
    }

    /// Run `args` with a slowed publish and SIGKILL it after `delay_ms`.
    fn kill_after(&self, args: &[&str], delay_ms: u64) {
        let mut child = self
            .cmd(args)
            .env("SMALL_TEST_SLOW_PUBLISH_MS", "15")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The arguments of write `it` of a crash test: a checkpoint, a handoff (when
    /// `handoffs`) or a progress entry on task-1 in `sid`.
    fn crash_write(it: usize, sid: &str, text: &str, handoffs: bool) -> Vec<String> {
        let args: Vec<&str> = match (it % 3, handoffs) {
            (0, _) => vec![
                "checkpoint",
                "--task",
                "task-1",
                "--status",
                "blocked",
                "--evidence",
                text,
                "--session",
                sid,
            ],
            (1, true) => vec!["handoff", "--summary", text, "--session", sid],
            _ => vec![
                "progress",
                "add",
                "--task",
                "task-1",
                "--status",
                "in_progress",
                "--evidence",
                text,
                "--session",
                sid,
            ],
        };
        args.into_iter().map(str::to_string).collect()
    }

    /// Sequences of a session's events, sorted.
    fn sequences(&self, session: &str) -> Vec<i64> {
        let mut out: Vec<i64> = std::fs::read_dir(self.root.join(".small/events").join(session))
            .unwrap()
            .map(|e| {
                let v: Value =
                    serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap();
                v["sequence"].as_i64().unwrap()
            })
            .collect();
        out.sort();
        out
    }
}

#[test]
fn v2_session_loop_writes_records_the_strict_check_accepts() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let sid = ws.start();
    assert_eq!(
        std::fs::read_to_string(ws.root.join(".small-cache/active-session")).unwrap(),
        format!("{sid}\n")
    );
    let out = ws.ok(&["plan", "--add", "Write the docs"]);
    assert!(out.starts_with("Added task task-2 (task_"), "{out}");
    let v = ws.json(&[
        "progress",
        "add",
        "--task",
        "task-2",
        "--status",
        "in_progress",
        "--evidence",
        "begun",
        "--json",
    ]);
    assert_eq!(v["event"]["kind"], "task_transitioned");
    assert_eq!(v["event"]["sequence"], 3);
    assert_eq!(v["event"]["previous_event"].as_str().unwrap().len(), 38);
    let v = ws.json(&[
        "apply",
        "--task",
        "task-2",
        "--cmd",
        "echo applied",
        "--json",
    ]);
    assert_eq!(v["child_exit_code"], 0);
    assert_eq!(v["evidence_recorded"], true);
    let o = ws.run(&["apply", "--task", "task-2", "--cmd", "exit 3"]);
    assert_eq!(o.status.code(), Some(3));
    let v = ws.json(&[
        "checkpoint",
        "--task",
        "task-2",
        "--status",
        "completed",
        "--evidence",
        "docs build",
        "--json",
    ]);
    assert_eq!(v["receipt"]["strength"], "narrative_assertion");
    std::fs::write(ws.root.join("proof.txt"), "green\n").unwrap();
    let r = ws.json(&[
        "evidence",
        "save",
        "--task",
        "task-2",
        "--file",
        "proof.txt",
        "--json",
    ]);
    assert_eq!(r["strength"], "verified_artifact");
    let r = ws.json(&[
        "evidence",
        "declare-unavailable",
        "--task",
        "task-2",
        "--reason",
        "no device",
        "--json",
    ]);
    assert_eq!(r["availability"], "unavailable");
    // Evidence declared unavailable is never verified: the report, then the error document
    // (as the reference prints them), exit 1.
    let o = ws.run(&["evidence", "verify", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let docs: Vec<Value> = serde_json::Deserializer::from_slice(&o.stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("JSON documents on stdout");
    assert_eq!(docs.len(), 2, "{docs:?}");
    let v = &docs[0];
    assert_eq!(v["all_verified"], false);
    assert_eq!(docs[1]["error"]["code"], "invalid_request");
    assert!(v["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["status"] == "unavailable"));
    ws.ok(&["handoff", "--summary", "midway"]);
    let v = ws.json(&["session", "close", "--summary", "docs written", "--json"]);
    assert_eq!(v["session_id"], sid.as_str());
    assert_eq!(v["events"][1]["kind"], "session_closed");
    assert!(!ws.root.join(".small-cache/active-session").exists());
    assert_eq!(ws.sequences(&sid), (1..=9).collect::<Vec<_>>());
    // Nothing more is written to a closed session; no session at all is a clear refusal.
    let err = ws.fails(
        &[
            "progress",
            "add",
            "--task",
            "task-2",
            "--status",
            "blocked",
            "--evidence",
            "x",
            "--session",
            &sid,
        ],
        1,
    );
    assert!(err.contains("not active"), "{err}");
    let err = ws.fails(
        &[
            "progress",
            "add",
            "--task",
            "task-2",
            "--status",
            "blocked",
            "--evidence",
            "x",
        ],
        1,
    );
    assert!(err.contains("V2-NO-SESSION"), "{err}");
    ws.strict_ok();
}

#[test]
fn v2_solo_mode_takeover_and_compare_and_swap() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let a = ws.start();
    let err = ws.fails(&["session", "start"], 1);
    assert!(
        err.contains("solo mode already has active session"),
        "{err}"
    );
    ws.fails(&["session", "start", "--takeover", &a], 2);
    let v = ws.json(&[
        "session",
        "start",
        "--takeover",
        &a,
        "--reason",
        "agent crashed",
        "--json",
    ]);
    assert_eq!(v["events"][1]["kind"], "ownership_taken_over");
    assert_eq!(v["events"][1]["payload"]["prior_session"], a.as_str());
    let b = v["session"]["session_id"].as_str().unwrap().to_string();
    let err = ws.fails(&["handoff", "--summary", "late", "--session", &a], 1);
    assert!(err.contains("superseded"), "{err}");
    // session list shows the taken-over session as superseded, the new one as active.
    let list = ws.json(&["session", "list", "--json"]);
    let status_of = |id: &str| {
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == id)
            .map(|s| s["status"].clone())
    };
    assert_eq!(
        status_of(&a),
        Some(serde_json::json!("superseded")),
        "{list}"
    );
    assert_eq!(status_of(&b), Some(serde_json::json!("active")), "{list}");
    let text = ws.ok(&["session", "list"]);
    assert!(
        text.lines()
            .any(|l| l.contains(&a) && l.contains("superseded")),
        "{text}"
    );
    let show = ws.json(&["mode", "show", "--json"]);
    assert_eq!(show["active_sessions"], serde_json::json!([b]));
    let frontier = show["frontier"].as_str().unwrap().to_string();
    let err = ws.fails(
        &[
            "mode",
            "set",
            "collaborative",
            "--reason",
            "pair",
            "--expect-state",
            "0000",
        ],
        1,
    );
    assert!(err.contains("V2-STALE"), "{err}");
    // A blank reason is a refused value (1), not a malformed command line.
    ws.fails(
        &[
            "mode",
            "set",
            "collaborative",
            "--reason",
            " ",
            "--expect-state",
            &frontier,
        ],
        1,
    );
    let v = ws.json(&[
        "mode",
        "set",
        "collaborative",
        "--reason",
        "pair",
        "--expect-state",
        &frontier,
        "--json",
    ]);
    assert_eq!(v["changed"], true);
    // Collaborative: a second active session is fine.
    ws.start();
    let p = ws.json(&["policy", "show", "--json"]);
    std::fs::write(ws.root.join("intent.yml"), "intent: sharper\n").unwrap();
    let err = ws.fails(
        &[
            "policy",
            "revise",
            "--intent",
            "intent.yml",
            "--reason",
            "r",
            "--expect-state",
            "bad",
            "--session",
            &b,
        ],
        1,
    );
    assert!(err.contains("V2-STALE"), "{err}");
    let v = ws.json(&[
        "policy",
        "revise",
        "--intent",
        "intent.yml",
        "--reason",
        "sharper",
        "--session",
        &b,
        "--expect-state",
        p["frontier"].as_str().unwrap(),
        "--json",
    ]);
    assert_ne!(v["policy_revision"], p["policy_revision"]);
    ws.strict_ok();
}

#[test]
fn v2_writes_refused_on_v1_flags_and_damaged_records() {
    let Some(ws) = Ws::case("tampered-event-payload-byte") else {
        return;
    };
    let err = ws.fails(&["session", "start"], 1);
    assert!(err.contains("V2-DAMAGED"), "{err}");
    let d = tempfile::tempdir().unwrap();
    let v1 = Command::new(BIN)
        .args(["init", "--intent", "x"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(v1.status.success());
    let o = Command::new(BIN)
        .args([
            "progress",
            "add",
            "--task",
            "meta/x",
            "--status",
            "in_progress",
            "--evidence",
            "e",
            "--session",
            "s",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// 8 processes append 20 progress entries each through one session: all 160 are recorded,
/// none refused, the session's sequence gapless.
#[test]
fn v2_eight_writers_append_160_events_none_refused() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let sid = ws.start();
    let children: Vec<_> = (0..8)
        .map(|p| {
            let script = format!(
                "for i in $(seq 1 20); do \"{BIN}\" progress add --task task-1 --status in_progress --evidence \"writer {p} entry $i\" --session {sid} >/dev/null || exit 1; done"
            );
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(&ws.root)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a writer was refused");
    }
    assert_eq!(ws.sequences(&sid), (1..=161).collect::<Vec<_>>());
    ws.strict_ok();
}

/// SIGKILL at random moments while writing (with the window between staging and publishing
/// widened): the tree always passes the strict check, no sequence has a gap.
/// `n` delays under `max` ms from a seed printed for a rerun (xorshift).
fn crash_delays(n: usize, max: u64) -> Vec<u64> {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    eprintln!("crash test seed: {seed}");
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % max
        })
        .collect()
}

#[test]
fn v2_sigkill_during_writes_leaves_no_torn_record() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let sid = ws.start();
    for (it, delay) in crash_delays(12, 40).into_iter().enumerate() {
        let args = Ws::crash_write(it, &sid, &format!("crash {it}"), false);
        ws.kill_after(&args.iter().map(String::as_str).collect::<Vec<_>>(), delay);
        let seqs = ws.sequences(&sid);
        assert_eq!(
            seqs,
            (1..=seqs.len() as i64).collect::<Vec<_>>(),
            "iteration {it}"
        );
        ws.strict_ok();
    }
    // The next writer goes on from where the killed ones stopped.
    let before = ws.sequences(&sid).len();
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "after",
        "--session",
        &sid,
    ]);
    assert_eq!(ws.sequences(&sid).len(), before + 1);
    ws.strict_ok();
}

/// A writer that starts from the cached state, killed at any instant, leaves the old tree or
/// the old tree plus complete events; the next command answers as a full read does (the
/// cache is the old one, or the one for what was written), and goes on from there.
#[test]
fn v2_sigkill_of_a_writer_on_the_cached_state() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    // Older than the racy margin, so that the first read leaves a cache writers start from.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let sid = ws.start();
    ws.ok(&["status", "--json"]);
    assert!(ws.root.join(".small-cache/v2-state.v1").is_file());
    for (it, delay) in crash_delays(12, 50).into_iter().enumerate() {
        let args = Ws::crash_write(it, &sid, &format!("cached crash {it}"), true);
        let before = ws.sequences(&sid).len();
        ws.kill_after(&args.iter().map(String::as_str).collect::<Vec<_>>(), delay);
        let seqs = ws.sequences(&sid);
        assert!(
            seqs.len() <= before + 1,
            "iteration {it}: one event at most"
        );
        assert_eq!(
            seqs,
            (1..=seqs.len() as i64).collect::<Vec<_>>(),
            "iteration {it}"
        );
        assert_eq!(
            ws.json(&["status", "--json"]),
            ws.json(&["status", "--json", "--no-cache"]),
            "iteration {it}: the cached answer is the full read's"
        );
        ws.strict_ok();
    }
    let before = ws.sequences(&sid).len();
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "after",
        "--session",
        &sid,
    ]);
    assert_eq!(ws.sequences(&sid).len(), before + 1);
    assert_eq!(
        ws.json(&["status", "--json"]),
        ws.json(&["status", "--json", "--no-cache"])
    );
    ws.strict_ok();
}

/// Two clones write in their own sessions; git merges the event files without a conflict and
/// the merged tree passes the strict check (disjoint work) or names the conflict (the same
/// task completed in one and blocked in the other).
#[test]
fn v2_merged_clones_reconcile() {
    let Some(base) = Ws::case("wf-single-session") else {
        return;
    };
    if Command::new("git").arg("--version").output().is_err() {
        small_testkit::skip("git", "git is not installed");
        return;
    }
    let git = |dir: &Path, args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    std::fs::write(base.root.join(".gitignore"), ".small-cache/\n").unwrap();
    git(&base.root, &["init", "-q", "-b", "main"]);
    git(&base.root, &["add", "-A"]);
    git(&base.root, &["commit", "-qm", "base"]);
    let run_in = |dir: &Path, args: &[&str]| {
        let o = Command::new(BIN)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    git(&base.root, &["checkout", "-qb", "other"]);
    run_in(&base.root, &["session", "start", "--label", "b"]);
    run_in(&base.root, &["plan", "--add", "Other work"]);
    run_in(
        &base.root,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "blocked",
            "--evidence",
            "blocked on b",
        ],
    );
    run_in(&base.root, &["session", "close", "--summary", "b done"]);
    git(&base.root, &["add", "-A"]);
    git(&base.root, &["commit", "-qm", "b"]);
    git(&base.root, &["checkout", "-q", "main"]);
    run_in(&base.root, &["session", "start", "--label", "a"]);
    run_in(&base.root, &["plan", "--add", "Main work"]);
    run_in(&base.root, &["session", "close", "--summary", "a done"]);
    git(&base.root, &["add", "-A"]);
    git(&base.root, &["commit", "-qm", "a"]);
    // Disjoint so far: the merge has no git conflict and passes the strict check.
    git(&base.root, &["merge", "-q", "--no-edit", "other"]);
    base.strict_ok();
    // Without a conflict, resume lists none.
    let r = base.json(&["resume", "--json"]);
    assert!(r.get("conflicts").is_none(), "{r}");
    assert_eq!(r["gates"]["status"], "pass");
    assert!(!base.ok(&["resume"]).contains("## Conflicts"));
    // A conflicting outcome on one task from two branches is a conflict the check names.
    git(&base.root, &["checkout", "-qb", "third", "HEAD~1"]);
    run_in(&base.root, &["session", "start", "--label", "c"]);
    run_in(
        &base.root,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "done on c",
        ],
    );
    run_in(&base.root, &["session", "close", "--summary", "c done"]);
    git(&base.root, &["add", "-A"]);
    git(&base.root, &["commit", "-qm", "c"]);
    git(&base.root, &["checkout", "-q", "main"]);
    git(&base.root, &["merge", "-q", "--no-edit", "third"]);
    let o = base.run(&["check", "--strict", "--workspace", "any"]);
    assert_eq!(o.status.code(), Some(1));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("V2-CONFLICT"), "{text}");
    // The check and resume name the conflict and the steps that resolve it, with the real
    // conflict id and frontier; every session is closed, so the first step starts one.
    let frontier = base.json(&["status", "--json"])["frontier"]
        .as_str()
        .unwrap()
        .to_string();
    let r = base.json(&["resume", "--json"]);
    assert_eq!(r["gates"]["status"], "fail");
    let c = &r["conflicts"][0];
    assert_eq!(r["conflicts"].as_array().unwrap().len(), 1, "{r}");
    let id = c["conflict_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("conflict_"), "{c}");
    assert_eq!(c["kind"], "task_outcome");
    assert_eq!(c["task"], "task-1");
    assert_eq!(c["frontier"], frontier.as_str());
    assert_eq!(c["start_session"], "small session start --label reconcile");
    let says: Vec<&str> = c["heads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["says"].as_str().unwrap())
        .collect();
    assert!(
        says.iter()
            .any(|s| s.contains("status completed: \"done on c\"")),
        "{says:?}"
    );
    assert!(
        says.iter()
            .any(|s| s.contains("status blocked: \"blocked on b\"")),
        "{says:?}"
    );
    let apply = format!("small reconcile --apply FILE --expect-state {frontier}");
    assert!(text.contains(&id) && text.contains(&apply), "{text}");
    let md = base.ok(&["resume"]);
    assert!(md.contains("## Conflicts: 1 unresolved"), "{md}");
    assert!(md.contains(&id) && md.contains(&apply), "{md}");
    assert!(md.contains("small session start --label reconcile"), "{md}");
    // Following the steps resolves it: start the session, take the new frontier's steps,
    // keep the completed head, apply.
    run_in(&base.root, &["session", "start", "--label", "reconcile"]);
    let r = base.json(&["resume", "--json"]);
    let c = &r["conflicts"][0];
    assert!(c.get("start_session").is_none(), "{c}");
    assert_ne!(c["frontier"], frontier.as_str());
    let mut file = c["resolution_file"].clone();
    let keep = c["heads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["says"].as_str().unwrap().contains("completed"))
        .unwrap()["event"]
        .clone();
    file["selected_event"] = keep;
    file["reason"] = serde_json::json!("the c branch ran the real test");
    std::fs::write(base.root.join("resolution.json"), file.to_string()).unwrap();
    let cmd = c["apply"]
        .as_str()
        .unwrap()
        .replace("FILE", "resolution.json");
    let args: Vec<&str> = cmd.split_whitespace().skip(1).collect();
    base.ok(&args);
    base.strict_ok();
    let r = base.json(&["resume", "--json"]);
    assert!(r.get("conflicts").is_none(), "{r}");
    assert_eq!(r["gates"]["status"], "pass");
}

/// The merged conflict of the reference's corpus is resolved by `reconcile --apply`; a file
/// without the reviewed frontier, or a stale frontier, is refused.
#[test]
fn v2_reconcile_resolves_a_merged_conflict() {
    let Some(ws) = Ws::case("wf-merge-conflict") else {
        return;
    };
    let o = ws.run(&["check", "--strict", "--workspace", "any"]);
    assert_eq!(o.status.code(), Some(1));
    ws.start();
    let p = ws.json(&["reconcile", "--preview", "--json"]);
    assert_eq!(p["conflict_count"], 1);
    let c = &p["conflicts"][0];
    let frontier = p["frontier"].as_str().unwrap();
    let mut res = serde_json::json!({
        "profile": "2.0.0",
        "conflict_id": c["id"],
        "heads": c["heads"],
        "selected_event": c["heads"][0],
        "reason": "keep the blocked outcome",
    });
    std::fs::write(ws.root.join("draft.json"), res.to_string()).unwrap();
    let err = ws.fails(
        &[
            "reconcile",
            "--apply",
            "draft.json",
            "--expect-state",
            frontier,
        ],
        1,
    );
    assert!(err.contains("V2-STALE"), "{err}");
    res["expected_frontier"] = frontier.into();
    std::fs::write(ws.root.join("res.json"), res.to_string()).unwrap();
    let err = ws.fails(
        &["reconcile", "--apply", "res.json", "--expect-state", "0000"],
        1,
    );
    assert!(err.contains("V2-STALE"), "{err}");
    let v = ws.json(&[
        "reconcile",
        "--apply",
        "res.json",
        "--expect-state",
        frontier,
        "--json",
    ]);
    assert_eq!(v["resolved"], c["id"]);
    assert_eq!(v["remaining_conflicts"], serde_json::json!([]));
    assert_eq!(v["resolution_event"]["kind"], "conflict_resolved");
    ws.strict_ok();
    let err = ws.fails(
        &[
            "reconcile",
            "--apply",
            "res.json",
            "--expect-state",
            v["frontier"].as_str().unwrap(),
        ],
        1,
    );
    assert!(
        err.contains("V2-STALE") || err.contains("already resolved"),
        "{err}"
    );
}

/// MCP sessions and CLI processes write through one session at the same time: every entry
/// is recorded, the sequence is gapless; the session is started and closed over MCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_mcp_and_processes_write_together() {
    use crate::agents_mcp::{call, connect};
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let a = connect(&ws.root).await;
    let (ok, v) = call(&a, "session_start", serde_json::json!({"label": "mcp"})).await;
    assert!(ok, "{v}");
    let sid = v["session"]["session_id"].as_str().unwrap().to_string();
    let b = connect(&ws.root).await;
    let procs: Vec<_> = (0..3)
        .map(|p| {
            let script = format!(
                "for i in $(seq 1 8); do \"{BIN}\" progress add --task task-1 --status in_progress --evidence \"proc {p} $i\" >/dev/null || exit 1; done"
            );
            Command::new("sh").arg("-c").arg(script).current_dir(&ws.root).spawn().unwrap()
        })
        .collect();
    let mcp_writes = |c| async move {
        for i in 0..8 {
            let (ok, v) = call(
                c,
                "progress_add",
                serde_json::json!({"task": "task-1", "status": "in_progress", "evidence": format!("mcp {i}")}),
            )
            .await;
            assert!(ok, "{v}");
            assert_eq!(v["event"]["kind"], "task_transitioned");
        }
    };
    tokio::join!(mcp_writes(&a), mcp_writes(&b));
    for mut p in procs {
        assert!(p.wait().unwrap().success(), "a process was refused");
    }
    assert_eq!(ws.sequences(&sid), (1..=41).collect::<Vec<_>>());
    // session_show reads the session the writes went to.
    let (ok, v) = call(&b, "session_show", serde_json::json!({})).await;
    assert!(ok, "{v}");
    assert_eq!(v["session_id"], sid.as_str());
    assert_eq!(v["events"], 41);
    assert_eq!(v["status"], "active");
    assert_eq!(v["tasks"][0]["alias"], "task-1");
    let (ok, v) = call(&b, "session_show", serde_json::json!({"session": "nope"})).await;
    assert!(!ok);
    assert_eq!(v["error"]["code"], "V2-SESSION-STATE", "{v}");
    let (ok, v) = call(
        &b,
        "session_close",
        serde_json::json!({"summary": "done over MCP"}),
    )
    .await;
    assert!(ok, "{v}");
    assert_eq!(v["events"][1]["kind"], "session_closed");
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    ws.strict_ok();
}

#[test]
fn v2_checkpoint_refuses_completion_without_evidence_for_the_acceptance_criteria() {
    let Some(ws) = Ws::case("migrated-valid-current-task-absent") else {
        return;
    };
    ws.start();
    let args = [
        "checkpoint",
        "--task",
        "dedupe",
        "--status",
        "completed",
        "--evidence",
        "looks right",
    ];
    let err = ws.fails(&args, 1);
    assert!(err.contains("V2-EVIDENCE"), "{err}");
    assert!(
        err.contains("Re-import of a file yields zero new rows"),
        "{err}"
    );
    assert!(err.contains("small evidence save --task dedupe"), "{err}");
    std::fs::write(ws.root.join("reimport.txt"), "0 new rows\n").unwrap();
    let saved = ws.json(&[
        "evidence",
        "save",
        "--task",
        "dedupe",
        "--file",
        "reimport.txt",
        "--validator",
        "reimport twice",
        "--json",
    ]);
    let v = ws.json(&[&args[..], &["--json"]].concat());
    let digests = v["event"]["payload"]["evidence_digests"]
        .as_array()
        .unwrap();
    assert!(digests.contains(&saved["digest"]), "{v}");
    assert!(digests.contains(&v["receipt"]["digest"]), "{v}");
    ws.strict_ok();
}

/// A write leaves the state cache for the tree it wrote, and the next `status` reads it: its
/// answer is the full read's, and (the one thing the cache is documented not to see) an event
/// edited in place afterwards shows only without the cache.
#[test]
fn v2_a_write_leaves_the_cache_the_next_status_reads() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    // The copy must be older than the racy margin for a writer to prove it.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let cache = ws.root.join(".small-cache/v2-state.v1");
    let _ = std::fs::remove_file(&cache);
    let sid = ws.start();
    assert!(cache.is_file(), "session start left no cache");
    let cached = ws.json(&["status", "--json"]);
    assert_eq!(cached, ws.json(&["status", "--json", "--no-cache"]));
    assert!(cached.to_string().contains(&sid));
    let dir = ws.root.join(".small/events").join(&sid);
    let first = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&first).unwrap();
    let edited = text.replacen("session_started", "session_startex", 1);
    assert_ne!(text, edited);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap();
    std::io::Write::write_all(&mut f, edited.as_bytes()).unwrap();
    drop(f);
    let o = ws.run(&["status", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&o.stdout).unwrap(),
        cached,
        "status answered from the cache"
    );
    assert_ne!(
        ws.run(&["status", "--json", "--no-cache"]).stdout,
        o.stdout,
        "a full read sees the edit"
    );
}

/// Every path under `.small/` with its bytes.
fn small_tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root.join(".small"), &mut out);
    out.sort();
    out
}

/// `start` and `reset` write the v1 artifacts of a run: in a 2.0.0 workspace they are
/// refused with 1 and write nothing (the reference refuses both too), so the tree stays one
/// `archive` accepts.
#[test]
fn v2_start_reset_and_init_force_are_refused_and_write_nothing() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let before = small_tree(&ws.root);
    let err = ws.fails(&["start"], 1);
    assert!(
        err.contains("2.0.0") && err.contains("small session start"),
        "{err}"
    );
    let err = ws.fails(&["reset", "--yes"], 1);
    assert!(err.contains("cannot be reset"), "{err}");
    // Refused before the confirmation is asked for.
    let err = ws.fails(&["reset"], 1);
    assert!(err.contains("cannot be reset"), "{err}");
    let v: Value = serde_json::from_slice(&ws.run(&["reset", "--yes", "--json"]).stdout).unwrap();
    assert_eq!(v["exit_code"], 1);
    // `init --force` would write the v1 artifacts beside the events: refused too.
    let err = ws.fails(&["init", "--force", "--no-agents", "--intent", "again"], 1);
    assert!(err.contains("2.0.0"), "{err}");
    assert_eq!(small_tree(&ws.root), before);
    ws.strict_ok();
    ws.ok(&["archive"]);
}

/// A bad value on a well-formed command line is a refused request: exit 1.
#[test]
fn v2_mode_set_refuses_a_bad_mode_with_1() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    ws.start();
    let frontier = ws.json(&["status", "--json"])["frontier"]
        .as_str()
        .unwrap()
        .to_string();
    let o = ws.run(&[
        "mode",
        "set",
        "bogus",
        "--reason",
        "x",
        "--expect-state",
        &frontier,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["error"]["message"].as_str().unwrap().contains("bogus"),
        "{v}"
    );
}

/// The 2.0.0-only commands refuse a v1 workspace with 1 and, with `--json`, the reference's
/// error document on stdout.
#[test]
fn v2_only_commands_refuse_a_v1_workspace_with_the_error_document() {
    let d = tempfile::tempdir().unwrap();
    let init = Command::new(BIN)
        .args(["init", "--intent", "x"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(init.status.success());
    for args in [
        &["mode", "show", "--json"][..],
        &["reconcile", "--preview", "--json"],
        &["policy", "show", "--json"],
    ] {
        let o = Command::new(BIN)
            .args(args)
            .current_dir(d.path())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "small {args:?}");
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("small {args:?}: {e}: {:?}", o.stdout));
        assert_eq!(v["error"]["code"], "invalid_request", "small {args:?}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not a 2.0.0 workspace"),
            "small {args:?}: {v}"
        );
    }
}
