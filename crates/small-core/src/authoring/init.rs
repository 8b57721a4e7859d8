//! Creating a workspace: `.small/` with its six files from the templates, the `meta/init`
//! progress entry, the `.gitignore` lines for the tool's operational directories, and (when
//! the front end composed one) AGENTS.md, all in one transaction.
//!
//! Progress is append-only (seed 000, invariant 3): re-initialising keeps the log and
//! appends `meta/init`. A log that cannot take an append is copied to
//! `.small-cache/backup/` (nothing is deleted) and a new one started.

use std::path::{Path, PathBuf};

use crate::authoring::agents::Composed;
use crate::authoring::progress::{NewEntry, TimestampRule};
use crate::authoring::templates;
use crate::spec::consts::{
    small_rel, ArtifactKind, AGENTS_FILE, ARCHIVE_DIR, CACHE_DIR, RUNS_DIR, SMALL_DIR,
    WORKSPACE_FILE,
};
use crate::spec::model::{TaskStatus, WorkspaceKind};
use crate::workspace::error::{code, Error};
use crate::workspace::txn::{atomic_write, Transaction};

/// What to initialise.
#[derive(Debug, Clone)]
pub struct InitRequest<'a> {
    /// The workspace root (absolute): `.small/` is created inside it.
    pub root: &'a Path,
    /// The intent text for `intent.small.yml` (the template's placeholder when `None`).
    pub intent: Option<&'a str>,
    /// Rewrite the files of an existing workspace (the progress log keeps its history).
    pub force: bool,
    /// AGENTS.md as composed by the caller (`None`: leave AGENTS.md alone).
    pub agents: Option<&'a Composed>,
    /// Titles of the tasks to seed the plan with (`task-1`, `task-2`, ...); empty: the
    /// template's placeholder task.
    pub tasks: &'a [String],
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAction {
    Created,
    Overwrote,
    /// The progress log, kept and appended to.
    Extended,
}

/// One file `init` wrote, with a note on what it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    pub path: String,
    pub action: FileAction,
    pub note: String,
}

/// What `init` did.
#[derive(Debug, Clone)]
pub struct InitOutcome {
    /// Whether `.small/` existed before (a re-initialisation).
    pub existed: bool,
    pub small_dir: PathBuf,
    pub files: Vec<FileReport>,
    /// `.gitignore` lines added, and whether the file existed; `None` when nothing was added.
    pub gitignore: Option<(bool, Vec<String>)>,
    /// The workspace kind written into metadata, and the repository that made it `examples`.
    pub kind: WorkspaceKind,
    /// The progress log that could not be extended, and where it was copied.
    pub progress_backup: Option<(String, String)>,
    /// The replay ID of the new run (written into the handoff).
    pub replay_id: String,
}

/// Create (or with `force` re-create) the workspace at `req.root`.
pub fn init(req: &InitRequest) -> Result<InitOutcome, Error> {
    let root = req.root;
    let small_dir = root.join(SMALL_DIR);
    if small_dir.exists() && !small_dir.is_dir() {
        return Err(Error::system(
            code::IO,
            format!("{} exists and is not a directory", small_dir.display()),
        ));
    }
    let existed = small_dir.is_dir();
    if existed && !req.force {
        return Err(Error::invalid(
            code::EXISTS,
            format!(
                "a SMALL workspace already exists in {} ; nothing was changed.",
                root.display()
            ),
        )
        .with_help(
            "`small init --force` rewrites its files from the templates (the progress log is kept)",
        ));
    }
    if root.exists() && !root.is_dir() {
        return Err(Error::system(
            code::IO,
            format!("{} is not a directory", root.display()),
        ));
    }
    std::fs::create_dir_all(&small_dir).map_err(|e| {
        Error::system(
            code::IO,
            format!("cannot create {}: {e}", small_dir.display()),
        )
    })?;
    let mut txn = Transaction::begin(root)?;
    // Another `small init` may have won the race between the check above and the lock.
    if !req.force {
        let taken = ArtifactKind::ALL
            .iter()
            .map(|k| k.file_name())
            .chain([WORKSPACE_FILE])
            .any(|f| txn.exists(&small_rel(f)));
        if taken {
            return Err(Error::invalid(
                code::EXISTS,
                format!(
                    "a SMALL workspace was just created in {} by another process; nothing was changed",
                    root.display()
                ),
            ));
        }
    }

    let mut files = Vec::new();
    let progress_rel = ArtifactKind::Progress.rel_path();
    let mut progress_backup = None;
    let keep_progress = txn.exists(&progress_rel)
        && match txn.last_progress_timestamp() {
            Ok(_) => true,
            Err(e) => {
                let backup = back_up_progress(&txn, root, &progress_rel)?;
                progress_backup = Some((e.to_string(), backup));
                false
            }
        };

    if req.tasks.iter().any(|t| t.trim().is_empty()) {
        return Err(Error::invalid(code::REFUSED, "a task needs a title"));
    }
    let mut base = templates::base_artifacts(req.intent);
    if !req.tasks.is_empty() {
        for f in base.iter_mut() {
            if f.name == ArtifactKind::Plan.file_name() {
                f.content = templates::plan_with_tasks(req.tasks);
            }
        }
    }
    for f in &base {
        let rel = small_rel(f.name);
        let was = txn.exists(&rel);
        let kind = ArtifactKind::ALL
            .into_iter()
            .find(|k| k.file_name() == f.name);
        let (action, note) = if rel == progress_rel && keep_progress {
            (
                FileAction::Extended,
                "kept its history; meta/init appended".to_string(),
            )
        } else if rel == progress_rel && progress_backup.is_some() {
            txn.write(rel.clone(), f.content.clone().into_bytes());
            let backup = &progress_backup
                .as_ref()
                .map(|b| b.1.clone())
                .unwrap_or_default();
            (
                FileAction::Overwrote,
                format!("new log; the old one is in {backup}"),
            )
        } else {
            txn.write(rel.clone(), f.content.clone().into_bytes());
            let note = match kind {
                Some(ArtifactKind::Plan) if !req.tasks.is_empty() => {
                    "agent-owned: tasks (from --task)"
                }
                Some(k) => note(k),
                None => "",
            };
            (written(was), note.to_string())
        };
        files.push(FileReport {
            path: rel,
            action,
            note,
        });
    }

    let content_of = |name: &str| {
        base.iter()
            .find(|f| f.name == name)
            .map(|f| f.content.as_bytes())
            .unwrap_or_default()
    };
    let replay_id = crate::spec::replayid::auto_replay_id(
        content_of(ArtifactKind::Intent.file_name()),
        content_of(ArtifactKind::Plan.file_name()),
        Some(content_of(ArtifactKind::Constraints.file_name())),
    );
    let handoff_rel = ArtifactKind::Handoff.rel_path();
    let was = txn.exists(&handoff_rel);
    txn.write(
        handoff_rel.clone(),
        templates::bootstrap_handoff(&replay_id).into_bytes(),
    );
    files.push(FileReport {
        path: handoff_rel,
        action: written(was),
        note: format!("the resume point (replayId {}…)", &replay_id[..12]),
    });

    let (kind, repo) = detect_kind(root);
    let now = crate::spec::timestamp::format_utc(crate::authoring::progress::now());
    let ws_rel = small_rel(WORKSPACE_FILE);
    let was = txn.exists(&ws_rel);
    txn.write(
        ws_rel.clone(),
        templates::workspace(kind.as_str(), &now).into_bytes(),
    );
    files.push(FileReport {
        path: ws_rel,
        action: written(was),
        note: match &repo {
            Some(r) => format!("kind: {kind} (under {}/examples/)", r.display()),
            None => format!("kind: {kind}"),
        },
    });

    let gitignore = txn
        .read(".gitignore")?
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let gitignore_added = match gitignore_update(gitignore.as_deref()) {
        Some((text, added)) => {
            txn.write(".gitignore", text.into_bytes());
            Some((gitignore.is_some(), added))
        }
        None => None,
    };

    // AGENTS.md joins the transaction, unless it is a symbolic link: then the file it points
    // to is replaced after the commit.
    let agents_path = root.join(AGENTS_FILE);
    let agents_is_link =
        std::fs::symlink_metadata(&agents_path).is_ok_and(|m| m.file_type().is_symlink());
    let agents = req.agents.filter(|c| c.action.writes());
    if let Some(c) = agents.filter(|_| !agents_is_link) {
        txn.write(AGENTS_FILE, c.text.clone().into_bytes());
    }

    let entry = NewEntry::new(
        templates::INIT_TASK_ID,
        Some(TaskStatus::Completed.as_str()),
    )
    .field("evidence", templates::INIT_EVIDENCE)
    .field("notes", templates::init_notes(&root.display().to_string()))
    .field("command", "small init");
    txn.append_progress(&entry, &TimestampRule::Now)?;
    txn.commit()?;

    if let Some(c) = agents.filter(|_| agents_is_link) {
        atomic_write(&agents_path, c.text.as_bytes()).map_err(|e| {
            Error::system(
                code::IO,
                format!("cannot write {}: {e}", agents_path.display()),
            )
        })?;
    }

    Ok(InitOutcome {
        existed,
        small_dir,
        files,
        gitignore: gitignore_added,
        kind,
        progress_backup,
        replay_id,
    })
}

fn written(existed: bool) -> FileAction {
    if existed {
        FileAction::Overwrote
    } else {
        FileAction::Created
    }
}

fn note(kind: ArtifactKind) -> &'static str {
    match kind {
        ArtifactKind::Intent => "human-owned: what the project is for",
        ArtifactKind::Constraints => "human-owned: rules every change must respect",
        ArtifactKind::Plan => "agent-owned: tasks (one placeholder task-1)",
        ArtifactKind::Progress => "agent-owned, append-only: starts with the meta/init entry",
        ArtifactKind::Handoff => "the resume point",
    }
}

/// Copy a progress log that cannot take an append to `.small-cache/backup/`; returns the
/// backup's workspace-relative path.
fn back_up_progress(txn: &Transaction, root: &Path, rel: &str) -> Result<String, Error> {
    let old = txn.read(rel)?.unwrap_or_default();
    let stamp: String = crate::spec::timestamp::format_utc(crate::authoring::progress::now())
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    let backup = format!("{CACHE_DIR}/backup/progress.small.{stamp}.yml");
    atomic_write(root.join(&backup), &old)
        .map_err(|e| Error::system(code::IO, format!("cannot back up the progress log: {e}")))?;
    Ok(backup)
}

/// `examples` when `root` lies below an `examples/` directory whose parent is a repository
/// (holds `.git` or `.small`); `repo-root` otherwise. Returns the repository found.
pub fn detect_kind(root: &Path) -> (WorkspaceKind, Option<PathBuf>) {
    let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut cur = real.parent();
    while let Some(dir) = cur {
        if dir.file_name().is_some_and(|n| n == "examples") {
            if let Some(repo) = dir.parent() {
                if repo.join(".git").exists() || repo.join(SMALL_DIR).is_dir() {
                    return (WorkspaceKind::Examples, Some(repo.to_path_buf()));
                }
            }
        }
        cur = dir.parent();
    }
    (WorkspaceKind::RepoRoot, None)
}

/// Lines `init` adds to .gitignore: the tool's operational directories.
const GITIGNORE_LINES: [&str; 3] = [CACHE_DIR, RUNS_DIR, ARCHIVE_DIR];

/// The new .gitignore content and the lines added, or `None` when nothing is missing.
pub fn gitignore_update(existing: Option<&str>) -> Option<(String, Vec<String>)> {
    let text = existing.unwrap_or("");
    let present: Vec<&str> = text
        .lines()
        .map(|l| l.trim().trim_end_matches('/'))
        .collect();
    let missing: Vec<String> = GITIGNORE_LINES
        .iter()
        .filter(|l| {
            !present
                .iter()
                .any(|p| p == *l || p.trim_start_matches('/') == **l)
        })
        .map(|l| format!("{l}/"))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for l in &missing {
        out.push_str(l);
        out.push('\n');
    }
    Some((out, missing))
}

/// The workspace root for a directory given by the user: the directory itself (relative to
/// `cwd`), or its parent when it names the `.small` directory. Absolute, `.` and `..`
/// resolved without touching the file system.
pub fn workspace_root(dir: Option<&Path>, cwd: &Path) -> PathBuf {
    let base = match dir {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    };
    let out = crate::workspace::normalize(&base);
    if out.file_name().is_some_and(|n| n == SMALL_DIR) {
        if let Some(parent) = out.parent() {
            return parent.to_path_buf();
        }
    }
    out
}

/// A whole `small init`: the workspace, AGENTS.md and the merge driver.
#[derive(Debug, Clone)]
pub struct InitWorkspaceRequest<'a> {
    /// The workspace root (see [`workspace_root`]).
    pub root: &'a Path,
    pub intent: Option<&'a str>,
    pub force: bool,
    pub tasks: &'a [String],
    /// What to do with AGENTS.md (`None`: leave it alone).
    pub agents: Option<crate::authoring::agents::Request>,
    /// Inside a git repository, install the merge driver running this command (`None`: skip).
    pub merge_driver: Option<&'a str>,
}

/// What happened about the merge driver.
#[derive(Debug, Clone)]
pub enum MergeDriverOutcome {
    /// Not asked for.
    Skipped,
    /// The workspace is not in a git repository.
    NotGit,
    Installed(crate::authoring::merge::InstallReport),
    /// Installing failed (the workspace is created all the same).
    Failed(String),
}

/// What a whole `small init` did.
#[derive(Debug, Clone)]
pub struct InitWorkspaceOutcome {
    pub init: InitOutcome,
    /// AGENTS.md as composed and written (`None`: left alone).
    pub agents: Option<Composed>,
    /// The workspace this one is nested in, when the root was inside another one.
    pub enclosing: Option<PathBuf>,
    pub merge_driver: MergeDriverOutcome,
}

/// Create the workspace, AGENTS.md and (in a git repository) the merge driver. AGENTS.md is
/// decided before anything is written, so a refusal (`agents-block`) leaves no half
/// workspace.
pub fn init_workspace(req: &InitWorkspaceRequest) -> Result<InitWorkspaceOutcome, Error> {
    use crate::authoring::agents::{compose_file, read_target, target_path};
    let root = req.root;
    let enclosing = (!root.join(SMALL_DIR).is_dir())
        .then(|| crate::workspace::enclosing_workspace(root))
        .flatten();
    let agents = match req.agents {
        None => None,
        Some(request) => {
            // The directory may not exist yet: then neither does AGENTS.md.
            let existing = if root.is_dir() {
                read_target(&target_path(Some(root), None)?)?
            } else {
                None
            };
            Some(compose_file(AGENTS_FILE, existing.as_deref(), request)?)
        }
    };
    let init = init(&InitRequest {
        root,
        intent: req.intent,
        force: req.force,
        agents: agents.as_ref(),
        tasks: req.tasks,
    })?;
    let merge_driver = match req.merge_driver {
        None => MergeDriverOutcome::Skipped,
        Some(_) if crate::authoring::merge::git_toplevel(root).is_none() => {
            MergeDriverOutcome::NotGit
        }
        Some(command) => match crate::authoring::merge::install(root, command) {
            Ok(r) => MergeDriverOutcome::Installed(r),
            Err(e) => MergeDriverOutcome::Failed(e.to_string()),
        },
    };
    Ok(InitWorkspaceOutcome {
        init,
        agents,
        enclosing,
        merge_driver,
    })
}

/// A new workspace in a temporary directory, for tests: `intent`, and `tasks` seeded.
#[cfg(test)]
pub(crate) fn fresh_workspace(intent: &str, tasks: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let tasks: Vec<String> = tasks.iter().map(|t| t.to_string()).collect();
    init(&InitRequest {
        root: tmp.path(),
        intent: Some(intent),
        force: false,
        agents: None,
        tasks: &tasks,
    })
    .unwrap();
    tmp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_adds_only_missing_lines() {
        let (text, added) = gitignore_update(Some("target\n.small-cache/\n")).unwrap();
        assert_eq!(added, vec![".small-runs/", ".small-archive/"]);
        assert_eq!(
            text,
            "target\n.small-cache/\n.small-runs/\n.small-archive/\n"
        );
        assert!(gitignore_update(Some(".small-cache\n/.small-runs/\n.small-archive/")).is_none());
        let (text, _) = gitignore_update(Some("x")).unwrap();
        assert!(text.starts_with("x\n"));
    }

    #[test]
    fn init_writes_six_files_the_gitignore_and_the_init_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let out = init(&InitRequest {
            root: tmp.path(),
            intent: Some("Ship it"),
            force: false,
            agents: None,
            tasks: &[],
        })
        .unwrap();
        assert!(!out.existed);
        assert_eq!(out.files.len(), 6);
        assert!(out.files.iter().all(|f| f.action == FileAction::Created));
        assert_eq!(out.kind, WorkspaceKind::RepoRoot);
        let gi = std::fs::read_to_string(tmp.path().join(".gitignore")).unwrap();
        assert_eq!(gi, ".small-cache/\n.small-runs/\n.small-archive/\n");
        let progress =
            std::fs::read_to_string(tmp.path().join(".small/progress.small.yml")).unwrap();
        assert!(progress.contains("meta/init"), "{progress}");
        assert!(!tmp.path().join(AGENTS_FILE).exists());
    }

    #[test]
    fn a_second_init_is_refused_and_force_keeps_the_progress_log() {
        let tmp = tempfile::tempdir().unwrap();
        let req = InitRequest {
            root: tmp.path(),
            intent: None,
            force: false,
            agents: None,
            tasks: &[],
        };
        init(&req).unwrap();
        let e = init(&req).unwrap_err();
        assert_eq!(e.code(), "exists");
        let out = init(&InitRequest { force: true, ..req }).unwrap();
        assert!(out.existed);
        let progress = out
            .files
            .iter()
            .find(|f| f.path.ends_with("progress.small.yml"))
            .unwrap();
        assert_eq!(progress.action, FileAction::Extended);
        let text = std::fs::read_to_string(tmp.path().join(".small/progress.small.yml")).unwrap();
        assert_eq!(text.matches("meta/init").count(), 2, "{text}");
    }

    #[test]
    fn force_backs_up_a_progress_log_that_cannot_be_extended() {
        let tmp = tempfile::tempdir().unwrap();
        let req = InitRequest {
            root: tmp.path(),
            intent: None,
            force: true,
            agents: None,
            tasks: &[],
        };
        init(&req).unwrap();
        std::fs::write(tmp.path().join(".small/progress.small.yml"), "entries: [\n").unwrap();
        let out = init(&req).unwrap();
        let (_, backup) = out.progress_backup.expect("backed up");
        assert!(backup.starts_with(".small-cache/backup/"), "{backup}");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(&backup)).unwrap(),
            "entries: [\n"
        );
    }

    #[test]
    fn examples_kind_is_detected_below_a_repository() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(".git")).unwrap();
        let dir = tmp.path().join("examples/demo");
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(detect_kind(&dir).0, WorkspaceKind::Examples);
        assert_eq!(detect_kind(tmp.path()).0, WorkspaceKind::RepoRoot);
    }

    #[test]
    fn workspace_root_resolves_dots_and_the_small_dir() {
        let cwd = Path::new("/tmp/here");
        assert_eq!(
            workspace_root(Some(Path::new("/tmp/proj/.small")), cwd),
            PathBuf::from("/tmp/proj")
        );
        assert_eq!(
            workspace_root(Some(Path::new("/tmp/proj/./a/..")), cwd),
            PathBuf::from("/tmp/proj")
        );
        assert_eq!(workspace_root(Some(Path::new("sub")), cwd), cwd.join("sub"));
        assert_eq!(workspace_root(None, cwd), cwd);
    }

    #[test]
    fn init_workspace_composes_agents_first_and_skips_git_outside_a_repository() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(AGENTS_FILE), "# mine\n").unwrap();
        let req = |agents| InitWorkspaceRequest {
            root: tmp.path(),
            intent: Some("Init"),
            force: false,
            tasks: &[],
            agents,
            merge_driver: Some("small merge-driver %O %A %B %P"),
        };
        let refused = init_workspace(&req(Some(crate::authoring::agents::Request::Default)));
        assert!(matches!(refused, Err(e) if e.diagnostic.code == code::AGENTS_BLOCK));
        assert!(!tmp.path().join(SMALL_DIR).exists(), "nothing written");
        let out = init_workspace(&req(Some(crate::authoring::agents::Request::Mode(
            crate::authoring::agents::ComposeMode::Append,
        ))))
        .unwrap();
        assert!(out.agents.is_some() && out.enclosing.is_none());
        assert!(tmp.path().join(SMALL_DIR).is_dir());
        if crate::authoring::merge::git_toplevel(tmp.path()).is_none() {
            assert!(matches!(out.merge_driver, MergeDriverOutcome::NotGit));
        }
        let nested = tmp.path().join("sub");
        let inner = init_workspace(&InitWorkspaceRequest {
            root: &nested,
            agents: None,
            merge_driver: None,
            ..req(None)
        })
        .unwrap();
        assert!(inner.enclosing.is_some());
        assert!(matches!(inner.merge_driver, MergeDriverOutcome::Skipped));
    }
}
