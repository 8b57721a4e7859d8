//! `small init`: create a SMALL workspace.

use crate::commands::agents::{self, ModeArg};
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::authoring::agents::{compose, ComposeError, Composed, Request};
use small_core::authoring::progress::{NewEntry, TimestampRule};
use small_core::authoring::templates;
use small_core::authoring::txn::Transaction;
use small_core::spec::consts::{
    ArtifactKind, AGENTS_FILE, ARCHIVE_DIR, CACHE_DIR, KIND_EXAMPLES, KIND_REPO_ROOT,
    PROTOCOL_VERSION, RUNS_DIR, SMALL_DIR, WORKSPACE_FILE,
};
use small_core::spec::model::TaskStatus;
use std::path::{Path, PathBuf};

/// Create a SMALL v1.0.0 workspace: `.small/` with its six files, and AGENTS.md
///
/// Writes intent, constraints, plan, progress (with a `meta/init` entry), handoff and
/// workspace metadata from templates; adds `.small-cache/`, `.small-runs/` and
/// `.small-archive/` to .gitignore; and puts the SMALL harness block in AGENTS.md:
///
/// - no AGENTS.md: it is created with the block;
/// - AGENTS.md with a block: the block is replaced in place;
/// - AGENTS.md without a block: choose --agents-mode append|prepend, --overwrite-agents or
///   --no-agents (without one of them init stops before writing anything).
///
/// The workspace kind is `examples` when the directory lies under an `examples/` directory
/// of a repository (a directory with `.git` or `.small`), else `repo-root`.
/// Everything is written in one transaction: all of it, or nothing.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The project intent to write into intent.small.yml
    #[arg(long, value_name = "TEXT")]
    pub intent: Option<String>,
    /// Overwrite the files of an existing .small/ (progress keeps its history: append-only)
    #[arg(long)]
    pub force: bool,
    /// Directory to create the workspace in (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Do not create or change AGENTS.md
    #[arg(long, conflicts_with_all = ["overwrite_agents", "agents_mode"])]
    pub no_agents: bool,
    /// Inside a git repository, do not install the merge driver (see `small merge-driver`)
    #[arg(long)]
    pub no_merge_driver: bool,
    /// Replace an existing AGENTS.md entirely with the harness block
    #[arg(long, conflicts_with = "agents_mode")]
    pub overwrite_agents: bool,
    /// Where to add the harness block in an AGENTS.md that has no block yet
    #[arg(long, value_enum, ignore_case = true)]
    pub agents_mode: Option<ModeArg>,
    /// Seed the plan with this task instead of the placeholder (task-1, task-2, ...); may be repeated
    #[arg(long = "task", value_name = "TITLE")]
    pub tasks: Vec<String>,
    /// Print what was created as JSON
    #[arg(long)]
    pub json: bool,
}

/// The workspace root for a `--dir` value: the directory itself, or its parent when the
/// value names the `.small` directory. Absolute.
pub(crate) fn workspace_root(dir: Option<&Path>) -> Result<PathBuf, CliError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?;
    let base = match dir {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => cwd.join(d),
        None => cwd,
    };
    let base = normalize_lexically(&base);
    if base.file_name().is_some_and(|n| n == SMALL_DIR) {
        if let Some(parent) = base.parent() {
            return Ok(parent.to_path_buf());
        }
    }
    Ok(base)
}

/// Removes `.` and resolves `..` without touching the file system.
fn normalize_lexically(p: &Path) -> PathBuf {
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

/// `examples` when `root` lies below an `examples/` directory whose parent is a repository
/// (holds `.git` or `.small`); `repo-root` otherwise. Returns the repository found.
pub(crate) fn detect_kind(root: &Path) -> (&'static str, Option<PathBuf>) {
    let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut cur = real.parent();
    while let Some(dir) = cur {
        if dir.file_name().is_some_and(|n| n == "examples") {
            if let Some(repo) = dir.parent() {
                if repo.join(".git").exists() || repo.join(SMALL_DIR).is_dir() {
                    return (KIND_EXAMPLES, Some(repo.to_path_buf()));
                }
            }
        }
        cur = dir.parent();
    }
    (KIND_REPO_ROOT, None)
}

/// Lines `init` adds to .gitignore.
const GITIGNORE_LINES: [&str; 3] = [CACHE_DIR, RUNS_DIR, ARCHIVE_DIR];

/// The new .gitignore content and the lines added, or `None` when nothing is missing.
fn gitignore_update(existing: Option<&str>) -> Option<(String, Vec<String>)> {
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

fn txn_err(e: small_core::authoring::txn::TxnError) -> CliError {
    match e {
        small_core::authoring::txn::TxnError::Invalid(m) => CliError::invalid(m),
        other => CliError::usage(other.to_string()),
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = workspace_root(args.dir.as_deref())?;
    let small_dir = root.join(SMALL_DIR);
    if small_dir.exists() && !small_dir.is_dir() {
        return Err(CliError::usage(format!(
            "{} exists and is not a directory",
            small_dir.display()
        )));
    }
    let existed = small_dir.is_dir();
    if existed && !args.force {
        return Err(CliError::invalid(format!(
            "a SMALL workspace already exists in {} ; nothing was changed.\n\
             help: `small init --force` rewrites its files from the templates (the progress log is kept)",
            root.display()
        )));
    }
    if root.exists() && !root.is_dir() {
        return Err(CliError::usage(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    if args.tasks.iter().any(|t| t.trim().is_empty()) {
        return Err(CliError::usage("--task needs a task title"));
    }
    let enclosing = if existed {
        None
    } else {
        small_core::workspace::enclosing_workspace(&root)
    };
    if let Some(outer) = &enclosing {
        g.warn(format!(
            "warning: {} is inside the SMALL workspace at {}; this creates a nested workspace that commands run below {} will use instead (run `small` commands from anywhere inside a project: they find its .small/ upward)",
            root.display(),
            outer.display(),
            root.display()
        ));
    }

    // Decide about AGENTS.md before writing anything, so a refusal leaves no half workspace.
    let agents_plan: Option<Composed> = if args.no_agents {
        None
    } else {
        // The directory may not exist yet: then neither does AGENTS.md.
        let existing = if root.is_dir() {
            agents::read_target(&agents::target_path(Some(&root), None)?)?
        } else {
            None
        };
        let request = if args.overwrite_agents {
            Request::Overwrite
        } else if let Some(m) = args.agents_mode {
            Request::Mode(m.into())
        } else {
            Request::Default
        };
        match compose(existing.as_deref(), request) {
            Ok(c) => Some(c),
            Err(ComposeError::NeedsMode) => {
                return Err(CliError::invalid(format!(
                    "{}\n(no workspace was created)",
                    agents::needs_mode_message(AGENTS_FILE, true)
                )))
            }
            Err(ComposeError::Malformed(e)) => {
                return Err(CliError::invalid(agents::malformed_message(
                    AGENTS_FILE,
                    &e,
                    true,
                )))
            }
        }
    };

    std::fs::create_dir_all(&small_dir)
        .map_err(|e| CliError::usage(format!("cannot create {}: {e}", small_dir.display())))?;
    let mut txn = Transaction::begin(&root).map_err(txn_err)?;
    // Another `small init` may have won the race between the check above and the lock.
    if !args.force {
        let taken = ArtifactKind::ALL
            .iter()
            .map(|k| k.file_name())
            .chain([WORKSPACE_FILE])
            .any(|f| txn.exists(&small_core::spec::consts::small_rel(f)));
        if taken {
            return Err(CliError::invalid(format!(
                "a SMALL workspace was just created in {} by another process; nothing was changed",
                root.display()
            )));
        }
    }

    let rel = |name: &str| small_core::spec::consts::small_rel(name);
    let mut report: Vec<(String, bool, String)> = Vec::new(); // (path, existed, note)
    let note = |k: ArtifactKind| match k {
        ArtifactKind::Intent => "human-owned: what the project is for",
        ArtifactKind::Constraints => "human-owned: rules every change must respect",
        ArtifactKind::Plan if !args.tasks.is_empty() => "agent-owned: tasks (from --task)",
        ArtifactKind::Plan => "agent-owned: tasks (one placeholder task-1)",
        ArtifactKind::Progress => "agent-owned, append-only: starts with the meta/init entry",
        ArtifactKind::Handoff => "the resume point",
    };

    // Progress is append-only (seed 000, invariant 3): a re-initialised workspace keeps its
    // log and gets the meta/init entry appended. A log that cannot take an append is moved
    // to .small-cache/ (nothing is deleted) and a new one started.
    let progress_rel = rel(ArtifactKind::Progress.file_name());
    let mut progress_note: Option<String> = None;
    if txn.exists(&progress_rel) {
        match txn.last_progress_timestamp() {
            Ok(_) => progress_note = Some("kept its history; meta/init appended".to_string()),
            Err(e) => {
                let old = txn
                    .read(&progress_rel)
                    .map_err(txn_err)?
                    .unwrap_or_default();
                let stamp: String =
                    small_core::spec::timestamp::format_utc(small_core::authoring::progress::now())
                        .chars()
                        .filter(|c| *c != '-' && *c != ':')
                        .collect();
                let backup = format!("{CACHE_DIR}/backup/progress.small.{stamp}.yml");
                small_core::authoring::txn::atomic_write(root.join(&backup), &old).map_err(
                    |e| CliError::usage(format!("cannot back up the progress log: {e}")),
                )?;
                g.warn(format!(
                    "warning: the existing progress log could not be extended ({e}); it was moved to {backup} and a new log started"
                ));
                progress_note = Some(format!("new log; the old one is in {backup}"));
            }
        }
    }
    let keep_progress = progress_note
        .as_deref()
        .is_some_and(|n| n.starts_with("kept"));

    let mut base = templates::base_artifacts(args.intent.as_deref());
    if !args.tasks.is_empty() {
        for f in base.iter_mut() {
            if f.name == ArtifactKind::Plan.file_name() {
                f.content = templates::plan_with_tasks(&args.tasks);
            }
        }
    }
    for f in &base {
        let r = rel(f.name);
        let was = txn.exists(&r);
        if r == progress_rel {
            if !keep_progress {
                txn.write(r.clone(), f.content.clone().into_bytes());
            }
            let n = progress_note
                .clone()
                .unwrap_or_else(|| note(ArtifactKind::Progress).to_string());
            report.push((r, was, n));
            continue;
        }
        txn.write(r.clone(), f.content.clone().into_bytes());
        let kind = ArtifactKind::ALL
            .into_iter()
            .find(|k| k.file_name() == f.name);
        report.push((r, was, kind.map(note).unwrap_or_default().to_string()));
    }
    let content_of = |name: &str| {
        base.iter()
            .find(|f| f.name == name)
            .map(|f| f.content.as_bytes())
            .unwrap_or_default()
    };
    let replay_id = small_core::spec::replayid::auto_replay_id(
        content_of(ArtifactKind::Intent.file_name()),
        content_of(ArtifactKind::Plan.file_name()),
        Some(content_of(ArtifactKind::Constraints.file_name())),
    );
    let handoff_rel = rel(ArtifactKind::Handoff.file_name());
    let was = txn.exists(&handoff_rel);
    txn.write(
        handoff_rel.clone(),
        templates::bootstrap_handoff(&replay_id).into_bytes(),
    );
    report.push((
        handoff_rel,
        was,
        format!("the resume point (replayId {}…)", &replay_id[..12]),
    ));

    let (kind, repo) = detect_kind(&root);
    let now = small_core::spec::timestamp::format_utc(small_core::authoring::progress::now());
    let ws_rel = rel(WORKSPACE_FILE);
    let was = txn.exists(&ws_rel);
    txn.write(
        ws_rel.clone(),
        templates::workspace(kind, &now).into_bytes(),
    );
    let kind_note = match &repo {
        Some(r) => format!("kind: {kind} (under {}/examples/)", r.display()),
        None => format!("kind: {kind}"),
    };
    report.push((ws_rel, was, kind_note));

    let gitignore = txn.read(".gitignore").map_err(txn_err)?;
    let gitignore_text = gitignore.map(|b| String::from_utf8_lossy(&b).into_owned());
    let gitignore_added = match gitignore_update(gitignore_text.as_deref()) {
        Some((text, added)) => {
            txn.write(".gitignore", text.into_bytes());
            Some((gitignore_text.is_some(), added))
        }
        None => None,
    };

    // AGENTS.md joins the transaction, unless it is a symbolic link: then the file it points
    // to is replaced after the commit.
    let agents_is_link =
        std::fs::symlink_metadata(root.join(AGENTS_FILE)).is_ok_and(|m| m.file_type().is_symlink());
    if let Some(c) = &agents_plan {
        if c.action.writes() && !agents_is_link {
            txn.write(AGENTS_FILE, c.text.clone().into_bytes());
        }
    }

    let entry = NewEntry::new(
        templates::INIT_TASK_ID,
        Some(TaskStatus::Completed.as_str()),
    )
    .field("evidence", templates::INIT_EVIDENCE)
    .field("notes", templates::init_notes(&root.display().to_string()))
    .field("command", "small init");
    txn.append_progress(&entry, &TimestampRule::Now)
        .map_err(txn_err)?;
    txn.commit().map_err(txn_err)?;

    if let Some(c) = &agents_plan {
        if c.action.writes() && agents_is_link {
            let path = agents::target_path(Some(&root), None)?;
            small_core::authoring::txn::atomic_write(&path, c.text.as_bytes())
                .map_err(|e| CliError::usage(format!("cannot write {}: {e}", path.display())))?;
        }
    }

    let merge_driver = install_merge_driver(&root, args.no_merge_driver);

    if args.json {
        let files: Vec<serde_json::Value> = report
            .iter()
            .map(
                |(path, was, note)| serde_json::json!({"path": path, "existed": was, "note": note}),
            )
            .collect();
        let tasks: Vec<serde_json::Value> = args
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| serde_json::json!({"id": format!("task-{}", i + 1), "title": t.trim()}))
            .collect();
        return g.json(&serde_json::json!({
            "workspace": root.display().to_string(),
            "reinitialized": existed,
            "kind": kind,
            "replay_id": replay_id,
            "files": files,
            "tasks": tasks,
            "gitignore_added": gitignore_added.as_ref().map(|(_, a)| a.clone()).unwrap_or_default(),
            "agents": agents_plan.as_ref().map(|c| agents::describe(c, AGENTS_FILE, false)),
            "enclosing_workspace": enclosing.as_ref().map(|p| p.display().to_string()),
            "merge_driver": merge_driver,
        }));
    }
    let mut o = String::new();
    crate::outln!(
        o,
        "{} SMALL v{PROTOCOL_VERSION} workspace in {}",
        if existed {
            "Re-initialized the"
        } else {
            "Initialized a"
        },
        small_dir.display()
    );
    o.push('\n');
    let width = report.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (path, was, note) in &report {
        let verb = match (*was, path.ends_with(ArtifactKind::Progress.file_name())) {
            (false, _) => "created  ",
            (true, true) if note.starts_with("kept") => "extended ",
            (true, _) => "overwrote",
        };
        crate::outln!(o, "  {verb} {path:<width$}  {note}");
    }
    if let Some((had, added)) = &gitignore_added {
        crate::outln!(
            o,
            "  {} .gitignore: added {}",
            if *had { "updated  " } else { "created  " },
            added.join(", ")
        );
    }
    match &agents_plan {
        None => crate::outln!(o, "  skipped   AGENTS.md (--no-agents)"),
        Some(c) => crate::outln!(o, "  {}", agents::describe(c, AGENTS_FILE, false)),
    }
    for line in merge_driver {
        crate::outln!(o, "  {line}");
    }
    o.push('\n');
    crate::outln!(o, "Next:");
    crate::outln!(
        o,
        "  1. A human writes the intent and reviews the constraints in .small/intent.small.yml and"
    );
    crate::outln!(
        o,
        "     .small/constraints.small.yml (agents must not edit these two files)."
    );
    if args.tasks.is_empty() {
        crate::outln!(o, "  2. small plan --add \"<first task>\" (and `small plan --cancel task-1` for the placeholder)");
    } else {
        crate::outln!(
            o,
            "  2. small status (the plan has your {} task(s))",
            args.tasks.len()
        );
    }
    crate::outln!(o, "  3. small check --strict");
    g.info_raw(o);
    Ok(())
}

/// Inside a git repository, install the merge driver for the agent-owned artifacts; the
/// lines say what was done (or why not).
fn install_merge_driver(root: &Path, skip: bool) -> Vec<String> {
    use small_core::authoring::merge;
    if skip {
        return vec!["skipped   merge driver (--no-merge-driver)".into()];
    }
    if merge::git_toplevel(root).is_none() {
        return vec![
            "skipped   merge driver: not a git repository (after `git init`, run `small merge-driver --install`)".into(),
        ];
    }
    let command = std::env::current_exe()
        .map(|e| merge::driver_command_for(&e))
        .unwrap_or_else(|_| "small".into());
    match merge::install(root, &command) {
        Ok(r) => r
            .lines()
            .into_iter()
            .map(|l| format!("merge     {l}"))
            .collect(),
        Err(e) => vec![format!("warning   merge driver not installed: {e}")],
    }
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
    fn dot_small_dir_means_its_parent() {
        let r = workspace_root(Some(Path::new("/tmp/proj/.small"))).unwrap();
        assert_eq!(r, PathBuf::from("/tmp/proj"));
        let r = workspace_root(Some(Path::new("/tmp/proj/./a/.."))).unwrap();
        assert_eq!(r, PathBuf::from("/tmp/proj"));
    }
}
