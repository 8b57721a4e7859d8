//! What the specification fixes: file names, artifact kinds, versions, timestamp and
//! replay-ID formats.

pub mod bookkeeping;
pub mod consts;
pub mod replayid;
pub mod timestamp;
