//! `small init`: create a SMALL workspace.

use crate::error::{CliError, CmdResult};
use crate::harness::{describe, ModeArg};
use crate::render::pad;
use crate::GlobalArgs;
use small_core::ops::agents::Request;
use small_core::ops::formats::{AGENTS_FILE, PROTOCOL_VERSION};
use small_core::ops::init::{
    self, FileAction, InitWorkspaceOutcome, InitWorkspaceRequest, MergeDriverOutcome,
};
use small_core::ops::merge;
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

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?;
    let root = init::workspace_root(args.dir.as_deref(), &cwd);
    if args.tasks.iter().any(|t| t.trim().is_empty()) {
        return Err(CliError::usage("--task needs a task title"));
    }
    let agents = if args.no_agents {
        None
    } else if args.overwrite_agents {
        Some(Request::Overwrite)
    } else {
        Some(
            args.agents_mode
                .map_or(Request::Default, |m| Request::Mode(m.into())),
        )
    };
    let command = std::env::current_exe()
        .map(|e| merge::driver_command_for(&e))
        .unwrap_or_else(|_| "small".into());
    let out = init::init_workspace(&InitWorkspaceRequest {
        root: &root,
        intent: args.intent.as_deref(),
        force: args.force,
        tasks: &args.tasks,
        agents,
        merge_driver: (!args.no_merge_driver).then_some(command.as_str()),
    })?;
    if let Some(outer) = &out.enclosing {
        g.warn(format!(
            "warning: {} is inside the SMALL workspace at {}; this creates a nested workspace that commands run below {} will use instead (run `small` commands from anywhere inside a project: they find its .small/ upward)",
            root.display(),
            outer.display(),
            root.display()
        ));
    }
    if let Some((why, backup)) = &out.init.progress_backup {
        g.warn(format!(
            "warning: the existing progress log could not be extended ({why}); it was moved to {backup} and a new log started"
        ));
    }
    if args.json {
        return print_json(g, &args, &root, &out);
    }
    print_human(g, &args, &out);
    Ok(())
}

/// What was done about the merge driver, one line each.
fn merge_driver_lines(m: &MergeDriverOutcome) -> Vec<String> {
    match m {
        MergeDriverOutcome::Skipped => vec!["skipped   merge driver (--no-merge-driver)".into()],
        MergeDriverOutcome::NotGit => vec![
            "skipped   merge driver: not a git repository (after `git init`, run `small merge-driver --install`)".into(),
        ],
        MergeDriverOutcome::Installed(r) => {
            r.lines().into_iter().map(|l| format!("merge     {l}")).collect()
        }
        MergeDriverOutcome::Failed(e) => vec![format!("warning   merge driver not installed: {e}")],
    }
}

/// `init --json`.
fn print_json(g: &GlobalArgs, args: &Args, root: &Path, out: &InitWorkspaceOutcome) -> CmdResult {
    let files: Vec<serde_json::Value> = out
        .init
        .files
        .iter()
        .map(|f| serde_json::json!({"path": f.path, "existed": f.action != FileAction::Created, "note": f.note}))
        .collect();
    let tasks: Vec<serde_json::Value> = args
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": format!("task-{}", i + 1), "title": t.trim()}))
        .collect();
    let o = &out.init;
    g.json(&serde_json::json!({
        "workspace": root.display().to_string(),
        "reinitialized": o.existed,
        "kind": o.kind.as_str(),
        "replay_id": o.replay_id,
        "files": files,
        "tasks": tasks,
        "gitignore_added": o.gitignore.as_ref().map(|(_, a)| a.clone()).unwrap_or_default(),
        "agents": out.agents.as_ref().map(|c| describe(c, AGENTS_FILE, false)),
        "enclosing_workspace": out.enclosing.as_ref().map(|p| p.display().to_string()),
        "merge_driver": merge_driver_lines(&out.merge_driver),
    }))
}

/// What init did, for people.
fn print_human(g: &GlobalArgs, args: &Args, whole: &InitWorkspaceOutcome) {
    if g.quiet() {
        return;
    }
    let out = &whole.init;
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
        g.info(format!("  {verb} {}  {}", pad(&f.path, width), f.note));
    }
    if let Some((had, added)) = &out.gitignore {
        let verb = if *had { "updated  " } else { "created  " };
        g.info(format!("  {verb} .gitignore: added {}", added.join(", ")));
    }
    match &whole.agents {
        None => g.info("  skipped   AGENTS.md (--no-agents)"),
        Some(c) => g.info(format!("  {}", describe(c, AGENTS_FILE, false))),
    }
    for line in merge_driver_lines(&whole.merge_driver) {
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
