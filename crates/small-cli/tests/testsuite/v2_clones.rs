//! Two agents on two clones of one repository, end to end with the real binary and real git:
//! migrate a v1 workspace to 2.0.0 in collaborative mode, record incompatible outcomes for one
//! task in each clone, merge, see the conflict refuse `check --strict` and an authoritative
//! handoff, settle it with a reviewed resolution, and pick the work up in a fresh clone with
//! the bounded resume packet; evidence declared unavailable keeps `evidence verify` failing.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_small");

fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env_remove("SMALL_LOCK_TIMEOUT")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run `small` in `dir`; it must exit `code`. Its stdout.
fn small(dir: &Path, code: i32, args: &[&str]) -> String {
    let o = run(dir, BIN, args);
    assert_eq!(o.status.code(), Some(code), "small {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&small(dir, 0, args)).expect("a JSON document")
}

fn git(dir: &Path, args: &[&str]) {
    let o = run(dir, "git", args);
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
}

fn commit(dir: &Path, message: &str) {
    git(dir, &["add", "-A", ".small"]);
    git(dir, &["commit", "-q", "-m", message]);
}

fn clone(remote: &Path, into: &Path) -> PathBuf {
    git(
        remote.parent().unwrap(),
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            into.to_str().unwrap(),
        ],
    );
    into.to_path_buf()
}

/// A seed repository migrated to 2.0.0 (collaborative), pushed to a bare remote.
fn seeded(top: &Path) -> PathBuf {
    let seed = top.join("seed");
    std::fs::create_dir(&seed).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    small(
        &seed,
        0,
        &[
            "init",
            "--no-agents",
            "--intent",
            "Two clones",
            "--task",
            "Shared work",
        ],
    );
    commit(&seed, "v1");
    let plan = json(
        &seed,
        &[
            "migrate",
            "--to",
            "2.0.0",
            "--preview",
            "--namespace",
            "clones",
            "--mode",
            "collaborative",
            "--json",
        ],
    );
    assert_eq!(plan["mode"], "collaborative");
    std::fs::write(top.join("plan.json"), plan.to_string()).unwrap();
    let digest = plan["expected_input_digest"].as_str().unwrap().to_string();
    let plan_path = top.join("plan.json");
    small(
        &seed,
        0,
        &[
            "migrate",
            "--apply",
            plan_path.to_str().unwrap(),
            "--expect-state",
            &digest,
            "--json",
        ],
    );
    assert_eq!(
        json(&seed, &["mode", "show", "--json"])["mode"],
        "collaborative"
    );
    commit(&seed, "2.0.0");
    let remote = top.join("remote.git");
    git(
        top,
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            remote.to_str().unwrap(),
        ],
    );
    remote
}

/// Start a session in `dir`; its id.
fn session(dir: &Path, label: &str) -> String {
    let v = json(dir, &["session", "start", "--label", label, "--json"]);
    v["session"]["session_id"].as_str().unwrap().to_string()
}

#[test]
fn a_conflict_between_clones_is_settled_before_anyone_hands_off() {
    let d = tempfile::tempdir().unwrap();
    let top = d.path();
    let remote = seeded(top);
    let (a, b) = (
        clone(&remote, &top.join("a")),
        clone(&remote, &top.join("b")),
    );
    let (sa, sb) = (session(&a, "clone-a"), session(&b, "clone-b"));
    let out_a = small(
        &a,
        0,
        &[
            "progress",
            "add",
            "--session",
            &sa,
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "a says done",
        ],
    );
    let event_a = out_a.split_whitespace().last().unwrap().to_string();
    commit(&a, "a");
    git(&a, &["push", "-q", "origin", "HEAD:refs/heads/a"]);
    let out_b = small(
        &b,
        0,
        &[
            "progress",
            "add",
            "--session",
            &sb,
            "--task",
            "task-1",
            "--status",
            "blocked",
            "--evidence",
            "b is stuck",
        ],
    );
    let event_b = out_b.split_whitespace().last().unwrap().to_string();
    commit(&b, "b");
    git(&b, &["fetch", "-q", "origin", "a"]);
    git(&b, &["merge", "-q", "--no-edit", "FETCH_HEAD"]);

    // The merged tree holds one conflict: strict fails, and no authoritative handoff is written.
    let preview = json(&b, &["reconcile", "--preview", "--json"]);
    assert_eq!(preview["conflict_count"], 1, "{preview}");
    let conflict = preview["conflicts"][0]["id"].as_str().unwrap().to_string();
    let frontier = preview["frontier"].as_str().unwrap().to_string();
    small(&b, 1, &["check", "--strict"]);
    let refused = run(
        &b,
        BIN,
        &[
            "handoff",
            "--session",
            &sb,
            "--summary",
            "too early",
            "--json",
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let doc: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(doc["error"]["code"], "invalid_request", "{doc}");
    assert!(
        text(&refused).contains("V2-CONFLICTED"),
        "{}",
        text(&refused)
    );
    // The refusal wrote nothing: the reviewed frontier still applies.
    assert_eq!(
        json(&b, &["mode", "show", "--json"])["frontier"],
        frontier.as_str()
    );

    let resolution = serde_json::json!({
        "profile": "2.0.0", "conflict_id": conflict, "heads": [event_a, event_b],
        "selected_event": event_a, "reason": "reviewed both", "resolver": "test",
        "session_id": sb, "expected_frontier": frontier,
    });
    let file = top.join("resolution.json");
    std::fs::write(&file, resolution.to_string()).unwrap();
    small(
        &b,
        0,
        &[
            "reconcile",
            "--apply",
            file.to_str().unwrap(),
            "--expect-state",
            &frontier,
            "--session",
            &sb,
            "--json",
        ],
    );
    small(&b, 0, &["check", "--strict"]);
    let h = json(
        &b,
        &[
            "handoff",
            "--session",
            &sb,
            "--summary",
            "settled on a",
            "--json",
        ],
    );
    assert_eq!(
        (h["status"].as_str(), h["written"].as_bool()),
        (Some("recorded"), Some(true)),
        "{h}"
    );
    assert_eq!(h["session_id"], sb.as_str());
    assert_ne!(h["input_frontier"], h["frontier"]);
    assert_eq!(h["event"]["payload"]["input_frontier"], h["input_frontier"]);

    // Evidence: one portable file, one declared unavailable.
    std::fs::write(top.join("proof.txt"), "portable proof\n").unwrap();
    let proof = top.join("proof.txt");
    small(
        &b,
        0,
        &[
            "evidence",
            "save",
            "--file",
            proof.to_str().unwrap(),
            "--task",
            "task-1",
            "--json",
        ],
    );
    small(
        &b,
        0,
        &[
            "evidence",
            "declare-unavailable",
            "--task",
            "task-1",
            "--reason",
            "private log",
            "--json",
        ],
    );
    commit(&b, "settled");
    git(&b, &["push", "-q", "origin", "HEAD:main"]);

    // A fresh clone resumes from the packet, within its bounds, and reads evidence honestly.
    let fresh = clone(&remote, &top.join("fresh"));
    small(&fresh, 0, &["check", "--strict"]);
    let packet = json(
        &fresh,
        &[
            "reconstruct",
            "--resume",
            "--session",
            &sb,
            "--limit",
            "5",
            "--max-bytes",
            "4096",
            "--json",
        ],
    );
    assert_eq!(packet["session_id"], sb.as_str());
    assert_eq!(
        packet["conflicts"].as_array().map(Vec::len),
        Some(0),
        "{packet}"
    );
    assert!(packet["returned_events"].as_u64().unwrap() <= 5);
    assert!(
        packet["returned_event_bytes"].as_u64().unwrap() <= 4096 || packet["returned_events"] == 1
    );
    assert_eq!(packet["truncated"], true);
    let statuses: Vec<&str> = packet["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["status"].as_str())
        .collect();
    assert!(
        statuses.contains(&"verified") && statuses.contains(&"unavailable"),
        "{statuses:?}"
    );
    let verify = run(&fresh, BIN, &["evidence", "verify", "--json"]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));
    // A session that is not recorded is refused.
    small(
        &fresh,
        1,
        &[
            "reconstruct",
            "--resume",
            "--session",
            "session_00000000000000000000000000000000",
            "--json",
        ],
    );
    // Reading changed nothing in the clone.
    let status = run(&fresh, "git", &["status", "--porcelain", ".small"]);
    assert!(status.stdout.is_empty(), "{}", text(&status));
}
