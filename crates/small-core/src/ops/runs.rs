//! `run …`, `archive` and the v1 reconstruction: run snapshots, their diffs and archives
//! (built in `history`).

pub use crate::history::archive::{
    create as create_archive, verify as verify_archive, ArchiveOptions, FileState,
};
pub use crate::history::reconstruct::Reconstruction;
pub use crate::history::runs::diff::{
    compare as compare_runs, diff_runs, live_side, AnyDiff, DiffSide, V2RunDiff,
};
pub use crate::history::runs::digest::VerifyStatus;
pub use crate::history::runs::v2::{CheckoutReport as V2CheckoutReport, STATE_DIR, WORKSPACE_KIND};
pub use crate::history::runs::{
    check_run_scope, checkout_any, find, list, live_replay_id, short_id, short_name, snapshot,
    store_dir, verify, CheckedOut, CheckoutReport, ErrorKind, Meta, RunError, Scope, Snapshot,
    META_FILE,
};
