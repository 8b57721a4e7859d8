//! `small session show` on a SMALL 2.0.0 workspace: one session's record, status, events,
//! the tasks they name, the receipts they cite and its handoff; by id, unique prefix or the
//! session selected here; refusals for unknown, ambiguous and damaged.
#![cfg(unix)]

use serde_json::{json, Value};

use crate::runs_v2::Ws;

const CLOSED: &str = "session_f74eaf91908d192c41c7311f0205109f";

#[test]
fn v2_session_show_a_closed_session() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let list = ws.json(&["session", "list", "--json"]);
    let listed = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == CLOSED)
        .unwrap()
        .clone();
    // By prefix, with or without `session_`.
    let v = ws.json(&["session", "show", "f74eaf91", "--json"]);
    assert_eq!(v, ws.json(&["session", "show", "session_f74e", "--json"]));
    assert_eq!(v, ws.json(&["session", "show", CLOSED, "--json"]));
    // The keys of `session list` hold the same values.
    for (k, val) in listed.as_object().unwrap() {
        assert_eq!(&v[k], val, "{k}");
    }
    assert_eq!(v["status"], "closed");
    assert_eq!(v["selected"], false);
    assert_eq!(v["events"], 7);
    assert_eq!(
        v["kinds"],
        json!({"command_recorded": 1, "handoff_recorded": 1, "session_closed": 1,
               "session_started": 1, "task_created": 1, "task_transitioned": 2})
    );
    assert_eq!(v["first_event"]["kind"], "session_started");
    assert_eq!(v["first_event"]["sequence"], 1);
    assert_eq!(v["last_event"]["kind"], "session_closed");
    assert_eq!(v["last_event"]["sequence"], 7);
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{v}");
    assert_eq!(tasks[0]["alias"], "task-1");
    assert_eq!(tasks[0]["status"], "completed");
    assert_eq!(tasks[0]["events"], 4);
    let digests: Vec<&str> = v["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["digest"].as_str().unwrap())
        .collect();
    assert_eq!(digests.len(), 2, "{v}");
    for d in &digests {
        assert!(ws
            .root
            .join(format!(".small/receipts/sha256/{d}.json"))
            .is_file());
    }
    assert_eq!(
        v["handoff"],
        "Device-flow integration test written and accepted"
    );
    assert_eq!(v["frontier"], list["frontier"]);

    let out = ws.ok(&["session", "show", "f74e"]);
    assert!(out.starts_with(&format!("Session {CLOSED}\n")), "{out}");
    assert!(out.contains("  status:     closed\n"), "{out}");
    assert!(out.contains("Events: 7 (command_recorded 1, "), "{out}");
    assert!(
        out.contains(
            "  [completed] task-1  Write the device-flow integration test  (4 event(s))\n"
        ),
        "{out}"
    );
    assert!(out.contains("Receipts (2):\n"), "{out}");
    assert!(
        out.contains("Handoff: Device-flow integration test written and accepted\n"),
        "{out}"
    );
}

#[test]
fn v2_session_show_defaults_to_the_selected_session() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let err = ws.fails(&["session", "show"], 1);
    assert!(err.contains("none is selected here"), "{err}");
    let started = ws.json(&["session", "start", "--label", "mine", "--json"]);
    let id = started.to_string();
    ws.ok(&["plan", "--add", "Something new"]);
    let v = ws.json(&["session", "show", "--json"]);
    let sid = v["session_id"].as_str().unwrap();
    assert!(id.contains(sid), "{sid} not in {started}");
    assert_eq!(v["status"], "active");
    assert_eq!(v["selected"], true);
    assert_eq!(v["label"], "mine");
    assert_eq!(v["events"], 2);
    assert_eq!(v["tasks"][0]["title"], "Something new");
    assert_eq!(v["tasks"][0]["kinds"], json!({"task_created": 1}));
    assert_eq!(v["receipts"], json!([]));
    assert!(v.get("handoff").is_none(), "{v}");
    let out = ws.ok(&["session", "show"]);
    assert!(
        out.starts_with(&format!("Session {sid} (selected here)\n")),
        "{out}"
    );
    assert!(out.contains("  status:     active\n"), "{out}");
}

#[test]
fn v2_session_show_a_superseded_session_names_its_successor() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let first = ws.json(&["session", "start", "--label", "first", "--json"]);
    let first: Value = first;
    let first_id = ws.json(&["session", "show", "--json"])["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first.to_string().contains(&first_id));
    ws.ok(&[
        "session",
        "start",
        "--label",
        "second",
        "--takeover",
        &first_id,
        "--reason",
        "the first one stalled",
    ]);
    let second = ws.json(&["session", "show", "--json"]);
    let v = ws.json(&["session", "show", &first_id, "--json"]);
    assert_eq!(v["status"], "superseded");
    assert_eq!(v["superseded_by"], second["session_id"]);
    let out = ws.ok(&["session", "show", &first_id]);
    assert!(out.contains("superseded (taken over by session_"), "{out}");
}

#[test]
fn v2_session_show_refusals() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let err = ws.fails(&["session", "show", "session_"], 1);
    assert!(err.contains("names 2 sessions"), "{err}");
    assert!(err.contains(CLOSED), "{err}");
    let err = ws.fails(&["session", "show", "ffff"], 1);
    assert!(err.contains("no session `ffff`"), "{err}");
    assert!(err.contains("small session list"), "{err}");
    let err = ws.fails(&["session", "show", "a/../b"], 1);
    assert!(err.contains("no session"), "{err}");

    // Damaged records: the problems, not a guess.
    let Some(ws) = Ws::case("tampered-event-payload-byte") else {
        return;
    };
    let err = ws.fails(&["session", "show", "session_"], 1);
    assert!(err.contains("damaged"), "{err}");

    // A v1 workspace has no sessions.
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_small");
    let ok = std::process::Command::new(bin)
        .args(["init", "--intent", "Old style"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(ok.status.success());
    let o = std::process::Command::new(bin)
        .args(["session", "show"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a 2.0.0 workspace"));
}
