//! `small lint`: the protocol invariants beyond the JSON Schemas.

use std::path::PathBuf;

use small_core::ops;
use small_core::ops::gate::GateOptions;
use small_core::ops::gate::GateRequest;

use crate::error::{self, CmdResult};
use crate::GlobalArgs;

/// Check the protocol invariants: versions, owners, known keys, progress evidence and
/// timestamps, unique ids, secrets and insecure links (warnings; errors with --strict).
///
/// --strict adds S1 (completed/blocked tasks have evidence), S2 (progress task ids exist in
/// the plan, current run only, meta/* exempt), S3 (the handoff's current task exists) and S4
/// (only canonical files and ext/ under .small/). small_version written without double
/// quotes is a warning, an error with --format-strict. Rules and codes: docs/rules.md.
///
/// Exit codes: 0 no errors; 1 invariant violations, missing files or YAML errors; 2 no
/// workspace, unreadable files or bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Strict mode: S1-S4, and secrets and insecure links as errors
    #[arg(long)]
    pub strict: bool,
    /// Treat small_version formatting drift as an error
    #[arg(long)]
    pub format_strict: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Accepted for compatibility; lint does not use schemas (see `small validate`)
    #[arg(long, value_name = "DIR")]
    pub spec_dir: Option<PathBuf>,
    /// Do not read or update the cache of earlier checks in .small-cache/ (a full check)
    #[arg(long)]
    pub no_cache: bool,
    /// Print the report as JSON: {status, errors, warnings, diagnostics, exit_code}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let out = ops::lint::lint(&GateRequest {
        dir: args.dir,
        spec_dir: None,
        options: GateOptions {
            strict: args.strict,
            format_strict: args.format_strict,
            cache: !args.no_cache,
            ..Default::default()
        },
    });
    if args.json {
        g.json(&out.json())?;
        return error::verdict(out.verdict);
    }
    g.gate(&out, false);
    if let Some(s) = ops::lint::summary(&out) {
        g.say(s);
    }
    error::verdict(out.verdict)
}
