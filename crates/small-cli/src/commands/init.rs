//! `small init`: create a SMALL workspace.

use crate::commands::agents::{self, ModeArg};
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::authoring::agents::{compose_file, Composed, Request};
use small_core::authoring::init::{self, FileAction, InitOutcome, InitRequest};
use small_core::spec::consts::{AGENTS_FILE, PROTOCOL_VERSION, SMALL_DIR};
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

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = workspace_root(args.dir.as_deref())?;
    if args.tasks.iter().any(|t| t.trim().is_empty()) {
        return Err(CliError::usage("--task needs a task title"));
    }
    let enclosing = (!root.join(SMALL_DIR).is_dir())
        .then(|| small_core::workspace::enclosing_workspace(&root))
        .flatten();
    if let Some(outer) = &enclosing {
        g.warn(format!(
            "warning: {} is inside the SMALL workspace at {}; this creates a nested workspace that commands run below {} will use instead (run `small` commands from anywhere inside a project: they find its .small/ upward)",
            root.display(),
            outer.display(),
            root.display()
        ));
    }
    let agents_plan = compose_agents(&args, &root)?;
    let out = init::init(&InitRequest {
        root: &root,
        intent: args.intent.as_deref(),
        force: args.force,
        agents: agents_plan.as_ref(),
        tasks: &args.tasks,
    })?;
    if let Some((why, backup)) = &out.progress_backup {
        g.warn(format!(
            "warning: the existing progress log could not be extended ({why}); it was moved to {backup} and a new log started"
        ));
    }
    let merge_driver = install_merge_driver(&root, args.no_merge_driver);
    if args.json {
        return print_json(
            g,
            &args,
            &root,
            &out,
            agents_plan.as_ref(),
            enclosing.as_deref(),
            merge_driver,
        );
    }
    print_human(g, &args, &out, agents_plan.as_ref(), &merge_driver);
    Ok(())
}

/// `init --json`.
fn print_json(
    g: &GlobalArgs,
    args: &Args,
    root: &Path,
    out: &InitOutcome,
    agents_plan: Option<&Composed>,
    enclosing: Option<&Path>,
    merge_driver: Vec<String>,
) -> CmdResult {
    let files: Vec<serde_json::Value> = out
            .files
            .iter()
            .map(|f| {
                serde_json::json!({"path": f.path, "existed": f.action != FileAction::Created, "note": f.note})
            })
            .collect();
    let tasks: Vec<serde_json::Value> = args
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": format!("task-{}", i + 1), "title": t.trim()}))
        .collect();
    g.json(&serde_json::json!({
            "workspace": root.display().to_string(),
            "reinitialized": out.existed,
            "kind": out.kind.as_str(),
            "replay_id": out.replay_id,
            "files": files,
            "tasks": tasks,
            "gitignore_added": out.gitignore.as_ref().map(|(_, a)| a.clone()).unwrap_or_default(),
            "agents": agents_plan.map(|c| agents::describe(c, AGENTS_FILE, false)),
            "enclosing_workspace": enclosing.map(|p| p.display().to_string()),
            "merge_driver": merge_driver,
    }))
}

/// What init did, for people.
fn print_human(
    g: &GlobalArgs,
    args: &Args,
    out: &InitOutcome,
    agents_plan: Option<&Composed>,
    merge_driver: &[String],
) {
    if g.quiet() {
        return;
    }
    let verb = if out.existed {
        "Re-initialized the"
    } else {
        "Initialized a"
    };
    g.info(format!(
        "{verb} SMALL v{PROTOCOL_VERSION} workspace in {}\n",
        out.small_dir.display()
    ));
    let width = out.files.iter().map(|f| f.path.len()).max().unwrap_or(0);
    for f in &out.files {
        let verb = match f.action {
            FileAction::Created => "created  ",
            FileAction::Extended => "extended ",
            FileAction::Overwrote => "overwrote",
        };
        g.info(format!("  {verb} {:<width$}  {}", f.path, f.note));
    }
    if let Some((had, added)) = &out.gitignore {
        let verb = if *had { "updated  " } else { "created  " };
        g.info(format!("  {verb} .gitignore: added {}", added.join(", ")));
    }
    match agents_plan {
        None => g.info("  skipped   AGENTS.md (--no-agents)"),
        Some(c) => g.info(format!("  {}", agents::describe(c, AGENTS_FILE, false))),
    }
    for line in merge_driver {
        g.info(format!("  {line}"));
    }
    let step2 = if args.tasks.is_empty() {
        "small plan --add \"<first task>\" (and `small plan --cancel task-1` for the placeholder)"
            .to_string()
    } else {
        format!(
            "small status (the plan has your {} task(s))",
            args.tasks.len()
        )
    };
    g.info(format!(
        "\nNext:\n  1. A human writes the intent and reviews the constraints in .small/intent.small.yml and\n     .small/constraints.small.yml (agents must not edit these two files).\n  2. {step2}\n  3. small check --strict"
    ));
}

/// Decide about AGENTS.md before anything is written, so that a refusal leaves no half
/// workspace. `None` with --no-agents.
fn compose_agents(args: &Args, root: &Path) -> Result<Option<Composed>, CliError> {
    if args.no_agents {
        return Ok(None);
    }
    // The directory may not exist yet: then neither does AGENTS.md.
    let existing = if root.is_dir() {
        agents::read_target(&agents::target_path(Some(root), None)?)?
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
    Ok(Some(compose_file(
        AGENTS_FILE,
        existing.as_deref(),
        request,
    )?))
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
    fn dot_small_dir_means_its_parent() {
        let r = workspace_root(Some(Path::new("/tmp/proj/.small"))).unwrap();
        assert_eq!(r, PathBuf::from("/tmp/proj"));
        let r = workspace_root(Some(Path::new("/tmp/proj/./a/.."))).unwrap();
        assert_eq!(r, PathBuf::from("/tmp/proj"));
    }
}
