//! What the writing commands print of the v1 write side's handoff: its outcome, where its
//! summary came from and its replay id, and the artifact paths they name.

pub use crate::authoring::handoff::ReplayId;
pub use crate::authoring::plan::plan_rel;
pub use crate::authoring::progress::progress_rel;
pub use crate::authoring::session::{HandoffOutcome, SummarySource};
