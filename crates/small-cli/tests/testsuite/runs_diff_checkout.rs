//! `small run diff` and `small run checkout`, and the round trip through both.

use crate::runs_common;

use runs_common::*;
use std::fs;

const NAMES: [&str; 6] = [
    "intent.small.yml",
    "constraints.small.yml",
    "plan.small.yml",
    "progress.small.yml",
    "handoff.small.yml",
    "workspace.small.yml",
];

fn files(ws: &Ws) -> Vec<Vec<u8>> {
    NAMES.iter().map(|n| ws.read(n)).collect()
}

/// Snapshot A, then change plan, progress and handoff (run B) and snapshot B.
fn two_runs() -> (Ws, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let a = files(&ws);
    ws.write(
        "plan.small.yml",
        &PLAN.replacen("status: \"pending\"", "status: \"completed\"", 1),
    );
    ws.write(
        "progress.small.yml",
        &progress_with(&[
            ("task-1", "in_progress", "2026-03-01T10:00:00.000000001Z"),
            ("task-1", "completed", "2026-03-01T11:00:00.5Z"),
        ]),
    );
    ws.write("handoff.small.yml", &handoff(ID_B, "Next task: task-2."));
    ws.ok(&["run", "snapshot"]);
    let b = files(&ws);
    (ws, a, b)
}

#[test]
fn diff_shows_unified_diffs_and_a_progress_summary() {
    let (ws, _, _) = two_runs();
    let out = ws.ok(&["run", "diff", ID_A, ID_B]);
    assert!(
        out.contains(&format!("Run diff: {} -> {}", &ID_A[..16], &ID_B[..16])),
        "{out}"
    );
    assert!(
        out.contains("--- a/plan.small.yml") && out.contains("+++ b/plan.small.yml"),
        "{out}"
    );
    assert!(
        out.contains("-    status: \"pending\"") && out.contains("+    status: \"completed\""),
        "{out}"
    );
    assert!(out.contains("--- a/handoff.small.yml"), "{out}");
    assert!(
        !out.contains("a/intent.small.yml"),
        "unchanged files are not shown: {out}"
    );
    assert!(out.contains("entries: 0 -> 2 (+2)"), "{out}");
    assert!(out.contains("newly completed tasks: task-1"), "{out}");
    assert!(
        out.contains("newest entry: - -> 2026-03-01T11:00:00.5Z"),
        "{out}"
    );
    assert!(
        !out.contains("a/progress.small.yml"),
        "progress is summarised without --full: {out}"
    );
}

#[test]
fn diff_full_includes_the_progress_diff() {
    let (ws, _, _) = two_runs();
    let out = ws.ok(&["run", "diff", "--full", ID_A, ID_B]);
    assert!(out.contains("--- a/progress.small.yml"), "{out}");
    assert!(out.contains("+  - task_id: \"task-1\""), "{out}");
}

#[test]
fn diff_json_has_files_and_progress() {
    let (ws, _, _) = two_runs();
    let v = ws.json(&["run", "diff", "--json", "a1b2", "a1f"]);
    assert_eq!(v["from"], ID_A);
    assert_eq!(v["to"], ID_B);
    let files = v["files"].as_array().unwrap();
    let plan = files
        .iter()
        .find(|f| f["name"] == "plan.small.yml")
        .unwrap();
    assert_eq!(plan["changed"], true);
    assert_eq!(plan["added"], 1);
    assert_eq!(plan["removed"], 1);
    assert!(plan["diff"].as_str().unwrap().contains("@@"));
    let intent = files
        .iter()
        .find(|f| f["name"] == "intent.small.yml")
        .unwrap();
    assert_eq!(intent["changed"], false);
    assert!(intent.get("diff").is_none());
    assert_eq!(v["progress"]["entries_before"], 0);
    assert_eq!(v["progress"]["entries_after"], 2);
    assert_eq!(v["progress"]["entry_delta"], 2);
    assert_eq!(
        v["progress"]["completed_delta"],
        serde_json::json!(["task-1"])
    );
    assert_eq!(v["progress"]["latest_after"], "2026-03-01T11:00:00.5Z");
    assert!(v["progress"].get("diff").is_none());
    let v = ws.json(&["run", "diff", "--json", "--full", ID_A, ID_B]);
    assert!(v["progress"]["diff"]
        .as_str()
        .unwrap()
        .contains("+++ b/progress.small.yml"));
}

#[test]
fn diff_reverse_direction_swaps_signs() {
    let (ws, _, _) = two_runs();
    let v = ws.json(&["run", "diff", "--json", ID_B, ID_A]);
    assert_eq!(v["progress"]["entry_delta"], -2);
    assert!(v["progress"].get("completed_delta").is_none());
}

#[test]
fn diff_against_the_live_workspace() {
    let (ws, _, _) = two_runs();
    let out = ws.ok(&["run", "diff", ID_B]);
    assert!(out.contains("live workspace"), "{out}");
    assert!(out.contains("No changes"), "{out}");
    assert!(out.contains("entries: 2 -> 2 (+0)"), "{out}");

    ws.write(
        "intent.small.yml",
        &INTENT.replace("mailer", "invoice mailer"),
    );
    let out = ws.ok(&["run", "diff", ID_B, "live"]);
    assert!(
        out.contains("+++ b/intent.small.yml")
            && out.contains("+intent: \"Add a --dry-run flag to the invoice mailer.\""),
        "{out}"
    );
    let v = ws.json(&["run", "diff", "--json", "live", ID_A]);
    assert_eq!(v["from"], "live");
    assert_eq!(v["to"], ID_A);
    assert_eq!(v["progress"]["entry_delta"], -2);
}

#[test]
fn diff_of_a_file_present_on_one_side_only_uses_dev_null() {
    let ws = Ws::new();
    fs::remove_file(ws.small().join("constraints.small.yml")).unwrap();
    ws.ok(&["run", "snapshot"]);
    ws.write("constraints.small.yml", CONSTRAINTS);
    let out = ws.ok(&["run", "diff", ID_A]);
    assert!(
        out.contains("--- /dev/null") && out.contains("+++ b/constraints.small.yml"),
        "{out}"
    );
}

#[test]
fn round_trip_snapshot_change_diff_checkout_restores_exact_bytes() {
    let (ws, a, b) = two_runs();
    assert_ne!(a, b);
    // The live state is saved as B, so going back to A needs no --force.
    let out = ws.ok(&["run", "checkout", ID_A]);
    assert!(out.contains("Restored snapshot"), "{out}");
    assert_eq!(files(&ws)[..5], a[..5]);
    assert_eq!(files(&ws)[5], b[5], "workspace.small.yml is never touched");
    let v = ws.json(&["run", "diff", "--json", ID_A]);
    assert!(
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["changed"] == false),
        "{v}"
    );

    ws.ok(&["run", "checkout", "a1f"]);
    assert_eq!(files(&ws), b);
    let out = ws.ok(&["run", "checkout", ID_B]);
    assert!(out.contains("already matches"), "{out}");
}

#[test]
fn checkout_refuses_to_overwrite_unsaved_changes_without_force() {
    let (ws, a, _) = two_runs();
    let edited = PLAN.replace("Skip SMTP", "Skip SMTP and log");
    ws.write("plan.small.yml", &edited);
    let err = ws.fails(&["run", "checkout", ID_A], 1);
    assert!(
        err.contains(".small/plan.small.yml") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        ws.read("plan.small.yml"),
        edited.as_bytes(),
        "a refused checkout changes nothing"
    );
    assert_ne!(
        ws.read("handoff.small.yml"),
        a[4],
        "a refused checkout changes nothing"
    );

    let out = ws.ok(&["run", "checkout", "--force", ID_A]);
    assert!(out.contains("discarded"), "{out}");
    assert_eq!(files(&ws)[..5], a[..5]);
}

#[test]
fn checkout_keeps_workspace_metadata_and_files_the_snapshot_lacks() {
    let ws = Ws::new();
    fs::remove_file(ws.small().join("constraints.small.yml")).unwrap();
    ws.ok(&["run", "snapshot"]);
    ws.write("constraints.small.yml", CONSTRAINTS);
    let custom_ws = WORKSPACE.replace("16:00:00", "17:00:00");
    ws.write("workspace.small.yml", &custom_ws);
    let v = ws.json(&["run", "checkout", "--json", ID_A]);
    assert_eq!(v["kept"], serde_json::json!(["constraints.small.yml"]));
    assert_eq!(ws.read("constraints.small.yml"), CONSTRAINTS.as_bytes());
    assert_eq!(ws.read("workspace.small.yml"), custom_ws.as_bytes());
}

#[test]
fn checkout_restores_a_deleted_artifact() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    fs::remove_file(ws.small().join("plan.small.yml")).unwrap();
    ws.ok(&["run", "checkout", ID_A]);
    assert_eq!(ws.read("plan.small.yml"), PLAN.as_bytes());
}

#[test]
fn checkout_of_an_unknown_run_exits_1() {
    let ws = Ws::new();
    let err = ws.fails(&["run", "checkout", "abc"], 1);
    assert!(err.contains("no snapshot matches"), "{err}");
    let (code, out, _) = ws.run(&["run", "checkout", "abc", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON error");
    assert!(v["error"]["message"].is_string(), "{v}");
}

#[test]
fn checkout_points_out_a_workspace_run_id_it_leaves_alone() {
    let (ws, _, _) = two_runs();
    let meta = format!("{WORKSPACE}run:\n  replay_id: \"{ID_B}\"\n");
    ws.write("workspace.small.yml", &meta);
    let out = ws.ok(&["run", "checkout", ID_A]);
    assert!(out.contains("note:") && out.contains(&ID_B[..16]), "{out}");
    assert_eq!(ws.read("workspace.small.yml"), meta.as_bytes());
    let v = ws.json(&["run", "checkout", "--json", ID_B]);
    assert!(v.get("workspace_run").is_none(), "{v}");
}

#[test]
fn checkout_restores_unusual_bytes_exactly() {
    let ws = Ws::new();
    // A byte-order mark, CRLF line endings, non-ASCII text and no final newline.
    let odd = "\u{feff}small_version: \"1.0.0\"\r\nowner: \"human\"\r\nintent: \"Grüße, 日本語 — ok\"\r\nscope:\r\n  include: []\r\n  exclude: []\r\nsuccess_criteria: []";
    ws.write("intent.small.yml", odd);
    ws.ok(&["run", "snapshot"]);
    ws.write("intent.small.yml", INTENT);
    let out = ws.ok(&["run", "diff", ID_A]);
    assert!(out.contains("+++ b/intent.small.yml"), "{out}");
    ws.ok(&["run", "checkout", "--force", ID_A]);
    assert_eq!(ws.read("intent.small.yml"), odd.as_bytes());
    let v = ws.json(&["run", "diff", "--json", ID_A]);
    assert_eq!(v["files"][0]["changed"], false, "{v}");
}
