//! Run history: snapshots of a workspace's artifacts kept in a run store (by default
//! `.small-runs/` beside `.small/`), one directory per replay ID, so that runs can be listed,
//! inspected, compared and restored the way commits are.
//!
//! A snapshot directory `<store>/<replayId>/` holds copies of intent, plan, progress and
//! handoff (and constraints when present) plus `meta.json`: the replay ID, when it was taken,
//! the git commit and whether the tree was dirty, the branch, the tool version, the workspace
//! kind, the source directory and the SHA-256 of every copied file. Snapshots are written to
//! a temporary directory and renamed into place, and their files are read-only afterwards.
//!
//! A replay ID fingerprints intent, plan and constraints, so two runs can share one (a reset
//! with the same intent). Each different snapshot of one replay ID is a *generation*: the first
//! lives in `<store>/<replayId>/` (the layout other tools read), the N-th in
//! `<store>/<replayId>~N/`, and `ID~N` addresses it wherever a snapshot is named (a plain ID
//! or prefix names the newest generation). Taking a snapshot identical to an existing
//! generation changes nothing.
//!
//! Everything that turns into a path is checked first: replay IDs given by a user are hex
//! prefixes only, names read from a store must be replay IDs, and symbolic links inside the
//! store are never followed. A damaged store gives an error naming the damage, never a panic.

pub mod diff;
pub mod digest;
pub mod index;
pub mod safe;
pub mod v2;

use crate::spec::model::HANDOFF_REPLAY_ID_POINTER;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::spec::consts::{
    ArtifactKind, ARCHIVE_DIR, CACHE_DIR, RUNS_DIR, SMALL_DIR, TOOL_VERSION, WORKSPACE_FILE,
};
use crate::yaml;

pub use index::IndexEntry;

/// Verify the snapshot a replay ID (or prefix, or `ID~N`) names against the digests its
/// `meta.json` recorded, the way its format (as `stored` tells it) records them.
pub fn verify(
    store: &Path,
    query: &str,
    stored: &dyn StoredRuns,
) -> Result<digest::SnapshotVerification, RunError> {
    stored.verify(&digest::open(store, query)?)
}

/// What the run store does that depends on the format a snapshot holds, told apart by the
/// profile back end (`ops::backend`): a store outlives a workspace's profile (a migrated
/// workspace keeps its v1 snapshots beside its 2.0.0 ones), so the choice is made per
/// snapshot directory by the one module that decides profiles, and handed here as a value.
pub trait StoredRuns {
    /// Load the snapshot in `<store>/<name>` (`name` already checked). With `verify`, every
    /// file is checked against its recorded digest; without it (listing), only what the
    /// listing shows is read.
    fn load(&self, store: &Path, name: &str, verify: bool) -> Result<Snapshot, RunError>;

    /// Verify an opened snapshot against the digests its `meta.json` recorded.
    fn verify(&self, opened: &digest::Opened) -> Result<digest::SnapshotVerification, RunError>;
}

/// The metadata file of a snapshot.
pub const META_FILE: &str = "meta.json";

/// Artifacts a snapshot must have, in the order they are reported.
pub const REQUIRED_ARTIFACTS: [ArtifactKind; 4] = [
    ArtifactKind::Intent,
    ArtifactKind::Plan,
    ArtifactKind::Progress,
    ArtifactKind::Handoff,
];
/// Artifacts a snapshot holds when the workspace has them.
pub const OPTIONAL_ARTIFACTS: [ArtifactKind; 1] = [ArtifactKind::Constraints];

/// All artifact file names a snapshot may hold, in spec order.
pub fn snapshot_file_names() -> Vec<&'static str> {
    ArtifactKind::ALL.iter().map(|k| k.file_name()).collect()
}

// ---------------------------------------------------------------------------------------
// Errors

/// How bad an error is, which decides the exit code of the command that hit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad input or a system problem: no workspace, an unknown replay ID, an I/O error.
    Usage,
    /// The workspace or the store is in a state that does not allow the operation.
    Invalid,
}

/// An error from the run store or the archives, with an optional hint on how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    pub kind: ErrorKind,
    pub message: String,
    pub help: Option<String>,
}

impl RunError {
    pub fn usage(message: impl Into<String>) -> Self {
        RunError {
            kind: ErrorKind::Usage,
            message: message.into(),
            help: None,
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        RunError {
            kind: ErrorKind::Invalid,
            message: message.into(),
            help: None,
        }
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
    /// An I/O failure on `path`.
    pub fn io(what: &str, path: &Path, err: &std::io::Error) -> Self {
        RunError::usage(format!("{what} {}: {err}", path.display()))
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {}

// ---------------------------------------------------------------------------------------
// Locations

/// The run store: `--store` relative to the workspace root, or `<root>/.small-runs`.
pub fn store_dir(root: &Path, store: Option<&Path>) -> PathBuf {
    match store {
        None => root.join(RUNS_DIR),
        Some(p) if p.is_absolute() => p.to_path_buf(),
        Some(p) => root.join(p),
    }
}

/// Fail unless `<root>/.small/` is a directory.
pub fn require_small_dir(root: &Path) -> Result<PathBuf, RunError> {
    let dir = root.join(SMALL_DIR);
    // A linked `.small/` is refused (docs/decisions/0070-hostile-files-links.md): snapshots
    // and archives copy only
    // what is inside the workspace.
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_symlink() => Err(RunError::usage(format!(
            "{} is a symbolic link; small works only on a real {SMALL_DIR}/ directory",
            dir.display()
        ))
        .with_help("replace the link with the directory it points to")),
        Ok(m) if m.is_dir() => Ok(dir),
        Ok(_) => Err(RunError::usage(format!(
            "{} is not a directory",
            dir.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(RunError::usage(format!(
            "no SMALL workspace at {}: {SMALL_DIR}/ does not exist",
            root.display()
        ))
        .with_help("run `small init`, or point --dir at the directory that holds .small/")),
        Err(e) => Err(RunError::io("cannot read", &dir, &e)),
    }
}

/// A transaction error as a run-store error (all are system problems except `Invalid`).
pub fn txn_error(e: crate::workspace::txn::TxnError) -> RunError {
    match e {
        crate::workspace::txn::TxnError::Invalid(d) => RunError::invalid(d.message),
        other => RunError::usage(other.to_string()),
    }
}

/// The named files of `.small/`, opened as one consistent set: under the workspace lock when
/// it can be taken (it is held until this is dropped), so a commit in progress is never seen
/// half-applied. A workspace where the lock cannot even be created (a read-only checkout) is
/// read without it. Absent files are left out. The files are copied through a fixed buffer
/// ([`LiveFiles::copy_into`]), never held whole in memory.
pub struct LiveFiles {
    _lock: Option<crate::workspace::txn::Transaction>,
    files: Vec<LiveFile>,
}

struct LiveFile {
    name: String,
    path: PathBuf,
    file: std::fs::File,
}

impl LiveFiles {
    /// Open the files `names` of `<root>/.small/`.
    pub fn open(root: &Path, names: &[String]) -> Result<LiveFiles, RunError> {
        let small = require_small_dir(root)?;
        let lock = match crate::workspace::txn::Transaction::begin(root) {
            Ok(t) => Some(t),
            Err(crate::workspace::txn::TxnError::Io { .. }) => None,
            Err(e) => return Err(txn_error(e)),
        };
        let mut files = Vec::new();
        for name in names {
            let path = small.join(name);
            if let Some(file) = safe::open_live_file(&path)? {
                files.push(LiveFile {
                    name: name.clone(),
                    path,
                    file,
                });
            }
        }
        Ok(LiveFiles { _lock: lock, files })
    }

    pub fn has(&self, name: &str) -> bool {
        self.files.iter().any(|f| f.name == name)
    }

    /// The whole content of one (small) file, `None` when it does not exist.
    pub fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, RunError> {
        match self.files.iter_mut().find(|f| f.name == name) {
            Some(f) => safe::read_open_file(&mut f.file, &f.path).map(Some),
            None => Ok(None),
        }
    }

    /// Copy the files `names` that exist into `staged`, in that order, hashing on the way.
    pub fn copy_into(
        &mut self,
        staged: &safe::StagedDir,
        names: &[String],
    ) -> Result<Vec<CopiedFile>, RunError> {
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let Some(f) = self.files.iter_mut().find(|f| &f.name == name) else {
                continue;
            };
            let (sha256, len) = staged.copy_in(&f.name, &mut f.file, &f.path)?;
            out.push(CopiedFile {
                name: f.name.clone(),
                sha256,
                len,
            });
        }
        Ok(out)
    }
}

/// A file copied by [`LiveFiles::copy_into`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopiedFile {
    pub name: String,
    pub sha256: String,
    pub len: u64,
}

/// Refuse a store that lies inside `.small/` (the strict layout allows no such directory).
fn check_store_location(root: &Path, store: &Path) -> Result<(), RunError> {
    let small = safe::canonical_or_planned(&root.join(SMALL_DIR));
    let st = safe::canonical_or_planned(store);
    if st.starts_with(&small) {
        return Err(RunError::usage(format!(
            "the run store {} is inside {SMALL_DIR}/, which may hold only the canonical artifacts",
            store.display()
        ))
        .with_help("use the default store (.small-runs/) or another directory outside .small/"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Workspace scope

pub use crate::workspace::Scope;

fn diag_error(d: &crate::diag::Diagnostic) -> RunError {
    let mut msg = String::new();
    if let Some(f) = &d.file {
        msg.push_str(f);
        if let Some(span) = d.span {
            msg.push_str(&format!(":{}:{}", span.start.line, span.start.column));
        }
        msg.push_str(": ");
    }
    msg.push_str(&d.message);
    let e = if d.code == crate::workspace::CODE_IO {
        RunError::usage(msg)
    } else {
        RunError::invalid(msg)
    };
    match &d.help {
        Some(h) => e.with_help(h.clone()),
        None => e,
    }
}

fn load_metadata(root: &Path) -> Result<crate::workspace::Workspace, RunError> {
    use crate::workspace::{LoadOptions, Location, Workspace};
    let small_dir = require_small_dir(root)?;
    let loc = Location {
        root: root.to_path_buf(),
        small_dir,
    };
    let ws = Workspace::load(loc, &LoadOptions::only(&[]));
    if let Some(d) = ws.diagnostics.iter().find(|d| d.is_error()) {
        return Err(diag_error(d));
    }
    Ok(ws)
}

/// The `kind` declared in `.small/workspace.small.yml` (`repo-root` or `examples`).
pub fn workspace_kind(root: &Path) -> Result<String, RunError> {
    let rel = crate::spec::consts::small_rel(WORKSPACE_FILE);
    let ws = load_metadata(root)?;
    let Some(meta) = &ws.metadata else {
        return Err(
            RunError::invalid(format!("workspace metadata {rel} is missing")).with_help(
                "create it with `small init --force`, or write `kind: repo-root` into it",
            ),
        );
    };
    let kind = meta.kind().unwrap_or("");
    if crate::workspace::WorkspaceKind::from_str(kind).is_err() {
        return Err(RunError::invalid(format!(
            "{rel}: workspace kind `{}` is not one of `repo-root`, `examples`",
            kind.escape_debug()
        )));
    }
    Ok(kind.to_string())
}

/// Fail unless the workspace metadata exists and its kind is allowed by `scope`.
pub fn check_scope(root: &Path, scope: Scope) -> Result<(), RunError> {
    if scope == Scope::Any {
        return Ok(());
    }
    let ws = load_metadata(root)?;
    if let Some(d) = ws.check_scope(scope).first() {
        return Err(diag_error(d));
    }
    workspace_kind(root).map(|_| ())
}

// ---------------------------------------------------------------------------------------
// Handoff

/// What the run store needs from a handoff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandoffInfo {
    pub summary: String,
    pub next_steps: Vec<String>,
    /// `replayId.value`, trimmed; empty when absent.
    pub replay_id: String,
}

/// The replay ID of the live handoff, if it has a valid one (for marking the current run).
pub fn live_replay_id(root: &Path) -> Option<String> {
    let bytes = safe::read_live_file(&root.join(SMALL_DIR).join(ArtifactKind::Handoff.file_name()))
        .ok()??;
    let id = handoff_info(&bytes, "handoff").ok()?.replay_id;
    safe::is_replay_id(&id).then(|| id.to_ascii_lowercase())
}

/// Read summary, next steps and replay ID from handoff text. `label` names the file in
/// error messages.
pub fn handoff_info(bytes: &[u8], label: &str) -> Result<HandoffInfo, RunError> {
    let doc = yaml::parse_bytes(bytes, &yaml::Limits::default()).map_err(|e| {
        RunError::invalid(format!(
            "{label}:{}:{}: {}",
            e.pos.line, e.pos.column, e.message
        ))
    })?;
    let root = &doc.root;
    let text = |n: Option<&yaml::Node>| n.and_then(|n| n.as_str()).map(str::to_string);
    let next_steps = root
        .pointer("/resume/next_steps")
        .and_then(|n| n.as_seq())
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Ok(HandoffInfo {
        summary: text(root.get("summary")).unwrap_or_default(),
        next_steps,
        replay_id: text(root.pointer(HANDOFF_REPLAY_ID_POINTER))
            .unwrap_or_default()
            .trim()
            .to_string(),
    })
}

// ---------------------------------------------------------------------------------------
// Git

/// The git state of the workspace when a snapshot is taken.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitInfo {
    pub sha: String,
    pub dirty: bool,
    pub branch: String,
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Commit and branch of the repository holding `root`, in one `git` run: `None` when `root`
/// is not in a git work tree (or git is not installed). A repository without commits yet has
/// neither: `("", "")`. A detached HEAD has no branch.
pub fn git_head(root: &Path) -> Option<(String, String)> {
    // `rev-parse` answers each argument on its own line; `--abbrev-ref` applies to the
    // revisions after it.
    if let Some(out) = git(
        root,
        &[
            "rev-parse",
            "--is-inside-work-tree",
            "HEAD",
            "--abbrev-ref",
            "HEAD",
        ],
    ) {
        let mut lines = out.lines();
        if lines.next() != Some("true") {
            return None;
        }
        let sha = lines.next().unwrap_or_default().to_string();
        let branch = lines.next().filter(|b| *b != "HEAD").unwrap_or_default();
        return Some((sha, branch.to_string()));
    }
    // It fails outside a work tree, and inside one whose HEAD has no commit yet.
    (git(root, &["rev-parse", "--is-inside-work-tree"]).as_deref() == Some("true"))
        .then(|| (String::new(), String::new()))
}

/// Commit, dirty flag and branch of the repository holding `root`; empty when `root` is not
/// in a git work tree or git is not installed. The dirty flag covers the whole work tree
/// except what `small` itself writes beside `.small/`: `.small-cache/` (the workspace lock),
/// `.small-archive/`, and the paths listed in `exclude` (such as the run store).
pub fn git_info(root: &Path, exclude: &[&Path]) -> GitInfo {
    let Some((sha, branch)) = git_head(root) else {
        return GitInfo::default();
    };
    let mut args: Vec<String> = vec![
        "status".into(),
        "--porcelain".into(),
        "--".into(),
        ":/".into(),
    ];
    let own = [root.join(CACHE_DIR), root.join(ARCHIVE_DIR)];
    for ex in exclude
        .iter()
        .copied()
        .chain(own.iter().map(PathBuf::as_path))
    {
        if let Ok(rel) = ex.strip_prefix(root) {
            if !rel.as_os_str().is_empty() {
                args.push(format!(":(exclude,literal){}", rel.to_string_lossy()));
            }
        }
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let dirty = git(root, &refs).is_some_and(|s| !s.is_empty());
    GitInfo { sha, dirty, branch }
}

// ---------------------------------------------------------------------------------------
// Snapshot metadata

/// `meta.json` of a snapshot. Field names match the reference implementation's store, so
/// either tool can read the other's snapshots; `files` is ours (SHA-256 per file, what
/// earlier versions of small check), `generation` too. `artifact_digest` and
/// `artifact_digests` are the reference's digests ([`digest`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    #[serde(rename = "replayId", default)]
    pub replay_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub artifact_digest: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifact_digests: BTreeMap<String, String>,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub git_sha: String,
    #[serde(default)]
    pub git_dirty: bool,
    #[serde(default)]
    pub branch: String,
    #[serde(default)]
    pub cli_version: String,
    #[serde(default)]
    pub workspace_kind: String,
    #[serde(default)]
    pub source_dir: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// The generation of the replay ID (absent for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u32>,
}

impl Meta {
    /// The digests recorded for artifact `name`: ours (`files`) and the reference's
    /// (`artifact_digests`), whichever are present.
    pub fn recorded<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.files
            .get(name)
            .into_iter()
            .chain(self.artifact_digests.get(name))
    }
}

/// A snapshot directory name: `<replayId>` (generation 1) or `<replayId>~N` (N >= 2).
/// Returns the replay ID and the generation.
pub fn parse_snapshot_name(name: &str) -> Option<(&str, u32)> {
    let (id, generation) = match name.split_once('~') {
        None => (name, 1),
        Some((id, n)) => {
            let g: u32 = n.parse().ok()?;
            if g < 2 || g.to_string() != n {
                return None;
            }
            (id, g)
        }
    };
    safe::is_replay_id(id).then_some((id, generation))
}

/// The directory name (and address) of generation `generation` of `replay_id`.
pub fn snapshot_name(replay_id: &str, generation: u32) -> String {
    if generation <= 1 {
        replay_id.to_string()
    } else {
        format!("{replay_id}~{generation}")
    }
}

/// A snapshot as found in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The replay ID.
    pub replay_id: String,
    /// Which snapshot of that replay ID this is (1 for the first).
    pub generation: u32,
    /// The address of the snapshot (its directory name): `<replayId>` or `<replayId>~N`.
    pub name: String,
    pub dir: PathBuf,
    pub meta: Meta,
    /// Artifact file names present in the snapshot, in spec order.
    pub artifacts: Vec<String>,
    pub summary: String,
    pub next_steps: Vec<String>,
    /// Files whose content no longer matches the hash recorded when the snapshot was taken,
    /// recorded files that are gone, and files the snapshot should not contain.
    pub problems: Vec<String>,
}

impl Snapshot {
    /// `created_at` parsed, when it parses.
    pub fn created(&self) -> Option<OffsetDateTime> {
        OffsetDateTime::parse(&self.meta.created_at, &Rfc3339).ok()
    }
}

fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// A snapshot's address shortened for tables: the first `n` digits of its replay ID, and
/// `~N` for a later generation.
pub fn short_name(name: &str, n: usize) -> String {
    match name.split_once('~') {
        Some((id, g)) => format!("{}~{g}", short_id(id, n)),
        None => short_id(name, n),
    }
}

/// The first `n` characters of an ID, for tables.
pub fn short_id(id: &str, n: usize) -> String {
    let t = id.trim();
    t.chars().take(n).collect()
}

// ---------------------------------------------------------------------------------------
// Taking a snapshot

/// The result of `snapshot`.
#[derive(Debug, Clone)]
pub struct SnapshotResult {
    pub snapshot: Snapshot,
    /// An existing snapshot of the same replay ID was replaced (`--force`).
    pub replaced: bool,
    /// An identical snapshot already existed (it is `snapshot`); nothing was written.
    pub unchanged: bool,
    /// Non-fatal problems (the run index could not be updated, ...).
    pub warnings: Vec<String>,
}

/// The generation, name and directory of the next snapshot of `id` (a new generation, or the latest one
/// again with `force`), and what is there now: nothing, or a snapshot `force` replaces.
fn destination(
    store: &Path,
    id: &str,
    gens: &[(u32, String)],
    force: bool,
) -> Result<(u32, String, PathBuf, safe::Entry), RunError> {
    let generation = match gens.last() {
        None => 1,
        Some((g, _)) if force => *g,
        Some((g, _)) => g + 1,
    };
    let name = snapshot_name(id, generation);
    let dest = store.join(&name);
    let existing = safe::entry_type(&dest)?;
    match existing {
        safe::Entry::Missing => {}
        safe::Entry::Dir if force => {}
        safe::Entry::Dir => return Err(exists_error(id, &dest)),
        _ => {
            return Err(RunError::invalid(format!(
                "{} exists but is not a snapshot directory; remove it by hand",
                dest.display()
            )))
        }
    }
    Ok((generation, name, dest, existing))
}

/// The generations of `replay_id` in the store: (generation, directory name), oldest first.
fn generations(store: &Path, replay_id: &str) -> Result<Vec<(u32, String)>, RunError> {
    let (names, _) = scan_store(store)?;
    let mut out: Vec<(u32, String)> = names
        .iter()
        .filter_map(|n| {
            parse_snapshot_name(n)
                .filter(|(id, _)| id.eq_ignore_ascii_case(replay_id))
                .map(|(_, g)| (g, n.clone()))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Whether the snapshot directory holds exactly `files` (same names, same bytes: the same
/// length and SHA-256, read through a fixed buffer).
fn same_content(dir: &Path, files: &[CopiedFile]) -> Result<bool, RunError> {
    // Lengths first: a log that grew since (the usual next snapshot) is told apart without
    // reading it. What is not a plain file is left to the hashing below to refuse.
    for name in snapshot_file_names() {
        let live = files.iter().find(|f| f.name == name).map(|f| f.len);
        let stored = match std::fs::symlink_metadata(dir.join(name)) {
            Ok(m) if m.file_type().is_file() => Some(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            _ => continue,
        };
        if stored != live {
            return Ok(false);
        }
    }
    for name in snapshot_file_names() {
        let stored = safe::hash_stored_file(&dir.join(name))?;
        let live = files
            .iter()
            .find(|f| f.name == name)
            .map(|f| (f.sha256.clone(), f.len));
        if stored != live {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Copy a v1 workspace's artifacts into the store. The first snapshot of a replay ID goes to
/// `<store>/<replayId>/`; a different one of the same replay ID becomes a new generation
/// (`<replayId>~N`); one identical to an existing generation writes nothing. With `force` the
/// newest generation is replaced instead.
pub fn snapshot(root: &Path, store: &Path, force: bool) -> Result<SnapshotResult, RunError> {
    require_small_dir(root)?;
    check_store_location(root, store)?;

    let wanted: Vec<String> = snapshot_file_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut live = LiveFiles::open(root, &wanted)?;
    for kind in REQUIRED_ARTIFACTS {
        let name = kind.file_name();
        if !live.has(name) {
            return Err(RunError::invalid(format!("{SMALL_DIR}/{name} is missing")).with_help(
                "a snapshot needs intent, plan, progress and handoff; run `small init` to create them",
            ));
        }
    }

    let handoff_label = ArtifactKind::Handoff.rel_path();
    let handoff_bytes = live
        .read(ArtifactKind::Handoff.file_name())?
        .unwrap_or_default();
    let handoff = handoff_info(&handoff_bytes, &handoff_label)?;
    if handoff.replay_id.is_empty() {
        return Err(RunError::invalid(format!(
            "{handoff_label} has no replayId, so the run has no identity to file the snapshot under"
        ))
        .with_help(
            "run `small handoff --summary \"<summary>\"` to record one, then snapshot again",
        ));
    }
    if !safe::is_replay_id(&handoff.replay_id) {
        return Err(RunError::invalid(format!(
            "{handoff_label}: replayId.value `{}` is not a replay ID (64 hex digits)",
            handoff.replay_id.escape_debug()
        ))
        .with_help("run `small handoff` to record a valid one"));
    }
    let replay_id = handoff.replay_id.to_ascii_lowercase();
    let kind = workspace_kind(root)?;

    let gens = generations(store, &replay_id)?;
    // Git is asked while the files are copied: its answers do not depend on `.small/` or
    // the store, and `git status` can take as long as the copy.
    let git = {
        let (root, store) = (root.to_path_buf(), store.to_path_buf());
        std::thread::Builder::new().spawn(move || git_info(&root, &[&store]))
    };
    // Copied (and hashed) once, under the lock, into a staged directory beside the store's
    // snapshots; it is published below, or removed when dropped.
    let staged = safe::StagedDir::new(store, ".tmp-snapshot-")?;
    let files = live.copy_into(&staged, &wanted)?;
    drop(live);
    for (_, name) in gens.iter().rev().filter(|_| !force) {
        let dir = store.join(name);
        if safe::entry_type(&dir)? == safe::Entry::Dir && same_content(&dir, &files)? {
            return Ok(SnapshotResult {
                snapshot: load_v1(store, name, false)?,
                replaced: false,
                unchanged: true,
                warnings: Vec::new(),
            });
        }
    }
    let (generation, name, dest, existing) = destination(store, &replay_id, &gens, force)?;

    // Asked here when no thread could be started.
    let git = match git {
        Ok(h) => h.join().unwrap_or_default(),
        Err(_) => git_info(root, &[store]),
    };
    let mut meta = Meta {
        replay_id: replay_id.clone(),
        artifact_digest: String::new(),
        artifact_digests: BTreeMap::new(),
        created_at: now_rfc3339(),
        git_sha: git.sha,
        git_dirty: git.dirty,
        branch: git.branch,
        cli_version: TOOL_VERSION.to_string(),
        workspace_kind: kind,
        source_dir: root.display().to_string(),
        files: BTreeMap::new(),
        generation: (generation > 1).then_some(generation),
    };
    for f in &files {
        meta.files.insert(f.name.clone(), f.sha256.clone());
    }
    let per_file = meta.files.clone();
    digest::record(&mut meta, &per_file);
    let mut meta_text = serde_json::to_string_pretty(&meta)
        .map_err(|e| RunError::usage(format!("cannot encode {META_FILE}: {e}")))?;
    meta_text.push('\n');
    staged.add_file(META_FILE, meta_text.as_bytes())?;
    staged.publish(&dest, force).map_err(|e| {
        // Another `small` published the same run between our check and our rename.
        if !force && safe::entry_type(&dest).ok() == Some(safe::Entry::Dir) {
            exists_error(&replay_id, &dest)
        } else {
            e
        }
    })?;

    let mut warnings = Vec::new();
    let entry = IndexEntry {
        replay_id: replay_id.clone(),
        timestamp: meta.created_at.clone(),
        git_sha: meta.git_sha.clone(),
        summary: handoff.summary.clone(),
        previous_replay_id: String::new(),
        reason: "snapshot".into(),
    };
    if let Err(e) = index::append(store, entry) {
        warnings.push(format!("the run index was not updated: {}", e.message));
    }

    let artifacts = files.iter().map(|f| f.name.clone()).collect();
    Ok(SnapshotResult {
        snapshot: Snapshot {
            replay_id,
            generation,
            name,
            dir: dest,
            meta,
            artifacts,
            summary: handoff.summary,
            next_steps: handoff.next_steps,
            problems: Vec::new(),
        },
        replaced: existing == safe::Entry::Dir,
        unchanged: false,
        warnings,
    })
}

fn exists_error(replay_id: &str, dest: &Path) -> RunError {
    RunError::invalid(format!(
        "a snapshot of run {} already exists at {}",
        short_id(replay_id, 16),
        dest.display()
    ))
    .with_help("run `small run snapshot` again: it files the snapshot as the next generation")
}

// ---------------------------------------------------------------------------------------
// Reading the store

/// Load the v1 snapshot in directory `<store>/<name>` (`name` already checked).
/// With `verify`, every artifact is read and checked against its recorded hash; without it
/// (listing), only the handoff is read.
pub fn load_v1(store: &Path, name: &str, verify: bool) -> Result<Snapshot, RunError> {
    let dir = store.join(name);
    let (id, generation) = parse_snapshot_name(name).ok_or_else(|| {
        RunError::usage(format!("`{}` is not a snapshot name", name.escape_debug()))
    })?;
    let id = id.to_string();
    let short = if generation > 1 {
        format!("{}~{generation}", short_id(&id, 16))
    } else {
        short_id(name, 16)
    };
    match safe::entry_type(&dir)? {
        safe::Entry::Dir => {}
        safe::Entry::Missing => {
            return Err(RunError::usage(format!(
                "no snapshot of run {short} in {}",
                store.display()
            )))
        }
        safe::Entry::Symlink => {
            return Err(RunError::invalid(format!(
                "{} is a symbolic link; snapshots inside the run store are real directories, \
                 so it is not followed",
                dir.display()
            ))
            .with_help("remove the link from the store"))
        }
        _ => {
            return Err(RunError::invalid(format!(
                "{} is not a snapshot directory",
                dir.display()
            )))
        }
    }
    let meta_path = dir.join(META_FILE);
    let meta_bytes = safe::read_stored_file(&meta_path)?;
    let meta_missing = meta_bytes.is_none();
    let meta = match meta_bytes {
        None => Meta::default(),
        Some(bytes) => serde_json::from_slice::<Meta>(&bytes).map_err(|e| {
            RunError::invalid(format!(
                "snapshot {short} is damaged: {}:{}:{}: {e}",
                meta_path.display(),
                e.line(),
                e.column()
            ))
            .with_help(format!(
                "take the snapshot again with `small run snapshot --force`, or remove {}",
                dir.display()
            ))
        })?,
    };
    let mut meta = meta;
    if meta.replay_id.is_empty() {
        meta.replay_id = id.clone();
    } else if !meta.replay_id.eq_ignore_ascii_case(&id) {
        return Err(RunError::invalid(format!(
            "snapshot {short} is damaged: its {META_FILE} names run {}",
            short_id(&meta.replay_id, 16)
        ))
        .with_help(format!(
            "remove {} or take the snapshot again",
            dir.display()
        )));
    }

    if meta.created_at.is_empty() {
        // As the reference does for snapshots without a time: the directory's mtime.
        if let Ok(modified) = std::fs::symlink_metadata(&dir).and_then(|m| m.modified()) {
            meta.created_at = OffsetDateTime::from(modified)
                .format(&Rfc3339)
                .unwrap_or_default();
        }
    }

    let mut artifacts = Vec::new();
    let mut problems = Vec::new();
    if meta_missing {
        problems.push(format!("{META_FILE} is missing"));
    }
    let known = snapshot_file_names();
    let rd = std::fs::read_dir(&dir).map_err(|e| RunError::io("cannot read", &dir, &e))?;
    let mut extra: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != META_FILE && !known.contains(&n.as_str()))
        .collect();
    extra.sort();
    for n in extra {
        problems.push(format!("unexpected entry `{}`", n.escape_debug()));
    }
    let mut handoff = HandoffInfo::default();
    for name in snapshot_file_names() {
        let path = dir.join(name);
        if !verify && name != ArtifactKind::Handoff.file_name() {
            if safe::stored_file_exists(&path)? {
                artifacts.push(name.to_string());
            } else if meta.recorded(name).next().is_some() {
                problems.push(format!("{name} is missing"));
            }
            continue;
        }
        // Only the handoff is read whole; the others are hashed through a fixed buffer.
        let is_handoff = name == ArtifactKind::Handoff.file_name();
        let found = if is_handoff {
            safe::read_stored_file(&path)?.map(|bytes| {
                let sha = safe::sha256_hex(&bytes);
                (sha, Some(bytes))
            })
        } else {
            safe::hash_stored_file(&path)?.map(|(sha, _)| (sha, None))
        };
        let Some((sha, bytes)) = found else {
            if meta.recorded(name).next().is_some() {
                problems.push(format!("{name} is missing"));
            }
            continue;
        };
        if meta
            .recorded(name)
            .any(|expected| !expected.trim().eq_ignore_ascii_case(&sha))
        {
            problems.push(format!("{name} changed after the snapshot was taken"));
        }
        if let Some(bytes) = bytes {
            handoff = handoff_info(&bytes, &path.display().to_string())?;
        }
        artifacts.push(name.to_string());
    }
    if !artifacts
        .iter()
        .any(|a| a == ArtifactKind::Handoff.file_name())
    {
        return Err(RunError::invalid(format!(
            "snapshot {short} is damaged: it has no {}",
            ArtifactKind::Handoff.file_name()
        ))
        .with_help(format!(
            "remove {} or take the snapshot again",
            dir.display()
        )));
    }
    Ok(Snapshot {
        replay_id: id,
        generation,
        name: name.to_string(),
        dir,
        meta,
        artifacts,
        summary: handoff.summary,
        next_steps: handoff.next_steps,
        problems,
    })
}

/// Names of the snapshot directories in the store (64-hex names), plus a warning for every
/// other entry that is not ours.
fn scan_store(store: &Path) -> Result<(Vec<String>, Vec<String>), RunError> {
    let rd = match std::fs::read_dir(store) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(RunError::io("cannot read the run store", store, &e)),
    };
    let mut names = Vec::new();
    let mut warnings = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| RunError::io("cannot read the run store", store, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == index::INDEX_FILE {
            continue;
        }
        if parse_snapshot_name(&name).is_some() {
            names.push(name);
        } else {
            warnings.push(format!(
                "ignored {}: not a snapshot (snapshot directories are named by replay ID)",
                entry.path().display()
            ));
        }
    }
    names.sort();
    Ok((names, warnings))
}

/// The snapshots of a store, newest first, and warnings for entries that could not be read.
/// A store that does not exist yet is empty.
pub fn list(
    store: &Path,
    stored: &dyn StoredRuns,
) -> Result<(Vec<Snapshot>, Vec<String>), RunError> {
    let (names, mut warnings) = scan_store(store)?;
    let mut snaps = Vec::new();
    for name in names {
        match stored.load(store, &name, false) {
            Ok(s) => snaps.push(s),
            Err(e) => warnings.push(format!("skipped {}: {}", short_id(&name, 16), e.message)),
        }
    }
    snaps.sort_by(|a, b| {
        b.created()
            .cmp(&a.created())
            .then_with(|| b.meta.created_at.cmp(&a.meta.created_at))
            .then_with(|| a.replay_id.cmp(&b.replay_id))
            .then_with(|| b.generation.cmp(&a.generation))
    });
    Ok((snaps, warnings))
}

/// Check a replay ID or prefix typed by a user before it is used: hex digits, optionally
/// followed by `~N` (a generation). Returns it in lower case.
pub fn check_query(query: &str) -> Result<String, RunError> {
    let q = query.trim();
    if q.is_empty() {
        return Err(RunError::usage("an empty replay ID was given"));
    }
    if q.contains('/') || q.contains('\\') || q.contains("..") || Path::new(q).is_absolute() {
        return Err(RunError::usage(format!(
            "`{}` is not a replay ID: replay IDs are hex digits, never paths",
            q.escape_debug()
        ))
        .with_help("use an ID or a prefix of one as shown by `small run list`"));
    }
    let (id, generation) = match q.split_once('~') {
        Some((id, g)) => (id, Some(g)),
        None => (q, None),
    };
    let bad_gen = generation.is_some_and(|g| g.parse::<u32>().map_or(true, |n| n == 0));
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) || bad_gen {
        return Err(RunError::usage(format!(
            "`{}` is not a replay ID or a prefix of one (hex digits 0-9 and a-f, at most 64, optionally ~N for a generation)",
            q.escape_debug()
        ))
        .with_help("use an ID or a prefix of one as shown by `small run list`"));
    }
    Ok(q.to_ascii_lowercase())
}

/// Find the snapshot a replay ID or unambiguous prefix names (its newest generation, or
/// generation N with `~N`), and load it.
pub fn find(store: &Path, query: &str, stored: &dyn StoredRuns) -> Result<Snapshot, RunError> {
    let name = resolve(store, query)?;
    stored.load(store, &name, true)
}

/// The directory name of the snapshot a replay ID or unambiguous prefix names (its newest
/// generation, or generation N with `~N`), without reading it. A malformed or ambiguous
/// query is a usage error; one the store does not hold is an invalid state (exit 1, as the
/// reference's `run show`, `diff` and `checkout`).
pub fn resolve(store: &Path, query: &str) -> Result<String, RunError> {
    let q = check_query(query)?;
    let (prefix, wanted) = match q.split_once('~') {
        Some((p, g)) => (p.to_string(), g.parse::<u32>().ok()),
        None => (q.clone(), None),
    };
    let (names, _) = scan_store(store)?;
    let parsed: Vec<(String, u32, &String)> = names
        .iter()
        .filter_map(|n| parse_snapshot_name(n).map(|(id, g)| (id.to_ascii_lowercase(), g, n)))
        .collect();
    let mut ids: Vec<&str> = parsed
        .iter()
        .map(|(id, _, _)| id.as_str())
        .filter(|id| *id == prefix)
        .collect();
    if ids.is_empty() {
        ids = parsed
            .iter()
            .map(|(id, _, _)| id.as_str())
            .filter(|id| id.starts_with(&prefix))
            .collect();
    }
    ids.sort();
    ids.dedup();
    let id = match ids.as_slice() {
        [] => {
            return Err(RunError::invalid(format!(
                "no snapshot matches `{q}` in {}",
                store.display()
            ))
            .with_help("`small run list` shows the snapshots in the store"))
        }
        [one] => one.to_string(),
        many => {
            return Err(RunError::usage(format!(
                "`{prefix}` is ambiguous: it starts {} snapshot IDs ({})",
                many.len(),
                many.iter()
                    .map(|n| short_id(n, 12))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .with_help("type more digits of the replay ID"))
        }
    };
    let mut gens: Vec<(u32, &String)> = parsed
        .iter()
        .filter(|(i, _, _)| *i == id)
        .map(|(_, g, n)| (*g, *n))
        .collect();
    gens.sort();
    let pick = match wanted {
        None => gens.last().map(|(_, n)| *n),
        Some(w) => gens.iter().find(|(g, _)| *g == w).map(|(_, n)| *n),
    };
    match pick {
        Some(name) => Ok(name.clone()),
        None => Err(RunError::invalid(format!(
            "run {} has no generation {} (it has {})",
            short_id(&id, 12),
            wanted.unwrap_or(0),
            gens.iter()
                .map(|(g, _)| format!("~{g}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .with_help("`small run list` shows every generation")),
    }
}

/// Read one artifact of a snapshot (`None` when the snapshot does not have it).
pub fn read_artifact(snap: &Snapshot, name: &str) -> Result<Option<Vec<u8>>, RunError> {
    safe::check_file_name(name, "artifact name")?;
    safe::read_stored_file(&snap.dir.join(name))
}

// ---------------------------------------------------------------------------------------
// Checkout

/// What `checkout` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckoutReport {
    #[serde(rename = "replayId")]
    pub replay_id: String,
    /// The snapshot restored: `<replayId>` or `<replayId>~N`.
    pub snapshot: String,
    /// Files written into `.small/`.
    pub restored: Vec<String>,
    /// Files that already had the snapshot's content.
    pub unchanged: Vec<String>,
    /// Live files the snapshot does not hold, left as they are.
    pub kept: Vec<String>,
    /// Files whose local content was discarded (only with `force`).
    pub discarded: Vec<String>,
    /// `run.replay_id` of `workspace.small.yml` when it names another run than the one
    /// restored (the file is kept as it is; the caller may point this out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_run: Option<String>,
    /// The `.small/` directory restored into (for the human report).
    #[serde(skip)]
    pub small_dir: String,
}

/// A checkout of either profile's snapshot.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
pub enum CheckedOut {
    V1(CheckoutReport),
    V2(v2::CheckoutReport),
}

/// Enforce `--workspace` for the run commands on a v1 workspace: it must exist and be of a
/// kind `scope` allows.
pub fn check_run_scope(root: &Path, scope: Scope) -> Result<(), RunError> {
    if scope == Scope::Any {
        return Ok(());
    }
    require_small_dir(root)?;
    check_scope(root, scope)
}

/// Restore a v1 snapshot's artifacts into the `.small/` of `root` (which the caller found
/// to be a v1 workspace, and `snap` a v1 snapshot of `store`). `workspace.small.yml` is
/// never touched. A live file that differs from the snapshot is overwritten only when its
/// content is kept in some snapshot of the store (so nothing is lost), or with `force`.
pub fn restore(
    root: &Path,
    store: &Path,
    snap: Snapshot,
    force: bool,
) -> Result<CheckoutReport, RunError> {
    if !snap.problems.is_empty() && !force {
        return Err(RunError::invalid(format!(
            "snapshot {} is damaged ({}); refusing to restore it",
            short_id(&snap.replay_id, 16),
            snap.problems.join("; ")
        ))
        .with_help("pass --force to restore it anyway"));
    }
    let mut report = CheckoutReport {
        replay_id: snap.replay_id.clone(),
        snapshot: snap.name.clone(),
        small_dir: root
            .join(crate::spec::consts::SMALL_DIR)
            .display()
            .to_string(),
        ..Default::default()
    };
    let mut txn = crate::workspace::txn::Transaction::begin(root).map_err(txn_error)?;
    let mut unsaved = Vec::new();
    let mut writes = Vec::new();
    let mut saved_cache: Option<Vec<(String, String)>> = None;
    for name in snapshot_file_names() {
        let rel = crate::spec::consts::small_rel(name);
        let live = match txn.read(&rel) {
            Ok(l) => l,
            Err(e) => return Err(txn_error(e)),
        };
        let Some(stored) = read_artifact(&snap, name)? else {
            if live.is_some() {
                report.kept.push(name.to_string());
            }
            continue;
        };
        match live {
            Some(l) if l == stored => report.unchanged.push(name.to_string()),
            Some(l) => {
                let hash = safe::sha256_hex(&l);
                let saved = saved_cache.get_or_insert_with(|| stored_hashes(store));
                if !saved.iter().any(|(n, h)| n == name && *h == hash) {
                    unsaved.push(name.to_string());
                }
                writes.push((rel, name.to_string(), stored));
            }
            None => writes.push((rel, name.to_string(), stored)),
        }
    }
    if !unsaved.is_empty() && !force {
        let list: Vec<String> = unsaved
            .iter()
            .map(|n| crate::spec::consts::small_rel(n))
            .collect();
        return Err(RunError::invalid(format!(
            "checkout would overwrite local changes that no snapshot holds: {}",
            list.join(", ")
        ))
        .with_help("save them with `small run snapshot` first, or pass --force to discard them"));
    }
    for (rel, name, bytes) in writes {
        txn.write(rel, bytes);
        report.restored.push(name);
    }
    txn.commit().map_err(txn_error)?;
    report.discarded = unsaved;
    report.workspace_run = load_metadata(root)
        .ok()
        .and_then(|ws| {
            ws.metadata
                .as_ref()
                .and_then(|m| m.run_replay_id().map(str::to_string))
        })
        .filter(|r| !r.eq_ignore_ascii_case(&report.replay_id));
    Ok(report)
}

/// (file name, sha256) of every artifact in every readable snapshot of the store.
fn stored_hashes(store: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok((names, _)) = scan_store(store) else {
        return out;
    };
    for dir in names {
        let d = store.join(&dir);
        if safe::entry_type(&d).ok() != Some(safe::Entry::Dir) {
            continue;
        }
        for name in snapshot_file_names() {
            if let Ok(Some(bytes)) = safe::read_stored_file(&d.join(name)) {
                out.push((name.to_string(), safe::sha256_hex(&bytes)));
            }
        }
    }
    out
}

#[cfg(test)]
mod generation_tests {
    use super::*;

    #[test]
    fn snapshot_names_and_queries() {
        let id = "ab".repeat(32);
        assert_eq!(parse_snapshot_name(&id), Some((id.as_str(), 1)));
        assert_eq!(
            parse_snapshot_name(&format!("{id}~3")),
            Some((id.as_str(), 3))
        );
        for bad in ["x~2", "~1", "~02", "~-1", "~"] {
            let name = if bad.starts_with('x') {
                bad.to_string()
            } else {
                format!("{id}{bad}")
            };
            assert_eq!(parse_snapshot_name(&name), None, "{name}");
        }
        assert_eq!(snapshot_name(&id, 1), id);
        assert_eq!(snapshot_name(&id, 2), format!("{id}~2"));
        assert_eq!(short_name(&format!("{id}~2"), 4), "abab~2");
        assert_eq!(check_query("ABcd~2").unwrap(), "abcd~2");
        assert!(check_query("abcd~0").is_err());
        assert!(check_query("abcd~x").is_err());
        assert!(check_query("~2").is_err());
        assert!(check_query("../x").is_err());
    }
}

#[cfg(test)]
mod git_tests {
    use super::*;

    fn run_git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .expect("git runs")
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    /// `git_head` answers in one run what three used to: outside a work tree, before the
    /// first commit, on a branch, and detached.
    #[test]
    fn head_in_every_state_of_a_repository() {
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(git_head(outside.path()), None);
        assert_eq!(git_info(outside.path(), &[]), GitInfo::default());

        let repo = tempfile::tempdir().unwrap();
        run_git(repo.path(), &["init", "-q", "-b", "work"]);
        assert_eq!(git_head(repo.path()), Some((String::new(), String::new())));

        run_git(repo.path(), &["commit", "-q", "--allow-empty", "-m", "one"]);
        let (sha, branch) = git_head(repo.path()).unwrap();
        assert!(
            sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
            "{sha}"
        );
        assert_eq!(branch, "work");
        let info = git_info(repo.path(), &[]);
        assert_eq!(
            (info.sha.as_str(), info.branch.as_str()),
            (sha.as_str(), "work")
        );
        assert!(!info.dirty);
        std::fs::write(repo.path().join("new.txt"), "x").unwrap();
        assert!(git_info(repo.path(), &[]).dirty);

        run_git(repo.path(), &["checkout", "-q", "--detach"]);
        assert_eq!(git_head(repo.path()), Some((sha, String::new())));
    }
}
