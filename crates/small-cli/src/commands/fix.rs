//! `small fix`: repair known, recoverable drift in a workspace.

use std::path::PathBuf;
use std::str::FromStr;

use small_core::authoring::repair::{self, LayoutReport, OrphanReport, WorkspaceRepair};
use small_core::spec::consts::{KIND_EXAMPLES, KIND_REPO_ROOT};
use small_core::spec::model::WorkspaceKind;

use crate::commands::progress::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

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
    if args.json {
        // The human lines become the JSON report; nothing else goes to stdout.
        let quiet = GlobalArgs {
            quiet: true,
            ..g.clone()
        };
        let mut repairs = Vec::new();
        let report = run_repairs(&args, &quiet, &mut repairs)?;
        let repairs: Vec<serde_json::Value> = repairs
            .into_iter()
            .map(|(repair, lines)| serde_json::json!({"repair": repair, "lines": lines}))
            .collect();
        return shared::print_json(Some(&report), serde_json::json!({ "repairs": repairs }));
    }
    let mut repairs = Vec::new();
    let report = run_repairs(&args, g, &mut repairs)?;
    for (_, lines) in &repairs {
        for l in lines {
            shared::say(g, l);
        }
    }
    shared::print_changes(g, &report);
    shared::say(g, "Next: small check --strict");
    Ok(())
}

type Repairs = Vec<(&'static str, Vec<String>)>;

fn run_repairs(
    args: &Args,
    _g: &GlobalArgs,
    out: &mut Repairs,
) -> Result<small_core::authoring::txn::CommitReport, CliError> {
    if let Some(Sub::Workspace(w)) = &args.command {
        let root = shared::root(w.dir.as_deref())?;
        let mut txn = shared::begin(&root)?;
        let kind = WorkspaceKind::from_str(&w.kind).unwrap_or(WorkspaceKind::RepoRoot);
        let done = repair::fix_workspace(&mut txn, kind, w.force)?;
        let report = txn.commit()?;
        out.push(("workspace", vec![describe_workspace(&done)]));
        return Ok(report);
    }
    if !(args.versions || args.runtime_layout || args.orphan_progress || args.all) {
        return Err(CliError::usage(
            "choose a repair: --versions, --runtime-layout, --orphan-progress, --all, or `small fix workspace`",
        ));
    }
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "fix", true)?;
    if args.versions || args.all {
        let r = repair::fix_versions(&mut txn)?;
        let mut lines = vec![format!(
            "small_version: {} file(s) rewritten, {} already canonical",
            r.changed.len(),
            r.canonical.len()
        )];
        for f in r.changed {
            lines.push(format!("  quoted small_version in {f}"));
        }
        out.push(("versions", lines));
    }
    if args.runtime_layout || args.all {
        let r: LayoutReport = repair::fix_runtime_layout(&mut txn)?;
        out.push(("runtime-layout", r.describe()));
    }
    if args.orphan_progress {
        let r: OrphanReport = repair::fix_orphan_progress(&mut txn)?;
        out.push(("orphan-progress", r.describe()));
    }
    if args.all {
        let r = repair::fix_workspace(&mut txn, WorkspaceKind::RepoRoot, false)?;
        out.push(("workspace", vec![describe_workspace(&r)]));
    }
    Ok(txn.commit()?)
}

fn describe_workspace(r: &WorkspaceRepair) -> String {
    {
        match r {
            WorkspaceRepair::Created { rel, kind } => format!("Created {rel} (kind {kind})"),
            WorkspaceRepair::Repaired { rel, fields } => {
                format!("Repaired {rel}: {}", fields.join(", "))
            }
            WorkspaceRepair::Unchanged { rel } => format!("{rel} needs no repair"),
        }
    }
}
