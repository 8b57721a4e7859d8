//! `small health`: the state of one or many workspaces at a glance.

use std::path::PathBuf;

use small_core::ops::health::{self, HealthOptions};
use small_core::ops::workspace::Scope;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// Report the health of one or more workspaces: strict verdict, current run, live artifact
/// digest, run snapshots and whether the newest is stale, next task.
///
/// Each DIR is a workspace root or its .small directory (reported as its parent); with none,
/// the current directory. A missing or unreadable workspace is reported, not fatal.
/// Workspaces are checked in parallel; nothing is written (the gate cache is not used).
///
/// Exit codes: 0 the report was made (whatever it found, so a `set -e` script that only wants
/// the report goes on); with --gate, 1 when any workspace is failed, missing or could not be
/// inspected; 2 bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Workspaces to inspect [default: the current directory]
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Print the report as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when any workspace is not ok (default: the report always exits 0, as the reference)
    #[arg(long)]
    pub gate: bool,
    /// Run store of each workspace, relative to it unless absolute [default: .small-runs]
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Workspace kinds accepted: root (kind repo-root), examples, or any; another kind is an error
    #[arg(long, value_name = "SCOPE", default_value = "any", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Directory with the JSON Schemas to use instead of the built-in ones (falls back to $SMALL_SPEC_DIR)
    #[arg(long, value_name = "DIR")]
    pub spec_dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if args
        .store
        .as_ref()
        .is_some_and(|s| s.as_os_str().is_empty())
    {
        return Err(CliError::usage("--store needs a directory path"));
    }
    let dirs = if args.dirs.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.dirs
    };
    let opts = HealthOptions {
        store: args.store,
        spec_dir: args.spec_dir,
        scope: args.workspace,
        threads: 0,
    };
    let report = health::report(&dirs, &opts);
    g.listing(args.json, &report)?;
    if report.all_healthy() || !args.gate {
        Ok(())
    } else {
        Err(CliError::silent(crate::error::EXIT_INVALID))
    }
}
