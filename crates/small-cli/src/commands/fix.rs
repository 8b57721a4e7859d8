//! `small fix`: repair known, recoverable drift in a workspace.

use std::path::PathBuf;
use std::str::FromStr;

use small_core::ops::fix::{self, FixRequest};
use small_core::ops::formats::WorkspaceKind;
use small_core::ops::formats::{KIND_EXAMPLES, KIND_REPO_ROOT};
use small_core::ops::Workspace;

use crate::error::{from_op, CmdResult};
use crate::GlobalArgs;
use small_core::ops::workspace::Scope;

/// Repair recoverable drift: version quoting, legacy runtime directories, orphan progress,
/// workspace metadata.
///
/// --versions quotes `small_version` in every .small/ file; --runtime-layout moves legacy
/// .small/archive/ and .small/runs/ to .small-archive/ and .small-runs/; --orphan-progress
/// renames the task ids of current-run progress entries whose task is not in the plan to
/// meta/ names (recording the originals' hashes in a meta/reconcile-plan entry); --all runs
/// --versions, --runtime-layout and `fix workspace`. Each repair that changes something is
/// recorded in progress.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Sub>,
    /// Write small_version as the quoted string "1.0.0" in every file
    #[arg(long)]
    pub versions: bool,
    /// Move legacy .small/archive/ and .small/runs/ to .small-archive/ and .small-runs/
    #[arg(long)]
    pub runtime_layout: bool,
    /// Rename current-run progress task ids that are not in the plan to meta/ names
    #[arg(long)]
    pub orphan_progress: bool,
    /// Run the low-risk repairs: --versions, --runtime-layout and `fix workspace`
    #[arg(long)]
    pub all: bool,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print what was repaired as JSON: {repairs: [{repair, lines}], written, appended}
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Workspace(WorkspaceArgs),
}

/// Create or repair .small/workspace.small.yml.
///
/// A missing or unreadable file is written fresh (small_version, owner, kind, created_at,
/// updated_at). An existing one keeps its comments and other keys: the version is made
/// "1.0.0", a missing owner, created_at or updated_at is added, an invalid timestamp is
/// replaced. --force also sets updated_at to now and the kind to --kind.
#[derive(clap::Args, Debug)]
pub struct WorkspaceArgs {
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace kind: repo-root or examples
    #[arg(long, value_name = "KIND", default_value = KIND_REPO_ROOT, value_parser = [KIND_REPO_ROOT, KIND_EXAMPLES])]
    pub kind: String,
    /// Also reset updated_at and set the kind
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let out = match &args.command {
        Some(Sub::Workspace(w)) => {
            let kind = WorkspaceKind::from_str(&w.kind).unwrap_or(WorkspaceKind::RepoRoot);
            fix::fix_workspace(&Workspace::find(w.dir.as_deref()), kind, w.force)
        }
        None => {
            let req = FixRequest {
                versions: args.versions,
                runtime_layout: args.runtime_layout,
                orphan_progress: args.orphan_progress,
                all: args.all,
            };
            fix::fix(&Workspace::find(args.dir.as_deref()), &req, args.workspace)
        }
    }
    .map_err(|e| from_op(e, g))?;
    g.outcome(args.json, &out)
}
