//! `fix`: repair what a check found and can be repaired (built in `authoring::repair`).

pub use crate::authoring::repair::{fix, fix_workspace, FixRequest, Repair};
