//! `small handoff`: write the resume entrypoint from the plan and the progress log.

use std::path::PathBuf;

use small_core::authoring::handoff::{self, Handoff, ReplayId};
use small_core::authoring::plan;
use small_core::authoring::progress;
use small_core::authoring::txn::Transaction;

use crate::commands::progress::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Generate or update .small/handoff.small.yml, the file every session resumes from.
///
/// The resume state (current task, next steps, summary) is computed from the plan and a
/// strict check of the workspace. The replayId is the run's (`run.replay_id` in
/// workspace.small.yml), else the hash of intent, plan and constraints; --replay-id sets a
/// manual one. Refuses while a task has progress but is neither completed nor blocked.
/// An existing handoff is edited in place: comments and links stay.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Summary to write (default: one computed from the run's state)
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// Manual replayId: 64 hexadecimal digits (stored in lower case, source: manual)
    #[arg(long = "replay-id", value_name = "HEX")]
    pub replay_id: Option<String>,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
}

/// Load the plan's tasks through the transaction (a missing plan is an error).
pub fn load_tasks(txn: &Transaction) -> Result<Vec<plan::Task>, CliError> {
    let rel = plan::plan_rel();
    let doc = handoff::parse_file(txn, &rel)
        .map_err(shared::txn_err)?
        .ok_or_else(|| {
            CliError::invalid(format!(
                "{rel} does not exist; create a plan with `small plan --add`"
            ))
        })?;
    Ok(plan::tasks(&doc.root))
}

/// Build the handoff: state from plan + strict check, the given replay id, summary override.
///
/// The strict check sees the workspace as it will be: a provisional handoff with the chosen
/// replayId (and no current task) is staged first, so a stale current task or replay scope
/// in the old handoff does not make the new one report a blocked run.
pub fn build(
    txn: &mut Transaction,
    summary: Option<&str>,
    replay_id: ReplayId,
    run: Option<handoff::RunMeta>,
) -> Result<Handoff, CliError> {
    let tasks = load_tasks(txn)?;
    let provisional = Handoff {
        summary: summary.unwrap_or("Handoff being generated").to_string(),
        current_task_id: None,
        next_steps: Vec::new(),
        replay_id: replay_id.clone(),
        run: run.clone(),
    };
    let rel = handoff::handoff_rel();
    let existing = txn
        .read(&rel)
        .map_err(shared::txn_err)?
        .and_then(|b| String::from_utf8(b).ok());
    txn.write(
        rel,
        handoff::render(&provisional, existing.as_deref()).into_bytes(),
    );
    let strict = handoff::strict_check(txn).map_err(shared::txn_err)?;
    match existing {
        Some(text) => txn.write(handoff::handoff_rel(), text.into_bytes()),
        None => txn.discard(&handoff::handoff_rel()),
    }
    let state = handoff::compute_state(&tasks, &strict);
    Ok(Handoff {
        summary: summary
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .unwrap_or(state.summary),
        current_task_id: state.current_task_id,
        next_steps: state.next_steps,
        replay_id,
        run,
    })
}

/// The run's replay id, else the auto hash.
pub fn default_replay_id(txn: &Transaction) -> Result<ReplayId, CliError> {
    let value = match handoff::run_replay_id(txn).map_err(shared::txn_err)? {
        Some(v) => v,
        None => handoff::auto_replay_id(txn).map_err(shared::txn_err)?,
    };
    Ok(ReplayId {
        value,
        source: "auto".into(),
    })
}

/// Stage the handoff and the workspace metadata (`run.replay_id`, `updated_at`).
pub fn stage(txn: &mut Transaction, h: &Handoff) -> Result<(), CliError> {
    let rel = handoff::handoff_rel();
    let existing = txn
        .read(&rel)
        .map_err(shared::txn_err)?
        .and_then(|b| String::from_utf8(b).ok());
    let text = handoff::render(h, existing.as_deref());
    txn.write(rel, text.into_bytes());
    handoff::touch_workspace(txn, Some(&h.replay_id.value)).map_err(shared::txn_err)?;
    Ok(())
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let manual = match args
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
    shared::check_scope(&txn, args.workspace, "handoff", false)?;

    let tasks = load_tasks(&txn)?;
    let prel = progress::progress_rel();
    let progress_doc = handoff::parse_file(&txn, &prel)
        .map_err(shared::txn_err)?
        .ok_or_else(|| CliError::invalid(format!("{prel} does not exist")))?;
    let dangling = handoff::dangling_tasks(&tasks, &progress_doc.root);
    if !dangling.is_empty() {
        let mut msg = format!(
            "cannot write a handoff: {} task(s) have progress but are neither completed nor blocked:",
            dangling.len()
        );
        for d in dangling.iter().take(10) {
            msg.push_str(&format!(
                "\n  - {}: {} (status: {})",
                d.id, d.title, d.status
            ));
        }
        if dangling.len() > 10 {
            msg.push_str(&format!("\n  ... and {} more", dangling.len() - 10));
        }
        msg.push_str("\n  help: close each one first, e.g. `small checkpoint --task <id> --status completed --evidence \"...\"` (or --status blocked)");
        return Err(CliError::invalid(msg));
    }

    let replay_id = match manual {
        Some(m) => m,
        None => default_replay_id(&txn)?,
    };
    let h = build(&mut txn, args.summary.as_deref(), replay_id, None)?;
    stage(&mut txn, &h)?;
    let report = txn.commit().map_err(shared::txn_err)?;
    shared::say(
        g,
        format!(
            "Wrote handoff: {} (current task: {}; {} next step(s))",
            h.summary,
            h.current_task_id.as_deref().unwrap_or("none"),
            h.next_steps.len()
        ),
    );
    shared::say(
        g,
        format!(
            "replayId: {} (source: {})",
            h.replay_id.value, h.replay_id.source
        ),
    );
    shared::print_changes(g, &report);
    Ok(())
}
