//! `small run diff` on SMALL 2.0.0 snapshots: two trees compared by their states (frontiers,
//! events per session, sessions, tasks, receipts, conflicts, handoff), and a v1 run against
//! a 2.0.0 tree refused.
#![cfg(unix)]

use serde_json::{json, Value};

use crate::runs_v2::Ws;

fn snapshot(ws: &Ws) -> String {
    ws.json(&["run", "snapshot", "--json"])["replayId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn v2_run_diff_reports_what_a_session_did_between_two_snapshots() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let a = snapshot(&ws);
    ws.ok(&["session", "start", "--label", "second"]);
    ws.ok(&["plan", "--add", "Cache the token"]);
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "token-polling",
        "--status",
        "in_progress",
        "--evidence",
        "started polling",
    ]);
    std::fs::write(ws.root.join("r.txt"), "ok\n").unwrap();
    let saved = ws.json(&[
        "evidence",
        "save",
        "--task",
        "token-polling",
        "--file",
        "r.txt",
        "--json",
    ]);
    ws.ok(&["session", "close", "--summary", "Polling half done"]);
    let session = ws.json(&["session", "list", "--json"])["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == "second")
        .unwrap()
        .clone();
    let sid = session["session_id"].as_str().unwrap().to_string();
    let b = snapshot(&ws);
    assert_ne!(a, b);

    let v = ws.json(&["run", "diff", &a[..12], &b[..12], "--json"]);
    assert_eq!(v["from"], a.as_str());
    assert_eq!(v["to"], b.as_str());
    assert_eq!(v["profile"], "2.0.0");
    assert_eq!(v["frontier"], json!({"before": a, "after": b}));
    let n = session["events"].as_u64().unwrap();
    assert_eq!(v["events_added"], n);
    assert_eq!(v["events_removed"], 0);
    assert_eq!(v["events"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["events"][0]["session_id"], sid.as_str());
    assert_eq!(v["events"][0]["added"], n);
    assert_eq!(v["events"][0]["added_kinds"]["session_started"], 1);
    assert_eq!(v["events"][0]["added_kinds"]["task_created"], 1);
    assert_eq!(v["sessions"]["opened"], json!([sid]));
    assert_eq!(v["sessions"]["closed"], json!([sid]));
    assert_eq!(v["sessions"]["removed"], json!([]));
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{v}");
    let polling = tasks
        .iter()
        .find(|t| t["alias"] == "token-polling")
        .unwrap();
    assert_eq!(polling["change"], "changed");
    assert_eq!(
        polling["status"],
        json!({"before": "pending", "after": "in_progress"})
    );
    assert!(polling.get("title").is_none(), "{polling}");
    let added = tasks.iter().find(|t| t["change"] == "added").unwrap();
    assert_eq!(added["title"]["after"], "Cache the token");
    assert_eq!(added["status"]["after"], "pending");
    let receipts = v["receipts_added"].as_array().unwrap();
    assert_eq!(receipts.len(), 1, "{v}");
    let digest = receipts[0]["digest"].as_str().unwrap();
    assert!(
        saved.to_string().contains(digest),
        "{digest} not in {saved}"
    );
    assert_eq!(v["receipts_removed"], json!([]));
    assert_eq!(v["conflicts"]["before"], 0);
    assert_eq!(v["conflicts"]["after"], 0);
    assert_eq!(v["handoff"]["after"], "Polling half done");

    let out = ws.ok(&["run", "diff", &a, &b]);
    assert!(
        out.starts_with(&format!(
            "Run diff: {} -> {} (2.0.0)\nFrontier: {a} -> {b}\n",
            &a[..16],
            &b[..16]
        )),
        "{out}"
    );
    assert!(out.contains(&format!("Events: +{n} -0\n")), "{out}");
    assert!(out.contains(&format!("Sessions opened: {sid}\n")), "{out}");
    assert!(
        out.contains("  changed  token-polling  status pending -> in_progress\n"),
        "{out}"
    );
    assert!(out.contains("Receipts: +1 -0\n"), "{out}");

    // The other way round: everything the session did is removed.
    let v = ws.json(&["run", "diff", &b, &a, "--json"]);
    assert_eq!(v["events_removed"], n);
    assert_eq!(v["sessions"]["removed"], json!([sid]));
    assert_eq!(v["receipts_removed"].as_array().unwrap().len(), 1);

    // One snapshot against itself, and against the live tree it was taken from.
    let out = ws.ok(&["run", "diff", &b, &b]);
    assert!(out.contains("(unchanged)"), "{out}");
    assert!(out.contains("No changes"), "{out}");
    let v = ws.json(&["run", "diff", &b, "--json"]);
    assert_eq!(v["to"], "live");
    assert_eq!(v["events_added"], 0);
    assert_eq!(v["tasks"], json!([]));
}

#[test]
fn v2_run_diff_shows_a_conflict_and_its_resolution() {
    let Some(ws) = Ws::case("wf-merge-conflict-resolved") else {
        return;
    };
    let resolved = snapshot(&ws);
    // The tree before the resolving session: its record and events taken away.
    let sessions: Vec<Value> = ws.json(&["session", "list", "--json"])["sessions"]
        .as_array()
        .unwrap()
        .clone();
    let resolver = sessions
        .iter()
        .find(|s| {
            let id = s["session_id"].as_str().unwrap();
            ws.json(&["session", "show", id, "--json"])["kinds"]["conflict_resolved"] == 1
        })
        .unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let small = ws.root.join(".small");
    std::fs::remove_dir_all(small.join("events").join(&resolver)).unwrap();
    std::fs::remove_file(small.join("sessions").join(format!("{resolver}.json"))).unwrap();

    let v = ws.json(&["run", "diff", "live", &resolved, "--json"]);
    assert_eq!(v["conflicts"]["before"], 1, "{v}");
    assert_eq!(v["conflicts"]["after"], 0);
    let id = v["conflicts"]["resolved"][0].as_str().unwrap();
    assert!(id.starts_with("conflict_"), "{v}");
    assert_eq!(v["conflicts"]["new"], json!([]));
    assert_eq!(v["sessions"]["opened"], json!([resolver]));
    assert_eq!(v["events"][0]["added_kinds"]["conflict_resolved"], 1);
    let out = ws.ok(&["run", "diff", "live", &resolved]);
    assert!(out.contains("Conflicts: 1 -> 0\n"), "{out}");
    assert!(out.contains(&format!("  resolved  {id}\n")), "{out}");
}

#[test]
fn v2_run_diff_refuses_a_v1_run_and_a_damaged_snapshot() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let store = ws.root.parent().unwrap().join("store");
    let store_s = store.to_str().unwrap();
    // A v1 workspace snapshotted into the same store.
    let v1 = ws.root.parent().unwrap().join("v1");
    std::fs::create_dir_all(&v1).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_small"))
        .args(["init", "--intent", "Old style"])
        .current_dir(&v1)
        .output()
        .unwrap();
    assert!(o.status.success());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_small"))
        .args(["run", "snapshot", "--store", store_s, "--json"])
        .current_dir(&v1)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let old: Value = serde_json::from_slice(&o.stdout).unwrap();
    let old = old["replayId"].as_str().unwrap().to_string();
    let new = ws.json(&["run", "snapshot", "--store", store_s, "--json"])["replayId"]
        .as_str()
        .unwrap()
        .to_string();
    for (x, y) in [(&old, &new), (&new, &old)] {
        let err = ws.fails(&["run", "diff", "--store", store_s, x, y], 1);
        assert!(err.contains("cannot compare"), "{err}");
        assert!(err.contains("(a v1 run)"), "{err}");
    }
    // A v1 snapshot against the live 2.0.0 tree.
    let err = ws.fails(&["run", "diff", "--store", store_s, &old], 1);
    assert!(err.contains("cannot compare"), "{err}");

    // A snapshot whose copied event was changed is refused, not compared.
    let snap = store.join(&new).join("state/.small/events");
    let session = std::fs::read_dir(&snap)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let event = std::fs::read_dir(&session)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for p in [&snap, &session, &event] {
        let mut perms = std::fs::metadata(p).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(p, perms).unwrap();
    }
    std::fs::write(&event, "{\"tampered\": true}\n").unwrap();
    let err = ws.fails(&["run", "diff", "--store", store_s, &new, "live"], 1);
    assert!(err.contains("damaged 2.0.0 records"), "{err}");
}
