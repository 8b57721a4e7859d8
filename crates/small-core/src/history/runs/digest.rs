//! Artifact digests of a snapshot, in the shape the reference implementation records them in
//! `meta.json` (from its v1.1), and `small run verify`: recompute them from the stored copies
//! and compare.
//!
//! `artifact_digests` maps each copied artifact's file name to the SHA-256 (lower-case hex) of
//! its raw bytes. `artifact_digest` is the SHA-256 of the lines `<file name>\t<hex digest>`
//! joined by `\n` (no trailing newline), one line per artifact present, in the order intent,
//! plan, progress, handoff, constraints (the required artifacts, then the optional one).
//! `workspace.small.yml` is not covered: taking a snapshot may change it.
//!
//! Verification is stricter than the reference's in one place
//! (docs/decisions/0098-run-verify-unverifiable-fails.md): a snapshot that records no digest
//! at all cannot be verified, and that is reported as a failure unless the caller explicitly
//! accepts unverifiable snapshots.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{safe, Meta, RunError, META_FILE, OPTIONAL_ARTIFACTS, REQUIRED_ARTIFACTS};

/// The artifact file names in the order the aggregate digest lists them.
pub fn digest_order() -> Vec<&'static str> {
    REQUIRED_ARTIFACTS
        .iter()
        .chain(OPTIONAL_ARTIFACTS.iter())
        .map(|k| k.file_name())
        .collect()
}

/// The aggregate digest of per-file digests (`name -> hex`): see the module comment. Files
/// that are not artifacts are ignored.
pub fn aggregate_digest(per_file: &BTreeMap<String, String>) -> String {
    let lines: Vec<String> = digest_order()
        .into_iter()
        .filter_map(|name| per_file.get(name).map(|d| format!("{name}\t{d}")))
        .collect();
    safe::sha256_hex(lines.join("\n").as_bytes())
}

/// Record the reference-shaped digests of the copied files in `meta`.
pub fn record(meta: &mut Meta, per_file: &BTreeMap<String, String>) {
    meta.artifact_digests = digest_order()
        .into_iter()
        .filter_map(|n| per_file.get(n).map(|d| (n.to_string(), d.clone())))
        .collect();
    meta.artifact_digest = aggregate_digest(&meta.artifact_digests);
}

/// Why one file does not match what the snapshot recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchReason {
    /// The stored bytes hash to another digest.
    Changed,
    /// A digest is recorded but the file is not in the snapshot.
    MissingOnDisk,
    /// The snapshot holds an artifact no digest was recorded for.
    NotRecorded,
}

impl MismatchReason {
    pub fn as_str(self) -> &'static str {
        match self {
            MismatchReason::Changed => "changed",
            MismatchReason::MissingOnDisk => "missing_on_disk",
            MismatchReason::NotRecorded => "not_recorded",
        }
    }
}

/// One file that does not match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DigestMismatch {
    pub filename: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computed: Option<String>,
    pub reason: MismatchReason,
}

/// The verdict of a verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyStatus {
    /// Every recorded digest matches the stored files.
    Ok,
    /// Some recorded digest does not match (or a recorded file is gone).
    Mismatch,
    /// The snapshot records no digest, so nothing could be checked.
    Unverifiable,
}

impl VerifyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            VerifyStatus::Ok => "ok",
            VerifyStatus::Mismatch => "mismatch",
            VerifyStatus::Unverifiable => "unverifiable",
        }
    }
}

/// What `run verify` found. Its first fields are the reference's JSON keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotVerification {
    #[serde(rename = "replayId")]
    pub replay_id: String,
    /// Whether `meta.json` records an aggregate `artifact_digest`.
    pub digest_recorded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_digest: Option<String>,
    pub computed_digest: String,
    /// True only when the status is `ok`.
    #[serde(rename = "match")]
    pub matches: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mismatches: Vec<DigestMismatch>,
    /// The snapshot verified: `<replayId>` or `<replayId>~N`.
    pub snapshot: String,
    pub status: VerifyStatus,
    /// Which recorded digests were compared: `artifact_digest`, `artifact_digests`, `files`.
    pub checked: Vec<&'static str>,
    /// The artifact digests computed from the stored files.
    pub computed_digests: BTreeMap<String, String>,
}

/// A snapshot named by a replay ID, opened for verification: its id, its name in the store,
/// its directory and the `meta.json` it recorded.
pub struct Opened {
    pub id: String,
    pub name: String,
    pub dir: std::path::PathBuf,
    pub meta: Meta,
}

/// Open the snapshot a replay ID (or prefix, or `ID~N`) names, for [`crate::history::runs::verify`].
///
/// Errors (an unknown ID, a missing `meta.json`) are usage errors; a `meta.json` that is not
/// JSON, or a snapshot that is a link, is an invalid state.
pub fn open(store: &Path, query: &str) -> Result<Opened, RunError> {
    // An unknown ID is a usage error here (`resolve` calls it an invalid state).
    let name = super::resolve(store, query).map_err(|e| RunError {
        kind: super::ErrorKind::Usage,
        ..e
    })?;
    let dir = store.join(&name);
    let (id, _) = super::parse_snapshot_name(&name)
        .ok_or_else(|| RunError::usage(format!("`{}` is not a snapshot name", name)))?;
    let id = id.to_ascii_lowercase();
    match safe::entry_type(&dir)? {
        safe::Entry::Dir => {}
        safe::Entry::Missing => {
            return Err(RunError::usage(format!("run snapshot not found: {name}")))
        }
        _ => {
            return Err(RunError::invalid(format!(
                "{} is not a snapshot directory (a link or a file); it is not followed",
                dir.display()
            )))
        }
    }
    let meta_path = dir.join(META_FILE);
    let meta_bytes = safe::read_stored_file(&meta_path)?.ok_or_else(|| {
        RunError::usage(format!(
            "cannot verify snapshot {name}: {} does not exist",
            meta_path.display()
        ))
        .with_help("the snapshot records no digests without it; take it again with `small run snapshot --force`")
    })?;
    let meta: Meta = serde_json::from_slice(&meta_bytes).map_err(|e| {
        RunError::invalid(format!(
            "snapshot {name} is damaged: {}:{}:{}: {e}",
            meta_path.display(),
            e.line(),
            e.column()
        ))
    })?;

    Ok(Opened {
        id,
        name,
        dir,
        meta,
    })
}

/// Verify a v1 snapshot against the digests its `meta.json` recorded. A missing required
/// artifact or an unreadable file is a usage error; a stored file that is a link is an
/// invalid state.
pub fn verify_v1(o: &Opened) -> Result<SnapshotVerification, RunError> {
    let (id, name, dir, meta) = (&o.id, &o.name, &o.dir, &o.meta);
    let mut computed = BTreeMap::new();
    for file in digest_order() {
        let path = dir.join(file);
        match safe::hash_stored_file(&path)? {
            Some((sha, _)) => {
                computed.insert(file.to_string(), sha);
            }
            None if OPTIONAL_ARTIFACTS.iter().any(|k| k.file_name() == file) => {}
            None => {
                return Err(RunError::usage(format!(
                    "cannot verify snapshot {}: {} is missing",
                    super::short_name(name, 16),
                    path.display()
                ))
                .with_help("a snapshot always holds intent, plan, progress and handoff; this one is incomplete"))
            }
        }
    }
    Ok(compare(id, name, meta, computed))
}

/// Compare computed digests with those `meta` recorded.
pub fn compare(
    replay_id: &str,
    snapshot: &str,
    meta: &Meta,
    computed: BTreeMap<String, String>,
) -> SnapshotVerification {
    let aggregate = aggregate_digest(&computed);
    let mut checked = Vec::new();
    let mut mismatches: Vec<DigestMismatch> = Vec::new();
    let recorded_aggregate =
        Some(meta.artifact_digest.trim().to_ascii_lowercase()).filter(|d| !d.is_empty());
    let mut aggregate_ok = true;
    if let Some(r) = &recorded_aggregate {
        checked.push("artifact_digest");
        aggregate_ok = *r == aggregate;
    }
    for (label, map) in [
        ("artifact_digests", &meta.artifact_digests),
        ("files", &meta.files),
    ] {
        if map.is_empty() {
            continue;
        }
        checked.push(label);
        for (file, recorded) in map {
            let recorded = recorded.trim().to_ascii_lowercase();
            let m = match computed.get(file) {
                None => DigestMismatch {
                    filename: file.clone(),
                    recorded: Some(recorded),
                    computed: None,
                    reason: MismatchReason::MissingOnDisk,
                },
                Some(c) if *c != recorded => DigestMismatch {
                    filename: file.clone(),
                    recorded: Some(recorded),
                    computed: Some(c.clone()),
                    reason: MismatchReason::Changed,
                },
                Some(_) => continue,
            };
            mismatches.push(m);
        }
        for (file, c) in &computed {
            if !map.contains_key(file) {
                mismatches.push(DigestMismatch {
                    filename: file.clone(),
                    recorded: None,
                    computed: Some(c.clone()),
                    reason: MismatchReason::NotRecorded,
                });
            }
        }
    }
    mismatches.sort_by(|a, b| (&a.filename, a.reason).cmp(&(&b.filename, b.reason)));
    mismatches.dedup();
    let status = if checked.is_empty() {
        VerifyStatus::Unverifiable
    } else if aggregate_ok && mismatches.is_empty() {
        VerifyStatus::Ok
    } else {
        VerifyStatus::Mismatch
    };
    SnapshotVerification {
        replay_id: replay_id.to_string(),
        digest_recorded: recorded_aggregate.is_some(),
        recorded_digest: recorded_aggregate,
        computed_digest: aggregate,
        matches: status == VerifyStatus::Ok,
        mismatches,
        snapshot: snapshot.to_string(),
        status,
        checked,
        computed_digests: computed,
    }
}

/// The aggregate digest of a live workspace's artifacts (`<root>/.small/`), as a snapshot
/// taken now would record it, and the per-file digests. Links and special files are refused.
pub fn live_digests(root: &Path) -> Result<(String, BTreeMap<String, String>), RunError> {
    let small = root.join(crate::spec::consts::SMALL_DIR);
    let mut per_file = BTreeMap::new();
    for name in digest_order() {
        let path = small.join(name);
        let Some(mut f) = safe::open_live_file(&path)? else {
            continue;
        };
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut total: u64 = 0;
        loop {
            let n = std::io::Read::read(&mut f, &mut buf)
                .map_err(|e| RunError::io("cannot read", &path, &e))?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if total > safe::MAX_FILE_BYTES {
                return Err(RunError::usage(format!(
                    "{} is larger than {} bytes",
                    path.display(),
                    safe::MAX_FILE_BYTES
                )));
            }
            h.update(&buf[..n]);
        }
        per_file.insert(name.to_string(), hex::encode(h.finalize()));
    }
    Ok((aggregate_digest(&per_file), per_file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::runs::verify;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn aggregate_lists_files_in_reference_order_without_trailing_newline() {
        let per = map(&[
            ("constraints.small.yml", "c"),
            ("handoff.small.yml", "h"),
            ("intent.small.yml", "i"),
            ("plan.small.yml", "p"),
            ("progress.small.yml", "g"),
            ("other.txt", "x"),
        ]);
        let text = "intent.small.yml\ti\nplan.small.yml\tp\nprogress.small.yml\tg\nhandoff.small.yml\th\nconstraints.small.yml\tc";
        assert_eq!(aggregate_digest(&per), safe::sha256_hex(text.as_bytes()));
        let mut no_constraints = per.clone();
        no_constraints.remove("constraints.small.yml");
        assert_ne!(aggregate_digest(&no_constraints), aggregate_digest(&per));
    }

    fn meta_with(per: &BTreeMap<String, String>) -> Meta {
        let mut m = Meta::default();
        record(&mut m, per);
        m
    }

    #[test]
    fn outcomes_of_comparing() {
        let per = map(&[
            ("intent.small.yml", "01"),
            ("plan.small.yml", "02"),
            ("progress.small.yml", "03"),
            ("handoff.small.yml", "04"),
        ]);
        let meta = meta_with(&per);
        let v = compare("id", "id", &meta, per.clone());
        assert_eq!(v.status, VerifyStatus::Ok);
        assert!(v.matches && v.digest_recorded);

        let mut changed = per.clone();
        changed.insert("plan.small.yml".into(), "ff".into());
        let v = compare("id", "id", &meta, changed);
        assert_eq!(v.status, VerifyStatus::Mismatch);
        assert_eq!(v.mismatches.len(), 1);
        assert_eq!(v.mismatches[0].reason, MismatchReason::Changed);

        let mut extra = per.clone();
        extra.insert("constraints.small.yml".into(), "05".into());
        let v = compare("id", "id", &meta, extra);
        assert_eq!(v.mismatches[0].reason, MismatchReason::NotRecorded);

        // Only the aggregate tampered with: a mismatch listing no file.
        let mut m = meta.clone();
        m.artifact_digest = "00".repeat(32);
        let v = compare("id", "id", &m, per.clone());
        assert_eq!(v.status, VerifyStatus::Mismatch);
        assert!(v.mismatches.is_empty());

        // No digest at all: unverifiable, never `ok`.
        let v = compare("id", "id", &Meta::default(), per.clone());
        assert_eq!(v.status, VerifyStatus::Unverifiable);
        assert!(!v.matches);

        // Our older snapshots record `files` only: they are checked file by file.
        let m = Meta {
            files: per.clone(),
            ..Meta::default()
        };
        let mut changed = per.clone();
        changed.insert("progress.small.yml".into(), "ee".into());
        assert_eq!(compare("id", "id", &m, per).status, VerifyStatus::Ok);
        assert_eq!(
            compare("id", "id", &m, changed).status,
            VerifyStatus::Mismatch
        );
    }

    const V11_CASES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/v1.1/cases"
    );

    /// The formula reproduces the `artifact_digest` the reference recorded, and verification
    /// gives the recorded outcome on every mutation of its snapshot.
    #[test]
    fn reference_snapshots_verify_as_recorded() {
        let Some(cases) = small_testkit::conformance_path(V11_CASES) else {
            return;
        };
        let id = "7e217f28d9d46fdaadec3f4df4cf41893ad885104e3d4c076d07d8898e98355f";
        let store = |case: &str| cases.join(case).join(".small-runs");
        // Untouched: the per-file digests of the stored bytes give the recorded aggregate.
        let meta: Meta = serde_json::from_slice(
            &std::fs::read(store("run-snapshot-by-v1.1.2").join(id).join(META_FILE)).unwrap(),
        )
        .unwrap();
        assert_eq!(meta.artifact_digests.len(), 5);
        assert_eq!(
            aggregate_digest(&meta.artifact_digests),
            meta.artifact_digest
        );
        let v = verify(&store("run-snapshot-by-v1.1.2"), id).unwrap();
        assert_eq!(v.status, VerifyStatus::Ok, "{v:?}");
        assert_eq!(v.computed_digest, meta.artifact_digest);
        assert_eq!(v.computed_digests, meta.artifact_digests);

        let outcome = |case: &str| verify(&store(case), id).map(|v| (v.status, v.mismatches));
        let reasons = |case: &str| {
            let (status, m) = outcome(case).unwrap();
            let list: Vec<(String, &'static str)> = m
                .iter()
                .map(|m| (m.filename.clone(), m.reason.as_str()))
                .collect();
            (status, list)
        };
        let file = |f: &str, r: &'static str| vec![(f.to_string(), r)];
        use VerifyStatus::*;
        assert_eq!(
            reasons("run-snapshot-by-v1.1.2--progress-byte"),
            (Mismatch, file("progress.small.yml", "changed"))
        );
        assert_eq!(
            reasons("run-snapshot-by-v1.1.2--constraints-deleted"),
            (Mismatch, file("constraints.small.yml", "missing_on_disk"))
        );
        assert_eq!(
            reasons("run-snapshot-by-v1.1.2--meta-file-digest-changed"),
            (Mismatch, file("plan.small.yml", "changed"))
        );
        assert_eq!(
            reasons("run-snapshot-by-v1.1.2--meta-aggregate-digest-changed"),
            (Mismatch, vec![])
        );
        assert_eq!(
            reasons("run-snapshot-by-v1.1.2--meta-other-field-changed"),
            (Ok, vec![])
        );
        for case in [
            "run-snapshot-by-v1.1.2--meta-digests-removed",
            "run-snapshot-by-v1.0.10",
            "run-snapshot-by-v1.0.10--progress-byte",
        ] {
            assert_eq!(reasons(case), (Unverifiable, vec![]), "{case}");
        }
        for case in [
            "run-snapshot-by-v1.1.2--handoff-deleted",
            "run-snapshot-by-v1.1.2--meta-deleted",
        ] {
            let e = outcome(case).unwrap_err();
            assert_eq!(e.kind, super::super::ErrorKind::Usage, "{case}: {e}");
        }
        let unknown = verify(&store("run-snapshot-by-v1.1.2"), &"0".repeat(64)).unwrap_err();
        assert_eq!(unknown.kind, super::super::ErrorKind::Usage);
    }
}
