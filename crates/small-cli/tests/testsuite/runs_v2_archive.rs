//! `small archive` and `small archive verify` on a SMALL 2.0.0 workspace: the whole `.small/`
//! tree copied to `.small-archive/<frontier>/state/.small/` with the reference's manifest
//! keys, refused on a tree that fails the strict check, and a damaged archive reported.
#![cfg(unix)]

use std::path::Path;

use serde_json::Value;

use crate::runs_v2::Ws;

fn sha(bytes: &[u8]) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes))
}

fn writable(p: &Path) {
    let mut perms = std::fs::metadata(p).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(p, perms).unwrap();
}

#[test]
fn v2_archive_copies_the_whole_tree_under_the_frontier() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let frontier = ws.frontier();
    let before = ws.tree();
    let out = ws.ok(&["archive"]);
    let dir = ws.root.join(".small-archive").join(&frontier);
    assert!(
        out.starts_with(&format!(
            "Archived {} files to {}\n",
            before.len(),
            dir.display()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("\nFrontier: {frontier}\n")), "{out}");
    // The live tree is untouched; the copy holds it byte for byte and nothing else.
    assert_eq!(ws.tree(), before);
    let mut top: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["archive.small.yml", "state"]);
    for (rel, bytes) in &before {
        let copy = std::fs::read(dir.join("state/.small").join(rel)).unwrap();
        assert_eq!(&copy, bytes, "{}", rel.display());
    }
    // The manifest: the reference's keys, the frontier as replayId, one entry per path.
    let manifest = std::fs::read_to_string(dir.join("archive.small.yml")).unwrap();
    assert!(
        manifest.starts_with("small_version: \"2.0.0\"\n"),
        "{manifest}"
    );
    assert!(
        manifest.contains(&format!("\nreplayId: \"{frontier}\"\n")),
        "{manifest}"
    );
    assert!(manifest.contains("\narchived_at: \""), "{manifest}");
    assert!(manifest.contains("\nsource_dir: \""), "{manifest}");
    for (rel, bytes) in &before {
        let entry = format!(
            "  - name: \"{}\"\n    sha256: \"{}\"\n",
            rel.display(),
            sha(bytes)
        );
        assert!(manifest.contains(&entry), "{entry} not in {manifest}");
    }
    // The run index names the archive.
    let index = std::fs::read_to_string(ws.root.join(".small-runs/index.small.yml")).unwrap();
    assert!(
        index.contains(&frontier) && index.contains("archive"),
        "{index}"
    );

    let out = ws.ok(&["archive", "verify", dir.to_str().unwrap()]);
    assert!(
        out.contains(&format!("is intact ({} files)", before.len())),
        "{out}"
    );
    // The same tree again writes nothing.
    let v = ws.json(&["archive", "--json"]);
    assert_eq!(v["unchanged"], true, "{v}");
    assert_eq!(v["frontier"], frontier.as_str());
    assert_eq!(v["replayId"], frontier.as_str());
    assert_eq!(v["files"].as_array().unwrap().len(), before.len());
    assert_eq!(
        v["files"][0]["name"].as_str().unwrap(),
        before[0].0.to_str().unwrap()
    );
    assert_eq!(v["files"][0]["sha256"].as_str().unwrap(), sha(&before[0].1));

    // A later tree has another frontier, so another archive beside the first.
    ws.ok(&["session", "start", "--label", "later"]);
    ws.ok(&["plan", "--add", "Something new"]);
    let second = ws.frontier();
    let v = ws.json(&["archive", "--json"]);
    assert_eq!(v["unchanged"], false);
    assert_eq!(v["frontier"], second.as_str());
    assert!(ws.root.join(".small-archive").join(&second).is_dir());
    assert!(dir.is_dir());
}

#[test]
fn v2_archive_out_is_relative_to_the_workspace_and_never_overwritten() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let v = ws.json(&["archive", "--out", "kept/a1", "--json"]);
    let dir = ws.root.join("kept/a1");
    assert_eq!(v["dir"], dir.to_str().unwrap());
    assert!(dir.join("state/.small/profile.json").is_file());
    // Another tree at the same --out is a different archive: refused, then replaced.
    ws.ok(&["session", "start", "--label", "later"]);
    let err = ws.fails(&["archive", "--out", "kept/a1"], 1);
    assert!(err.contains("already holds a different archive"), "{err}");
    let v = ws.json(&["archive", "--out", "kept/a1", "--force", "--json"]);
    assert_eq!(v["replaced"], true);
    ws.ok(&["archive", "verify", dir.to_str().unwrap()]);
    // A directory that is not an archive is never replaced.
    std::fs::create_dir_all(ws.root.join("plain")).unwrap();
    std::fs::write(ws.root.join("plain/keep.txt"), "mine\n").unwrap();
    let err = ws.fails(&["archive", "--out", "plain", "--force"], 2);
    assert!(err.contains("is not an archive"), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.root.join("plain/keep.txt")).unwrap(),
        "mine\n"
    );
}

#[test]
fn v2_archive_refusals_write_nothing() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    // --include picks v1 files; the v1 default list itself is accepted (it changes nothing).
    let err = ws.fails(&["archive", "--include", "plan.small.yml"], 2);
    assert!(err.contains("whole .small/ tree"), "{err}");
    let err = ws.fails(&["archive", "--out", ".small/inside"], 2);
    assert!(err.contains("overlaps .small/"), "{err}");
    assert!(!ws.root.join(".small-archive").exists());
    assert!(!ws.root.join(".small/inside").exists());
    ws.ok(&[
        "archive",
        "--include",
        "intent.small.yml,constraints.small.yml,plan.small.yml,progress.small.yml,handoff.small.yml,workspace.small.yml",
    ]);

    // Unresolved conflicts.
    let Some(ws) = Ws::case("wf-merge-conflict") else {
        return;
    };
    let err = ws.fails(&["archive"], 1);
    assert!(err.contains("unresolved conflicts"), "{err}");
    assert!(err.contains("small reconcile --preview"), "{err}");
    assert!(!ws.root.join(".small-archive").exists());

    // A damaged record, and a link in the tree: refused, no archive, no staging left.
    for case in ["tampered-event-payload-byte", "tampered-symlink-event-file"] {
        let Some(ws) = Ws::case(case) else {
            return;
        };
        let err = ws.fails(&["archive"], 1);
        assert!(err.contains("strict check"), "{case}: {err}");
        let left: Vec<_> = std::fs::read_dir(&ws.root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".small-archive"))
            .collect();
        assert!(
            left.is_empty()
                || std::fs::read_dir(ws.root.join(".small-archive"))
                    .unwrap()
                    .next()
                    .is_none(),
            "{case}: {left:?}"
        );
    }
}

#[test]
fn v2_archive_verify_reports_changed_missing_added_and_refuses_links() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let frontier = ws.frontier();
    ws.ok(&["archive"]);
    let dir = ws.root.join(".small-archive").join(&frontier);
    let d = dir.to_str().unwrap();
    let state = dir.join("state/.small");

    let profile = state.join("profile.json");
    writable(&profile);
    std::fs::write(&profile, "{}\n").unwrap();
    let sessions = state.join("sessions");
    writable(&sessions);
    let session = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&session).unwrap();
    std::fs::write(sessions.join("extra.json"), "{}\n").unwrap();
    writable(&dir);
    std::fs::write(dir.join("stray.txt"), "x\n").unwrap();

    let o = ws.run(&["archive", "verify", d, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let state_of = |name: &str| {
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .map(|f| f["state"].as_str().unwrap().to_string())
    };
    assert_eq!(state_of("profile.json").as_deref(), Some("changed"), "{v}");
    let gone = format!(
        "sessions/{}",
        session.file_name().unwrap().to_string_lossy()
    );
    assert_eq!(state_of(&gone).as_deref(), Some("missing"), "{v}");
    assert_eq!(
        state_of("sessions/extra.json").as_deref(),
        Some("unlisted"),
        "{v}"
    );
    assert_eq!(state_of("stray.txt").as_deref(), Some("unlisted"), "{v}");
    let o = ws.run(&["archive", "verify", d]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("CHANGED   profile.json"), "{text}");
    assert!(text.contains(&format!("MISSING   {gone}")), "{text}");

    // A link planted in the copy is refused, never followed.
    let outside = ws.root.parent().unwrap().join("secret.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, sessions.join("planted.json")).unwrap();
    let err = ws.fails(&["archive", "verify", d], 1);
    assert!(err.contains("symbolic link"), "{err}");
    assert!(!err.contains("outside"), "{err}");

    std::fs::remove_file(sessions.join("planted.json")).unwrap();
    // `state/` itself replaced by a link to a copy elsewhere: refused, not followed.
    let elsewhere = ws.root.parent().unwrap().join("elsewhere");
    std::fs::rename(dir.join("state"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("state")).unwrap();
    let err = ws.fails(&["archive", "verify", d], 1);
    assert!(err.contains("symbolic link"), "{err}");
    std::fs::remove_file(dir.join("state")).unwrap();
    std::fs::rename(&elsewhere, dir.join("state")).unwrap();

    // A manifest naming a path that climbs out is damaged.
    let manifest = dir.join("archive.small.yml");
    writable(&manifest);
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = text.replacen("name: \"profile.json\"", "name: \"../../secret.txt\"", 1);
    std::fs::write(&manifest, text).unwrap();
    let err = ws.fails(&["archive", "verify", d], 1);
    assert!(err.contains("damaged"), "{err}");
}
