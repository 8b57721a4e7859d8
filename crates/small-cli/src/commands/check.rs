//! `small check`: validate, lint and verify in one pass over the workspace, stopping at the
//! first stage that fails.

use std::path::PathBuf;

use small_core::ops::check::{self, Checked};
use small_core::ops::diag::Diagnostic;
use small_core::ops::gate::GateOptions;
use small_core::ops::gate::GateRequest;
use small_core::ops::workspace::Scope;

use crate::error::{self, CmdResult};
use crate::GlobalArgs;

/// Run validate, lint and verify; stop at the first stage that fails.
///
/// Stages: validate (files present, YAML, JSON Schemas), lint (protocol invariants; with
/// --strict also S1-S4, secrets and insecure links as errors), verify (workspace metadata and
/// --workspace scope, handoff replayId, current task, evidence gate). A stage after a failed
/// one is reported as skipped.
///
/// Exit codes: 0 all stages pass; 1 the workspace is invalid; 2 no workspace, unreadable
/// files or bad flags. With --json, stdout carries only the JSON report (docs/json-output.md).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Strict mode: S1-S4, secrets and insecure links are errors
    #[arg(long)]
    pub strict: bool,
    /// Treat small_version formatting drift (not a double-quoted string) as an error
    #[arg(long)]
    pub format_strict: bool,
    /// CI mode: one line per problem, no source snippets
    #[arg(long)]
    pub ci: bool,
    /// Print the report as JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// Workspace kinds accepted: root (kind repo-root), examples, or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Directory with the JSON Schemas to use instead of the built-in ones (falls back to $SMALL_SPEC_DIR)
    #[arg(long, value_name = "DIR")]
    pub spec_dir: Option<PathBuf>,
    /// Do not read or update the cache of earlier checks in .small-cache/ (a full check)
    #[arg(long)]
    pub no_cache: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let checked = check::check(&GateRequest {
        dir: args.dir,
        spec_dir: args.spec_dir,
        options: GateOptions {
            strict: args.strict,
            format_strict: args.format_strict,
            scope: args.workspace,
            since: None,
            cache: !args.no_cache,
            threads: 0,
        },
    });
    if args.json {
        g.json(&checked.report)?;
    } else {
        print_human(&checked, args.ci, g);
    }
    error::verdict(checked.verdict())
}

fn print_human(checked: &Checked, compact: bool, g: &GlobalArgs) {
    let r = &checked.report;
    let diags: Vec<Diagnostic> = r.diagnostics.iter().map(|(_, d)| d.clone()).collect();
    let ws = checked.workspace.as_ref();
    g.diagnostics(&diags, |f| ws.and_then(|w| w.source_of(f)), compact);
    if let Some(s) = checked.summary(compact) {
        g.say(s);
    }
}
