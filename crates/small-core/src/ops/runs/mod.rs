//! `run …`, `archive` and the v1 reconstruction: run snapshots, their diffs and archives
//! (built in `history`).

pub use crate::history::archive::{ArchiveOptions, ArchiveReport, FileState, VerifyReport};
pub use crate::history::reconstruct::Reconstruction;
pub use crate::history::runs::diff::{AnyDiff, DiffSide, RunDiff, V2RunDiff};
pub use crate::history::runs::digest::{SnapshotVerification, VerifyStatus};
pub use crate::history::runs::v2::{CheckoutReport as V2CheckoutReport, STATE_DIR, WORKSPACE_KIND};
pub use crate::history::runs::{
    live_replay_id, short_id, short_name, store_dir, CheckedOut, CheckoutReport, ErrorKind, Meta,
    RunError, Scope, Snapshot, SnapshotResult, META_FILE,
};

pub mod list;
pub mod show;
pub mod snapshot;
pub mod verify;

use std::path::Path;

use crate::history::{archive, runs};
use crate::ops::{Stored, Workspace};

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

/// The snapshots of `store`, newest first, and warnings for entries that could not be read.
/// A store that does not exist yet is empty.
pub fn list(store: &Path) -> Result<(Vec<Snapshot>, Vec<String>), RunError> {
    runs::list(store, &Stored)
}

/// The snapshot a replay ID or unambiguous prefix names (its newest generation, or
/// generation N with `~N`), loaded and checked against its digests.
pub fn find(store: &Path, query: &str) -> Result<Snapshot, RunError> {
    runs::find(store, query, &Stored)
}

/// Verify the snapshot `query` names against the digests its `meta.json` recorded.
pub fn verify(store: &Path, query: &str) -> Result<SnapshotVerification, RunError> {
    runs::verify(store, query, &Stored)
}

/// Re-hash every file of the archive in `dir` against its manifest.
pub fn verify_archive(dir: &Path) -> Result<VerifyReport, RunError> {
    archive::verify(dir, &Stored)
}

/// Compare two sides of one profile (`run diff`): v1 runs by their artifacts, 2.0.0 trees
/// by their states; a v1 side against a 2.0.0 one is refused.
pub fn compare_runs(from: &DiffSide, to: &DiffSide, full: bool) -> Result<AnyDiff, RunError> {
    Stored::compare(from, to, full)
}

/// Compare two v1 runs (a 2.0.0 side is refused). With `full`, the progress diff is
/// included too.
pub fn diff_runs(from: &DiffSide, to: &DiffSide, full: bool) -> Result<RunDiff, RunError> {
    Stored::diff_runs(from, to, full)
}
