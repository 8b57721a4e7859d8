//! Evidence blobs and v1 import archives of a 2.0.0 tree: the bytes records point at.
//!
//! `evidence/blobs/sha256/<digest>` holds evidence bytes named by their SHA-256; a receipt that
//! names a blob (`artifact_path`, `artifact_digest`, `artifact_size`) needs it present with that
//! digest and size, unless the receipt declares the evidence `unavailable`.
//! `imports/v1/<import_id>/` holds a migration's `manifest.json` and `originals/`: every file
//! the manifest lists, with its sha256 and size, and nothing else. Nothing is read through a
//! symlink, every read is bounded, and a path in a record never leaves its directory.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::diag::Diagnostic;
use crate::v2::json::{sha256_hex, Jv};
use crate::v2::load::{Loader, Spec, Ty, PROFILE_VERSION};

/// The largest evidence blob (and imported original) read, in bytes: the reference's limit
/// for portable evidence.
pub const MAX_EVIDENCE_BYTES: u64 = 64 << 20;
/// How deep `originals/` may nest, and how many entries an import may hold.
const MAX_IMPORT_DEPTH: usize = 16;
const MAX_IMPORT_ENTRIES: usize = 10_000;

const MANIFEST: Spec = &[
    ("profile", Ty::Str, true),
    ("import_id", Ty::Str, true),
    ("namespace", Ty::Str, true),
    ("input_digest", Ty::Str, true),
    ("original_replay_id", Ty::Str, false),
    ("files", Ty::ObjListOrNull, true),
    ("tasks", Ty::ObjListOrNull, true),
];

const BLOB_DIR: &str = ".small/evidence/blobs/sha256";

fn is_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// What a bounded, non-following read of a file gave.
enum Hashed {
    /// sha256 and size.
    Ok(String, u64),
    /// Too large (the size seen).
    TooBig(u64),
}

impl Loader<'_> {
    fn stray(&mut self, p: &Path, what: &str) {
        let d = Diagnostic::error("V2-STRAY", format!("unexpected entry: {what}"))
            .in_file(self.rel(p))
            .with_help("move it out of .small/; this part of the profile is written only by small");
        self.push(d);
    }

    /// Hash a regular file without following a symlink, reading at most `limit` bytes.
    /// `None` (reported) when it cannot be read.
    fn hash_file(&mut self, p: &Path, limit: u64, buf: &mut [u8]) -> Option<Hashed> {
        let file = crate::fsio::open_nofollow(p);
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                self.io(p, &e);
                return None;
            }
        };
        match file.metadata() {
            Ok(m) if !m.is_file() => {
                let d = Diagnostic::error("V2-NOT-FILE", "not a regular file")
                    .in_file(self.rel(p))
                    .with_help("evidence and imported originals are regular files; remove or replace this entry");
                self.push(d);
                return None;
            }
            Ok(m) if m.len() > limit => return Some(Hashed::TooBig(m.len())),
            Ok(_) => {}
            Err(e) => {
                self.io(p, &e);
                return None;
            }
        }
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut reader = file.take(limit + 1);
        loop {
            match reader.read(buf) {
                Ok(0) => break,
                Ok(n) => {
                    hasher.update(&buf[..n]);
                    size += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.io(p, &e);
                    return None;
                }
            }
        }
        if size > limit {
            return Some(Hashed::TooBig(size));
        }
        Some(Hashed::Ok(hex::encode(hasher.finalize()), size))
    }

    /// `evidence/`: only `blobs/sha256/<digest>` files whose bytes hash to their name; then
    /// every receipt's blob reference.
    pub(super) fn check_evidence(&mut self, small_dir: &Path) {
        let evidence = small_dir.join("evidence");
        let mut blobs: BTreeMap<String, u64> = BTreeMap::new();
        let mut buf = vec![0u8; 64 * 1024];
        for (name, path, ty) in self.entries(&evidence).unwrap_or_default() {
            if name != "blobs" || !ty.is_dir() {
                if ty.is_symlink() {
                    self.symlink(&path);
                } else {
                    self.stray(&path, "evidence/ holds only blobs/sha256/");
                }
                continue;
            }
            for (name, path, ty) in self.entries(&path).unwrap_or_default() {
                if name != "sha256" || !ty.is_dir() {
                    if ty.is_symlink() {
                        self.symlink(&path);
                    } else {
                        self.stray(&path, "evidence/blobs/ holds only sha256/");
                    }
                    continue;
                }
                for (name, path, ty) in self.entries(&path).unwrap_or_default() {
                    if ty.is_symlink() {
                        self.symlink(&path);
                        continue;
                    }
                    if !is_digest(&name) || ty.is_dir() {
                        self.stray(
                            &path,
                            "an evidence blob is a file named by its lowercase hex SHA-256",
                        );
                        continue;
                    }
                    match self.hash_file(&path, MAX_EVIDENCE_BYTES, &mut buf) {
                        Some(Hashed::Ok(sha, size)) if sha == name => {
                            blobs.insert(name, size);
                        }
                        Some(Hashed::Ok(sha, _)) => {
                            let d = Diagnostic::error(
                                "V2-BLOB",
                                format!("evidence blob's bytes hash to {sha}, not to its name"),
                            )
                            .in_file(self.rel(&path))
                            .with_help("the evidence was changed after it was saved; restore it from version control, or remove it and the receipts that name it");
                            self.push(d);
                        }
                        Some(Hashed::TooBig(n)) => {
                            let d = Diagnostic::error(
                                "V2-SIZE",
                                format!("evidence blob is {n} bytes, over the {MAX_EVIDENCE_BYTES}-byte limit"),
                            )
                            .in_file(self.rel(&path))
                            .with_help("evidence blobs are at most 64 MiB; keep larger artifacts outside .small/ and declare them");
                            self.push(d);
                        }
                        None => {}
                    }
                }
            }
        }
        let receipts = std::mem::take(&mut self.store.receipts);
        for r in &receipts {
            self.check_receipt_blob(r, &blobs, small_dir);
        }
        self.store.receipts = receipts;
        self.store.verified_blobs = blobs;
    }

    fn check_receipt_blob(
        &mut self,
        r: &crate::v2::load::Receipt,
        blobs: &BTreeMap<String, u64>,
        small_dir: &Path,
    ) {
        let named = !r.artifact_path.is_empty()
            || !r.artifact_digest.is_empty()
            || r.artifact_size.is_some();
        let mut problems: Vec<String> = Vec::new();
        if !named {
            if r.strength == "verified_artifact" && r.availability != "unavailable" {
                problems.push("a verified_artifact receipt names no artifact (artifact_path, artifact_digest, artifact_size)".into());
            }
        } else if !is_digest(&r.artifact_digest) {
            problems.push(format!(
                "artifact_digest \"{}\" is not a lowercase hex SHA-256",
                r.artifact_digest
            ));
        } else {
            let want = format!("{BLOB_DIR}/{}", r.artifact_digest);
            if r.artifact_path != want {
                problems.push(format!(
                    "artifact_path \"{}\" is not {want}: evidence lives under .small/evidence/blobs/sha256/, named by its digest",
                    r.artifact_path
                ));
            }
            match (r.artifact_size, blobs.get(&r.artifact_digest)) {
                (None, _) => problems.push("artifact_size is missing".into()),
                (Some(n), _) if n < 0 => problems.push(format!("artifact_size {n} is negative")),
                (Some(n), Some(&have)) if have != n as u64 => problems.push(format!(
                    "the evidence blob is {have} bytes, the receipt says {n}"
                )),
                (Some(_), Some(_)) => {}
                (Some(_), None) if r.availability == "unavailable" => {}
                (Some(_), None) => {
                    // A blob that exists but was refused above is already reported.
                    if std::fs::symlink_metadata(
                        small_dir
                            .join("evidence/blobs/sha256")
                            .join(&r.artifact_digest),
                    )
                    .is_err()
                    {
                        problems.push(format!(
                            "its evidence blob {BLOB_DIR}/{} is missing",
                            r.artifact_digest
                        ));
                    }
                }
            }
        }
        for p in problems {
            let d = Diagnostic::error("V2-EVIDENCE", format!("receipt {}: {p}", r.id))
                .in_file(r.file.clone())
                .with_help("restore .small/evidence/ from version control (blobs travel with the records), or record a new receipt that declares the evidence unavailable");
            self.push(d);
        }
    }

    /// `imports/v1/<import_id>/`: the manifest, and `originals/` holding exactly the files it
    /// lists with their sha256 and size. `profile.json`'s `import_id` names an import present.
    pub(super) fn check_imports(&mut self, small_dir: &Path) {
        let imports = small_dir.join("imports");
        let mut found: Vec<String> = Vec::new();
        for (name, path, ty) in self.entries(&imports).unwrap_or_default() {
            if name != "v1" || !ty.is_dir() {
                if ty.is_symlink() {
                    self.symlink(&path);
                } else {
                    self.stray(&path, "imports/ holds only v1/");
                }
                continue;
            }
            for (name, path, ty) in self.entries(&path).unwrap_or_default() {
                if ty.is_symlink() {
                    self.symlink(&path);
                } else if !ty.is_dir() || !name.starts_with("import_") {
                    self.stray(&path, "imports/v1/ holds only import_<id>/ directories");
                } else {
                    self.check_import(&name, &path);
                    found.push(name);
                }
            }
        }
        let wanted = self
            .store
            .profile
            .as_ref()
            .map(|p| p.import_id.clone())
            .unwrap_or_default();
        if !wanted.is_empty() && !found.contains(&wanted) {
            let d = Diagnostic::error(
                "V2-IMPORT",
                format!("profile.json names the import {wanted}, but .small/imports/v1/{wanted}/ is missing"),
            )
            .in_file(self.rel(&small_dir.join("profile.json")))
            .with_help("restore .small/imports/ from version control: it holds every byte of the migrated v1 workspace");
            self.push(d);
        }
    }

    fn import_problem(&mut self, path: &Path, msg: String) {
        let d = Diagnostic::error("V2-IMPORT", msg)
            .in_file(self.rel(path))
            .with_help("the archived v1 originals must be exactly the bytes the manifest lists; restore .small/imports/ from version control");
        self.push(d);
    }

    fn check_import(&mut self, id: &str, dir: &Path) {
        let manifest_path = dir.join("manifest.json");
        let mut has_originals = false;
        for (name, path, ty) in self.entries(dir).unwrap_or_default() {
            match name.as_str() {
                "manifest.json" if ty.is_file() => {}
                "originals" if ty.is_dir() => has_originals = true,
                _ if ty.is_symlink() => self.symlink(&path),
                _ => self.stray(&path, "an import holds only manifest.json and originals/"),
            }
        }
        let bytes = match self.read_bounded(&manifest_path) {
            Some(Some(b)) => b,
            Some(None) => {
                self.import_problem(&manifest_path, "the import has no manifest.json".into());
                return;
            }
            None => return,
        };
        let Some(v) = self.parse_record(&manifest_path, &bytes, "import manifest", MANIFEST) else {
            return;
        };
        if v.str_of("profile") != PROFILE_VERSION {
            let msg = format!(
                "the manifest's profile is \"{}\", not \"{PROFILE_VERSION}\"",
                v.str_of("profile")
            );
            self.import_problem(&manifest_path, msg);
        }
        if v.str_of("import_id") != id {
            let d = Diagnostic::error(
                "V2-PATH",
                format!(
                    "the manifest's import_id {} does not match its directory {id}",
                    v.str_of("import_id")
                ),
            )
            .in_file(self.rel(&manifest_path))
            .with_help(
                "an import's path is its identity: restore .small/imports/ from version control",
            );
            self.push(d);
        }
        // The listed files: a safe relative path each, once, with sha256 and size.
        let mut listed: BTreeMap<String, (String, i64)> = BTreeMap::new();
        let files: &[Jv] = match v.get("files") {
            Some(Jv::Arr(items)) => items,
            _ => &[],
        };
        for (i, f) in files.iter().enumerate() {
            let path = f.str_of("path");
            let sha = f.str_of("sha256");
            let size = match f.get("size") {
                Some(Jv::Int(n)) => *n,
                _ => -1,
            };
            let unknown = match f {
                Jv::Obj(m) => m
                    .iter()
                    .any(|(k, _)| !matches!(k.as_str(), "path" | "sha256" | "size")),
                _ => true,
            };
            if unknown || !is_digest(sha) || size < 0 {
                let msg = format!("files[{i}] is not {{path, sha256, size}} with a lowercase hex sha256 and a size");
                self.import_problem(&manifest_path, msg);
                continue;
            }
            if !safe_relative(path) {
                let msg = format!(
                    "files[{i}] path \"{path}\" is not a plain relative path inside originals/"
                );
                self.import_problem(&manifest_path, msg);
                continue;
            }
            if listed
                .insert(path.to_string(), (sha.to_string(), size))
                .is_some()
            {
                self.import_problem(&manifest_path, format!("the file {path} is listed twice"));
            }
        }
        // input_digest names the listed set (sorted `path NUL sha256 NUL size`, NUL-joined).
        let lines: Vec<String> = listed
            .iter()
            .map(|(p, (sha, size))| format!("{p}\0{sha}\0{size}"))
            .collect();
        let digest = sha256_hex(lines.join("\0").as_bytes());
        if digest != v.str_of("input_digest") {
            let msg = format!(
                "the manifest's input_digest {} is not the digest of the files it lists ({digest})",
                v.str_of("input_digest")
            );
            self.import_problem(&manifest_path, msg);
        }
        if !has_originals {
            if !listed.is_empty() {
                self.import_problem(dir, "the import has no originals/ directory".into());
            }
            return;
        }
        // What originals/ holds, walked without following links.
        let originals = dir.join("originals");
        let mut present: BTreeMap<String, PathBuf> = BTreeMap::new();
        self.walk_originals(&originals, "", 0, &mut present);
        let mut buf = vec![0u8; 64 * 1024];
        for (rel, (sha, size)) in &listed {
            let Some(path) = present.remove(rel) else {
                self.import_problem(
                    &originals.join(rel),
                    format!("the manifest lists {rel}, but the import does not hold it"),
                );
                continue;
            };
            match self.hash_file(&path, MAX_EVIDENCE_BYTES, &mut buf) {
                Some(Hashed::Ok(have_sha, have_size))
                    if &have_sha == sha && have_size == *size as u64 => {}
                Some(Hashed::Ok(have_sha, have_size)) => self.import_problem(
                    &path,
                    format!("the original is {have_size} bytes with sha256 {have_sha}; the manifest lists {size} bytes with sha256 {sha}"),
                ),
                Some(Hashed::TooBig(n)) => self.import_problem(
                    &path,
                    format!("the original is {n} bytes, over the {MAX_EVIDENCE_BYTES}-byte limit"),
                ),
                None => {}
            }
        }
        for (rel, path) in present {
            self.import_problem(
                &path,
                format!("{rel} is not listed in the import's manifest"),
            );
        }
    }

    fn walk_originals(
        &mut self,
        dir: &Path,
        prefix: &str,
        depth: usize,
        out: &mut BTreeMap<String, PathBuf>,
    ) {
        if depth > MAX_IMPORT_DEPTH {
            self.import_problem(
                dir,
                format!("originals nest deeper than {MAX_IMPORT_DEPTH} levels"),
            );
            return;
        }
        for (name, path, ty) in self.entries(dir).unwrap_or_default() {
            if out.len() >= MAX_IMPORT_ENTRIES {
                self.import_problem(
                    dir,
                    format!("the import holds more than {MAX_IMPORT_ENTRIES} files"),
                );
                return;
            }
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if ty.is_symlink() {
                self.symlink(&path);
            } else if ty.is_dir() {
                self.walk_originals(&path, &rel, depth + 1, out);
            } else {
                out.insert(rel, path);
            }
        }
    }
}

/// A relative path of plain components (no `..`, `.`, empty component, absolute path or
/// backslash): it cannot leave the directory it is joined to.
fn safe_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\\')
        && !p.contains('\0')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}
