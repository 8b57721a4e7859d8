//! What the specification fixes: file names, artifact kinds, versions, timestamp and
//! replay-ID formats.

pub mod bookkeeping;
pub mod consts;
pub mod model;
pub mod plan;
pub mod replayid;
pub mod timestamp;
