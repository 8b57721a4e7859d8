//! `small start`: create or repair the handoff state a run starts from.

use small_core::spec::model::TaskStatus;
use std::path::PathBuf;

use small_core::authoring::handoff::{self, RunMeta};
use small_core::authoring::progress::{NewEntry, TimestampRule};
use small_core::authoring::templates;
use small_core::spec::consts::{ArtifactKind, KIND_REPO_ROOT, SMALL_DIR};

use crate::commands::handoff as handoff_cmd;
use crate::commands::progress::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Initialise or repair run handoff state, then run the strict check.
///
/// Creates any missing artifact (from the templates; existing files are never changed),
/// missing workspace metadata, and a handoff with `run` metadata. A handoff without a valid
/// replayId gets one (recorded as meta/replayid-self-heal). With --fix, recoverable drift the
/// strict check finds (orphan progress, legacy runtime directories) is repaired.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Summary to write into the handoff (default: computed from the run's state)
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// Repair recoverable drift (orphan progress, legacy runtime layout) if the strict check fails
    #[arg(long)]
    pub fix: bool,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if args.workspace == Scope::Examples {
        return Err(CliError::usage(
            "--workspace examples is not supported by `small start`; use --workspace any to run it on an examples workspace",
        ));
    }
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;

    // Missing files first (so the scope check can see fresh metadata).
    let mut created = Vec::new();
    for f in templates::base_artifacts(None) {
        let rel = format!("{SMALL_DIR}/{}", f.name);
        if !txn.exists(&rel) {
            txn.write(rel.clone(), f.content.into_bytes());
            created.push(rel);
        }
    }
    let wrel = handoff::workspace_rel();
    if !txn.exists(&wrel) {
        txn.write(
            wrel.clone(),
            templates::workspace(KIND_REPO_ROOT, &handoff::now_text()).into_bytes(),
        );
        created.push(wrel);
    }
    shared::check_scope(&txn, args.workspace, "start", false)?;

    let existing = handoff::existing(&txn).map_err(shared::txn_err)?;
    let existing_id = existing.as_ref().and_then(|e| e.replay_id.clone());
    let self_heal = existing_id.is_none() && intent_and_plan_valid(&txn);
    let replay_id = match existing_id {
        Some(r) => r,
        None => handoff_cmd::default_replay_id(&txn)?,
    };
    let run = RunMeta {
        created_at: handoff::now_text(),
        transition_reason: if self_heal {
            "self_heal".into()
        } else {
            "manual".into()
        },
        previous_replay_id: None,
    };
    let h = handoff_cmd::build(&mut txn, args.summary.as_deref(), replay_id, Some(run))?;
    handoff_cmd::stage(&mut txn, &h)?;
    if self_heal {
        let mut e = NewEntry::new(
            "meta/replayid-self-heal",
            Some(TaskStatus::Completed.as_str()),
        )
        .field(
            "evidence",
            "Generated replayId for handoff during small start",
        )
        .field("notes", "small start self-heal");
        handoff::attach_replay_id(&txn, &mut e).map_err(shared::txn_err)?;
        txn.append_progress(&e, &TimestampRule::Now)
            .map_err(shared::txn_err)?;
    }
    let report = txn.commit().map_err(shared::txn_err)?;
    for c in &created {
        shared::say(g, format!("Created {c} from the template"));
    }
    shared::say(
        g,
        format!(
            "Handoff ready: {} (replayId {})",
            h.summary, h.replay_id.value
        ),
    );
    shared::print_changes(g, &report);

    // The strict check of the result.
    let mut txn = shared::begin(&root)?;
    let mut strict = handoff::strict_check(&txn).map_err(shared::txn_err)?;
    if !strict.ok && args.fix {
        let fixed = crate::commands::fix::repair_recoverable(&mut txn, g)?;
        let report = txn.commit().map_err(shared::txn_err)?;
        shared::print_changes(g, &report);
        txn = shared::begin(&root)?;
        strict = handoff::strict_check(&txn).map_err(shared::txn_err)?;
        if fixed {
            shared::say(g, "Applied recoverable fixes; re-ran the strict check");
        }
    }
    drop(txn);
    if !strict.ok {
        return Err(CliError::invalid(format!(
            "strict check failed: {}\n  help: run `small check --strict` for every problem; `small start --fix` repairs orphan progress and legacy runtime directories",
            strict.summary
        )));
    }
    shared::say(g, "Strict check passed. Start complete.");
    Ok(())
}

fn intent_and_plan_valid(txn: &small_core::authoring::txn::Transaction) -> bool {
    use small_core::gates::schemas::{SchemaSet, Target};
    let schemas = SchemaSet::embedded();
    [ArtifactKind::Intent, ArtifactKind::Plan]
        .into_iter()
        .all(|k| {
            let rel = k.rel_path();
            match handoff::parse_file(txn, &rel) {
                Ok(Some(doc)) => small_core::gates::validate::validate_document(
                    &schemas,
                    Target::Artifact(k),
                    &rel,
                    &doc,
                )
                .is_empty(),
                _ => false,
            }
        })
}
