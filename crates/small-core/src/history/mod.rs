//! Run history: snapshots of finished runs and archives.

pub mod archive;
pub mod reconstruct;
pub mod runs;
