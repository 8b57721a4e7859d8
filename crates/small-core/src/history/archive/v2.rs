//! Archives of a 2.0.0 workspace: the whole `.small/` tree, named after its frontier.
//!
//! The layout is the reference's (small v1.1.2): `.small-archive/<frontier>/` holds
//! `archive.small.yml` and `state/.small/`, a copy of every file of `.small/`. The manifest
//! has the v1 keys: `small_version: "2.0.0"`, `archived_at`, `source_dir`, `replayId` (the
//! frontier, which names a 2.0.0 event set as the replay ID names a v1 run) and `files`, one
//! `name` (the path inside `.small/`, `/`-separated) and `sha256` per file.
//!
//! Archiving needs a tree that passes the strict check. The tree is walked without following
//! anything (a link or special file is refused), copied under the workspace lock through a
//! fixed buffer into a directory staged beside the destination, and renamed into place: a
//! failure leaves no partial archive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::{
    default_include, ArchiveFile, ArchiveOptions, ArchiveReport, FileCheck, FileState, Manifest,
    StoredArchives, MANIFEST_FILE,
};
use crate::history::runs::index::{self, IndexEntry};
use crate::history::runs::v2::{self as runs_v2, STATE_DIR};
use crate::history::runs::{self, safe, RunError};
use crate::spec::consts::{ARCHIVE_DIR, SMALL_DIR};
use crate::v2::PROFILE_VERSION;

/// The deepest path a manifest may name (the walk's own bound).
const MAX_PATH_DEPTH: usize = 17;

/// Check one `/`-separated path read from a manifest: every part a plain name.
pub fn check_rel_path(name: &str, what: &str) -> Result<(), RunError> {
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() > MAX_PATH_DEPTH {
        return Err(RunError::usage(format!(
            "{what} `{}` is not allowed: it is nested too deep",
            name.escape_debug()
        )));
    }
    for part in parts {
        safe::check_file_name(part, what).map_err(|_| {
            RunError::usage(format!(
                "{what} `{}` is not allowed: it must be a relative path of plain names",
                name.escape_debug()
            ))
        })?;
    }
    Ok(())
}

/// Archive the 2.0.0 workspace at `root`.
pub fn create(
    root: &Path,
    opts: &ArchiveOptions,
    stored: &dyn StoredArchives,
) -> Result<ArchiveReport, RunError> {
    let small = runs::require_small_dir(root)?;
    if let Some(include) = &opts.include {
        // The reference accepts the v1 default list (a no-op) and refuses anything else.
        let mut given: Vec<&str> = include.iter().map(|s| s.trim()).collect();
        given.sort_unstable();
        given.dedup();
        let defaults = default_include();
        let mut wanted: Vec<&str> = defaults.iter().map(String::as_str).collect();
        wanted.sort_unstable();
        if given != wanted {
            return Err(RunError::usage(
                "--include picks v1 artifacts; a 2.0.0 archive always holds the whole .small/ tree",
            )
            .with_help("run `small archive` without --include"));
        }
    }

    let dest_of = |frontier: &str| -> PathBuf {
        let dest = match &opts.out {
            None => root.join(ARCHIVE_DIR).join(frontier),
            Some(p) if p.is_absolute() => p.clone(),
            Some(p) => root.join(p),
        };
        std::path::absolute(&dest).unwrap_or(dest)
    };
    // The overlap check needs no frontier when --out is given; the default is outside.
    if opts.out.is_some() {
        let dest = dest_of("");
        let dest_c = safe::canonical_or_planned(&dest);
        let small_c = safe::canonical_or_planned(&small);
        if dest_c.starts_with(&small_c) || small_c.starts_with(&dest_c) {
            return Err(RunError::usage(format!(
                "the archive directory {} overlaps {SMALL_DIR}/",
                dest.display()
            ))
            .with_help("choose an --out directory outside .small/"));
        }
    }

    // Under the workspace lock: no writer appends while the tree is checked and copied.
    let held = runs_v2::lock(root)?;
    let state = runs_v2::strict_state(root, "a 2.0.0 archive")?;
    let frontier = state.frontier.to_ascii_lowercase();
    let dest = dest_of(&frontier);

    let existing = super::existing_archive(&dest, stored)?;

    let parent = dest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let git_sha = {
        let root = root.to_path_buf();
        std::thread::Builder::new().spawn(move || runs::git_head(&root).map(|(sha, _)| sha))
    };
    let files = runs_v2::walk(&small)?;

    // An archive already there: the tree is hashed first, and nothing is copied when the
    // archive holds this very tree.
    let mut replaced = false;
    if let Some(m) = existing {
        let mut hashed = Vec::with_capacity(files.len());
        for (rel, path) in &files {
            let (sha256, _) = safe::hash_stored_file(path)?.ok_or_else(|| {
                RunError::usage(format!("{} disappeared while it was read", path.display()))
            })?;
            hashed.push(ArchiveFile {
                name: rel.clone(),
                sha256,
            });
        }
        let same = m.describes(PROFILE_VERSION, &frontier, &hashed)
            && super::verify(&dest, stored).map(|r| r.ok).unwrap_or(false);
        if same {
            return Ok(ArchiveReport {
                dir: dest,
                replay_id: frontier.clone(),
                frontier: Some(frontier),
                files: hashed,
                unchanged: true,
                replaced: false,
                warnings: Vec::new(),
            });
        }
        if !opts.force {
            return Err(RunError::invalid(format!(
                "{} already holds a different archive; archives are never modified",
                dest.display()
            ))
            .with_help("pass --force to replace it, or choose another --out"));
        }
        replaced = true;
    }

    // Copied and hashed in one pass through a fixed buffer, made durable with one sync.
    let staged = safe::StagedDir::new(&parent, ".tmp-archive-")?;
    let copy_root = staged.path().join(STATE_DIR).join(SMALL_DIR);
    let mut listed = Vec::with_capacity(files.len());
    let mut made: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    for (rel, path) in &files {
        let Some(mut src) = safe::open_live_file(path)? else {
            return Err(RunError::usage(format!(
                "{} disappeared while it was copied",
                path.display()
            )));
        };
        let target = format!("{STATE_DIR}/{SMALL_DIR}/{rel}");
        if let Some(dir) = copy_root.join(rel).parent() {
            if !made.contains(dir) {
                std::fs::create_dir_all(dir).map_err(|e| RunError::io("cannot create", dir, &e))?;
                made.insert(dir.to_path_buf());
            }
        }
        let (sha256, _) = staged.copy_in_unsynced(&target, &mut src, path)?;
        listed.push(ArchiveFile {
            name: rel.clone(),
            sha256,
        });
    }
    drop(held);

    let manifest = Manifest {
        small_version: PROFILE_VERSION.to_string(),
        archived_at: OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default(),
        source_dir: root.display().to_string(),
        replay_id: frontier.clone(),
        files: listed.clone(),
    };
    staged.add_file(MANIFEST_FILE, manifest.render().as_bytes())?;
    staged.sync_all()?;
    staged.publish(&dest, replaced)?;

    let mut warnings = Vec::new();
    let entry = IndexEntry {
        replay_id: frontier.clone(),
        timestamp: manifest.archived_at.clone(),
        git_sha: match git_sha {
            Ok(h) => h.join().ok().flatten(),
            Err(_) => runs::git_head(root).map(|(sha, _)| sha),
        }
        .unwrap_or_default(),
        summary: state.handoff.clone().unwrap_or_default(),
        previous_replay_id: String::new(),
        reason: "archive".into(),
    };
    if let Err(e) = index::append(&runs::store_dir(root, None), entry) {
        warnings.push(format!("the run index was not updated: {}", e.message));
    }
    Ok(ArchiveReport {
        dir: dest,
        replay_id: frontier.clone(),
        frontier: Some(frontier),
        files: listed,
        unchanged: false,
        replaced,
        warnings,
    })
}

/// Re-hash the files of the 2.0.0 archive in `dir` against `manifest`. The copied tree is
/// walked without following anything: a link or special file in it is refused.
pub fn check_files(dir: &Path, manifest: &Manifest) -> Result<Vec<FileCheck>, RunError> {
    let state = dir.join(STATE_DIR);
    let tree = state.join(SMALL_DIR);
    // `state` itself is checked first: a link there would lead the walk elsewhere.
    match safe::entry_type(&state)? {
        safe::Entry::Dir | safe::Entry::Missing => {}
        safe::Entry::Symlink => {
            return Err(RunError::invalid(format!(
                "{} is a symbolic link; an archive holds regular files only, so it is not followed",
                state.display()
            )))
        }
        _ => {
            return Err(RunError::invalid(format!(
                "{} is not a directory",
                state.display()
            )))
        }
    }
    let present: BTreeMap<String, PathBuf> = match safe::entry_type(&tree)? {
        safe::Entry::Missing => BTreeMap::new(),
        safe::Entry::Dir => runs_v2::walk(&tree)?.into_iter().collect(),
        safe::Entry::Symlink => {
            return Err(RunError::invalid(format!(
                "{} is a symbolic link; an archive holds regular files only, so it is not followed",
                tree.display()
            )))
        }
        _ => {
            return Err(RunError::invalid(format!(
                "{} is not a directory",
                tree.display()
            )))
        }
    };
    let mut checks = Vec::new();
    for f in &manifest.files {
        let (state, actual) = match present.get(&f.name) {
            None => (FileState::Missing, None),
            Some(path) => match safe::hash_stored_file(path)? {
                None => (FileState::Missing, None),
                Some((h, _)) if h == f.sha256 => (FileState::Ok, Some(h)),
                Some((h, _)) => (FileState::Changed, Some(h)),
            },
        };
        checks.push(FileCheck {
            name: f.name.clone(),
            state,
            expected: Some(f.sha256.clone()),
            actual,
        });
    }
    let unlisted = |name: String| FileCheck {
        name,
        state: FileState::Unlisted,
        expected: None,
        actual: None,
    };
    let listed: std::collections::BTreeSet<&str> =
        manifest.files.iter().map(|f| f.name.as_str()).collect();
    for rel in present.keys() {
        if !listed.contains(rel.as_str()) {
            checks.push(unlisted(rel.clone()));
        }
    }
    // Anything beside the manifest and `state/.small/`.
    let mut extra = Vec::new();
    for (d, keep) in [
        (dir, [MANIFEST_FILE, STATE_DIR]),
        (state.as_path(), [SMALL_DIR, ""]),
    ] {
        if safe::entry_type(d)? != safe::Entry::Dir {
            continue;
        }
        let rd = std::fs::read_dir(d).map_err(|e| RunError::io("cannot read", d, &e))?;
        for entry in rd {
            let entry = entry.map_err(|e| RunError::io("cannot read", d, &e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !keep.contains(&name.as_str()) {
                let rel = entry
                    .path()
                    .strip_prefix(dir)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or(name);
                extra.push(rel);
            }
        }
    }
    extra.sort();
    checks.extend(extra.into_iter().map(unlisted));
    Ok(checks)
}
