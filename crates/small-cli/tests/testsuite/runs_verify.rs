//! `small run verify`: the digests `run snapshot` records, and what verifying them decides.

use crate::runs_common;

use runs_common::*;
use std::fs;

fn writable(path: &std::path::Path) {
    let mut p = fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    p.set_readonly(false);
    fs::set_permissions(path, p).unwrap();
}

#[test]
fn a_snapshot_records_the_aggregate_digest_and_verifies() {
    use sha2::Digest;
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let dir = ws.snap_dir(ID_A);
    let meta: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("meta.json")).unwrap()).unwrap();
    // The reference's formula: `<name>\t<sha256>` lines in its order, joined by `\n`.
    let lines: Vec<String> = [
        "intent.small.yml",
        "plan.small.yml",
        "progress.small.yml",
        "handoff.small.yml",
        "constraints.small.yml",
    ]
    .iter()
    .map(|n| format!("{n}\t{}", hex::encode(sha2::Sha256::digest(ws.read(n)))))
    .collect();
    let aggregate = hex::encode(sha2::Sha256::digest(lines.join("\n")));
    assert_eq!(meta["artifact_digest"], aggregate.as_str());
    assert_eq!(meta["artifact_digests"], meta["files"]);
    let keys: Vec<&String> = meta.as_object().unwrap().keys().collect();
    assert_eq!(
        keys[..3],
        ["replayId", "artifact_digest", "artifact_digests"]
    );

    let out = ws.ok(&["run", "verify", &ID_A[..8]]);
    assert!(out.contains("Status: ok"), "{out}");
    let v = ws.json(&["run", "verify", ID_A, "--json"]);
    assert_eq!(v["match"], true, "{v}");
    assert_eq!(v["computed_digest"], aggregate.as_str());
}

#[test]
fn a_changed_file_fails_and_removing_the_digests_does_not_pass() {
    let ws = Ws::new();
    ws.ok(&["run", "snapshot"]);
    let dir = ws.snap_dir(ID_A);
    let progress = dir.join("progress.small.yml");
    writable(&progress);
    let mut bytes = fs::read(&progress).unwrap();
    bytes.extend_from_slice(b"# edited\n");
    fs::write(&progress, bytes).unwrap();
    let (code, out, _) = ws.run(&["run", "verify", ID_A]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("  - progress.small.yml: changed"), "{out}");

    // The digests removed as well: nothing can be checked, which is not a pass.
    let meta_path = dir.join("meta.json");
    writable(&meta_path);
    let mut meta: serde_json::Value =
        serde_json::from_slice(&fs::read(&meta_path).unwrap()).unwrap();
    let m = meta.as_object_mut().unwrap();
    for k in ["artifact_digest", "artifact_digests", "files"] {
        m.remove(k);
    }
    fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    let (code, out, err) = ws.run(&["run", "verify", ID_A]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("Status: unverifiable"), "{out}");
    assert!(err.contains("--allow-unverifiable"), "{err}");
    let (code, _, err) = ws.run(&["run", "verify", ID_A, "--allow-unverifiable"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning"), "{err}");

    let (code, _, err) = ws.run(&["run", "verify", &"0".repeat(64)]);
    assert_eq!(code, 2, "{err}");
}
