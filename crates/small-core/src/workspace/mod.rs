//! Finding and loading a `.small/` workspace.
//!
//! # Finding it
//! [`locate`] takes the `--dir` argument (or the current directory when there is none). If
//! that directory is itself named `.small`, its parent is the workspace root (so `small`
//! works from inside `.small/`); otherwise the directory is the root and `ROOT/.small` must
//! be a directory. No parent directories are searched. Failing to find a workspace is a
//! [`LocateError`] (exit code 2 in the CLI: there is nothing to check).
//!
//! # Loading it
//! [`Workspace::load`] (or [`Workspace::open`] = locate + load) reads the artifacts named in
//! [`LoadOptions`] plus `workspace.small.yml`, each through [`crate::yaml`] with its
//! [`Limits`]. Problems never abort loading: every missing file (all of them, not just the
//! first), unreadable file and YAML error becomes a [`Diagnostic`] in
//! [`Workspace::diagnostics`], and the artifact stays `None`. A document whose top level is
//! not a mapping (an empty file, a list) is reported the same way, so a loaded artifact's
//! `document.root` is always a mapping.
//!
//! ```text
//! let ws = Workspace::open(None, &LoadOptions::all())?;          // everything
//! let ws2 = Workspace::open(None, &LoadOptions::only(&[ArtifactKind::Plan]))?; // just the plan
//! if let Some(plan) = &ws.plan {
//!     let tasks = plan.document.root.get("tasks");
//! }
//! ```
//!
//! Schema validation of what was loaded is in the gates (`gates::validate`,
//! `validate_workspace`), which also validates the workspace metadata.
//!
//! # Workspace metadata and scope
//! `workspace.small.yml` is optional for loading. [`Workspace::metadata`] holds it when it
//! exists and parses; a YAML error in it is a load diagnostic like any other.
//! [`Workspace::check_scope`] implements `--workspace root|examples|any`: the metadata file
//! must exist, and its `kind` must be allowed by the scope (`root` allows `repo-root`,
//! `examples` allows `examples`, `any` allows both). An unknown or missing `kind` is reported
//! by schema validation of the metadata, not by `check_scope`, so the two never report the
//! same problem twice.
//!
//! # Diagnostic codes produced here
//! - [`CODE_MISSING`] (`missing`): a requested canonical artifact does not exist;
//! - [`CODE_YAML`] (`yaml`): the file is not valid YAML, is too large or too deep, is not
//!   UTF-8, or its top level is not a mapping;
//! - [`CODE_IO`] (`io`): the file exists but cannot be read (a system error; the CLI exits 2);
//! - [`CODE_WORKSPACE`] (`workspace`): metadata missing, or a kind the scope does not allow;
//! - [`CODE_NO_WORKSPACE`] (`no-workspace`): from [`LocateError::to_diagnostic`].

use crate::fsio;
use crate::spec::model::RUN_REPLAY_ID_POINTER;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::diag::{Diagnostic, Pos, Span};
use crate::spec::consts::{ArtifactKind, SMALL_DIR, WORKSPACE_FILE};
pub use crate::spec::model::{Scope, WorkspaceKind};
use crate::yaml::{self, Document, Limits};

pub mod cache;
pub mod carry;
mod docs;
pub mod error;
pub mod txn;

pub use docs::Docs;

pub const CODE_MISSING: &str = "missing";
pub const CODE_YAML: &str = "yaml";
pub const CODE_IO: &str = "io";
pub const CODE_WORKSPACE: &str = "workspace";
pub const CODE_NO_WORKSPACE: &str = "no-workspace";

/// Where a workspace lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The directory that contains `.small/` (absolute).
    pub root: PathBuf,
    /// `root/.small`.
    pub small_dir: PathBuf,
}

/// There is no workspace to work on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocateError {
    #[error("no SMALL workspace: {} does not exist", small_dir.display())]
    NoSmallDir { root: PathBuf, small_dir: PathBuf },
    #[error("no SMALL workspace: {} is not a directory", small_dir.display())]
    NotADirectory { root: PathBuf, small_dir: PathBuf },
    #[error("cannot read {}: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("{} is a symbolic link; small works only on a real .small/ directory", small_dir.display())]
    Symlink { root: PathBuf, small_dir: PathBuf },
}

impl LocateError {
    /// The error as a diagnostic (code `no-workspace`), with a fix.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(CODE_NO_WORKSPACE, self.to_string());
        match self {
            LocateError::NoSmallDir { root, .. } => d.with_help(format!(
                "create one with `small init --dir {}`, or point --dir at a directory that has a .small/ folder",
                shell_quote(root)
            )),
            LocateError::NotADirectory { .. } => {
                d.with_help("move the file named .small out of the way, then run `small init`")
            }
            LocateError::Unreadable { .. } => d.with_help("check the path and its permissions"),
            LocateError::Symlink { .. } => d.with_help(
                "replace the link with the directory it points to, or run small in that directory",
            ),
        }
    }
}

fn shell_quote(p: &Path) -> String {
    let s = p.display().to_string();
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Find the workspace. With `dir` (the `--dir` flag): exactly that directory (or, when it
/// is a `.small` directory, its parent). Without: the nearest directory, from the current
/// one upward to the filesystem root, that holds `.small/`, as git finds `.git/`.
pub fn locate(dir: Option<&Path>) -> Result<Location, LocateError> {
    let cwd = || {
        std::env::current_dir().map_err(|e| LocateError::Unreadable {
            path: PathBuf::from("."),
            reason: e.to_string(),
        })
    };
    let base = match dir {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => cwd()?.join(d),
        None => {
            let here = normalize(&cwd()?);
            return match find_upward(&here) {
                Some(root) => at(root),
                None => at(here),
            };
        }
    };
    at(normalize(&base))
}

/// The workspace root for a `--dir` value: the directory itself, or its parent when the
/// value names the `.small` directory.
pub fn workspace_root(dir: &Path) -> PathBuf {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if abs.file_name().is_some_and(|n| n == SMALL_DIR) {
        if let Some(parent) = abs.parent() {
            return parent.to_path_buf();
        }
    }
    abs
}

/// The workspace root for an optional `--dir`: exactly that directory when given, else the
/// nearest directory from the current one upward that holds `.small/` (the current directory
/// when there is none).
pub fn discover_root(dir: Option<&Path>) -> PathBuf {
    match dir {
        Some(d) => workspace_root(d),
        None => {
            let here = workspace_root(Path::new("."));
            find_upward(&here).unwrap_or(here)
        }
    }
}

/// The nearest directory from `start` upward (itself included) that holds a `.small`
/// directory, if any. The search stops at the filesystem root.
pub fn find_upward(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| std::fs::metadata(d.join(SMALL_DIR)).is_ok_and(|m| m.is_dir()))
        .map(Path::to_path_buf)
}

/// The `.small/` directory `dir` names (the directory holding it, or `.small` itself), or
/// the nearest one upward from the current directory (else where it would be created
/// there). It need not exist.
pub fn small_dir_for(dir: Option<&Path>) -> std::io::Result<PathBuf> {
    let base = match dir {
        Some(d) => d.to_path_buf(),
        None => {
            let here = std::env::current_dir()?;
            find_upward(&here).unwrap_or(here)
        }
    };
    if base.file_name().is_some_and(|n| n == SMALL_DIR) {
        Ok(base)
    } else {
        Ok(base.join(SMALL_DIR))
    }
}

/// The workspace that encloses `dir` from above (a `.small/` in a parent directory), if any:
/// what `init` warns about before it creates a workspace inside another one.
pub fn enclosing_workspace(dir: &Path) -> Option<PathBuf> {
    let dir = normalize(dir);
    dir.parent().and_then(find_upward)
}

/// The workspace whose root is `base` (or whose `.small` directory is `base`).
fn at(base: PathBuf) -> Result<Location, LocateError> {
    let root = if base.file_name().is_some_and(|n| n == SMALL_DIR) {
        base.parent().map(Path::to_path_buf).unwrap_or(base.clone())
    } else {
        base
    };
    let small_dir = root.join(SMALL_DIR);
    // `symlink_metadata`: a `.small` that is a link is refused
    // (docs/decisions/0070-hostile-files-links.md), so no file small reads or writes can be
    // redirected outside the workspace by it.
    match std::fs::symlink_metadata(&small_dir) {
        Ok(m) if m.file_type().is_symlink() => Err(LocateError::Symlink { root, small_dir }),
        Ok(m) if m.is_dir() => Ok(Location { root, small_dir }),
        Ok(_) => Err(LocateError::NotADirectory { root, small_dir }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(LocateError::NoSmallDir { root, small_dir })
        }
        Err(e) if e.raw_os_error() == Some(20) => {
            Err(LocateError::NotADirectory { root, small_dir })
        }
        Err(e) => Err(LocateError::Unreadable {
            path: small_dir,
            reason: e.to_string(),
        }),
    }
}

/// Remove `.` components and resolve `..` lexically (no symlink resolution).
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// What to load.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Canonical artifacts to read; each one that is missing is reported.
    pub artifacts: Vec<ArtifactKind>,
    /// Read `workspace.small.yml` when it exists.
    pub metadata: bool,
    pub limits: Limits,
}

impl LoadOptions {
    /// All five artifacts and the metadata, default limits.
    pub fn all() -> Self {
        LoadOptions {
            artifacts: ArtifactKind::ALL.to_vec(),
            metadata: true,
            limits: Limits::default(),
        }
    }

    /// Only these artifacts, plus the metadata.
    pub fn only(kinds: &[ArtifactKind]) -> Self {
        LoadOptions {
            artifacts: kinds.to_vec(),
            ..LoadOptions::all()
        }
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn without_metadata(mut self) -> Self {
        self.metadata = false;
        self
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions::all()
    }
}

/// One canonical artifact, parsed. `document.root` is a mapping.
#[derive(Debug, Clone)]
pub struct LoadedArtifact {
    pub kind: ArtifactKind,
    /// Absolute path.
    pub path: PathBuf,
    /// Path relative to the workspace root, `/`-separated: `.small/plan.small.yml`. This is
    /// what diagnostics name.
    pub rel_path: String,
    pub document: Document,
}

/// `workspace.small.yml`, parsed. `document.root` is a mapping.
#[derive(Debug, Clone)]
pub struct WorkspaceMeta {
    pub path: PathBuf,
    pub rel_path: String,
    pub document: Document,
}

impl WorkspaceMeta {
    fn str_at(&self, pointer: &str) -> Option<&str> {
        self.document.root.pointer(pointer).and_then(|n| n.as_str())
    }
    /// `kind`, if it is a string.
    pub fn kind(&self) -> Option<&str> {
        self.str_at("/kind")
    }
    /// `small_version`, if it is a string.
    pub fn small_version(&self) -> Option<&str> {
        self.str_at("/small_version")
    }
    /// `run.replay_id`, trimmed, if it is a non-empty string.
    pub fn run_replay_id(&self) -> Option<&str> {
        self.str_at(RUN_REPLAY_ID_POINTER)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }
}

/// A loaded workspace. See the module docs.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub small_dir: PathBuf,
    pub intent: Option<LoadedArtifact>,
    pub constraints: Option<LoadedArtifact>,
    pub plan: Option<LoadedArtifact>,
    pub progress: Option<LoadedArtifact>,
    pub handoff: Option<LoadedArtifact>,
    /// `workspace.small.yml`, when requested, present and parseable.
    pub metadata: Option<WorkspaceMeta>,
    /// Whether `workspace.small.yml` exists (it may still have failed to parse).
    pub metadata_exists: bool,
    /// Problems found while loading, in stable order (file, then position).
    pub diagnostics: Vec<Diagnostic>,
    /// Text of files that were read but did not load (YAML errors), for error snippets.
    failed_sources: Vec<(String, String)>,
    /// The progress log's text when it was checked without being held (see
    /// [`Workspace::set_progress_unread`]): read the first time a snippet needs it, with the
    /// bytes a writer staged after the file's.
    unread_progress: Option<(std::sync::OnceLock<Option<String>>, Vec<u8>)>,
}

/// A writer's staged change to the progress log, for checking the log as the writer will
/// leave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StagedLog {
    /// The log's whole new content.
    Whole(Vec<u8>),
    /// Bytes to add after the file's first `disk_len` bytes (its length when they were
    /// staged).
    Appended { disk_len: u64, bytes: Vec<u8> },
}

impl StagedLog {
    /// The log's whole content: the new content, or the file (as `read` reads it) followed
    /// by the appended bytes.
    pub fn content<E>(self, read: impl FnOnce() -> Result<Vec<u8>, E>) -> Result<Vec<u8>, E> {
        match self {
            StagedLog::Whole(bytes) => Ok(bytes),
            StagedLog::Appended { bytes, .. } => read().map(|mut b| {
                b.extend_from_slice(&bytes);
                b
            }),
        }
    }
}

impl Workspace {
    /// Locate the workspace from `dir` (or the current directory) and load it.
    pub fn open(dir: Option<&Path>, opts: &LoadOptions) -> Result<Workspace, LocateError> {
        Ok(Workspace::load(locate(dir)?, opts))
    }

    /// Load a located workspace.
    pub fn load(loc: Location, opts: &LoadOptions) -> Workspace {
        Workspace::load_overlay(loc, opts, &|_| None)
    }

    /// Load a located workspace, taking a file's bytes from `overlay` (by workspace-relative
    /// path, e.g. `.small/plan.small.yml`) when it returns `Some`: how a writer checks the
    /// workspace as it will be after its staged changes, with the same gates as `small check`.
    pub fn load_overlay(
        loc: Location,
        opts: &LoadOptions,
        overlay: &dyn Fn(&str) -> Option<Vec<u8>>,
    ) -> Workspace {
        let load_one = |path: &Path, rel: &str| -> Result<Document, LoadError> {
            match overlay(rel) {
                Some(bytes) => {
                    parse_artifact(&bytes, rel, &opts.limits).map_err(LoadError::Problem)
                }
                None => load_file(path, rel, &opts.limits),
            }
        };
        let mut ws = Workspace {
            root: loc.root,
            small_dir: loc.small_dir,
            intent: None,
            constraints: None,
            plan: None,
            progress: None,
            handoff: None,
            metadata: None,
            metadata_exists: false,
            diagnostics: Vec::new(),
            failed_sources: Vec::new(),
            unread_progress: None,
        };
        let mut kinds = opts.artifacts.clone();
        kinds.sort();
        kinds.dedup();
        for kind in kinds {
            let path = ws.small_dir.join(kind.file_name());
            let rel = rel_path(kind.file_name());
            match load_one(&path, &rel) {
                Ok(document) => {
                    *ws.slot_mut(kind) = Some(LoadedArtifact {
                        kind,
                        path,
                        rel_path: rel,
                        document,
                    });
                }
                Err(LoadError::Missing) => ws.diagnostics.push(missing_diag(kind, &rel)),
                Err(LoadError::Problem(d)) => ws.note_failure(&path, *d),
            }
        }
        if opts.metadata {
            let path = ws.small_dir.join(WORKSPACE_FILE);
            let rel = rel_path(WORKSPACE_FILE);
            match load_one(&path, &rel) {
                Ok(document) => {
                    ws.metadata_exists = true;
                    ws.metadata = Some(WorkspaceMeta {
                        path,
                        rel_path: rel,
                        document,
                    });
                }
                Err(LoadError::Missing) => {}
                Err(LoadError::Problem(d)) => {
                    ws.metadata_exists = true;
                    ws.note_failure(&path, *d);
                }
            }
        }
        crate::diag::sort(&mut ws.diagnostics);
        ws
    }

    fn note_failure(&mut self, path: &Path, d: Diagnostic) {
        if d.code == CODE_YAML && d.span.is_some() {
            if let (Some(rel), Ok(bytes)) = (
                d.file.clone(),
                fsio::read_bounded(path, fsio::MAX_READ_BYTES),
            ) {
                self.failed_sources
                    .push((rel, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
        self.diagnostics.push(d);
    }

    /// Load the progress log with bounded memory: each entry of `entries` is handed to
    /// `sink` with its index as soon as it is parsed, then dropped. Afterwards
    /// [`Workspace::progress`] holds the document with `entries` as an empty sequence (whose
    /// span covers the entries in the source) and the full source text; problems (missing
    /// file, YAML error) go to [`Workspace::diagnostics`] as with [`Workspace::load`]. Use it
    /// on a workspace loaded without [`ArtifactKind::Progress`] in [`LoadOptions`].
    pub fn stream_progress(&mut self, limits: &Limits, sink: &mut dyn FnMut(usize, yaml::Node)) {
        if let Some(text) = self.read_progress(limits) {
            let parsed = yaml::parse_streaming(&text, limits, "entries", sink);
            self.set_progress(text, parsed);
        }
    }

    /// First half of [`Workspace::stream_progress`]: forget any loaded progress log, then read
    /// its text. `None` when it cannot be read (missing, unreadable, too large, not UTF-8);
    /// the problem is in [`Workspace::diagnostics`] then.
    pub fn read_progress(&mut self, limits: &Limits) -> Option<String> {
        self.read_progress_from(limits, None)
    }

    /// [`Workspace::read_progress`], as a writer's staged change `given` leaves the file (its
    /// size is checked by the parser, as in [`Workspace::load_overlay`]).
    pub fn read_progress_from(
        &mut self,
        limits: &Limits,
        given: Option<StagedLog>,
    ) -> Option<String> {
        let kind = ArtifactKind::Progress;
        let path = self.small_dir.join(kind.file_name());
        let rel = rel_path(kind.file_name());
        self.progress = None;
        self.diagnostics
            .retain(|d| d.file.as_deref() != Some(rel.as_str()));
        self.failed_sources.retain(|(r, _)| *r != rel);
        let read = match given {
            Some(log) => log.content(|| read_file(&path, &rel, limits)),
            None => read_file(&path, &rel, limits),
        };
        let text = match read {
            Err(LoadError::Missing) => {
                self.diagnostics.push(missing_diag(kind, &rel));
                None
            }
            Err(LoadError::Problem(d)) => {
                self.diagnostics.push(*d);
                None
            }
            Ok(bytes) => match String::from_utf8(bytes) {
                Err(e) => {
                    let d = match yaml::parse_bytes(e.as_bytes(), limits) {
                        Err(y) => yaml_diag(&rel, &y),
                        Ok(_) => Box::new(
                            Diagnostic::error(CODE_YAML, format!("{rel} is not valid UTF-8"))
                                .in_file(rel.clone()),
                        ),
                    };
                    self.diagnostics.push(*d);
                    None
                }
                Ok(text) => Some(text),
            },
        };
        if text.is_none() {
            crate::diag::sort(&mut self.diagnostics);
        }
        text
    }

    /// Second half of [`Workspace::stream_progress`]: record the progress log read by
    /// [`Workspace::read_progress`] and parsed (streamed) into `parsed`.
    pub fn set_progress(&mut self, text: String, parsed: Result<yaml::Node, yaml::YamlError>) {
        self.unread_progress = None;
        let kind = ArtifactKind::Progress;
        let path = self.small_dir.join(kind.file_name());
        let rel = rel_path(kind.file_name());
        match parsed {
            Err(e) => {
                self.diagnostics.push(*yaml_diag(&rel, &e));
                self.failed_sources.push((rel, text));
            }
            Ok(root) => match require_mapping(Document { root, source: text }, &rel) {
                Ok(document) => {
                    self.progress = Some(LoadedArtifact {
                        kind,
                        path,
                        rel_path: rel,
                        document,
                    })
                }
                Err(d) => self.diagnostics.push(*d),
            },
        }
        crate::diag::sort(&mut self.diagnostics);
    }

    /// Record the progress log as checked without holding its text (the gates' cache vouched
    /// for all but its tail; as the progress check resumes it): `root`
    /// is its document without entries. The artifact's `source` is left empty, and
    /// [`Workspace::source_of`] reads the file again if a snippet asks for it, followed by
    /// `staged` (the bytes a writer staged after it, if the log was checked with them).
    pub fn set_progress_unread(&mut self, root: yaml::Node, staged: Vec<u8>) {
        let kind = ArtifactKind::Progress;
        let rel = rel_path(kind.file_name());
        self.diagnostics
            .retain(|d| d.file.as_deref() != Some(rel.as_str()));
        self.failed_sources.retain(|(r, _)| *r != rel);
        self.progress = None;
        self.set_progress(String::new(), Ok(root));
        self.unread_progress = Some((std::sync::OnceLock::new(), staged));
    }

    /// The loaded artifact of a kind, if loaded.
    pub fn artifact(&self, kind: ArtifactKind) -> Option<&LoadedArtifact> {
        match kind {
            ArtifactKind::Intent => self.intent.as_ref(),
            ArtifactKind::Constraints => self.constraints.as_ref(),
            ArtifactKind::Plan => self.plan.as_ref(),
            ArtifactKind::Progress => self.progress.as_ref(),
            ArtifactKind::Handoff => self.handoff.as_ref(),
        }
    }

    fn slot_mut(&mut self, kind: ArtifactKind) -> &mut Option<LoadedArtifact> {
        match kind {
            ArtifactKind::Intent => &mut self.intent,
            ArtifactKind::Constraints => &mut self.constraints,
            ArtifactKind::Plan => &mut self.plan,
            ArtifactKind::Progress => &mut self.progress,
            ArtifactKind::Handoff => &mut self.handoff,
        }
    }

    /// The loaded artifacts, in the spec's order.
    pub fn artifacts(&self) -> impl Iterator<Item = &LoadedArtifact> {
        ArtifactKind::ALL
            .into_iter()
            .filter_map(|k| self.artifact(k))
    }

    /// Whether loading found any error.
    pub fn has_load_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Whether some file could not be read for a system reason (code `io`).
    pub fn has_io_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.code == CODE_IO)
    }

    /// The source text of a file named by a diagnostic (`.small/plan.small.yml`): loaded
    /// files, and files that were read but failed to parse.
    pub fn source_of(&self, rel_path: &str) -> Option<&str> {
        let progress = rel_path == self::rel_path(ArtifactKind::Progress.file_name());
        if let (true, Some((unread, staged)), Some(p)) =
            (progress, &self.unread_progress, &self.progress)
        {
            return unread
                .get_or_init(|| {
                    let mut bytes = fsio::read_bounded(&p.path, fsio::MAX_READ_BYTES).ok()?;
                    bytes.extend_from_slice(staged);
                    String::from_utf8(bytes).ok()
                })
                .as_deref();
        }
        self.artifacts()
            .find(|a| a.rel_path == rel_path)
            .map(|a| a.document.source.as_str())
            .or_else(|| {
                self.failed_sources
                    .iter()
                    .find(|(r, _)| r == rel_path)
                    .map(|(_, t)| t.as_str())
            })
            .or_else(|| {
                self.metadata
                    .as_ref()
                    .filter(|m| m.rel_path == rel_path)
                    .map(|m| m.document.source.as_str())
            })
    }

    /// `--workspace` scope check: the metadata file must exist and its kind must be allowed
    /// by `scope`. Needs the workspace loaded with metadata. An unknown kind is left to schema
    /// validation of the metadata (see module docs); a metadata file that failed to parse is
    /// already in [`Workspace::diagnostics`].
    pub fn check_scope(&self, scope: Scope) -> Vec<Diagnostic> {
        let rel = rel_path(WORKSPACE_FILE);
        if !self.metadata_exists {
            return vec![Diagnostic::error(CODE_WORKSPACE, format!("workspace metadata {rel} is missing"))
                .in_file(rel)
                .with_help("create it with `small init --force` (kind: repo-root), or write `kind: repo-root` into it")];
        }
        let Some(meta) = &self.metadata else {
            return Vec::new();
        };
        let Some(kind) = meta.kind() else {
            return Vec::new();
        };
        let Ok(kind) = WorkspaceKind::from_str(kind) else {
            return Vec::new();
        };
        if scope.allows(kind) {
            return Vec::new();
        }
        let span = meta.document.root.get("kind").map(|n| n.span);
        vec![Diagnostic::error(
            CODE_WORKSPACE,
            format!(
                "workspace kind \"{}\" is not allowed with --workspace {}",
                kind.as_str(),
                scope.as_str()
            ),
        )
        .in_file(rel)
        .at(span)
        .with_path("/kind")
        .with_help(format!(
            "pass --workspace {} or --workspace any to check this workspace",
            kind.scope_name()
        ))]
    }
}

fn rel_path(file: &str) -> String {
    crate::spec::consts::small_rel(file)
}

fn missing_diag(kind: ArtifactKind, rel: &str) -> Diagnostic {
    Diagnostic::error(CODE_MISSING, format!("required file {rel} is missing"))
        .in_file(rel)
        .with_help(missing_help(kind))
}

fn missing_help(kind: ArtifactKind) -> String {
    let body = match kind {
        ArtifactKind::Intent => {
            "owner: human, intent: \"...\", scope: {include: [], exclude: []}, success_criteria: []"
        }
        ArtifactKind::Constraints => {
            "owner: human, constraints: [{id: ..., rule: \"...\", severity: error}]"
        }
        ArtifactKind::Plan => "owner: agent, tasks: [{id: task-1, title: \"...\"}]",
        ArtifactKind::Progress => "owner: agent, entries: []",
        ArtifactKind::Handoff => {
            "owner: agent, summary: \"...\", resume: {next_steps: []}, links: [], replayId: {value: <64 hex>, source: manual}"
        }
    };
    format!(
        "restore it (for example from version control), or create it with at least: small_version: \"1.0.0\", {body}"
    )
}

/// Why a file did not load.
#[derive(Debug, Clone)]
pub enum LoadError {
    /// The file does not exist.
    Missing,
    /// It exists but could not be used; the diagnostic says why (`io` or `yaml`).
    Problem(Box<Diagnostic>),
}

/// Read and parse one YAML file whose top level must be a mapping. `rel` is the name used in
/// diagnostics. Enforces `limits.max_bytes` before reading.
pub fn load_file(path: &Path, rel: &str, limits: &Limits) -> Result<Document, LoadError> {
    let bytes = read_file(path, rel, limits)?;
    let doc = yaml::parse_vec(bytes, limits).map_err(|e| LoadError::Problem(yaml_diag(rel, &e)))?;
    require_mapping(doc, rel).map_err(LoadError::Problem)
}

/// Read a file's bytes: missing, unreadable and too-large files are [`LoadError`]s. The file
/// is opened through [`fsio`]: a link, a FIFO or a device is refused at open (without
/// blocking), and at most `limits.max_bytes + 1` bytes are ever read.
fn read_file(path: &Path, rel: &str, limits: &Limits) -> Result<Vec<u8>, LoadError> {
    let io =
        |msg: String| LoadError::Problem(Box::new(Diagnostic::error(CODE_IO, msg).in_file(rel)));
    let too_large = |len: String| {
        LoadError::Problem(Box::new(
            Diagnostic::error(
                CODE_YAML,
                format!(
                    "{rel} is too large ({len}; the limit is {} bytes)",
                    limits.max_bytes
                ),
            )
            .in_file(rel),
        ))
    };
    let file = match fsio::open_read(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadError::Missing),
        Err(e) => return Err(io(format!("cannot read {rel}: {e}"))),
    };
    let claimed = file.metadata().map(|m| m.len()).unwrap_or(0);
    if claimed > limits.max_bytes as u64 {
        return Err(too_large(format!("{claimed} bytes")));
    }
    match fsio::read_all_bounded(file, limits.max_bytes as u64) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            Err(too_large("it grew while being read".into()))
        }
        Err(e) => Err(io(format!("cannot read {rel}: {e}"))),
    }
}

/// Parse file bytes as an artifact: YAML, and a mapping at the top level.
pub fn parse_artifact(
    bytes: &[u8],
    rel: &str,
    limits: &Limits,
) -> Result<Document, Box<Diagnostic>> {
    let doc = yaml::parse_bytes(bytes, limits).map_err(|e| yaml_diag(rel, &e))?;
    require_mapping(doc, rel)
}

fn yaml_diag(rel: &str, e: &yaml::YamlError) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(CODE_YAML, format!("{rel} is not valid YAML: {}", e.message))
            .in_file(rel)
            .at(Some(Span {
                start: e.pos,
                end: e.pos,
            })),
    )
}

fn require_mapping(doc: Document, rel: &str) -> Result<Document, Box<Diagnostic>> {
    if doc.root.as_map().is_some() {
        return Ok(doc);
    }
    let (what, span) = match &doc.root.value {
        yaml::Value::Null => (
            "is empty",
            Span {
                start: Pos {
                    line: 1,
                    column: 1,
                    offset: 0,
                },
                ..doc.root.span
            },
        ),
        yaml::Value::Seq(_) => ("has a list at the top level", doc.root.span),
        _ => ("has a single value at the top level", doc.root.span),
    };
    Err(Box::new(
        Diagnostic::error(
            CODE_YAML,
            format!("{rel} {what}; it must be a mapping of fields"),
        )
        .in_file(rel)
        .at(Some(span))
        .with_help("write the fields as `key: value` lines at the top level"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTENT: &str = "small_version: \"1.0.0\"\nowner: human\nintent: x\nscope: {include: [], exclude: []}\nsuccess_criteria: []\n";

    fn make(files: &[(&str, &str)]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(".small")).unwrap();
        for (name, text) in files {
            std::fs::write(tmp.path().join(".small").join(name), text).unwrap();
        }
        tmp
    }

    #[test]
    fn locate_from_root_and_from_inside_small() {
        let tmp = make(&[]);
        let a = locate(Some(tmp.path())).unwrap();
        let b = locate(Some(&tmp.path().join(".small"))).unwrap();
        let c = locate(Some(&tmp.path().join(".small/."))).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a.small_dir, tmp.path().join(".small"));
    }

    #[test]
    fn locate_errors() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(matches!(
            locate(Some(tmp.path())),
            Err(LocateError::NoSmallDir { .. })
        ));
        std::fs::write(tmp.path().join(".small"), "x").unwrap();
        let err = locate(Some(tmp.path())).unwrap_err();
        assert!(matches!(err, LocateError::NotADirectory { .. }), "{err:?}");
        assert_eq!(err.to_diagnostic().code, CODE_NO_WORKSPACE);
    }

    #[test]
    fn every_missing_file_is_reported() {
        let tmp = make(&[("intent.small.yml", INTENT)]);
        let ws = Workspace::open(Some(tmp.path()), &LoadOptions::all()).unwrap();
        let missing: Vec<_> = ws
            .diagnostics
            .iter()
            .filter(|d| d.code == CODE_MISSING)
            .collect();
        assert_eq!(missing.len(), 4);
        assert!(ws.intent.is_some());
        assert!(!ws.metadata_exists);
        assert_eq!(
            ws.intent.as_ref().unwrap().rel_path,
            ".small/intent.small.yml"
        );
        // Sorted by file name.
        let files: Vec<_> = missing.iter().map(|d| d.file.clone().unwrap()).collect();
        let mut sorted = files.clone();
        sorted.sort();
        assert_eq!(files, sorted);
    }

    #[test]
    fn only_requested_artifacts_are_loaded() {
        let tmp = make(&[("intent.small.yml", INTENT)]);
        let ws = Workspace::open(
            Some(tmp.path()),
            &LoadOptions::only(&[ArtifactKind::Intent]),
        )
        .unwrap();
        assert!(ws.diagnostics.is_empty());
        assert!(ws.plan.is_none());
    }

    #[test]
    fn yaml_problems_become_diagnostics() {
        let tmp = make(&[
            ("intent.small.yml", "a: 1\na: 2\n"),
            ("plan.small.yml", ""),
            ("progress.small.yml", "- 1\n"),
            ("workspace.small.yml", "kind: [\n"),
        ]);
        let ws = Workspace::open(Some(tmp.path()), &LoadOptions::all()).unwrap();
        let yaml: Vec<_> = ws
            .diagnostics
            .iter()
            .filter(|d| d.code == CODE_YAML)
            .collect();
        assert_eq!(yaml.len(), 4, "{:#?}", ws.diagnostics);
        assert!(ws.metadata_exists && ws.metadata.is_none());
        // Files that failed to parse keep their text for snippets.
        assert_eq!(
            ws.source_of(".small/intent.small.yml"),
            Some("a: 1\na: 2\n")
        );
        assert!(ws.source_of(".small/handoff.small.yml").is_none());
        let dup = yaml
            .iter()
            .find(|d| d.file.as_deref() == Some(".small/intent.small.yml"))
            .unwrap();
        assert_eq!(dup.span.unwrap().start.line, 2);
    }

    /// A log checked without being held: a snippet's source is read again from the file,
    /// followed by the bytes a writer staged after it.
    #[test]
    fn an_unread_log_is_read_again_with_its_staged_bytes() {
        let progress = "small_version: \"1.0.0\"\nowner: agent\nentries:\n  - task_id: a\n";
        let tmp = make(&[("progress.small.yml", progress)]);
        let mut ws = Workspace::open(Some(tmp.path()), &LoadOptions::only(&[])).unwrap();
        let root = yaml::parse_str(progress, &Limits::default()).unwrap().root;
        ws.set_progress_unread(root, b"  - task_id: b\n".to_vec());
        assert_eq!(ws.progress.as_ref().unwrap().document.source, "");
        assert_eq!(
            ws.source_of(".small/progress.small.yml"),
            Some(format!("{progress}  - task_id: b\n").as_str())
        );
    }

    #[test]
    fn progress_can_be_streamed() {
        let progress =
            "small_version: \"1.0.0\"\nowner: agent\nentries:\n  - task_id: a\n  - task_id: b\n";
        let tmp = make(&[("progress.small.yml", progress)]);
        let mut ws = Workspace::open(Some(tmp.path()), &LoadOptions::only(&[])).unwrap();
        let mut seen = Vec::new();
        ws.stream_progress(&Limits::default(), &mut |i, node| {
            seen.push((
                i,
                node.get("task_id")
                    .and_then(|n| n.as_str())
                    .map(str::to_string),
            ))
        });
        assert_eq!(seen, vec![(0, Some("a".into())), (1, Some("b".into()))]);
        let p = ws.progress.as_ref().unwrap();
        assert_eq!(
            p.document
                .root
                .get("entries")
                .and_then(|n| n.as_seq())
                .map(<[_]>::len),
            Some(0)
        );
        assert_eq!(p.document.source, progress);
        assert!(ws.diagnostics.is_empty());

        std::fs::write(tmp.path().join(".small/progress.small.yml"), "entries: [\n").unwrap();
        ws.stream_progress(&Limits::default(), &mut |_, _| {});
        assert_eq!(ws.diagnostics.len(), 1);
        assert_eq!(ws.diagnostics[0].code, CODE_YAML);
        assert!(ws.source_of(".small/progress.small.yml").is_some());
        std::fs::remove_file(tmp.path().join(".small/progress.small.yml")).unwrap();
        ws.stream_progress(&Limits::default(), &mut |_, _| {});
        assert_eq!(ws.diagnostics.len(), 1);
        assert_eq!(ws.diagnostics[0].code, CODE_MISSING);
    }

    #[test]
    fn size_limit_is_enforced() {
        let tmp = make(&[("intent.small.yml", INTENT)]);
        let limits = Limits {
            max_bytes: 10,
            ..Limits::default()
        };
        let ws = Workspace::open(
            Some(tmp.path()),
            &LoadOptions::only(&[ArtifactKind::Intent]).with_limits(limits),
        )
        .unwrap();
        assert!(
            ws.diagnostics[0].message.contains("too large"),
            "{:?}",
            ws.diagnostics
        );
    }

    #[test]
    fn scope_checks() {
        assert_eq!("  ANY ".parse::<Scope>().unwrap(), Scope::Any);
        assert!("nope".parse::<Scope>().is_err());
        let tmp = make(&[("workspace.small.yml", "kind: examples\n")]);
        let ws = Workspace::open(Some(tmp.path()), &LoadOptions::only(&[])).unwrap();
        assert_eq!(ws.check_scope(Scope::Root).len(), 1);
        assert!(ws.check_scope(Scope::Examples).is_empty());
        assert!(ws.check_scope(Scope::Any).is_empty());
        let d = &ws.check_scope(Scope::Root)[0];
        assert_eq!(d.span.unwrap().start.line, 1);
        let tmp = make(&[]);
        let ws = Workspace::open(Some(tmp.path()), &LoadOptions::only(&[])).unwrap();
        assert_eq!(ws.check_scope(Scope::Any)[0].code, CODE_WORKSPACE);
        let tmp = make(&[(
            "workspace.small.yml",
            "kind: sandbox\nrun:\n  replay_id: \" abc \"\n",
        )]);
        let ws = Workspace::open(Some(tmp.path()), &LoadOptions::only(&[])).unwrap();
        assert!(
            ws.check_scope(Scope::Root).is_empty(),
            "unknown kinds are left to schema validation"
        );
        assert_eq!(ws.metadata.as_ref().unwrap().run_replay_id(), Some("abc"));
    }

    #[test]
    fn small_dir_for_accepts_the_root_or_the_small_dir() {
        let p = Path::new("/tmp/proj");
        assert_eq!(small_dir_for(Some(p)).unwrap(), p.join(SMALL_DIR));
        let s = p.join(SMALL_DIR);
        assert_eq!(small_dir_for(Some(&s)).unwrap(), s);
    }
}
