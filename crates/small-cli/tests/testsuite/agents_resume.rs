//! `small resume`: the context a resuming agent reads.

use crate::author_support::Ws;

fn setup() -> Ws {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Write the parser", "--id", "parser"]);
    ws.ok(&["plan", "--add", "Wire the CLI", "--id", "cli"]);
    ws.ok(&["plan", "--depends", "cli:parser"]);
    ws.ok(&["plan", "--blocked", "task-1"]);
    for i in 0..8 {
        ws.ok(&[
            "progress",
            "add",
            "--task",
            "parser",
            "--status",
            "in_progress",
            "--evidence",
            &format!("step {i} done"),
        ]);
    }
    ws
}

#[test]
fn markdown_names_handoff_next_task_constraints_progress_and_gates() {
    let ws = setup();
    let out = ws.ok(&["resume"]);
    assert!(out.starts_with("# SMALL resume\n"), "{out}");
    assert!(out.contains("## Handoff\n"), "{out}");
    assert!(out.contains("replayId: "), "{out}");
    assert!(
        out.contains("## Next task: parser Write the parser (pending)"),
        "{out}"
    );
    assert!(out.contains("## Blocked\n- task-1 "), "{out}");
    assert!(out.contains("- no-secrets (error): "), "{out}");
    // The last five signal entries, oldest first.
    assert!(out.contains("parser in_progress: step 3 done"), "{out}");
    assert!(out.contains("parser in_progress: step 7 done"), "{out}");
    assert!(!out.contains("step 2 done"), "{out}");
    assert!(out.find("step 3").unwrap() < out.find("step 7").unwrap());
    assert!(out.contains("## Gates: "), "{out}");
}

#[test]
fn json_has_the_documented_keys_and_dependencies() {
    let ws = setup();
    ws.ok(&[
        "checkpoint",
        "--task",
        "parser",
        "--status",
        "completed",
        "--evidence",
        "parser tests pass",
    ]);
    let out = ws.ok(&["resume", "--json", "--check"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["next_task"]["id"], "cli");
    assert_eq!(v["next_task"]["dependencies"][0]["id"], "parser");
    assert_eq!(v["next_task"]["dependencies"][0]["status"], "completed");
    assert_eq!(v["blocked"][0]["id"], "task-1");
    assert_eq!(v["recent_progress"].as_array().unwrap().len(), 5);
    assert!(v["handoff"]["replay_id"].as_str().unwrap().len() == 64);
    assert_eq!(v["gates"]["source"], "checked now");
    assert!(["pass", "fail"].contains(&v["gates"]["status"].as_str().unwrap()));
    // A second run reuses the verdict (nothing changed).
    let again: serde_json::Value =
        serde_json::from_str(&ws.ok(&["resume", "--json", "--no-check"])).unwrap();
    assert_eq!(again["gates"]["status"], v["gates"]["status"]);
    assert!(again["gates"]["source"]
        .as_str()
        .unwrap()
        .starts_with("cached"));
    // A change makes the cached verdict stale.
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "cli",
        "--status",
        "in_progress",
        "--evidence",
        "started",
    ]);
    let stale: serde_json::Value =
        serde_json::from_str(&ws.ok(&["resume", "--json", "--no-check"])).unwrap();
    assert_eq!(stale["gates"]["status"], "unknown");
}

#[test]
fn failing_gates_are_reported_with_errors() {
    let ws = setup();
    ws.write(
        "workspace.small.yml",
        "small_version: \"1.0.0\"\nkind: \"nonsense\"\n",
    );
    let v: serde_json::Value = serde_json::from_str(&ws.ok(&["resume", "--json"])).unwrap();
    assert_eq!(v["gates"]["status"], "fail");
    assert!(v["gates"]["errors"].as_u64().unwrap() > 0);
    assert!(!v["gates"]["first_errors"].as_array().unwrap().is_empty());
}

#[test]
fn max_chars_trims_least_important_first() {
    let ws = setup();
    let full = ws.ok(&["resume"]);
    for max in [900usize, 600, 400, 200] {
        let out = ws.ok(&["resume", "--max-chars", &max.to_string()]);
        assert!(out.trim_end().chars().count() <= max, "{max}: {out}");
        if out.trim_end().chars().count() < full.len() && max >= 400 {
            // Progress goes before the next task does.
            assert!(out.contains("## Next task: parser"), "{max}: {out}");
            assert!(out.contains("trimmed to fit: "), "{max}: {out}");
        }
    }
    let out = ws.ok(&["resume", "--max-chars", "600"]);
    assert!(
        !out.contains("## Recent progress") || out.contains("step 7"),
        "{out}"
    );
    // JSON stays valid JSON when trimmed.
    let j = ws.ok(&["resume", "--json", "--max-chars", "700"]);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert!(!v["trimmed"].as_array().unwrap().is_empty());
}

#[test]
fn a_merged_handoff_is_reported_stale() {
    let ws = setup();
    let h = ws.read("handoff.small.yml");
    ws.write(
        "handoff.small.yml",
        &format!("{}\n{h}", small_core::ops::merge::HANDOFF_STALE_MARK),
    );
    let out = ws.ok(&["resume"]);
    assert!(
        out.contains("STALE: merged from two branches; run `small handoff` first"),
        "{out}"
    );
}
