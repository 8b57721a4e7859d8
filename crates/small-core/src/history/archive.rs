//! Archives: a copy of a run's artifacts and workspace metadata that proves it is intact.
//!
//! `archive` copies the canonical artifacts and `workspace.small.yml` of `.small/` into
//! `.small-archive/<replayId>/` (or another directory) with `archive.small.yml`: protocol
//! version, when and from where it was archived, the replay ID, and the SHA-256 of every
//! file. The directory is staged beside its destination and renamed into place; its files
//! are read-only afterwards. `verify` re-hashes an archive against its manifest and reports
//! every file that changed, is missing, or was added.

use std::path::{Path, PathBuf};

use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::history::runs::index::{self, quote, IndexEntry};
use crate::history::runs::{self, safe, RunError};
use crate::spec::consts::{
    ArtifactKind, ARCHIVE_DIR, PROTOCOL_VERSION, SMALL_DIR, TOOL_VERSION, WORKSPACE_FILE,
};
use crate::yaml;

pub mod v2;

/// The manifest file of an archive.
pub const MANIFEST_FILE: &str = "archive.small.yml";

/// The files archived when `--include` is not given (missing ones are skipped).
pub fn default_include() -> Vec<String> {
    let mut v: Vec<String> = ArtifactKind::ALL
        .iter()
        .map(|k| k.file_name().to_string())
        .collect();
    v.push(WORKSPACE_FILE.to_string());
    v
}

/// One file recorded in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchiveFile {
    pub name: String,
    pub sha256: String,
}

/// `archive.small.yml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manifest {
    pub small_version: String,
    pub archived_at: String,
    pub source_dir: String,
    #[serde(rename = "replayId")]
    pub replay_id: String,
    pub files: Vec<ArchiveFile>,
}

impl Manifest {
    /// Whether this manifest lists exactly `files` of `replay_id` (any case), in the format
    /// `small_version` names: what a writer about to write that asks of an archive already
    /// there.
    pub fn describes(&self, small_version: &str, replay_id: &str, files: &[ArchiveFile]) -> bool {
        self.small_version == small_version
            && self.replay_id.eq_ignore_ascii_case(replay_id)
            && self.files == files
    }

    /// The manifest as YAML (every string double-quoted).
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("small_version: {}\n", quote(&self.small_version)));
        out.push_str(&format!("archived_at: {}\n", quote(&self.archived_at)));
        out.push_str(&format!("source_dir: {}\n", quote(&self.source_dir)));
        out.push_str(&format!("replayId: {}\n", quote(&self.replay_id)));
        out.push_str(&format!("tool_version: {}\n", quote(TOOL_VERSION)));
        if self.files.is_empty() {
            out.push_str("files: []\n");
        } else {
            out.push_str("files:\n");
            for f in &self.files {
                out.push_str(&format!(
                    "  - name: {}\n    sha256: {}\n",
                    quote(&f.name),
                    quote(&f.sha256)
                ));
            }
        }
        out
    }
}

/// What to archive.
#[derive(Debug, Clone, Default)]
pub struct ArchiveOptions {
    /// Output directory; `<root>/.small-archive/<replayId>` when `None`. Relative paths are
    /// taken relative to the workspace root.
    pub out: Option<PathBuf>,
    /// File names inside `.small/`; the canonical set when `None`.
    pub include: Option<Vec<String>>,
    /// Replace an existing archive at the destination.
    pub force: bool,
}

/// What `create` did.
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveReport {
    pub dir: PathBuf,
    #[serde(rename = "replayId")]
    pub replay_id: String,
    /// The frontier of a 2.0.0 archive (also its `replayId`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontier: Option<String>,
    pub files: Vec<ArchiveFile>,
    /// An identical archive was already there; nothing was written.
    pub unchanged: bool,
    /// An existing, different archive was replaced (`force`).
    pub replaced: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Archive the v1 workspace at `root`.
pub fn create(
    root: &Path,
    opts: &ArchiveOptions,
    stored: &dyn StoredArchives,
) -> Result<ArchiveReport, RunError> {
    let small = runs::require_small_dir(root)?;
    let explicit = opts.include.is_some();
    let include = opts.include.clone().unwrap_or_else(default_include);

    // Check the names, then open every file in one consistent set (under the workspace
    // lock): nothing is written when any of them is unusable.
    let mut names: Vec<String> = Vec::new();
    for name in &include {
        let name = name.trim();
        safe::check_file_name(name, "--include file")?;
        if name == MANIFEST_FILE {
            return Err(RunError::usage(format!(
                "{MANIFEST_FILE} is the archive's own manifest and cannot be included"
            )));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    let handoff_name = ArtifactKind::Handoff.file_name();
    let mut wanted = names.clone();
    if !wanted.iter().any(|n| n == handoff_name) {
        wanted.push(handoff_name.to_string());
    }
    let mut live = runs::LiveFiles::open(root, &wanted)?;
    let label = crate::spec::consts::small_rel(handoff_name);
    let Some(handoff_bytes) = live.read(handoff_name)? else {
        return Err(
            RunError::invalid(format!("{label} is missing, so the run has no replayId"))
                .with_help("run `small handoff --summary \"<summary>\"` first"),
        );
    };
    let handoff = runs::handoff_info(&handoff_bytes, &label)?;
    if handoff.replay_id.is_empty() {
        return Err(RunError::invalid(format!(
            "{label} has no replayId to name the archive after"
        ))
        .with_help("run `small handoff --summary \"<summary>\"` first"));
    }
    if !safe::is_replay_id(&handoff.replay_id) {
        return Err(RunError::invalid(format!(
            "{label}: replayId.value `{}` is not a replay ID (64 hex digits)",
            handoff.replay_id.escape_debug()
        ))
        .with_help("run `small handoff` to record a valid one"));
    }
    let replay_id = handoff.replay_id.to_ascii_lowercase();

    if explicit {
        if let Some(missing) = names.iter().find(|n| !live.has(n)) {
            return Err(
                RunError::usage(format!("{SMALL_DIR}/{missing} does not exist"))
                    .with_help("--include names files inside .small/"),
            );
        }
    }

    let dest = match &opts.out {
        None => root.join(ARCHIVE_DIR).join(&replay_id),
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => root.join(p),
    };
    let dest = std::path::absolute(&dest).unwrap_or(dest);
    let dest_c = safe::canonical_or_planned(&dest);
    let small_c = safe::canonical_or_planned(&small);
    if dest_c.starts_with(&small_c) || small_c.starts_with(&dest_c) {
        return Err(RunError::usage(format!(
            "the archive directory {} overlaps {SMALL_DIR}/",
            dest.display()
        ))
        .with_help("choose an --out directory outside .small/"));
    }

    // Whether an archive is already there (decided once the files are hashed).
    let existing = existing_archive(&dest, stored)?;

    // Copied and hashed once, under the lock, through a fixed buffer, into a directory
    // staged beside the destination; published below, or removed when dropped.
    let parent = dest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    // The commit is asked of git while the files are copied.
    let git_sha = {
        let root = root.to_path_buf();
        std::thread::Builder::new().spawn(move || runs::git_head(&root).map(|(sha, _)| sha))
    };
    let staged = safe::StagedDir::new(&parent, ".tmp-archive-")?;
    let copied = live.copy_into(&staged, &names)?;
    drop(live);
    let listed: Vec<ArchiveFile> = copied
        .into_iter()
        .map(|f| ArchiveFile {
            name: f.name,
            sha256: f.sha256,
        })
        .collect();

    let mut replaced = false;
    if let Some(m) = existing {
        let same = m.replay_id.eq_ignore_ascii_case(&replay_id)
            && m.files == listed
            && verify(&dest, stored).map(|r| r.ok).unwrap_or(false);
        if same {
            return Ok(ArchiveReport {
                dir: dest,
                replay_id,
                frontier: None,
                files: listed,
                unchanged: true,
                replaced: false,
                warnings: Vec::new(),
            });
        }
        if !opts.force {
            return Err(RunError::invalid(format!(
                "{} already holds a different archive of this run; archives are never modified",
                dest.display()
            ))
            .with_help("pass --force to replace it, or choose another --out"));
        }
        replaced = true;
    }

    let manifest = Manifest {
        small_version: PROTOCOL_VERSION.to_string(),
        archived_at: OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default(),
        source_dir: root.display().to_string(),
        replay_id: replay_id.clone(),
        files: listed.clone(),
    };
    staged.add_file(MANIFEST_FILE, manifest.render().as_bytes())?;
    staged.publish(&dest, replaced)?;

    let mut warnings = Vec::new();
    let store = runs::store_dir(root, None);
    let entry = IndexEntry {
        replay_id: replay_id.clone(),
        timestamp: manifest.archived_at.clone(),
        // Asked here when no thread could be started.
        git_sha: match git_sha {
            Ok(h) => h.join().ok().flatten(),
            Err(_) => runs::git_head(root).map(|(sha, _)| sha),
        }
        .unwrap_or_default(),
        summary: handoff.summary,
        previous_replay_id: String::new(),
        reason: "archive".into(),
    };
    if let Err(e) = index::append(&store, entry) {
        warnings.push(format!("the run index was not updated: {}", e.message));
    }
    Ok(ArchiveReport {
        dir: dest,
        replay_id,
        frontier: None,
        files: listed,
        unchanged: false,
        replaced,
        warnings,
    })
}

/// Read and check `archive.small.yml` of the archive in `dir`, its file names by the rule
/// `stored` gives for the version it declares.
pub fn read_manifest(dir: &Path, stored: &dyn StoredArchives) -> Result<Manifest, RunError> {
    let path = dir.join(MANIFEST_FILE);
    let Some(bytes) = safe::read_stored_file(&path)? else {
        return Err(RunError::usage(format!(
            "{} is not an archive: it has no {MANIFEST_FILE}",
            dir.display()
        )));
    };
    let damaged = |why: String| {
        RunError::invalid(format!("{}: {why}", path.display()))
            .with_help("the manifest is damaged; the archive cannot be verified")
    };
    let doc = yaml::parse_bytes(&bytes, &yaml::Limits::default())
        .map_err(|e| damaged(format!("{}:{}: {}", e.pos.line, e.pos.column, e.message)))?;
    let root = &doc.root;
    if root.as_map().is_none() {
        return Err(damaged("the manifest is not a mapping".into()));
    }
    let text = |key: &str| {
        root.get(key)
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string()
    };
    let name_rule = stored.name_rule(&text("small_version"));
    let Some(items) = root.get("files").and_then(|n| n.as_seq()) else {
        return Err(damaged("`files` is missing or not a list".into()));
    };
    let mut files = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let name = item.get("name").and_then(|n| n.as_str()).unwrap_or("");
        let sha = item.get("sha256").and_then(|n| n.as_str()).unwrap_or("");
        if name.is_empty() {
            return Err(damaged(format!("files[{i}] has no name")));
        }
        name_rule(name, "archived file name").map_err(|e| damaged(e.message))?;
        if name == MANIFEST_FILE {
            return Err(damaged(format!("files[{i}] names the manifest itself")));
        }
        if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(damaged(format!("files[{i}] ({name}) has no valid sha256")));
        }
        if !seen.insert(name.to_string()) {
            return Err(damaged(format!("{name} is listed twice")));
        }
        files.push(ArchiveFile {
            name: name.to_string(),
            sha256: sha.to_ascii_lowercase(),
        });
    }
    Ok(Manifest {
        small_version: text("small_version"),
        archived_at: text("archived_at"),
        source_dir: text("source_dir"),
        replay_id: text("replayId"),
        files,
    })
}

/// The state of one archived file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    Ok,
    Changed,
    Missing,
    /// In the directory but not in the manifest.
    Unlisted,
    /// A symbolic link, directory or special file where a file should be.
    Unsafe,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCheck {
    pub name: String,
    pub state: FileState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub dir: PathBuf,
    #[serde(rename = "replayId")]
    pub replay_id: String,
    pub archived_at: String,
    pub ok: bool,
    pub files: Vec<FileCheck>,
}

/// What checking an archive does that depends on its format, told apart by the profile back
/// end (`ops::backend`) from the manifest, and handed here as a value.
pub trait StoredArchives {
    /// The rule a manifest's file names are read by, for the `small_version` it declares: a
    /// v1 archive lists plain names, a 2.0.0 one paths under `state/.small/`.
    fn name_rule(&self, small_version: &str) -> NameRule;

    /// Re-hash the files the archive in `dir` lists in `manifest`, and name what it does not.
    fn check_archive(&self, dir: &Path, manifest: &Manifest) -> Result<Vec<FileCheck>, RunError>;
}

/// A check of one file name read from a manifest (`what` names it in the error).
pub type NameRule = fn(name: &str, what: &str) -> Result<(), RunError>;

/// Re-hash every file of the archive in `dir` against its manifest, the way its format (as
/// `stored` tells it) lists them.
pub fn verify(dir: &Path, stored: &dyn StoredArchives) -> Result<VerifyReport, RunError> {
    match safe::entry_type(dir)? {
        safe::Entry::Dir => {}
        safe::Entry::Missing => {
            return Err(RunError::usage(format!("{} does not exist", dir.display())))
        }
        _ => {
            return Err(RunError::usage(format!(
                "{} is not a directory",
                dir.display()
            )))
        }
    }
    let manifest = read_manifest(dir, stored)?;
    let checks = stored.check_archive(dir, &manifest)?;
    Ok(VerifyReport {
        dir: dir.to_path_buf(),
        ok: checks.iter().all(|c| c.state == FileState::Ok),
        replay_id: manifest.replay_id,
        archived_at: manifest.archived_at,
        files: checks,
    })
}

/// Re-hash the files a v1 archive's manifest lists (in bounded memory), and name the files
/// of `dir` it does not list.
pub fn check_files_v1(dir: &Path, manifest: &Manifest) -> Result<Vec<FileCheck>, RunError> {
    let mut checks = Vec::new();
    for f in &manifest.files {
        let path = dir.join(&f.name);
        let (state, actual) = match safe::entry_type(&path)? {
            safe::Entry::Missing => (FileState::Missing, None),
            // Hashed through a fixed buffer: an archive of any size is verified in bounded
            // memory.
            safe::Entry::File => match safe::hash_stored_file(&path)? {
                None => (FileState::Missing, None),
                Some((h, _)) if h == f.sha256 => (FileState::Ok, Some(h)),
                Some((h, _)) => (FileState::Changed, Some(h)),
            },
            _ => (FileState::Unsafe, None),
        };
        checks.push(FileCheck {
            name: f.name.clone(),
            state,
            expected: Some(f.sha256.clone()),
            actual,
        });
    }
    let mut extra = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| RunError::io("cannot read", dir, &e))?;
    for entry in rd {
        let entry = entry.map_err(|e| RunError::io("cannot read", dir, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == MANIFEST_FILE || manifest.files.iter().any(|f| f.name == name) {
            continue;
        }
        extra.push(name);
    }
    extra.sort();
    for name in extra {
        checks.push(FileCheck {
            name,
            state: FileState::Unlisted,
            expected: None,
            actual: None,
        });
    }
    Ok(checks)
}

/// The manifest of the archive already at `dest`, `None` when nothing is there; refused
/// when something else is.
pub(super) fn existing_archive(
    dest: &Path,
    stored: &dyn StoredArchives,
) -> Result<Option<Manifest>, RunError> {
    match safe::entry_type(dest)? {
        safe::Entry::Missing => Ok(None),
        safe::Entry::Dir => match read_manifest(dest, stored) {
            Ok(m) => Ok(Some(m)),
            Err(_) => Err(RunError::usage(format!(
                "{} exists and is not an archive (no readable {MANIFEST_FILE}); refusing to replace it",
                dest.display()
            ))
            .with_help("choose an --out directory that does not exist yet")),
        },
        _ => Err(RunError::usage(format!("{} exists and is not a directory", dest.display()))
            .with_help("choose an --out directory that does not exist yet")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authoring::init::{init, InitRequest};

    fn fresh() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        init(&InitRequest {
            root: tmp.path(),
            intent: Some("Archive it"),
            force: false,
            agents: None,
            tasks: &[],
        })
        .unwrap();
        tmp
    }

    #[test]
    fn an_archive_holds_the_canonical_files_and_verifies() {
        let tmp = fresh();
        let r = create(tmp.path(), &ArchiveOptions::default(), &crate::ops::Stored).unwrap();
        assert!(!r.unchanged);
        assert!(r.dir.starts_with(tmp.path().join(ARCHIVE_DIR)));
        let names: Vec<&str> = r.files.iter().map(|f| f.name.as_str()).collect();
        for n in default_include() {
            assert!(names.contains(&n.as_str()), "{n} missing from {names:?}");
        }
        let m = read_manifest(&r.dir, &crate::ops::Stored).unwrap();
        assert_eq!(m.replay_id, r.replay_id);
        assert!(verify(&r.dir, &crate::ops::Stored).unwrap().ok);

        // Archiving the same state again changes nothing.
        assert!(
            create(tmp.path(), &ArchiveOptions::default(), &crate::ops::Stored)
                .unwrap()
                .unchanged
        );
    }

    #[test]
    fn a_changed_file_fails_verification() {
        let tmp = fresh();
        let r = create(tmp.path(), &ArchiveOptions::default(), &crate::ops::Stored).unwrap();
        std::fs::write(r.dir.join("plan.small.yml"), "changed\n").unwrap();
        let v = verify(&r.dir, &crate::ops::Stored).unwrap();
        assert!(!v.ok);
        assert!(v
            .files
            .iter()
            .any(|f| f.name == "plan.small.yml" && f.state == FileState::Changed));
    }
}
