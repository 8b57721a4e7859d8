//! `small plan`: add, retitle and cancel tasks, change their status, add dependencies, reset.

use std::path::PathBuf;

use small_core::ops::plan::PlanRequest;
use small_core::ops::workspace::Scope;
use small_core::ops::{self, Workspace};

use crate::error::{from_op, CliError, CmdResult};
use crate::v2writes::SessionFlags;
use crate::GlobalArgs;

/// Create or change .small/plan.small.yml.
///
/// Edits are made in place: comments, key order and quoting in the plan stay as written.
/// Each change is recorded in progress.small.yml, and all of it is written in one step.
/// Several flags may be combined, and --add, --cancel and --depends may be repeated; they
/// apply in the order --add, --title, --done, --pending, --blocked, --cancel, --depends (each
/// repeated flag in the order given). With no flag, a missing plan is created from the
/// template. --done needs a completed entry with evidence (`small checkpoint` writes one) and
/// completed dependencies (or --force).
///
/// In a SMALL 2.0.0 workspace each call makes one change, an event of the session
/// (--session, or the active one): --add (task_created, alias task-N), --done, --pending,
/// --blocked (task_transitioned), --depends (task_updated; repeated, one event each, all
/// checked before the first is written). With no flag it lists the tasks.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Add a task with this title (its id is the next free task-N); may be repeated
    #[arg(long, value_name = "TITLE")]
    pub add: Vec<String>,
    /// With one --add: the new task's id instead of the next task-N (ids chosen per branch
    /// cannot collide when branches merge)
    #[arg(long, value_name = "ID", requires = "add")]
    pub id: Option<String>,
    /// Retitle a task: --title <ID> <TEXT>
    #[arg(long, num_args = 2, value_names = ["ID", "TEXT"])]
    pub title: Option<Vec<String>>,
    /// Mark a task completed (it needs a completed progress entry with evidence)
    #[arg(long, value_name = "ID")]
    pub done: Option<String>,
    /// Mark a task pending
    #[arg(long, value_name = "ID")]
    pub pending: Option<String>,
    /// Mark a task blocked
    #[arg(long, value_name = "ID")]
    pub blocked: Option<String>,
    /// Cancel a task (status cancelled; it stays in the plan and the history); may be repeated
    #[arg(long, value_name = "ID")]
    pub cancel: Vec<String>,
    /// Add a dependency: <task-id>:<dep-id> (task-id depends on dep-id); may be repeated
    #[arg(long, value_name = "TASK:DEP", action = clap::ArgAction::Append)]
    pub depends: Vec<String>,
    /// With --done: complete the task although its dependencies are not completed
    #[arg(long)]
    pub force: bool,
    /// Replace the plan with the template (needs --yes)
    #[arg(long)]
    pub reset: bool,
    /// Confirm --reset
    #[arg(long)]
    pub yes: bool,
    /// Directory containing .small/ (default: search upward from the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print what changed as JSON (the new task ids among it)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub v2: SessionFlags,
}

fn request(args: &Args) -> Result<PlanRequest, CliError> {
    if args.reset && !args.yes {
        return Err(CliError::usage(
            "--reset replaces the whole plan; add --yes to confirm",
        ));
    }
    Ok(PlanRequest {
        add: args.add.clone(),
        id: args.id.clone(),
        title: args
            .title
            .as_ref()
            .map(|v| (v[0].clone(), v.get(1).cloned().unwrap_or_default())),
        done: args.done.clone(),
        pending: args.pending.clone(),
        blocked: args.blocked.clone(),
        cancel: args.cancel.clone(),
        depends: args.depends.clone(),
        force: args.force,
        reset: args.reset,
        scope: args.workspace,
        session: args.v2.session.clone(),
        lock_timeout: args.v2.lock()?,
    })
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let req = request(&args)?;
    let ws = Workspace::find(args.dir.as_deref());
    let out = ops::plan::plan(&ws, &req).map_err(|e| from_op(e, g))?;
    if out.is_listing() {
        return g.listing(args.json, &out);
    }
    g.outcome(args.json, &out)
}
