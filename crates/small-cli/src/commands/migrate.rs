//! `small migrate`: move a v1 workspace to the SMALL 2.0.0 session profile.

use std::path::PathBuf;

use small_core::ops::migrate::{self, MigrateError};
use small_core::ops::report::Report;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// Preview or apply an explicit, loss-preserving migration to the 2.0.0 session profile.
///
/// First `small migrate --to 2.0.0 --preview --namespace NS --json > plan.json` (reads
/// .small/, writes nothing), review the plan, then `small migrate --apply plan.json
/// --expect-state DIGEST` with the plan's expected_input_digest. Apply archives every v1
/// file under .small/imports/v1/<import_id>/originals/ and keeps the v1 tree in
/// .small-cache/migrations/<import_id>/legacy.small. `--recover` finishes a migration that
/// was interrupted.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the migration plan (nothing is written)
    #[arg(long)]
    pub preview: bool,
    /// Target profile version (only 2.0.0), with --preview
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,
    /// Namespace the migrated identities derive from, with --preview
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Initial mode of the migrated workspace, with --preview: solo (one active session) or collaborative
    #[arg(long, value_name = "MODE", default_value = "solo")]
    pub mode: String,
    /// Apply the reviewed plan in this file
    #[arg(long, value_name = "PLAN")]
    pub apply: Option<PathBuf>,
    /// The plan's expected_input_digest, required with --apply
    #[arg(long, value_name = "DIGEST")]
    pub expect_state: Option<String>,
    /// Finish a migration that was interrupted
    #[arg(long)]
    pub recover: bool,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

fn cli_error(e: MigrateError) -> CliError {
    match e {
        MigrateError::Io(m) => CliError::usage(m),
        e => CliError::invalid(e.to_string()),
    }
}

/// `--to` is required with `--preview` (a malformed command line without it, exit 2) and
/// must name the one profile migrate writes (a refused value, exit 1).
fn check_target(to: Option<&str>) -> CmdResult {
    let message = format!("--to must be {}", migrate::PROFILE_VERSION);
    match to {
        None => Err(CliError::usage(message)),
        Some(v) if v != migrate::PROFILE_VERSION => Err(CliError::invalid(message)),
        Some(_) => Ok(()),
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let chosen = [args.preview, args.apply.is_some(), args.recover]
        .iter()
        .filter(|b| **b)
        .count();
    if chosen != 1 {
        return Err(CliError::usage(
            "choose exactly one of --preview, --apply, or --recover",
        ));
    }
    let root = match &args.dir {
        Some(d) => d.clone(),
        None => PathBuf::from("."),
    };
    if args.recover {
        let r = migrate::Recovered::from(migrate::recover(&root).map_err(cli_error)?);
        return g.outcome(args.json, &r);
    }
    if args.preview {
        check_target(args.to.as_deref())?;
        let namespace = args.namespace.unwrap_or_default();
        let plan =
            migrate::preview_with_mode(&root, &namespace, args.mode.trim()).map_err(cli_error)?;
        if args.json {
            return g.data(plan.to_json());
        }
        g.info_raw(plan.text());
        return Ok(());
    }
    let Some(expect) = args.expect_state else {
        return Err(CliError::usage("--expect-state is required with --apply"));
    };
    let path = args.apply.unwrap_or_default();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    let plan = migrate::Plan::from_json(&text).map_err(cli_error)?;
    let out = migrate::apply(&root, &plan, &expect).map_err(cli_error)?;
    if args.json {
        return g.data(out.to_json());
    }
    g.info_raw(out.text());
    Ok(())
}
