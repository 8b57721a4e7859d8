//! `small handoff`: write the resume entrypoint from the plan and the progress log.

use std::path::PathBuf;

use small_core::authoring::handoff;
use small_core::authoring::session::{self, HandoffRequest};
use small_core::authoring::snapshot::Artifacts;

use crate::error::{CliError, CmdResult};
use crate::v2writes::SessionFlags;
use crate::writes as shared;
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Generate or update .small/handoff.small.yml, the file every session resumes from.
///
/// Works at any point of a run. The handoff records the task to resume, tasks with work in
/// this run that are not closed, blocked tasks and the last evidence, computed from the plan,
/// the current run's progress entries and the strict check (`small check --strict`). A summary
/// written with --summary is kept by later handoffs while the state is unchanged. The
/// replayId is the run's (`run.replay_id` in workspace.small.yml), else the hash of intent,
/// plan and constraints; --replay-id sets a manual one. An existing handoff is edited in
/// place: comments and links stay.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Summary to write (default: keep one written with --summary while the state is unchanged, else computed)
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// Manual replayId: 64 hexadecimal digits (stored in lower case, source: manual)
    #[arg(long = "replay-id", value_name = "HEX")]
    pub replay_id: Option<String>,
    /// End of run: refuse while a task has work in this run but is not completed, blocked or cancelled
    #[arg(long = "final")]
    pub final_check: bool,
    /// Directory containing .small/ (default: search upward from the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print what was written as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub v2: SessionFlags,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if let Some(root) = crate::v2writes::v2_root(args.dir.as_deref()) {
        return run_v2(&root, args, g);
    }
    args.v2.refuse_on_v1()?;
    let replay_id = match args
        .replay_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(s) => Some(handoff::manual_replay_id(s).map_err(CliError::usage)?),
        None => None,
    };
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    // One snapshot for the scope check and the handoff: each file is read once.
    let snap = Artifacts::new();
    handoff::check_command_scope_in(&txn, &snap, args.workspace, "handoff", false)?;
    let req = HandoffRequest {
        summary: args.summary.clone(),
        replay_id,
        final_check: args.final_check,
    };
    let out = session::write_handoff_in(&mut txn, &snap, &req)?;
    let report = txn.commit()?;
    if args.json {
        return shared::print_json(Some(&report), shared::handoff_json(&out));
    }
    shared::print_handoff(g, &out, "Wrote handoff");
    if !out.open.is_empty() && !args.final_check {
        let list: Vec<String> = out
            .open
            .iter()
            .map(|t| format!("{} ({})", t.id, t.status))
            .collect();
        shared::say(
            g,
            format!(
                "Open in this run: {} (`small handoff --final` refuses until each is completed, blocked or cancelled)",
                list.join(", ")
            ),
        );
    }
    shared::print_changes(g, &report);
    Ok(())
}

/// 2.0.0: a handoff_recorded event with the summary (the session stays open).
fn run_v2(root: &std::path::Path, args: Args, g: &GlobalArgs) -> CmdResult {
    use crate::v2writes as v2w;
    let summary = args.summary.clone().unwrap_or_default();
    let session = args.v2.session(root)?;
    let mut w = args.v2.open(root)?;
    let e = small_core::v2::write::handoff(&mut w, &session, &summary)?;
    if args.json {
        return v2w::print(&small_core::v2::gojson::GoValue::map(vec![
            ("event".into(), v2w::event(&e)),
            ("profile".into(), v2w::s("2.0.0")),
        ]));
    }
    g.info(format!(
        "Handoff recorded: {} [{}]",
        summary.trim(),
        e.draft.event_id
    ));
    Ok(())
}
