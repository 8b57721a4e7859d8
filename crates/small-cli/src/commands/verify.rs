//! `small verify`: the CI gate. Schemas, invariants and the verify-only rules, all reported
//! together.

use std::path::PathBuf;

use small_core::ops;
use small_core::ops::gate::GateOptions;
use small_core::ops::gate::GateRequest;
use small_core::ops::workspace::Scope;

use crate::error::{self, CmdResult};
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
    /// Print the report as JSON: {status, errors, warnings, diagnostics, exit_code}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let out = ops::verify::verify(&GateRequest {
        dir: args.dir,
        spec_dir: args.spec_dir,
        options: GateOptions {
            strict: args.strict,
            format_strict: false,
            scope: args.workspace,
            since: args.since,
            cache: !args.no_cache,
            threads: 0,
        },
    });
    if args.json {
        g.json(&out.json())?;
        return error::verdict(out.verdict);
    }
    g.gate(&out, args.ci);
    if let Some(s) = ops::verify::summary(&out).filter(|_| !args.ci) {
        g.say(s);
    }
    error::verdict(out.verdict)
}
