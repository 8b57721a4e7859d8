//! `small run`: the run history. Every run can be snapshotted into a run store under its
//! replay ID, listed, shown, compared with another run or the live workspace, and restored.

pub mod checkout;
pub mod diff;
pub mod list;
pub mod show;
pub mod snapshot;
pub mod verify;

use std::path::PathBuf;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::ops::runs::{self, ErrorKind, RunError, Scope};

/// Keep, inspect and restore the history of runs.
///
/// A snapshot copies intent, plan, progress and handoff (and constraints when present) into
/// `<store>/<replayId>/` with a `meta.json` (time, git commit and dirty flag, tool version,
/// file hashes). The store is `.small-runs/` beside `.small/` unless `--store` names another.
/// Snapshots are never modified once written. Replay IDs can be abbreviated to any prefix
/// that names one snapshot.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub ctx: ContextArgs,
    #[command(subcommand)]
    pub command: Sub,
}

/// Flags every `small run` subcommand accepts.
#[derive(clap::Args, Debug, Clone)]
pub struct ContextArgs {
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Run store directory, relative to the workspace directory unless absolute [default: .small-runs]
    #[arg(long, global = true, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Workspace kinds to accept: root, examples or any
    #[arg(long, global = true, default_value = "root", value_name = "SCOPE", value_parser = Scope::parse)]
    pub workspace: Scope,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Snapshot(snapshot::Args),
    List(list::Args),
    Show(show::Args),
    Diff(diff::Args),
    Checkout(checkout::Args),
    Verify(verify::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ctx = Context::resolve(&args.ctx)?;
    match args.command {
        Sub::Snapshot(a) => snapshot::run(a, &ctx, g),
        Sub::List(a) => list::run(a, &ctx, g),
        Sub::Show(a) => show::run(a, &ctx, g),
        Sub::Diff(a) => diff::run(a, &ctx, g),
        Sub::Checkout(a) => checkout::run(a, &ctx, g),
        Sub::Verify(a) => verify::run(a, &ctx, g),
    }
}

/// Where the workspace and the store are, once the flags are checked.
pub struct Context {
    /// The directory that holds `.small/`.
    pub root: PathBuf,
    /// The run store.
    pub store: PathBuf,
}

impl Context {
    fn resolve(a: &ContextArgs) -> Result<Context, CliError> {
        let scope = a.workspace;
        if a.store.as_ref().is_some_and(|s| s.as_os_str().is_empty()) {
            return Err(CliError::usage("--store needs a directory path"));
        }
        let root = small_core::ops::Workspace::find(a.dir.as_deref()).root;
        runs::check_run_scope(&root, scope).map_err(to_cli)?;
        let store = runs::store_dir(&root, a.store.as_deref());
        Ok(Context { root, store })
    }
}

/// Turn a library error into the CLI error with its exit code (2 for bad input or system
/// errors, 1 for a state that does not allow the operation), help on its own line.
pub fn to_cli(e: RunError) -> CliError {
    let mut msg = e.message;
    if let Some(help) = e.help {
        msg.push_str("\n  help: ");
        msg.push_str(&help);
    }
    match e.kind {
        ErrorKind::Usage => CliError::usage(msg),
        ErrorKind::Invalid => CliError::invalid(msg),
    }
}

/// Print warnings on stderr (they never change the exit code; `--quiet` hides them).
pub fn warn_all(g: &GlobalArgs, warnings: &[String]) {
    g.warnings(warnings);
}
