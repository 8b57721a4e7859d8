//! Locating a workspace and reading user files with a bound, for front ends that take a path.

pub use crate::fsio::{read_string_bounded, read_user_input, MAX_READ_BYTES};
pub use crate::workspace::{locate, small_dir_for, Location, Scope};
