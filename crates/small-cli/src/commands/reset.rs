//! `small reset`: start a new run, keeping the audit history.

use small_core::spec::model::TaskStatus;
use std::io::BufRead;
use std::path::PathBuf;

use small_core::authoring::handoff::{self, ReplayId, RunMeta};
use small_core::authoring::progress::{NewEntry, TimestampRule};
use small_core::authoring::templates;
use small_core::spec::consts::ArtifactKind;

use crate::commands::handoff as handoff_cmd;
use crate::commands::progress::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Reset .small/ for a new run while keeping the audit history.
///
/// Resets plan.small.yml and handoff.small.yml (and intent.small.yml unless --keep-intent)
/// from the templates. Keeps progress.small.yml (append-only history) and
/// constraints.small.yml (human-owned). The new handoff's `run` block records the previous
/// replayId and the reason; a `meta/reset` progress entry records the reset. This is a
/// human's command: it asks for confirmation unless --yes is given.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Do not ask for confirmation
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Keep intent.small.yml as it is
    #[arg(long)]
    pub keep_intent: bool,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = shared::root(args.dir.as_deref())?;
    if !args.yes {
        let stdin = std::io::stdin();
        g.info(format!(
            "This resets plan.small.yml and handoff.small.yml{} for a new run.",
            if args.keep_intent {
                ""
            } else {
                " and intent.small.yml"
            }
        ));
        g.info("progress.small.yml and constraints.small.yml are kept.");
        g.prompt("Continue? [y/N]: ");
        let mut answer = String::new();
        let read = stdin
            .lock()
            .read_line(&mut answer)
            .map_err(|e| CliError::usage(format!("cannot read the answer: {e}")))?;
        if read == 0 {
            // End of input (no terminal, nothing piped): not a "no", an error, as in the
            // reference.
            g.prompt("\n");
            return Err(CliError::invalid(
                "no answer (end of input); nothing changed. Pass --yes to reset without asking",
            ));
        }
        let a = answer.trim().to_ascii_lowercase();
        if a != "y" && a != "yes" {
            g.info("Reset cancelled; nothing changed.");
            return Ok(());
        }
    }
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "reset", false)?;

    let previous = handoff::existing(&txn)
        .ok()
        .flatten()
        .and_then(|e| e.replay_id)
        .map(|r| r.value);
    let mut reset_files = Vec::new();
    if !args.keep_intent {
        txn.write(
            ArtifactKind::Intent.rel_path(),
            templates::intent(None).into_bytes(),
        );
        reset_files.push(ArtifactKind::Intent.file_name());
    }
    txn.write(
        ArtifactKind::Plan.rel_path(),
        templates::plan().into_bytes(),
    );
    reset_files.push(ArtifactKind::Plan.file_name());

    // A new run: its id is the hash of the new intent, plan and constraints.
    let new_id = handoff::auto_replay_id(&txn).map_err(shared::txn_err)?;
    let run = RunMeta {
        created_at: handoff::now_text(),
        transition_reason: "reset".into(),
        previous_replay_id: previous.clone(),
    };
    let h = handoff_cmd::build(
        &mut txn,
        None,
        ReplayId {
            value: new_id,
            source: "auto".into(),
        },
        Some(run),
    )?;
    // The handoff is rewritten from scratch: the old one describes the old run.
    let hrel = handoff::handoff_rel();
    txn.write(hrel, handoff::render_fresh(&h).into_bytes());
    handoff::touch_workspace(&mut txn, Some(&h.replay_id.value)).map_err(shared::txn_err)?;
    reset_files.push(ArtifactKind::Handoff.file_name());

    let (evidence, notes) = if args.keep_intent {
        (
            "Reset plan and handoff for a new run (intent kept)",
            "small reset --keep-intent",
        )
    } else {
        (
            "Reset intent, plan and handoff for a new run",
            "small reset",
        )
    };
    let mut e = NewEntry::new("meta/reset", Some(TaskStatus::Completed.as_str()))
        .field("evidence", evidence)
        .field("notes", notes);
    if let Some(p) = &previous {
        e.set("notes", format!("{notes}; previous replayId {p}"));
    }
    handoff::attach_replay_id(&txn, &mut e).map_err(shared::txn_err)?;
    txn.append_progress(&e, &TimestampRule::Now)
        .map_err(shared::txn_err)?;
    let report = txn.commit().map_err(shared::txn_err)?;

    for f in &reset_files {
        shared::say(g, format!("Reset {f}"));
    }
    shared::say(
        g,
        format!(
            "New run: replayId {} (previous: {})",
            h.replay_id.value,
            previous.as_deref().unwrap_or("none")
        ),
    );
    shared::say(
        g,
        format!(
            "Kept progress.small.yml and constraints.small.yml{}",
            if args.keep_intent {
                " and intent.small.yml"
            } else {
                ""
            }
        ),
    );
    shared::print_changes(g, &report);
    Ok(())
}
