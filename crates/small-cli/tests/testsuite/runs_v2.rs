//! `small run snapshot/list/verify/checkout` on a SMALL 2.0.0 workspace (copies of the
//! recorded reference workspaces): the whole `.small/` tree filed under its frontier, a
//! SHA-256 per path, a restore that refuses damaged snapshots and unsaved files, and nothing
//! followed through a link.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_small");
const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/v2/cases"
);

pub(crate) struct Ws {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
}

impl Ws {
    pub(crate) fn case(name: &str) -> Option<Ws> {
        let src = small_testkit::conformance_path(Path::new(CASES).join(name))?;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        crate::conformance_v11::copy_case(&src, &root, true);
        Some(Ws { _dir: dir, root })
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        std::process::Command::new(BIN)
            .args(args)
            .current_dir(&self.root)
            .env("NO_COLOR", "1")
            .env_remove("SMALL_LOCK_TIMEOUT")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "small {args:?} failed ({:?}): {}{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    pub(crate) fn fails(&self, args: &[&str], code: i32) -> String {
        let o = self.run(args);
        assert_eq!(
            o.status.code(),
            Some(code),
            "small {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    pub(crate) fn frontier(&self) -> String {
        self.json(&["status", "--json"])["frontier"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Every file under `.small/` with its bytes.
    pub(crate) fn tree(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(d: &Path, base: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, base, out);
                } else {
                    out.push((
                        p.strip_prefix(base).unwrap().to_path_buf(),
                        std::fs::read(&p).unwrap(),
                    ));
                }
            }
        }
        let mut out = Vec::new();
        let small = self.root.join(".small");
        walk(&small, &small, &mut out);
        out.sort();
        out
    }
}

#[test]
fn v2_snapshot_files_the_whole_tree_under_the_frontier_and_verifies() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let frontier = ws.frontier();
    // No --workspace any needed: a 2.0.0 tree has no workspace.small.yml.
    let v = ws.json(&["run", "snapshot", "--json"]);
    assert_eq!(v["replayId"], frontier.as_str());
    assert_eq!(v["meta"]["workspace_kind"], "v2-session-profile");
    let dir = ws.root.join(".small-runs").join(&frontier);
    let digests = v["meta"]["artifact_digests"].as_object().unwrap();
    let tree = ws.tree();
    assert_eq!(digests.len(), tree.len());
    for (rel, bytes) in &tree {
        let key = rel.to_string_lossy();
        let copy = std::fs::read(dir.join("state/.small").join(rel)).unwrap();
        assert_eq!(&copy, bytes, "{key}");
        assert_eq!(
            digests[key.as_ref()],
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes)),
            "{key}"
        );
    }
    assert!(digests.contains_key("profile.json"));
    // The same tree again writes nothing; list and show read it.
    let again = ws.json(&["run", "snapshot", "--json"]);
    assert_eq!(again["unchanged"], true);
    let list = ws.json(&["run", "list", "--json"]);
    assert_eq!(list["runs"].as_array().unwrap().len(), 1, "{list}");
    let out = ws.ok(&["run", "verify", &frontier[..12]]);
    assert!(out.contains("Status: ok"), "{out}");

    // A changed copy is a mismatch naming the path; checkout refuses to restore it.
    let event = tree
        .iter()
        .map(|(p, _)| p.to_string_lossy().into_owned())
        .find(|p| p.starts_with("events/"))
        .unwrap();
    let copied = dir.join("state/.small").join(&event);
    let mut perms = std::fs::metadata(&copied).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&copied, perms).unwrap();
    std::fs::write(&copied, b"{}\n").unwrap();
    let o = ws.run(&["run", "verify", &frontier, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["match"], false);
    assert_eq!(v["mismatches"][0]["filename"], event.as_str(), "{v}");
    assert_eq!(v["mismatches"][0]["reason"], "changed");
    let err = ws.fails(&["run", "checkout", &frontier, "--force"], 1);
    assert!(err.contains("does not match the digests"), "{err}");
}

#[test]
fn v2_checkout_restores_a_tree_and_refuses_to_drop_unsaved_files() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let first = ws.frontier();
    ws.ok(&["run", "snapshot"]);
    let before = ws.tree();
    ws.ok(&["session", "start", "--label", "later"]);
    ws.ok(&["plan", "--add", "Something new"]);
    assert_ne!(ws.frontier(), first);
    // The new session and its events are in no snapshot: refused, nothing changed.
    let after = ws.tree();
    let err = ws.fails(&["run", "checkout", &first], 1);
    assert!(err.contains("no snapshot holds"), "{err}");
    assert!(err.contains(".small/sessions/session_"), "{err}");
    assert_eq!(ws.tree(), after);
    // Saved, they may go: the tree is the first snapshot's again, byte for byte.
    ws.ok(&["run", "snapshot"]);
    let v = ws.json(&["run", "checkout", &first, "--json"]);
    assert_eq!(v["profile"], "2.0.0");
    assert!(v["removed"].as_array().unwrap().len() >= 3, "{v}");
    assert!(v.get("backup").is_none());
    assert_eq!(ws.tree(), before);
    assert_eq!(ws.frontier(), first);
    ws.ok(&["check", "--strict"]);
    // Checking out the same snapshot again changes nothing.
    let v = ws.json(&["run", "checkout", &first, "--json"]);
    assert_eq!(v["restored"], serde_json::json!([]));
    // --force drops unsaved work and keeps the replaced tree.
    std::fs::write(ws.root.join("r.txt"), "ok\n").unwrap();
    ws.ok(&[
        "evidence", "save", "--task", "task-1", "--file", "r.txt", "--json",
    ]);
    let v = ws.json(&["run", "checkout", &first, "--force", "--json"]);
    let backup = PathBuf::from(v["backup"].as_str().unwrap());
    assert!(
        backup.starts_with(ws.root.join(".small-cache/checkout")),
        "{v}"
    );
    assert!(backup.join("profile.json").is_file());
    assert_eq!(ws.tree(), before);
    // No staging directory is left beside the tree.
    assert!(!ws.root.join(".small.tmp").exists());
}

#[test]
fn v2_snapshot_refuses_unresolved_conflicts() {
    let Some(ws) = Ws::case("wf-merge-conflict") else {
        return;
    };
    let err = ws.fails(&["run", "snapshot"], 1);
    assert!(err.contains("unresolved conflicts"), "{err}");
    assert!(err.contains("small reconcile --preview"), "{err}");
    assert!(!ws.root.join(".small-runs").exists() || ws.ok(&["run", "list"]).contains("no "));
}

#[test]
fn v2_links_in_a_snapshot_are_never_followed() {
    let Some(ws) = Ws::case("wf-single-session") else {
        return;
    };
    let frontier = ws.frontier();
    ws.ok(&["run", "snapshot"]);
    let state = ws
        .root
        .join(".small-runs")
        .join(&frontier)
        .join("state/.small");
    // A link planted in the snapshot, pointing at a file outside the workspace.
    let outside = ws.root.parent().unwrap().join("secret.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    let receipts = state.join("receipts/sha256");
    let mut perms = std::fs::metadata(&receipts).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&receipts, perms).unwrap();
    std::os::unix::fs::symlink(&outside, receipts.join("planted.json")).unwrap();
    let o = ws.run(&["run", "verify", &frontier]);
    assert_ne!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("symbolic link"), "{err}");
    ws.ok(&["session", "start"]);
    ws.ok(&["run", "snapshot"]);
    let before = ws.tree();
    let o = ws.run(&["run", "checkout", &frontier, "--force"]);
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(ws.tree(), before);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
}
