//! `small run list` and `small run show`.

use crate::runs_common;

use runs_common::*;
use std::fs;

/// Three snapshots: A, then B, then C (C newest).
fn three_runs() -> Ws {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    ws.write("handoff.small.yml", &handoff(ID_B, "Second run"));
    ws.commit_all();
    ws.ok(&["run", "snapshot"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    ws.write("handoff.small.yml", &handoff(ID_C, "Third run"));
    ws.commit_all();
    ws.ok(&["run", "snapshot"]);
    ws
}

#[test]
fn list_of_an_empty_store_says_so_and_succeeds() {
    let ws = Ws::new();
    let out = ws.ok(&["run", "list"]);
    assert!(out.contains("No snapshots"), "{out}");
    let v = ws.json(&["run", "list", "--json"]);
    assert_eq!(v["runs"].as_array().unwrap().len(), 0);
}

#[test]
fn list_shows_newest_first_with_short_ids_summary_and_git() {
    let ws = three_runs();
    let out = ws.ok(&["run", "list"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].contains("CREATED")
            && lines[0].contains("REPLAY ID")
            && lines[0].contains("SUMMARY"),
        "{out}"
    );
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[1].contains(&ID_C[..12]) && lines[1].contains("Third run"),
        "{out}"
    );
    assert!(
        lines[2].contains(&ID_B[..12]) && lines[2].contains("Second run"),
        "{out}"
    );
    assert!(
        lines[3].contains(&ID_A[..12]) && lines[3].contains("Next task: task-1"),
        "{out}"
    );
    assert!(
        !lines[1].contains(ID_C),
        "IDs are shortened in the table: {out}"
    );
    assert!(lines[1].contains(&ws.head()[..8]), "{out}");
    assert!(lines[1].contains("false"), "{out}");
}

#[test]
fn list_limit_and_json() {
    let ws = three_runs();
    let out = ws.ok(&["run", "list", "--limit", "1"]);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains(&ID_C[..12]));

    let v = ws.json(&["run", "list", "--json", "--limit", "2"]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["replayId"], ID_C);
    assert_eq!(runs[0]["summary"], "Third run");
    assert_eq!(runs[0]["git_sha"], ws.head());
    assert_eq!(runs[0]["git_dirty"], false);
    assert_eq!(runs[0]["branch"], "main");

    let v = ws.json(&["run", "list", "--json", "--limit", "0"]);
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    ws.fails(&["run", "list", "--limit", "-1"], 2);
}

#[test]
fn show_accepts_a_full_id_or_an_unambiguous_prefix() {
    let ws = three_runs();
    let out = ws.ok(&["run", "show", ID_B]);
    assert!(out.contains(ID_B), "{out}");
    assert!(out.contains("Second run"), "{out}");
    assert!(out.contains("intact"), "{out}");
    assert!(out.contains("Continue with task-1"), "{out}");
    assert!(out.contains("plan.small.yml"), "{out}");

    let out = ws.ok(&["run", "show", "c0f"]);
    assert!(out.contains(ID_C), "{out}");
    let out = ws.ok(&["run", "show", &ID_A[..4].to_uppercase()]);
    assert!(out.contains(ID_A), "{out}");
}

#[test]
fn show_an_ambiguous_prefix_is_a_usage_error_an_unknown_one_exits_1() {
    let ws = three_runs();
    let err = ws.fails(&["run", "show", "a1"], 2);
    assert!(err.contains("ambiguous"), "{err}");
    assert!(
        err.contains(&ID_A[..12]) && err.contains(&ID_B[..12]),
        "{err}"
    );
    let err = ws.fails(&["run", "show", "ffff"], 1);
    assert!(err.contains("no snapshot matches"), "{err}");
    // With --json the refusal is the error document, on stdout.
    let (code, out, _) = ws.run(&["run", "show", "ffff", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON error");
    assert!(v["error"]["message"].is_string(), "{v}");
}

#[test]
fn show_json_has_meta_artifacts_and_handoff() {
    let ws = three_runs();
    let v = ws.json(&["run", "show", "--json", ID_A]);
    assert_eq!(v["replayId"], ID_A);
    let recorded = v["meta"]["artifact_digest"].as_str().unwrap_or_default();
    assert_eq!(v["artifact_digest"].as_str(), Some(recorded), "{v}");
    let sha = v["meta"]["git_sha"].as_str().unwrap();
    assert!(
        sha.len() == 40 && sha != ws.head(),
        "A was taken two commits ago: {sha}"
    );
    assert_eq!(v["summary"], "Run in progress. Next task: task-1.");
    assert_eq!(v["next_steps"][0], "Continue with task-1");
    assert_eq!(v["intact"], true);
    let artifacts: Vec<String> = v["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(artifacts.len(), 6, "{artifacts:?}");
    assert!(artifacts[0].ends_with("meta.json"));
}

#[test]
fn show_reports_a_snapshot_file_changed_after_it_was_taken() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let plan = ws.snap_dir(ID_A).join("plan.small.yml");
    let mut perms = fs::metadata(&plan).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&plan, perms).unwrap();
    fs::write(&plan, "tampered\n").unwrap();
    let (code, out, err) = ws.run(&["run", "show", ID_A]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("DAMAGED") && out.contains("plan.small.yml changed"),
        "{out}"
    );
    assert!(err.contains("damaged"), "{err}");
}

#[test]
fn snapshots_written_by_the_reference_layout_without_hashes_are_readable() {
    let ws = Ws::new();
    let dir = ws.snap_dir(ID_C);
    fs::create_dir_all(&dir).unwrap();
    for name in ["intent.small.yml", "plan.small.yml", "progress.small.yml"] {
        fs::write(dir.join(name), ws.read(name)).unwrap();
    }
    fs::write(
        dir.join("handoff.small.yml"),
        handoff(ID_C, "From elsewhere"),
    )
    .unwrap();
    fs::write(
        dir.join("meta.json"),
        format!("{{\n  \"replayId\": \"{ID_C}\",\n  \"created_at\": \"2026-01-01T00:00:00Z\",\n  \"git_sha\": \"\",\n  \"git_dirty\": false,\n  \"branch\": \"\",\n  \"cli_version\": \"1.0.10\",\n  \"workspace_kind\": \"repo-root\",\n  \"source_dir\": \"/x\"\n}}"),
    )
    .unwrap();
    let out = ws.ok(&["run", "show", "c0ffee"]);
    assert!(out.contains("not recorded"), "{out}");
    let out = ws.ok(&["run", "list"]);
    assert!(out.contains("From elsewhere"), "{out}");
}

#[test]
fn list_marks_the_run_the_live_handoff_names() {
    let ws = three_runs();
    ws.write("handoff.small.yml", &handoff(ID_B, "Second run"));
    let out = ws.ok(&["run", "list"]);
    let marked: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(&format!("*{}", &ID_B[..12])))
        .collect();
    assert_eq!(marked.len(), 1, "{out}");
    assert_eq!(out.matches('*').count(), 1, "{out}");
    let v = ws.json(&["run", "list", "--json"]);
    let current: Vec<&serde_json::Value> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["current"] == true)
        .collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["replayId"], ID_B);
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let ws = three_runs();
    for args in [
        &["run", "list"][..],
        &["run", "show", ID_A],
        &["run", "list", "--json"],
    ] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("small"))
            .current_dir(ws.root())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // `small` stops like other Unix tools when its reader goes away: either it finished
        // writing first (exit 0) or SIGPIPE ended it, silently.
        use std::os::unix::process::ExitStatusExt;
        let quiet = out.status.code() == Some(0) || out.status.signal() == Some(13);
        assert!(quiet, "{args:?}: {:?} {err}", out.status);
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}
