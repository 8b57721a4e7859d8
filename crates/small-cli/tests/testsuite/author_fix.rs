//! `small fix`.

use crate::author_support;
use author_support::Ws;

#[test]
fn needs_a_choice() {
    let ws = Ws::new();
    ws.fails(2, &["fix"]);
}

#[test]
fn versions_are_quoted_in_place() {
    let ws = Ws::new();
    let plan = ws
        .read("plan.small.yml")
        .replace("small_version: \"1.0.0\"", "small_version: 1.0.0 # drift");
    ws.write("plan.small.yml", &plan);
    let meta = ws
        .read("workspace.small.yml")
        .replace("small_version: \"1.0.0\"", "small_version: '1.0.0'");
    ws.write("workspace.small.yml", &meta);
    let out = ws.ok(&["fix", "--versions"]);
    assert!(out.contains("2 file(s) rewritten"), "{out}");
    assert!(ws
        .read("plan.small.yml")
        .contains("small_version: \"1.0.0\" # drift"));
    assert!(ws
        .read("workspace.small.yml")
        .contains("small_version: \"1.0.0\"\n"));
    let out = ws.ok(&["fix", "--versions"]);
    assert!(out.contains("0 file(s) rewritten"), "{out}");
}

#[test]
fn runtime_layout_moves_legacy_dirs() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.path("runs/r1")).unwrap();
    std::fs::write(ws.path("runs/r1/a.txt"), "a").unwrap();
    std::fs::create_dir_all(ws.path("archive")).unwrap();
    std::fs::write(ws.path("archive/x.yml"), "x").unwrap();
    std::fs::create_dir_all(ws.root().join(".small-archive")).unwrap();
    std::fs::write(ws.root().join(".small-archive/x.yml"), "x").unwrap();
    ws.fails(1, &["check", "--strict"]);
    ws.ok(&["fix", "--runtime-layout"]);
    assert!(!ws.path("runs").exists() && !ws.path("archive").exists());
    assert_eq!(
        std::fs::read_to_string(ws.root().join(".small-runs/r1/a.txt")).unwrap(),
        "a"
    );
    assert_eq!(
        ws.entries().last().unwrap()["task_id"],
        "meta/reconcile-runtime-layout"
    );
    ws.strict_ok();
    let out = ws.ok(&["fix", "--runtime-layout"]);
    assert!(out.contains("no legacy"), "{out}");
}

#[test]
fn orphan_progress_is_renamed_to_meta_ids() {
    let ws = Ws::new();
    ws.ok(&["handoff"]);
    let id = ws.doc("handoff.small.yml")["replayId"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    ws.write("progress.small.yml", &format!("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: reset # old\n    status: completed\n    timestamp: \"2026-01-01T00:00:00.1Z\"\n    evidence: x\n    replayId: \"{id}\"\n  - task_id: task-9\n    timestamp: \"2026-01-01T00:00:00.2Z\"\n    evidence: y\n    replayId: \"{id}\"\n  - task_id: other run\n    timestamp: \"2026-01-01T00:00:00.3Z\"\n    evidence: z\n"));
    ws.fails(1, &["check", "--strict"]);
    let out = ws.ok(&["fix", "--orphan-progress"]);
    assert!(out.contains("reset -> meta/reset"), "{out}");
    let e = ws.entries();
    assert_eq!(e[0]["task_id"], "meta/reset");
    assert_eq!(e[1]["task_id"], "meta/historical/task-9");
    assert_eq!(
        e[2]["task_id"], "other run",
        "entries of other runs are left alone"
    );
    assert!(ws.read("progress.small.yml").contains("# old"));
    assert_eq!(e[3]["task_id"], "meta/reconcile-plan");
    ws.strict_ok();
}

#[test]
fn workspace_metadata_is_created_or_repaired() {
    let ws = Ws::new();
    std::fs::remove_file(ws.path("workspace.small.yml")).unwrap();
    let out = ws.ok(&["fix", "workspace"]);
    assert!(out.contains("Created"), "{out}");
    assert_eq!(ws.doc("workspace.small.yml")["kind"], "repo-root");
    ws.write(
        "workspace.small.yml",
        "# mine\nsmall_version: \"1.0.0\"\nkind: repo-root\ncreated_at: yesterday\n",
    );
    ws.ok(&["fix", "workspace"]);
    let m = ws.doc("workspace.small.yml");
    assert_eq!(m["owner"], "agent");
    assert!(small_core::spec::timestamp::parse(m["created_at"].as_str().unwrap()).is_ok());
    assert!(m["updated_at"].as_str().is_some());
    assert!(ws.read("workspace.small.yml").starts_with("# mine\n"));
    ws.ok(&["fix", "workspace", "--force", "--kind", "examples"]);
    assert_eq!(ws.doc("workspace.small.yml")["kind"], "examples");
    ws.ok(&["fix", "--all", "--workspace", "any"]);
}
