//! Several `small` processes writing to one run store at the same time.

use crate::runs_common;

use runs_common::*;
use std::fs;
use std::process::{Command, Stdio};

fn id(n: usize) -> String {
    format!("{:064x}", 0xabc000 + n)
}

#[test]
fn parallel_snapshots_into_one_store_all_land_and_the_index_keeps_every_entry() {
    let store = tempfile::tempdir().unwrap();
    let store_path = store.path().join("shared-runs");
    let workspaces: Vec<Ws> = (0..8)
        .map(|n| {
            let ws = Ws::new();
            ws.write("handoff.small.yml", &handoff(&id(n), &format!("run {n}")));
            ws
        })
        .collect();
    let bin = assert_cmd::cargo::cargo_bin("small");
    let children: Vec<_> = workspaces
        .iter()
        .map(|ws| {
            Command::new(&bin)
                .current_dir(ws.root())
                .args(["run", "snapshot", "--store"])
                .arg(&store_path)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v = workspaces[0].json(&[
        "run",
        "list",
        "--json",
        "--limit",
        "0",
        "--store",
        store_path.to_str().unwrap(),
    ]);
    assert_eq!(v["runs"].as_array().unwrap().len(), 8);
    let index = fs::read_to_string(store_path.join("index.small.yml")).unwrap();
    let doc = small_core::ops::formats::yaml::parse_str(&index, &Default::default()).unwrap();
    assert_eq!(
        doc.root.get("entries").unwrap().as_seq().unwrap().len(),
        8,
        "{index}"
    );
    let stray: Vec<_> = fs::read_dir(&store_path)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp") || n.starts_with(".replaced"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

#[test]
fn racing_snapshots_of_one_run_leave_exactly_one_complete_snapshot() {
    let ws = Ws::new();
    let bin = assert_cmd::cargo::cargo_bin("small");
    let children: Vec<_> = (0..6)
        .map(|_| {
            Command::new(&bin)
                .current_dir(ws.root())
                .args(["run", "snapshot"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ok = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        match out.status.code() {
            Some(0) => ok += 1,
            Some(1) => assert!(String::from_utf8_lossy(&out.stderr).contains("already exists")),
            other => panic!(
                "unexpected exit {other:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
    // One racer writes the snapshot; the others find an identical one stored (a no-op,
    // exit 0) or, while it is being written, report that it exists.
    assert!(ok >= 1);
    let out = ws.ok(&["run", "show", ID_A]);
    assert!(out.contains("intact"), "{out}");
    let list = ws.ok(&["run", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 1, "{list}");
    let names: Vec<_> = fs::read_dir(ws.store())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.to_string_lossy().starts_with(".tmp")),
        "{names:?}"
    );
}
