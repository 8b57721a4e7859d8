//! `small plan`: add, retitle and cancel tasks, change their status, add dependencies, reset.

use std::path::PathBuf;

use small_core::authoring::plan;
use small_core::authoring::plan_edit::{self, PlanRequest};

use crate::error::{CliError, CmdResult};
use crate::v2writes::{self as v2w, SessionFlags};
use crate::writes as shared;
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Create or change .small/plan.small.yml.
///
/// Edits are made in place: comments, key order and quoting in the plan stay as written.
/// Each change is recorded in progress.small.yml, and all of it is written in one step.
/// Several flags may be combined, and --add and --cancel may be repeated; they apply in the
/// order --add, --title, --done, --pending, --blocked, --cancel, --depends. With no flag, a
/// missing plan is created from the template. --done needs a completed entry with evidence
/// (`small checkpoint` writes one) and completed dependencies (or --force).
///
/// In a SMALL 2.0.0 workspace each call makes one change, an event of the session
/// (--session, or the active one): --add (task_created, alias task-N), --done, --pending,
/// --blocked (task_transitioned), --depends (task_updated). With no flag it lists the tasks.
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
    /// Add a dependency: <task-id>:<dep-id> (task-id depends on dep-id)
    #[arg(long, value_name = "TASK:DEP")]
    pub depends: Option<String>,
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
    let depends = match &args.depends {
        None => None,
        Some(spec) => match spec.split_once(':') {
            Some((t, d)) => Some((t.trim().to_string(), d.trim().to_string())),
            None => {
                return Err(CliError::usage(format!(
                    "--depends {spec:?}: write it as <task-id>:<dep-id>, e.g. task-3:task-2"
                )))
            }
        },
    };
    if args.id.is_some() && args.add.len() > 1 {
        return Err(CliError::usage(
            "--id names one new task; give it with a single --add",
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
        depends,
        force: args.force,
        reset: args.reset,
    })
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if let Some(root) = v2w::v2_root(args.dir.as_deref()) {
        return run_v2(&root, args, g);
    }
    args.v2.refuse_on_v1()?;
    let req = request(&args)?;
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "plan", false)?;
    let out = plan_edit::edit_plan(&mut txn, &req)?;
    let report = if out.unchanged {
        None
    } else {
        Some(txn.commit()?)
    };
    if args.json {
        let v = serde_json::to_value(&out).unwrap_or_default();
        return shared::print_json(report.as_ref(), v);
    }
    if out.unchanged {
        shared::say(
            g,
            "No changes to the plan (use --add, --title, --done, --pending, --blocked, --cancel or --depends)",
        );
        return Ok(());
    }
    if out.created {
        shared::say(g, "No plan yet: creating one from the template");
    }
    for c in &out.changes {
        let line = match c.kind.as_str() {
            "added" => format!(
                "Added task {}: {}",
                c.task_id,
                c.title.as_deref().unwrap_or("")
            ),
            "retitled" => format!(
                "Retitled task {}: {}",
                c.task_id,
                c.title.as_deref().unwrap_or("")
            ),
            "status" => format!(
                "Marked task {} {}",
                c.task_id,
                c.status.as_deref().unwrap_or("")
            ),
            "dependency" => format!(
                "Added dependency: {} depends on {}",
                c.task_id,
                c.dependency.as_deref().unwrap_or("")
            ),
            _ => "Plan reset to the template (one placeholder task, task-1)".to_string(),
        };
        shared::say(g, line);
    }
    if out.created {
        shared::say(g, format!("Created {}", plan::plan_rel()));
    }
    if let Some(r) = &report {
        shared::print_changes(g, r);
    }
    Ok(())
}

fn run_v2(root: &std::path::Path, args: Args, g: &GlobalArgs) -> CmdResult {
    use small_core::v2::write::{self, PlanChange};
    if args.reset {
        return Err(CliError::invalid(
            "a 2.0.0 history cannot be reset; record explicit task events instead",
        ));
    }
    if args.title.is_some() || !args.cancel.is_empty() || args.id.is_some() || args.force {
        return Err(CliError::usage(
            "on a 2.0.0 workspace plan takes --add, --done, --pending, --blocked or --depends",
        ));
    }
    let mut changes: Vec<PlanChange> = Vec::new();
    for title in &args.add {
        changes.push(PlanChange::Add {
            title: title.clone(),
        });
    }
    for (task, status) in [
        (&args.done, "completed"),
        (&args.pending, "pending"),
        (&args.blocked, "blocked"),
    ] {
        if let Some(t) = task {
            changes.push(PlanChange::Status {
                task: t.clone(),
                status: status.into(),
            });
        }
    }
    if let Some(spec) = &args.depends {
        let Some((t, d)) = spec.split_once(':') else {
            return Err(CliError::usage(format!(
                "--depends {spec:?}: write it as <task>:<dependency>"
            )));
        };
        changes.push(PlanChange::Depends {
            task: t.trim().into(),
            on: d.trim().into(),
        });
    }
    if changes.len() > 1 {
        return Err(CliError::usage("a 2.0.0 plan takes one change per call"));
    }
    let Some(change) = changes.pop() else {
        let checked = small_core::v2::check(root, &root.join(".small"));
        let mut o = String::new();
        for t in &checked.state.tasks {
            o.push_str(&format!(
                "{}\t{}\t{}\t{}\n",
                t.alias, t.id, t.status, t.title
            ));
        }
        return crate::output::data(&crate::render::escape_controls(&o));
    };
    let session = args.v2.session(root)?;
    let mut w = args.v2.open(root)?;
    let (alias, id, e) = write::plan(&mut w, &session, &change)?;
    if args.json {
        return v2w::print(&small_core::v2::gojson::GoValue::map(vec![
            ("alias".into(), v2w::s(&alias)),
            ("event".into(), v2w::event(&e)),
            ("profile".into(), v2w::s("2.0.0")),
            ("task_id".into(), v2w::s(&id)),
        ]));
    }
    let ev = &e.draft.event_id;
    let line = match &change {
        PlanChange::Add { title } => format!("Added task {alias} ({id}): {} [{ev}]", title.trim()),
        PlanChange::Status { status, .. } => format!("Marked task {alias} as {status} [{ev}]"),
        PlanChange::Depends { .. } => format!("Updated {alias} dependencies [{ev}]"),
    };
    shared::say(g, line);
    Ok(())
}
