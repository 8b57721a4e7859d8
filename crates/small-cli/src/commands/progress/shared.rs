//! Helpers shared by the authoring commands (progress, plan, checkpoint, handoff, start,
//! reset, fix): finding the workspace, the `--workspace` scope, error mapping and the
//! "what changed" report every writing command prints.

use std::path::{Path, PathBuf};

use small_core::authoring::handoff::ScopeError;
use small_core::authoring::txn::{CommitReport, Transaction, TxnError};
use small_core::workspace::{self, Scope};

use crate::error::CliError;
use crate::GlobalArgs;

/// The root of the workspace named by `--dir` (or the current directory); exit 2 if none.
pub fn root(dir: Option<&Path>) -> Result<PathBuf, CliError> {
    workspace::locate(dir).map(|l| l.root).map_err(|e| {
        let d = e.to_diagnostic();
        match d.help {
            Some(h) => CliError::usage(format!("{}\n  help: {h}", d.message)),
            None => CliError::usage(d.message),
        }
    })
}

/// Lock the workspace for writing.
pub fn begin(root: &Path) -> Result<Transaction, CliError> {
    Transaction::begin(root).map_err(txn_err)
}

/// Map a library error to an exit code: state problems exit 1, system problems exit 2.
pub fn txn_err(e: TxnError) -> CliError {
    match e {
        TxnError::Invalid(m) => CliError::invalid(m),
        other => CliError::usage(other.to_string()),
    }
}

/// Enforce `--workspace`. `examples_allowed` is false for commands that only run on a
/// repository-root workspace (plan, handoff, start, reset).
pub fn check_scope(
    txn: &Transaction,
    scope: Scope,
    command: &str,
    examples_allowed: bool,
) -> Result<(), CliError> {
    if scope == Scope::Examples && !examples_allowed {
        return Err(CliError::usage(format!(
            "--workspace examples is not supported by `small {command}`; use --workspace any to run it on an examples workspace"
        )));
    }
    small_core::authoring::handoff::check_scope(txn, scope).map_err(|e| match e {
        ScopeError::Txn(t) => txn_err(t),
        ScopeError::Scope(m) => CliError::invalid(m),
    })
}

/// Print which files a commit changed (unless --quiet).
pub fn print_changes(g: &GlobalArgs, report: &CommitReport) {
    for f in &report.written {
        g.info(format!("  updated {f}"));
    }
    for f in &report.appended {
        g.info(format!("  appended to {f}"));
    }
}

/// Print a line unless --quiet.
pub fn say(g: &GlobalArgs, line: impl AsRef<str>) {
    g.info(line);
}
