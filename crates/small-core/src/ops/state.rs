//! The project state, one typed value built from either profile, for front ends that show the
//! whole workspace (the page), and for the operations that read it.

pub use crate::state::status::from_state as status_of;
pub use crate::state::{LoadOptions, ProjectState, Task};

use crate::workspace::Location;

/// Load the state of the workspace at `loc`. Never fails: what cannot be read is listed in
/// `problems` (and, for 2.0.0 records, `record_problems`).
pub fn load(loc: &Location, opts: &LoadOptions) -> ProjectState {
    load_with_cache(loc, opts, false)
}

/// [`load`]; a 2.0.0 state comes from the cache in `.small-cache/` when `use_cache` and no
/// record changed since it was written (the same value either way).
pub fn load_with_cache(loc: &Location, opts: &LoadOptions, use_cache: bool) -> ProjectState {
    crate::ops::backend::of(&loc.small_dir).load_state(loc, opts, use_cache)
}
