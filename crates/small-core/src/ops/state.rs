//! The project state, one typed value built from either profile, for front ends that show the
//! whole workspace (the page).

pub use crate::state::status::from_state as status_of;
pub use crate::state::{load, LoadOptions, ProjectState, Task};
