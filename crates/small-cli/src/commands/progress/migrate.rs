//! `small progress migrate`: rewrite progress timestamps into canonical form.

use std::path::PathBuf;

use small_core::authoring::progress;

use super::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Rewrite progress timestamps to RFC 3339 UTC with nanoseconds, strictly increasing.
///
/// The only command that rewrites existing progress entries, and only their `timestamp`
/// values: entry order, every other field and all comments stay as they are. A timestamp
/// that is not after the previous one becomes one nanosecond after it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "progress migrate", true)?;
    let rel = progress::progress_rel();
    let Some(bytes) = txn.read(&rel).map_err(shared::txn_err)? else {
        return Err(CliError::invalid(format!(
            "{rel} does not exist; create the workspace with `small init`"
        )));
    };
    let (report, new_text) = progress::migrate_text(&bytes).map_err(CliError::invalid)?;
    let Some(text) = new_text else {
        shared::say(g, format!("{rel} already has canonical, strictly increasing timestamps ({} entries); nothing to do", report.entries));
        return Ok(());
    };
    txn.write(rel.clone(), text.into_bytes());
    small_core::authoring::handoff::touch_workspace(&mut txn, None).map_err(shared::txn_err)?;
    let changes = txn.commit().map_err(shared::txn_err)?;
    shared::say(
        g,
        format!(
            "Rewrote {} of {} progress timestamps in {rel}",
            report.rewritten, report.entries
        ),
    );
    shared::print_changes(g, &changes);
    Ok(())
}
