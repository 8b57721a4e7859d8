//! Hostile and damaged input to the run store and archives: clear errors, never a panic,
//! never a path outside the store.

use crate::runs_common;

use runs_common::*;
use std::fs;
use std::os::unix::fs::symlink;

fn assert_no_panic(err: &str) {
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn replay_ids_that_look_like_paths_are_refused() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    for bad in [
        "../",
        "..",
        "../etc",
        "/etc/passwd",
        "a1b2/../a1b2",
        "./a1b2",
        "..",
    ] {
        let err = ws.fails(&["run", "show", bad], 2);
        assert!(err.contains("not a replay ID"), "{bad}: {err}");
        ws.fails(&["run", "checkout", bad], 2);
        ws.fails(&["run", "diff", bad, ID_A], 2);
    }
    let err = ws.fails(&["run", "show", "not-hex"], 2);
    assert!(err.contains("hex"), "{err}");
    let err = ws.fails(&["run", "show", ""], 2);
    assert_no_panic(&err);
}

#[test]
fn a_symlinked_snapshot_directory_is_not_followed() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    // A directory outside the store that looks like a snapshot.
    let outside = tempfile::tempdir().unwrap();
    let fake = outside.path().join("fake");
    fs::create_dir_all(&fake).unwrap();
    for name in ["intent.small.yml", "plan.small.yml", "progress.small.yml"] {
        fs::write(
            fake.join(name),
            "small_version: \"1.0.0\"\nowner: \"agent\"\nsecret: outside\n",
        )
        .unwrap();
    }
    fs::write(fake.join("handoff.small.yml"), handoff(ID_C, "outside")).unwrap();
    symlink(&fake, ws.store().join(ID_C)).unwrap();

    let err = ws.fails(&["run", "show", ID_C], 1);
    assert!(err.contains("symbolic link"), "{err}");
    let before = ws.read("plan.small.yml");
    let err = ws.fails(&["run", "checkout", "--force", ID_C], 1);
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(ws.read("plan.small.yml"), before);

    let (code, out, err) = ws.run(&["run", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&ID_A[..12]) && !out.contains("outside"),
        "{out}"
    );
    assert!(
        err.contains("warning") && err.contains("symbolic link"),
        "{err}"
    );
}

#[test]
fn a_symlinked_file_inside_a_snapshot_is_not_followed() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    fs::write(&secret, "top secret\n").unwrap();
    let plan = ws.snap_dir(ID_A).join("plan.small.yml");
    fs::remove_file(&plan).unwrap();
    symlink(&secret, &plan).unwrap();

    let err = ws.fails(&["run", "show", ID_A], 1);
    assert!(err.contains("symbolic link"), "{err}");
    ws.write("plan.small.yml", "small_version: \"1.0.0\"\n");
    let err = ws.fails(&["run", "checkout", "--force", ID_A], 1);
    assert!(err.contains("symbolic link"), "{err}");
    assert_ne!(ws.read("plan.small.yml"), b"top secret\n");
    let err = ws.fails(&["run", "diff", ID_A], 1);
    assert!(err.contains("symbolic link"), "{err}");
}

#[test]
fn a_truncated_meta_json_is_reported_as_damage() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    ws.write("handoff.small.yml", &handoff(ID_B, "second"));
    ws.ok(&["run", "snapshot"]);
    let meta = ws.snap_dir(ID_A).join("meta.json");
    let text = fs::read_to_string(&meta).unwrap();
    fs::remove_file(&meta).unwrap();
    fs::write(&meta, &text[..text.len() / 2]).unwrap();

    let err = ws.fails(&["run", "show", ID_A], 1);
    assert!(
        err.contains("damaged") && err.contains("meta.json"),
        "{err}"
    );
    assert_no_panic(&err);
    ws.fails(&["run", "checkout", ID_A], 1);
    ws.fails(&["run", "diff", ID_A, ID_B], 1);

    let (code, out, err) = ws.run(&["run", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&ID_B[..12]) && !out.contains(&ID_A[..12]),
        "{out}"
    );
    assert!(
        err.contains("skipped") && err.contains("meta.json"),
        "{err}"
    );
}

#[test]
fn meta_json_of_the_wrong_type_or_naming_another_run_is_damage() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let meta = ws.snap_dir(ID_A).join("meta.json");
    fs::remove_file(&meta).unwrap();
    fs::write(&meta, "[1, 2, 3]").unwrap();
    let err = ws.fails(&["run", "show", ID_A], 1);
    assert!(err.contains("damaged"), "{err}");
    fs::remove_file(&meta).unwrap();
    fs::write(
        &meta,
        format!("{{\"replayId\": \"{ID_B}\", \"git_dirty\": \"yes\"}}"),
    )
    .unwrap();
    let err = ws.fails(&["run", "show", ID_A], 1);
    assert!(err.contains("damaged"), "{err}");
    fs::remove_file(&meta).unwrap();
    fs::write(&meta, format!("{{\"replayId\": \"{ID_B}\"}}")).unwrap();
    let err = ws.fails(&["run", "show", ID_A], 1);
    assert!(
        err.contains("damaged") && err.contains(&ID_B[..16]),
        "{err}"
    );
}

#[test]
fn unexpected_entries_in_the_store_are_ignored_with_a_warning() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    fs::write(ws.store().join("README.md"), "notes\n").unwrap();
    fs::create_dir_all(ws.store().join("2026-05-05-handbook-spike")).unwrap();
    fs::write(ws.store().join(ID_C), "a file, not a directory").unwrap();
    let (code, out, err) = ws.run(&["run", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&ID_A[..12]), "{out}");
    assert!(
        err.contains("README.md") && err.contains("handbook-spike"),
        "{err}"
    );
    let err = ws.fails(&["run", "show", ID_C], 1);
    assert!(err.contains("not a snapshot directory"), "{err}");
}

#[test]
fn a_snapshot_without_a_handoff_is_damage() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    fs::remove_file(ws.snap_dir(ID_A).join("handoff.small.yml")).unwrap();
    let err = ws.fails(&["run", "show", ID_A], 1);
    assert!(err.contains("handoff.small.yml"), "{err}");
}

#[test]
fn unparsable_progress_in_a_snapshot_gives_a_positioned_error() {
    let ws = Ws::new();
    ws.write("progress.small.yml", "entries: [\n");
    ws.ok(&["run", "snapshot"]);
    let err = ws.fails(&["run", "diff", ID_A], 1);
    assert!(
        err.contains("progress.small.yml") && err.contains(":"),
        "{err}"
    );
    assert_no_panic(&err);
}

#[test]
fn archive_include_names_must_be_plain_file_names() {
    let ws = Ws::new();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), "s").unwrap();
    for bad in [
        "../README.md",
        "/etc/passwd",
        "sub/plan.small.yml",
        "..",
        ".",
    ] {
        let err = ws.fails(&["archive", "--include", bad], 2);
        assert!(err.contains("is not allowed"), "{bad}: {err}");
    }
    assert!(!ws.root().join(".small-archive").exists());
}

#[test]
fn archive_manifest_with_hostile_names_is_damage() {
    let ws = Ws::new();
    ws.ok(&["archive"]);
    let dir = ws.root().join(".small-archive").join(ID_A);
    let manifest = dir.join("archive.small.yml");
    for bad in ["../../README.md", "/etc/passwd", "a/b"] {
        let _ = fs::remove_file(&manifest);
        fs::write(
            &manifest,
            format!("small_version: \"1.0.0\"\nreplayId: \"{ID_A}\"\nfiles:\n  - name: \"{bad}\"\n    sha256: \"{}\"\n", "0".repeat(64)),
        )
        .unwrap();
        let err = ws.fails(&["archive", "verify", dir.to_str().unwrap()], 1);
        assert!(err.contains("not allowed"), "{bad}: {err}");
    }
    fs::remove_file(&manifest).unwrap();
    fs::write(&manifest, "files: [").unwrap();
    let err = ws.fails(&["archive", "verify", dir.to_str().unwrap()], 1);
    assert!(err.contains("archive.small.yml"), "{err}");
    assert_no_panic(&err);
}

#[test]
fn archive_verify_reports_a_symlinked_file_as_unsafe() {
    let ws = Ws::new();
    ws.ok(&["archive"]);
    let dir = ws.root().join(".small-archive").join(ID_A);
    let plan = dir.join("plan.small.yml");
    let copy = ws.root().join("plan-copy.yml");
    fs::write(&copy, fs::read(&plan).unwrap()).unwrap();
    fs::remove_file(&plan).unwrap();
    symlink(&copy, &plan).unwrap();
    let (code, out, _) = ws.run(&["archive", "verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains("UNSAFE") && out.contains("plan.small.yml"),
        "{out}"
    );
}

#[test]
fn a_snapshot_with_extra_entries_or_without_meta_json_is_flagged() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let dir = ws.snap_dir(ID_A);
    fs::write(dir.join("run.sh"), "rm -rf /\n").unwrap();
    let (code, out, err) = ws.run(&["run", "show", ID_A]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("unexpected entry `run.sh`"), "{out}");
    let err = ws.fails(&["run", "checkout", ID_A], 1);
    assert!(err.contains("damaged"), "{err}");
    fs::remove_file(dir.join("run.sh")).unwrap();
    fs::remove_file(dir.join("meta.json")).unwrap();
    let (code, out, _) = ws.run(&["run", "show", ID_A]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("meta.json is missing"), "{out}");
    // still listed, with the directory's time
    let v = ws.json(&["run", "list", "--json"]);
    assert_eq!(v["runs"][0]["replayId"], ID_A);
    assert!(v["runs"][0]["created_at"].as_str().unwrap().ends_with('Z'));
}
