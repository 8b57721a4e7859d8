//! `merge-driver`: the git merge driver for `.small/` files (built in `authoring::merge`).

pub use crate::authoring::merge::{
    driver_command_for, handoff_needs_regeneration, install, merge_files, MergeFilesError,
    MergeFilesRequest, MergeKind, HANDOFF_STALE_MARK,
};
