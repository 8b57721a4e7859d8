//! `small lint`: the protocol invariants beyond the JSON Schemas.

use std::path::PathBuf;

use small_core::diag::{self, Diagnostic};
use small_core::gates::check::{self, GateOptions};

use crate::commands::check::{
    count, errors_and_warnings, exit_for, locate, print_gate_json, Printer,
};
use crate::error::{CliError, CmdResult, EXIT_USAGE};
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
    /// Print the report as JSON: {status, errors, warnings, exit_code}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let printer = Printer::new(g, false);
    let loc = match locate(args.dir.as_deref()) {
        Ok(loc) => loc,
        Err(d) => {
            if args.json {
                return print_gate_json(g, &[*d]);
            }
            printer.print(&[*d], None);
            return Err(CliError::silent(EXIT_USAGE));
        }
    };
    let opts = GateOptions {
        strict: args.strict,
        format_strict: args.format_strict,
        cache: !args.no_cache,
        ..Default::default()
    };
    let loaded = check::load(loc, None, &opts);
    let ws = &loaded.ws;
    let mut diags: Vec<Diagnostic> = check::artifact_load_diagnostics(ws);
    match check::lint_stage(&loaded, &opts) {
        Ok(d) => diags.extend(d),
        Err(e) => {
            diags.push(Diagnostic::error(
                "io",
                format!("cannot list {}: {e}", ws.small_dir.display()),
            ));
        }
    }
    diag::sort(&mut diags);
    if args.json {
        return print_gate_json(g, &diags);
    }
    printer.print(&diags, Some(ws));
    let (errors, warnings) = errors_and_warnings(&diags);
    if errors > 0 {
        g.error(format!(
            "lint failed: {}{}",
            count(errors, "error"),
            if warnings > 0 {
                format!(", {}", count(warnings, "warning"))
            } else {
                String::new()
            }
        ));
    } else if warnings > 0 {
        g.info(format!(
            "All invariants satisfied ({})",
            count(warnings, "warning")
        ));
    } else {
        g.info("All invariants satisfied");
    }
    exit_for(&diags)
}
