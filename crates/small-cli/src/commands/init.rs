//! `small init`: create a SMALL workspace.

use crate::error::{CliError, CmdResult};
use crate::harness::ModeArg;
use crate::GlobalArgs;
use small_core::ops::agents::Request;
use small_core::ops::init::{self, InitWorkspaceRequest};
use small_core::ops::merge;
use std::path::PathBuf;

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
    g.warnings(&out.warnings);
    g.outcome(args.json, &out)
}
