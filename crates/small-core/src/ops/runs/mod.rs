//! `run …`, `archive` and the v1 reconstruction: run snapshots, their diffs and archives
//! (built in `history`).

pub use crate::history::archive::{
    verify as verify_archive, ArchiveOptions, ArchiveReport, FileState,
};
pub use crate::history::reconstruct::Reconstruction;
pub use crate::history::runs::diff::{
    compare as compare_runs, diff_runs, AnyDiff, DiffSide, RunDiff, V2RunDiff,
};
pub use crate::history::runs::digest::VerifyStatus;
pub use crate::history::runs::v2::{CheckoutReport as V2CheckoutReport, STATE_DIR, WORKSPACE_KIND};
pub use crate::history::runs::{
    find, list, live_replay_id, short_id, short_name, store_dir, verify, CheckedOut,
    CheckoutReport, ErrorKind, Meta, RunError, Scope, Snapshot, SnapshotResult, META_FILE,
};

pub mod list;
pub mod show;
pub mod snapshot;
pub mod verify;

use std::path::Path;

use crate::ops::Workspace;

/// The workspace at `root`, its profile decided.
fn at(root: &Path) -> Workspace {
    Workspace::at(root.to_path_buf())
}

/// Snapshot the workspace at `root` into `store`: the first snapshot of a replay ID goes to
/// `<store>/<replayId>/`, a different one of the same replay ID becomes a new generation
/// (`<replayId>~N`), an identical one writes nothing; with `force` the newest generation is
/// replaced.
pub fn snapshot(root: &Path, store: &Path, force: bool) -> Result<SnapshotResult, RunError> {
    at(root).backend().snapshot(root, store, force)
}

/// Restore the snapshot `query` names into the workspace at `root`.
pub fn checkout(
    root: &Path,
    store: &Path,
    query: &str,
    force: bool,
) -> Result<CheckedOut, RunError> {
    at(root).backend().checkout(root, store, query, force)
}

/// Enforce `--workspace` for the run commands (a 2.0.0 workspace has no kind; every scope
/// accepts it, as `check` does).
pub fn check_run_scope(root: &Path, scope: Scope) -> Result<(), RunError> {
    at(root).backend().run_scope(root, scope)
}

/// The live workspace at `root` as a side of `run diff`.
pub fn live_side(root: &Path) -> Result<DiffSide, RunError> {
    at(root).backend().live_side(root)
}

/// Archive the workspace at `root`.
pub fn create_archive(root: &Path, opts: &ArchiveOptions) -> Result<ArchiveReport, RunError> {
    at(root).backend().archive(root, opts)
}
