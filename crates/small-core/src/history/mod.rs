//! Run history: snapshots of finished runs and archives.

pub mod archive;
pub mod runs;
