//! `small verify`: the CI gate. Schemas, invariants and the verify-only rules, all reported
//! together.

use std::path::PathBuf;

use small_core::diag::{self, Diagnostic};
use small_core::gates::check::{self, GateOptions};
use small_core::workspace::Scope;

use crate::commands::check::{
    count, errors_and_warnings, exit_for, locate, print_gate_json, schemas, Printer,
};
use crate::error::{CliError, CmdResult, EXIT_USAGE};
use crate::GlobalArgs;

/// Verify the workspace: every file present and schema-valid, the invariants, workspace
/// metadata and --workspace scope, the handoff replayId, the handoff's current task, and
/// that every completed task has a progress entry (the evidence gate).
///
/// --since REV additionally proves the progress log append-only: every entry of
/// .small/progress.small.yml at git revision REV must still be there, unchanged and in order,
/// at the front of today's log; the first deleted or altered entry is named.
///
/// Exit codes: 0 valid; 1 invalid; 2 no workspace, unreadable files, a revision git does not
/// know, or bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Strict mode: S1-S4, and secrets and insecure links as errors
    #[arg(long)]
    pub strict: bool,
    /// CI mode: one line per problem, no source snippets, no success message
    #[arg(long)]
    pub ci: bool,
    /// Workspace kinds accepted: root (kind repo-root), examples, or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Prove the progress log append-only since this git revision (commit, tag, branch)
    #[arg(long, value_name = "REV")]
    pub since: Option<String>,
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Directory with the JSON Schemas to use instead of the built-in ones (falls back to $SMALL_SPEC_DIR)
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
    let printer = Printer::new(g, args.ci);
    let loc = match locate(args.dir.as_deref()) {
        Ok(loc) => loc,
        Err(d) if args.json => return print_gate_json(g, &[*d]),
        Err(d) => {
            printer.print(&[*d], None);
            return Err(CliError::silent(EXIT_USAGE));
        }
    };
    let schemas = match schemas(args.spec_dir.as_deref()) {
        Ok(s) => s,
        Err(d) if args.json => return print_gate_json(g, &[*d]),
        Err(d) => {
            printer.print(&[*d], None);
            return Err(CliError::silent(EXIT_USAGE));
        }
    };
    let opts = GateOptions {
        strict: args.strict,
        format_strict: false,
        scope: args.workspace,
        since: args.since.clone(),
        cache: !args.no_cache,
        threads: 0,
    };
    let loaded = check::load(loc, Some(&schemas), &opts);
    let ws = &loaded.ws;
    let mut diags: Vec<Diagnostic> = check::validate_stage(&loaded, &schemas);
    match check::lint_stage(&loaded, &opts) {
        Ok(d) => diags.extend(d),
        Err(e) => diags.push(Diagnostic::error(
            "io",
            format!("cannot list {}: {e}", ws.small_dir.display()),
        )),
    }
    match check::verify_stage(&loaded, &schemas, &opts) {
        Ok(d) => diags.extend(d),
        Err(e) => {
            diag::sort(&mut diags);
            if args.json {
                diags.push(Diagnostic::error("since", e.to_string()));
                return print_gate_json(g, &diags);
            }
            printer.print(&diags, Some(ws));
            printer.print(
                &[Diagnostic::error("since", e.to_string()).with_help(
                    "pass a commit, tag or branch of the repository that holds the workspace",
                )],
                None,
            );
            return Err(CliError::silent(EXIT_USAGE));
        }
    }
    diag::sort(&mut diags);
    diags.dedup();
    if args.json {
        return print_gate_json(g, &diags);
    }
    printer.print(&diags, Some(ws));
    let (errors, warnings) = errors_and_warnings(&diags);
    if errors > 0 {
        if !args.ci {
            g.error(format!("Verification failed: {}", count(errors, "error")));
        }
    } else if !args.ci {
        if warnings > 0 {
            g.info(format!(
                "Verification passed ({})",
                count(warnings, "warning")
            ));
        } else {
            g.info("Verification passed");
        }
    }
    exit_for(&diags)
}
