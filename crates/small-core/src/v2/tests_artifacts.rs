//! Evidence blobs and v1 import archives: one test per rule, on the valid tree of the parent
//! module with a blob, its receipt and an import added.

use super::*;

const BLOB: &[u8] = b"test output: 3 passed\n";
const IMPORT: &str = "import_1";
const ORIGINAL: &[u8] = b"tasks: []\n";

/// The valid tree plus a verified_artifact receipt with its blob, and an import archive that
/// profile.json names.
fn with_artifacts() -> (tempfile::TempDir, String, String) {
    let dir = valid();
    let root = dir.path();
    let blob = sha256_hex(BLOB);
    let blob_path = small(&dir).join(format!("evidence/blobs/sha256/{blob}"));
    std::fs::create_dir_all(blob_path.parent().unwrap()).unwrap();
    std::fs::write(&blob_path, BLOB).unwrap();
    let receipt = artifact_receipt(
        &format!(".small/evidence/blobs/sha256/{blob}"),
        &blob,
        BLOB.len() as i64,
        "verified",
    );
    let sha = sha256_hex(ORIGINAL);
    let input = sha256_hex(format!("plan.small.yml\0{sha}\0{}", ORIGINAL.len()).as_bytes());
    write(
        root,
        &format!("imports/v1/{IMPORT}/manifest.json"),
        &manifest(
            &input,
            &format!(
                r#"[{{"path":"plan.small.yml","sha256":"{sha}","size":{}}}]"#,
                ORIGINAL.len()
            ),
        ),
    );
    let orig = small(&dir).join(format!("imports/v1/{IMPORT}/originals/plan.small.yml"));
    std::fs::create_dir_all(orig.parent().unwrap()).unwrap();
    std::fs::write(&orig, ORIGINAL).unwrap();
    let profile = std::fs::read_to_string(small(&dir).join("profile.json"))
        .unwrap()
        .replace("}", &format!(r#","import_id":"{IMPORT}"}}"#));
    std::fs::write(small(&dir).join("profile.json"), profile).unwrap();
    (dir, blob, receipt)
}

fn manifest(input: &str, files: &str) -> String {
    format!(
        r#"{{"profile":"2.0.0","import_id":"{IMPORT}","namespace":"test/ns","input_digest":"{input}","files":{files},"tasks":null}}"#
    ) + "\n"
}

/// A sealed verified_artifact receipt naming an evidence blob.
fn artifact_receipt(path: &str, digest: &str, size: i64, availability: &str) -> String {
    seal(&[
        ("small_version", q("2.0.0")),
        ("project_id", q(P)),
        ("receipt_id", q("receipt_art")),
        ("strength", q("verified_artifact")),
        ("availability", q(availability)),
        ("artifact_path", q(path)),
        ("artifact_digest", q(digest)),
        ("artifact_size", size.to_string()),
    ])
}

fn put_receipt(dir: &tempfile::TempDir, receipt: &str) -> std::path::PathBuf {
    let d = &receipt[receipt.len() - 67..receipt.len() - 3];
    let p = small(dir).join(format!("receipts/sha256/{d}.json"));
    std::fs::write(&p, receipt).unwrap();
    p
}

fn blob_path(dir: &tempfile::TempDir, blob: &str) -> std::path::PathBuf {
    small(dir).join(format!("evidence/blobs/sha256/{blob}"))
}

fn original(dir: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    small(dir).join(format!("imports/v1/{IMPORT}/originals/{name}"))
}

fn only(dir: &tempfile::TempDir, code: &str) {
    let c = has(dir, code);
    assert!(
        c.diagnostics.iter().all(|d| d.code == code),
        "only {code} expected, got {:#?}",
        c.diagnostics
    );
}

#[test]
fn v2_artifacts_valid_tree_passes() {
    let (dir, _, receipt) = with_artifacts();
    put_receipt(&dir, &receipt);
    let c = run(&dir);
    assert!(c.diagnostics.is_empty(), "{:#?}", c.diagnostics);
}

#[test]
fn v2_rule_blob_bytes_changed() {
    let (dir, blob, receipt) = with_artifacts();
    put_receipt(&dir, &receipt);
    std::fs::write(blob_path(&dir, &blob), b"test output: 2 passed\n").unwrap();
    only(&dir, "V2-BLOB");
}

#[test]
fn v2_rule_blob_symlink_stray_and_fifo() {
    let (dir, blob, receipt) = with_artifacts();
    put_receipt(&dir, &receipt);
    let p = blob_path(&dir, &blob);
    std::fs::rename(&p, dir.path().join("outside")).unwrap();
    std::os::unix::fs::symlink("../../../../outside", &p).unwrap();
    only(&dir, "V2-SYMLINK");

    let (dir, _, _) = with_artifacts();
    std::fs::write(small(&dir).join("evidence/blobs/sha256/notes.txt"), "x").unwrap();
    only(&dir, "V2-STRAY");
    let (dir, _, _) = with_artifacts();
    std::fs::write(small(&dir).join("evidence/readme"), "x").unwrap();
    only(&dir, "V2-STRAY");

    // A FIFO named like a blob is refused, not opened for a read that never ends.
    let (dir, _, _) = with_artifacts();
    let fifo = blob_path(&dir, &"0".repeat(64));
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    only(&dir, "V2-NOT-FILE");
}

#[test]
fn v2_rule_blob_over_limit() {
    let (dir, _, _) = with_artifacts();
    let name = "f".repeat(64);
    let f = std::fs::File::create(blob_path(&dir, &name)).unwrap();
    f.set_len(crate::v2::artifacts::MAX_EVIDENCE_BYTES + 1)
        .unwrap();
    only(&dir, "V2-SIZE");
}

#[test]
fn v2_rule_evidence_missing_blob_unless_unavailable() {
    let (dir, blob, receipt) = with_artifacts();
    put_receipt(&dir, &receipt);
    std::fs::remove_file(blob_path(&dir, &blob)).unwrap();
    let c = has(&dir, "V2-EVIDENCE");
    assert!(
        c.diagnostics[0].message.contains("missing"),
        "{:#?}",
        c.diagnostics
    );

    // The same reference, declared unavailable: fine.
    let (dir, blob, _) = with_artifacts();
    std::fs::remove_file(blob_path(&dir, &blob)).unwrap();
    let r = artifact_receipt(
        &format!(".small/evidence/blobs/sha256/{blob}"),
        &blob,
        BLOB.len() as i64,
        "unavailable",
    );
    put_receipt(&dir, &r);
    let c = run(&dir);
    assert!(c.diagnostics.is_empty(), "{:#?}", c.diagnostics);
}

#[test]
fn v2_rule_evidence_size_and_path() {
    let (dir, blob, _) = with_artifacts();
    let path = format!(".small/evidence/blobs/sha256/{blob}");
    put_receipt(&dir, &artifact_receipt(&path, &blob, 5, "verified"));
    let c = has(&dir, "V2-EVIDENCE");
    assert!(
        c.diagnostics[0].message.contains("says 5"),
        "{:#?}",
        c.diagnostics
    );

    // A path that leaves the blob directory is refused, whatever it points at.
    let (dir, blob, _) = with_artifacts();
    let path = format!(".small/evidence/blobs/sha256/../../../../{blob}");
    put_receipt(
        &dir,
        &artifact_receipt(&path, &blob, BLOB.len() as i64, "verified"),
    );
    only(&dir, "V2-EVIDENCE");

    // A digest that is not one.
    let (dir, _, _) = with_artifacts();
    put_receipt(
        &dir,
        &artifact_receipt(".small/evidence/blobs/sha256/x", "x", 1, "verified"),
    );
    only(&dir, "V2-EVIDENCE");

    // verified_artifact with no artifact at all.
    let (dir, _, _) = with_artifacts();
    put_receipt(
        &dir,
        &seal(&[
            ("small_version", q("2.0.0")),
            ("project_id", q(P)),
            ("receipt_id", q("receipt_bare")),
            ("strength", q("verified_artifact")),
            ("availability", q("verified")),
        ]),
    );
    only(&dir, "V2-EVIDENCE");
}

#[test]
fn v2_rule_import_original_changed_missing_unlisted() {
    let (dir, _, _) = with_artifacts();
    std::fs::write(original(&dir, "plan.small.yml"), b"tasks: [x]\n").unwrap();
    only(&dir, "V2-IMPORT");

    let (dir, _, _) = with_artifacts();
    std::fs::remove_file(original(&dir, "plan.small.yml")).unwrap();
    only(&dir, "V2-IMPORT");

    let (dir, _, _) = with_artifacts();
    std::fs::create_dir_all(original(&dir, "runs")).unwrap();
    std::fs::write(original(&dir, "runs/extra.yml"), b"x").unwrap();
    let c = has(&dir, "V2-IMPORT");
    assert!(c.diagnostics[0]
        .message
        .contains("runs/extra.yml is not listed"));

    let (dir, _, _) = with_artifacts();
    let p = original(&dir, "plan.small.yml");
    std::fs::rename(&p, dir.path().join("outside")).unwrap();
    std::os::unix::fs::symlink("../../../../../outside", &p).unwrap();
    has(&dir, "V2-SYMLINK");
}

#[test]
fn v2_rule_import_manifest() {
    // No manifest.
    let (dir, _, _) = with_artifacts();
    std::fs::remove_file(small(&dir).join(format!("imports/v1/{IMPORT}/manifest.json"))).unwrap();
    only(&dir, "V2-IMPORT");

    // A listed path that leaves originals/.
    let (dir, _, _) = with_artifacts();
    let sha = sha256_hex(ORIGINAL);
    let files = format!(r#"[{{"path":"../../../profile.json","sha256":"{sha}","size":1}}]"#);
    write(
        dir.path(),
        &format!("imports/v1/{IMPORT}/manifest.json"),
        &manifest(&"0".repeat(64), &files),
    );
    let c = has(&dir, "V2-IMPORT");
    assert!(c
        .diagnostics
        .iter()
        .any(|d| d.message.contains("not a plain relative path")));

    // An input_digest that does not name the listed files.
    let (dir, _, _) = with_artifacts();
    let files = format!(
        r#"[{{"path":"plan.small.yml","sha256":"{sha}","size":{}}}]"#,
        ORIGINAL.len()
    );
    write(
        dir.path(),
        &format!("imports/v1/{IMPORT}/manifest.json"),
        &manifest(&"0".repeat(64), &files),
    );
    let c = has(&dir, "V2-IMPORT");
    assert!(c.diagnostics[0].message.contains("input_digest"));

    // An unknown member.
    let (dir, _, _) = with_artifacts();
    let m = std::fs::read_to_string(small(&dir).join(format!("imports/v1/{IMPORT}/manifest.json")))
        .unwrap()
        .replace(r#""tasks":null"#, r#""tasks":null,"extra":1"#);
    write(
        dir.path(),
        &format!("imports/v1/{IMPORT}/manifest.json"),
        &m,
    );
    only(&dir, "V2-UNKNOWN-FIELD");

    // A directory whose name is not the manifest's import_id.
    let (dir, _, _) = with_artifacts();
    std::fs::rename(
        small(&dir).join(format!("imports/v1/{IMPORT}")),
        small(&dir).join("imports/v1/import_2"),
    )
    .unwrap();
    let c = has(&dir, "V2-PATH");
    assert!(
        c.diagnostics.iter().any(|d| d.code == "V2-IMPORT"),
        "profile's import is gone too"
    );
}

#[test]
fn v2_rule_import_stray_entries() {
    let (dir, _, _) = with_artifacts();
    write(dir.path(), "imports/notes.md", "x");
    only(&dir, "V2-STRAY");
    let (dir, _, _) = with_artifacts();
    write(dir.path(), &format!("imports/v1/{IMPORT}/extra.json"), "{}");
    only(&dir, "V2-STRAY");
}
