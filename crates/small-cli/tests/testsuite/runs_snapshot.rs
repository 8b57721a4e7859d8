//! `small run snapshot`: what a snapshot holds, when it refuses, and its flags.

use crate::runs_common;

use runs_common::*;
use std::fs;

#[test]
fn snapshot_copies_every_artifact_byte_for_byte_and_records_meta() {
    let ws = Ws::new();
    let out = ws.ok(&["run", "snapshot"]);
    assert!(out.contains(&ID_A[..16]), "{out}");

    let dir = ws.snap_dir(ID_A);
    for name in [
        "intent.small.yml",
        "constraints.small.yml",
        "plan.small.yml",
        "progress.small.yml",
        "handoff.small.yml",
    ] {
        assert_eq!(fs::read(dir.join(name)).unwrap(), ws.read(name), "{name}");
    }
    assert!(
        !dir.join("workspace.small.yml").exists(),
        "workspace metadata is not part of a snapshot"
    );

    let meta: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["replayId"], ID_A);
    assert_eq!(meta["git_sha"], ws.head());
    assert_eq!(
        meta["git_dirty"], false,
        "the run store itself must not make the tree dirty"
    );
    assert_eq!(meta["branch"], "main");
    assert_eq!(meta["workspace_kind"], "repo-root");
    assert_eq!(meta["cli_version"], env!("CARGO_PKG_VERSION"));
    let created = meta["created_at"].as_str().unwrap();
    assert!(
        created.starts_with("20") && created.ends_with('Z'),
        "{created}"
    );
    let files = meta["files"].as_object().unwrap();
    assert_eq!(files.len(), 5);
    use sha2::Digest;
    let plan_hash = hex::encode(sha2::Sha256::digest(ws.read("plan.small.yml")));
    assert_eq!(files["plan.small.yml"], plan_hash.as_str());
}

#[test]
fn snapshot_files_are_read_only_and_no_temporary_directory_is_left() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let dir = ws.snap_dir(ID_A);
    let perms = fs::metadata(dir.join("plan.small.yml"))
        .unwrap()
        .permissions();
    assert!(perms.readonly());
    let leftovers: Vec<_> = fs::read_dir(ws.store())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp") || n.starts_with(".replaced"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn snapshot_without_constraints_holds_the_four_required_artifacts() {
    let ws = Ws::new();
    fs::remove_file(ws.small().join("constraints.small.yml")).unwrap();
    ws.ok(&["run", "snapshot"]);
    let dir = ws.snap_dir(ID_A);
    assert!(!dir.join("constraints.small.yml").exists());
    assert!(dir.join("plan.small.yml").exists());
}

#[test]
fn snapshot_refuses_a_handoff_without_replay_id() {
    let ws = Ws::new();
    ws.write("handoff.small.yml", &handoff_without_replay_id());
    let err = ws.fails(&["run", "snapshot"], 1);
    assert!(err.contains("no replayId"), "{err}");
    assert!(err.contains("small handoff"), "{err}");
    assert!(!ws.store().exists() || fs::read_dir(ws.store()).unwrap().count() == 0);
}

#[test]
fn snapshot_refuses_a_replay_id_that_is_not_hex() {
    let ws = Ws::new();
    ws.write("handoff.small.yml", &handoff("../../escape", "x"));
    let err = ws.fails(&["run", "snapshot"], 1);
    assert!(err.contains("not a replay ID"), "{err}");
    assert!(!ws.root().join("escape").exists());
    assert!(!ws.root().parent().unwrap().join("escape").exists());
}

#[test]
fn snapshot_refuses_a_missing_required_artifact() {
    let ws = Ws::new();
    fs::remove_file(ws.small().join("plan.small.yml")).unwrap();
    let err = ws.fails(&["run", "snapshot"], 1);
    assert!(err.contains("plan.small.yml is missing"), "{err}");
}

#[test]
fn snapshot_without_a_workspace_is_a_usage_error() {
    let ws = Ws::bare();
    let err = ws.fails(&["run", "snapshot"], 2);
    assert!(err.contains(".small/ does not exist"), "{err}");
    let err = ws.fails(&["run", "snapshot", "--workspace", "any"], 2);
    assert!(err.contains(".small/ does not exist"), "{err}");
}

/// Issue 14.3: runs may share a replay ID. An identical snapshot is a no-op; a different one
/// is the next generation (`ID~2`), listed, shown, diffed and checked out; --force replaces
/// the newest generation.
#[test]
fn a_different_snapshot_of_the_same_run_is_a_new_generation() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let out = ws.ok(&["run", "snapshot"]);
    assert!(out.contains("nothing written"), "{out}");
    let new_plan = PLAN.replace("Add the flag", "Add the --dry-run flag");
    ws.write("plan.small.yml", &new_plan);
    let out = ws.ok(&["run", "snapshot"]);
    assert!(out.contains("generation 2") && out.contains("~2"), "{out}");
    assert_eq!(
        fs::read(ws.snap_dir(ID_A).join("plan.small.yml")).unwrap(),
        PLAN.as_bytes(),
        "the first generation is kept as it was"
    );
    let gen2 = ws.root().join(".small-runs").join(format!("{ID_A}~2"));
    assert_eq!(
        fs::read(gen2.join("plan.small.yml")).unwrap(),
        new_plan.as_bytes()
    );
    // listed
    let v = ws.json(&["run", "list", "--json"]);
    let names: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["snapshot"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&ID_A) && names.contains(&format!("{ID_A}~2").as_str()),
        "{v}"
    );
    // shown: plain ID names the newest generation, ~1 the first
    let v = ws.json(&["run", "show", &ID_A[..8], "--json"]);
    assert_eq!(v["generation"], 2);
    let v = ws.json(&["run", "show", &format!("{}~1", &ID_A[..8]), "--json"]);
    assert_eq!(v["generation"], 1);
    ws.fails(&["run", "show", &format!("{}~7", &ID_A[..8])], 1);
    // diffed
    let out = ws.ok(&["run", "diff", &format!("{ID_A}~1"), &format!("{ID_A}~2")]);
    assert!(out.contains("--dry-run"), "{out}");
    // checked out
    ws.ok(&["run", "checkout", &format!("{ID_A}~1")]);
    assert_eq!(ws.read("plan.small.yml"), PLAN.as_bytes());
    // --force replaces the newest generation
    ws.write("plan.small.yml", &PLAN.replace("Add the flag", "Third"));
    let out = ws.ok(&["run", "snapshot", "--force"]);
    assert!(out.contains("Replaced"), "{out}");
    assert!(fs::read_to_string(gen2.join("plan.small.yml"))
        .unwrap()
        .contains("Third"));
    assert!(!ws
        .root()
        .join(".small-runs")
        .join(format!("{ID_A}~3"))
        .exists());
}

#[test]
fn snapshot_records_a_dirty_tree() {
    let ws = Ws::new();
    ws.write_root("README.md", "changed\n");
    ws.ok(&["run", "snapshot"]);
    let meta: serde_json::Value =
        serde_json::from_slice(&fs::read(ws.snap_dir(ID_A).join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["git_dirty"], true);
}

#[test]
fn snapshot_outside_git_records_no_commit() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Ws { dir };
    ws.write("intent.small.yml", INTENT);
    ws.write("plan.small.yml", PLAN);
    ws.write("progress.small.yml", PROGRESS);
    ws.write("handoff.small.yml", &handoff(ID_A, "s"));
    ws.write("workspace.small.yml", WORKSPACE);
    let v = ws.json(&["run", "snapshot", "--json"]);
    assert_eq!(v["meta"]["git_sha"], "");
    assert_eq!(v["meta"]["git_dirty"], false);
}

#[test]
fn snapshot_json_reports_id_dir_and_artifacts() {
    let ws = Ws::new();
    let v = ws.json(&["run", "snapshot", "--json"]);
    assert_eq!(v["replayId"], ID_A);
    assert_eq!(v["replaced"], false);
    assert_eq!(v["artifacts"].as_array().unwrap().len(), 5);
    assert!(v["dir"].as_str().unwrap().ends_with(ID_A));
}

#[test]
fn store_flag_puts_snapshots_elsewhere_relative_or_absolute() {
    let ws = Ws::new();
    ws.ok(&["run", "--store", "history", "snapshot"]);
    assert!(ws
        .root()
        .join("history")
        .join(ID_A)
        .join("meta.json")
        .exists());
    assert!(!ws.snap_dir(ID_A).exists());

    let other = tempfile::tempdir().unwrap();
    let abs = other.path().join("runs");
    ws.ok(&["run", "snapshot", "--store", abs.to_str().unwrap()]);
    assert!(abs.join(ID_A).join("plan.small.yml").exists());
    // list and show read the same store
    let out = ws.ok(&["run", "list", "--store", abs.to_str().unwrap()]);
    assert!(out.contains(&ID_A[..12]), "{out}");
}

#[test]
fn store_inside_dot_small_is_refused() {
    let ws = Ws::new();
    let err = ws.fails(&["run", "snapshot", "--store", ".small/runs"], 2);
    assert!(err.contains("inside .small/"), "{err}");
    assert!(!ws.small().join("runs").exists());
}

#[test]
fn dir_flag_accepts_the_workspace_or_its_dot_small() {
    let ws = Ws::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut c = assert_cmd::Command::cargo_bin("small").unwrap();
    c.current_dir(elsewhere.path())
        .args(["run", "snapshot", "--dir"])
        .arg(ws.small())
        .assert()
        .success();
    assert!(ws.snap_dir(ID_A).exists());
    let mut c = assert_cmd::Command::cargo_bin("small").unwrap();
    c.current_dir(elsewhere.path())
        .args(["run", "list", "--dir"])
        .arg(ws.root())
        .assert()
        .success();
}

#[test]
fn workspace_scope_is_enforced() {
    let ws = Ws::new();
    ws.write(
        "workspace.small.yml",
        &WORKSPACE.replace("repo-root", "examples"),
    );
    let err = ws.fails(&["run", "snapshot"], 1);
    assert!(err.contains("examples"), "{err}");
    ws.ok(&["run", "snapshot", "--workspace", "examples"]);
    ws.ok(&["run", "list", "--workspace", "any"]);
    let err = ws.fails(&["run", "list", "--workspace", "everything"], 2);
    assert!(err.contains("root, examples or any"), "{err}");
}

#[test]
fn snapshots_are_recorded_in_the_run_index_with_lineage() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    ws.write("handoff.small.yml", &handoff(ID_B, "second"));
    ws.ok(&["run", "snapshot"]);
    let text = fs::read_to_string(ws.store().join("index.small.yml")).unwrap();
    let doc = small_core::ops::formats::yaml::parse_str(&text, &Default::default()).unwrap();
    let entries = doc.root.get("entries").unwrap().as_seq().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].get("replayId").unwrap().as_str(), Some(ID_A));
    assert_eq!(entries[1].get("replayId").unwrap().as_str(), Some(ID_B));
    assert_eq!(
        entries[1].get("previous_replay_id").unwrap().as_str(),
        Some(ID_A)
    );
    assert_eq!(entries[1].get("reason").unwrap().as_str(), Some("snapshot"));
    assert_eq!(entries[1].get("summary").unwrap().as_str(), Some("second"));
}

#[test]
fn a_damaged_run_index_is_never_overwritten() {
    let ws = Ws::new();
    fs::create_dir_all(ws.store()).unwrap();
    fs::write(ws.store().join("index.small.yml"), "entries: [unclosed\n").unwrap();
    let (code, _, err) = ws.run(&["run", "snapshot"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning") && err.contains("index"), "{err}");
    assert_eq!(
        fs::read_to_string(ws.store().join("index.small.yml")).unwrap(),
        "entries: [unclosed\n"
    );
}

#[test]
fn dirty_flag_covers_the_whole_repository_but_not_smalls_own_directories() {
    let ws = Ws::bare();
    let sub = ws.root().join("apps/mailer");
    let files = [
        ("intent.small.yml", INTENT.to_string()),
        ("plan.small.yml", PLAN.to_string()),
        ("progress.small.yml", PROGRESS.to_string()),
        ("handoff.small.yml", handoff(ID_A, "sub")),
        ("workspace.small.yml", WORKSPACE.to_string()),
    ];
    fs::create_dir_all(sub.join(".small")).unwrap();
    for (n, t) in &files {
        fs::write(sub.join(".small").join(n), t).unwrap();
    }
    ws.write_root("README.md", "top\n");
    let out = std::process::Command::new("git")
        .args(["-C", ws.root().to_str().unwrap(), "add", "-A"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = std::process::Command::new("git")
        .args([
            "-C",
            ws.root().to_str().unwrap(),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "x",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    // An archive and the workspace lock beside .small/ do not count as changes.
    ws.ok(&["archive", "--dir", "apps/mailer"]);
    let v = ws.json(&["run", "snapshot", "--json", "--dir", "apps/mailer"]);
    assert_eq!(v["meta"]["git_dirty"], false, "{v}");
    assert_eq!(v["meta"]["git_sha"], ws.head());
    assert!(sub.join(".small-runs").join(ID_A).exists());

    // A change anywhere else in the repository does.
    ws.write_root("README.md", "changed at the top\n");
    let v = ws.json(&[
        "run",
        "snapshot",
        "--json",
        "--force",
        "--dir",
        "apps/mailer",
    ]);
    assert_eq!(v["meta"]["git_dirty"], true, "{v}");
}

/// A change that keeps every length (one word's case) is still a new generation: equal
/// lengths send the comparison on to the hashes.
#[test]
fn a_change_of_the_same_length_is_still_a_new_generation() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let same_length = PLAN.replace("Add the flag", "Add the FLAG");
    assert_eq!(same_length.len(), PLAN.len());
    assert_ne!(same_length, PLAN);
    ws.write("plan.small.yml", &same_length);
    let out = ws.ok(&["run", "snapshot"]);
    assert!(out.contains("generation 2") && out.contains("~2"), "{out}");
    let out = ws.ok(&["run", "snapshot"]);
    assert!(out.contains("nothing written"), "{out}");
}
