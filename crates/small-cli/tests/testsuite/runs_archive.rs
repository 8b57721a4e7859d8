//! `small archive` and `small archive verify`.

use crate::runs_common;

use runs_common::*;
use sha2::Digest;
use std::fs;

fn archive_dir(ws: &Ws) -> std::path::PathBuf {
    ws.root().join(".small-archive").join(ID_A)
}

fn manifest(dir: &std::path::Path) -> small_core::ops::formats::yaml::Document {
    let text = fs::read_to_string(dir.join("archive.small.yml")).unwrap();
    small_core::ops::formats::yaml::parse_str(&text, &Default::default()).unwrap()
}

#[test]
fn archive_copies_artifacts_and_workspace_with_a_hashed_manifest() {
    let ws = Ws::new();
    let out = ws.ok(&["archive"]);
    assert!(out.contains("Archived 6 files"), "{out}");
    let dir = archive_dir(&ws);
    let m = manifest(&dir);
    let root = &m.root;
    assert_eq!(root.get("small_version").unwrap().as_str(), Some("1.0.0"));
    assert_eq!(root.get("replayId").unwrap().as_str(), Some(ID_A));
    let archived_at = root.get("archived_at").unwrap().as_str().unwrap();
    assert!(archived_at.ends_with('Z'), "{archived_at}");
    let source = root.get("source_dir").unwrap().as_str().unwrap();
    assert_eq!(
        fs::canonicalize(source).unwrap(),
        fs::canonicalize(ws.root()).unwrap()
    );
    let files = root.get("files").unwrap().as_seq().unwrap();
    let names: Vec<&str> = files
        .iter()
        .map(|f| f.get("name").unwrap().as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "intent.small.yml",
            "constraints.small.yml",
            "plan.small.yml",
            "progress.small.yml",
            "handoff.small.yml",
            "workspace.small.yml"
        ]
    );
    for f in files {
        let name = f.get("name").unwrap().as_str().unwrap();
        let bytes = fs::read(dir.join(name)).unwrap();
        assert_eq!(bytes, ws.read(name), "{name}");
        assert_eq!(
            f.get("sha256").unwrap().as_str().unwrap(),
            hex::encode(sha2::Sha256::digest(&bytes))
        );
    }
    // The archive is recorded in the run index.
    let index = fs::read_to_string(ws.store().join("index.small.yml")).unwrap();
    assert!(index.contains("reason: \"archive\""), "{index}");
}

#[test]
fn archiving_the_same_state_again_changes_nothing() {
    let ws = Ws::new();
    ws.ok(&["archive"]);
    let before = tree(&archive_dir(&ws));
    let out = ws.ok(&["archive"]);
    assert!(out.contains("already up to date"), "{out}");
    assert_eq!(tree(&archive_dir(&ws)), before);
}

#[test]
fn a_different_archive_of_the_same_run_is_replaced_only_with_force() {
    let ws = Ws::new();
    ws.ok(&["archive"]);
    let before = tree(&archive_dir(&ws));
    let plan = PLAN.replace("Add the flag", "Add the flag now");
    ws.write("plan.small.yml", &plan);
    let err = ws.fails(&["archive"], 1);
    assert!(
        err.contains("--force") && err.contains("never modified"),
        "{err}"
    );
    assert_eq!(tree(&archive_dir(&ws)), before);
    let out = ws.ok(&["archive", "--force"]);
    assert!(out.contains("Replaced"), "{out}");
    assert_eq!(
        fs::read(archive_dir(&ws).join("plan.small.yml")).unwrap(),
        plan.as_bytes()
    );
    ws.ok(&["archive", "verify", archive_dir(&ws).to_str().unwrap()]);
}

#[test]
fn out_and_include_choose_where_and_what() {
    let ws = Ws::new();
    ws.ok(&[
        "archive",
        "--out",
        "keep/run1",
        "--include",
        "plan.small.yml,handoff.small.yml",
        "--include",
        "intent.small.yml",
    ]);
    let dir = ws.root().join("keep/run1");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "archive.small.yml",
            "handoff.small.yml",
            "intent.small.yml",
            "plan.small.yml"
        ]
    );
    assert!(!ws.root().join(".small-archive").exists());

    let abs = tempfile::tempdir().unwrap();
    let target = abs.path().join("a");
    let v = ws.json(&["archive", "--json", "--out", target.to_str().unwrap()]);
    assert_eq!(v["replayId"], ID_A);
    assert_eq!(v["files"].as_array().unwrap().len(), 6);
    assert!(target.join("archive.small.yml").exists());
}

#[test]
fn include_of_a_missing_file_is_a_usage_error() {
    let ws = Ws::new();
    let err = ws.fails(&["archive", "--include", "nothere.small.yml"], 2);
    assert!(err.contains("does not exist"), "{err}");
    let err = ws.fails(&["archive", "--include", "archive.small.yml"], 2);
    assert!(err.contains("manifest"), "{err}");
}

#[test]
fn default_archive_skips_missing_constraints() {
    let ws = Ws::new();
    fs::remove_file(ws.small().join("constraints.small.yml")).unwrap();
    let out = ws.ok(&["archive"]);
    assert!(out.contains("Archived 5 files"), "{out}");
}

#[test]
fn archive_needs_a_replay_id_and_a_workspace() {
    let ws = Ws::new();
    ws.write("handoff.small.yml", &handoff_without_replay_id());
    let err = ws.fails(&["archive"], 1);
    assert!(
        err.contains("replayId") && err.contains("small handoff"),
        "{err}"
    );
    let bare = Ws::bare();
    let err = bare.fails(&["archive"], 2);
    assert!(err.contains(".small/ does not exist"), "{err}");
}

#[test]
fn archive_never_writes_into_an_existing_directory_that_is_not_an_archive() {
    let ws = Ws::new();
    fs::create_dir_all(ws.root().join("docs")).unwrap();
    fs::write(ws.root().join("docs/keep.md"), "keep\n").unwrap();
    let before = tree(&ws.root().join("docs"));
    let err = ws.fails(&["archive", "--out", "docs", "--force"], 2);
    assert!(err.contains("not an archive"), "{err}");
    assert_eq!(tree(&ws.root().join("docs")), before);
    let err = ws.fails(&["archive", "--out", ".small"], 2);
    assert!(err.contains("overlaps"), "{err}");
    let err = ws.fails(&["archive", "--out", "."], 2);
    assert!(
        err.contains("overlaps") || err.contains("not an archive"),
        "{err}"
    );
}

#[test]
fn verify_passes_an_intact_archive() {
    let ws = Ws::new();
    ws.ok(&["archive"]);
    let dir = archive_dir(&ws);
    let out = ws.ok(&["archive", "verify", dir.to_str().unwrap()]);
    assert!(out.contains("intact (6 files)"), "{out}");
    let v = ws.json(&["archive", "verify", "--json", dir.to_str().unwrap()]);
    assert_eq!(v["ok"], true);
    assert_eq!(v["replayId"], ID_A);
    assert!(v["files"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["state"] == "ok"));
}

#[test]
fn verify_reports_changed_missing_and_unlisted_files() {
    let ws = Ws::new();
    ws.ok(&["archive"]);
    let dir = archive_dir(&ws);
    let plan = dir.join("plan.small.yml");
    fs::remove_file(&plan).unwrap();
    fs::write(&plan, "tampered\n").unwrap();
    fs::remove_file(dir.join("intent.small.yml")).unwrap();
    fs::write(dir.join("extra.txt"), "x").unwrap();
    let (code, out, err) = ws.run(&["archive", "verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("CHANGED   plan.small.yml"), "{out}");
    assert!(out.contains("MISSING   intent.small.yml"), "{out}");
    assert!(out.contains("UNLISTED  extra.txt"), "{out}");
    assert!(out.contains("ok        handoff.small.yml"), "{out}");
    assert!(err.contains("3 file(s)"), "{err}");

    let out = ws
        .small_cmd(&["archive", "verify", "--json", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let states: Vec<(String, String)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        states.contains(&("plan.small.yml".into(), "changed".into())),
        "{states:?}"
    );
    assert!(
        states.contains(&("intent.small.yml".into(), "missing".into())),
        "{states:?}"
    );
    assert!(
        states.contains(&("extra.txt".into(), "unlisted".into())),
        "{states:?}"
    );
}

#[test]
fn verify_of_something_that_is_not_an_archive_is_a_usage_error() {
    let ws = Ws::new();
    let err = ws.fails(&["archive", "verify", "nowhere"], 2);
    assert!(err.contains("does not exist"), "{err}");
    let err = ws.fails(&["archive", "verify", ".small"], 2);
    assert!(err.contains("not an archive"), "{err}");
    ws.fails(&["archive", "verify"], 2);
}

#[test]
fn archive_of_the_conformance_minimal_case_verifies() {
    let case = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/cases/valid-minimal/.small"
    ));
    if small_testkit::conformance_path(case).is_none() {
        return;
    }
    let ws = Ws::bare();
    fs::create_dir_all(ws.small()).unwrap();
    for e in fs::read_dir(case).unwrap().flatten() {
        fs::write(ws.small().join(e.file_name()), fs::read(e.path()).unwrap()).unwrap();
    }
    let v = ws.json(&["archive", "--json"]);
    let dir = v["dir"].as_str().unwrap().to_string();
    assert_eq!(
        v["replayId"],
        "84342e510e5ec6e6e0b1837174fa92b68d2a2968d4bff6f7878dff3e1db441c7"
    );
    ws.ok(&["archive", "verify", &dir]);
    ws.ok(&["run", "snapshot"]);
    let out = ws.ok(&["run", "list"]);
    assert!(
        out.contains("Run in progress. Next task: dry-run-flag."),
        "{out}"
    );
}
