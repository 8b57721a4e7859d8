//! `small start`: create or repair the handoff state a run starts from.

use std::path::PathBuf;

use small_core::ops::lifecycle::{self, StartRequest};

use crate::error::{CliError, CmdResult};
use crate::writes as shared;
use crate::GlobalArgs;
use small_core::ops::workspace::Scope;

/// Initialise or repair run handoff state, then run the strict check.
///
/// Creates any missing artifact (from the templates; existing files are never changed),
/// missing workspace metadata, and a handoff with `run` metadata. A handoff without a valid
/// replayId gets one (recorded as meta/replayid-self-heal). A summary written with
/// `--summary` is kept while the run's state is unchanged. With --fix, recoverable drift the
/// strict check finds (orphan progress, legacy runtime directories) is repaired. Refused in a
/// SMALL 2.0.0 workspace: work there begins with `small session start`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Summary to write into the handoff (default: keep one written with --summary while the state is unchanged, else computed)
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// Repair recoverable drift (orphan progress, legacy runtime layout) if the strict check fails
    #[arg(long)]
    pub fix: bool,
    /// Directory containing .small/ (default: search upward from the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print what was done as JSON
    #[arg(long)]
    pub json: bool,
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
    let created = lifecycle::create_missing(&mut txn)?;
    shared::check_scope(&txn, args.workspace, "start", false)?;
    let req = StartRequest {
        summary: args.summary.clone(),
    };
    let out = lifecycle::start(&mut txn, &req)?;
    let report = txn.commit()?;

    // The strict check of the result, with the recoverable repairs when asked.
    let checked = lifecycle::check_started(&root, args.fix)?;
    if let (Some(fixed), false) = (&checked.fixed, args.json) {
        shared::print_changes(g, fixed);
    }
    let (strict, repaired) = (checked.strict, checked.repaired);
    if args.json {
        let mut v = shared::handoff_json(&out.handoff);
        v["created"] = serde_json::json!(created);
        v["self_healed"] = serde_json::json!(out.self_healed);
        v["repaired"] = serde_json::json!(repaired);
        v["strict_ok"] = serde_json::json!(strict.ok);
        v["strict_problem"] = serde_json::json!(strict.summary);
        shared::print_json(Some(&report), v)?;
    } else {
        for c in &created {
            shared::say(g, format!("Created {c} from the template"));
        }
        shared::print_handoff(g, &out.handoff, "Handoff ready");
        shared::print_changes(g, &report);
        for r in &repaired {
            shared::say(g, r);
        }
    }
    if !strict.ok {
        return Err(CliError::invalid(format!(
            "strict check failed: {}\n  help: run `small check --strict` for every problem; `small start --fix` repairs orphan progress and legacy runtime directories",
            strict.summary
        )));
    }
    if !args.json {
        shared::say(g, "Strict check passed. Start complete.");
    }
    Ok(())
}
