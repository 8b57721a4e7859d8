//! Which profile a stored run or archive holds: the back end's answer for what outlives a
//! workspace's profile (a migrated workspace keeps its v1 snapshots beside its 2.0.0 ones),
//! told per stored directory and handed to `history` as [`StoredRuns`] and [`StoredArchives`].

use std::path::Path;

use crate::history::archive::{self, FileCheck, Manifest, StoredArchives};
use crate::history::runs::digest::{self, Opened, SnapshotVerification};
use crate::history::runs::{self, diff, safe, RunError, Snapshot, StoredRuns};
use crate::ops::runs::{AnyDiff, DiffSide, RunDiff};
use crate::ops::Stored;
use crate::spec::consts::SMALL_DIR;

/// Whether the snapshot directory `dir` holds a 2.0.0 tree: its copy under
/// `state/.small/` has a `profile.json` (told by the entries, nothing followed).
fn holds_tree(dir: &Path) -> bool {
    let profile = dir
        .join(runs::v2::STATE_DIR)
        .join(SMALL_DIR)
        .join("profile.json");
    safe::entry_type(dir).ok() == Some(safe::Entry::Dir)
        && safe::entry_type(&profile).ok() == Some(safe::Entry::File)
}

/// Whether an archive's manifest describes a 2.0.0 tree (its files live under
/// `state/.small/`).
fn lists_tree(manifest: &Manifest) -> bool {
    is_tree_version(&manifest.small_version)
}

/// Whether an archive's declared `small_version` is 2.0.0's.
fn is_tree_version(small_version: &str) -> bool {
    small_version == crate::v2::PROFILE_VERSION
}

impl StoredRuns for Stored {
    fn load(&self, store: &Path, name: &str, verify: bool) -> Result<Snapshot, RunError> {
        if holds_tree(&store.join(name)) {
            runs::v2::load(store, name, verify)
        } else {
            runs::load_v1(store, name, verify)
        }
    }

    fn verify(&self, opened: &Opened) -> Result<SnapshotVerification, RunError> {
        if holds_tree(&opened.dir) {
            runs::v2::verify(opened)
        } else {
            digest::verify_v1(opened)
        }
    }
}

impl StoredArchives for Stored {
    fn name_rule(&self, small_version: &str) -> archive::NameRule {
        if is_tree_version(small_version) {
            archive::v2::check_rel_path
        } else {
            safe::check_file_name
        }
    }

    fn check_archive(&self, dir: &Path, manifest: &Manifest) -> Result<Vec<FileCheck>, RunError> {
        if lists_tree(manifest) {
            archive::v2::check_files(dir, manifest)
        } else {
            archive::check_files_v1(dir, manifest)
        }
    }
}

impl Stored {
    /// Compare two sides of one profile: v1 runs by their artifacts, 2.0.0 trees by their
    /// states. A v1 side against a 2.0.0 one is refused.
    pub(crate) fn compare(from: &DiffSide, to: &DiffSide, full: bool) -> Result<AnyDiff, RunError> {
        match (side_holds_tree(from), side_holds_tree(to)) {
            (false, false) => diff::diff_runs(from, to, full).map(AnyDiff::V1),
            (true, true) => diff::diff_trees(from, to).map(|d| AnyDiff::V2(Box::new(d))),
            (tree_from, _) => {
                let (tree, run) = if tree_from { (from, to) } else { (to, from) };
                Err(RunError::invalid(format!(
                    "cannot compare {} (a 2.0.0 tree) with {} (a v1 run): `run diff` compares two runs of one profile",
                    tree.label(),
                    run.label()
                ))
                .with_help("`small migrate` converts a v1 workspace; compare its snapshots taken after that"))
            }
        }
    }

    /// Compare two v1 runs; a side that is a 2.0.0 tree is refused. With `full`, the
    /// progress diff is included too.
    pub(crate) fn diff_runs(
        from: &DiffSide,
        to: &DiffSide,
        full: bool,
    ) -> Result<RunDiff, RunError> {
        for side in [from, to] {
            if side_holds_tree(side) {
                return Err(RunError::invalid(format!(
                    "`run diff` of v1 runs: {} is a 2.0.0 tree",
                    side.label()
                ))
                .with_help(
                    "compare two 2.0.0 snapshots (or one and `live`) with `small run diff A B`",
                ));
            }
        }
        diff::diff_runs(from, to, full)
    }
}

/// Whether a side of `run diff` is a 2.0.0 tree: a snapshot by its files, the live workspace
/// by the profile its back end found.
fn side_holds_tree(side: &DiffSide) -> bool {
    match side {
        DiffSide::Snapshot(s) => holds_tree(&s.dir),
        DiffSide::Live { v2, .. } => *v2,
    }
}

/// Restore the v1 snapshot `query` names into the v1 workspace at `root`; a 2.0.0 snapshot
/// is refused.
pub(super) fn checkout_v1(
    root: &Path,
    store: &Path,
    query: &str,
    force: bool,
) -> Result<runs::CheckoutReport, RunError> {
    let snap = runs::find(store, query, &Stored)?;
    runs::require_small_dir(root)?;
    if holds_tree(&snap.dir) {
        return Err(RunError::invalid(format!(
            "snapshot {} holds a 2.0.0 tree; this workspace is v1",
            runs::short_name(&snap.name, 16)
        ))
        .with_help("restore it into a 2.0.0 workspace (`small migrate` converts a v1 one)"));
    }
    runs::restore(root, store, snap, force)
}

/// Restore the 2.0.0 snapshot `query` names into the 2.0.0 workspace at `root`; a v1
/// snapshot is refused.
pub(super) fn checkout_v2(
    root: &Path,
    store: &Path,
    query: &str,
    force: bool,
) -> Result<runs::v2::CheckoutReport, RunError> {
    let name = runs::resolve(store, query)?;
    let dir = store.join(&name);
    if safe::entry_type(&dir)? != safe::Entry::Dir || !holds_tree(&dir) {
        return Err(RunError::invalid(format!(
            "snapshot {} is not a 2.0.0 snapshot; this workspace is 2.0.0",
            runs::short_name(&name, 16)
        ))
        .with_help(
            "a v1 snapshot restores into a v1 workspace; `small run list` shows the snapshots",
        ));
    }
    runs::v2::restore(root, store, &name, force)
}
