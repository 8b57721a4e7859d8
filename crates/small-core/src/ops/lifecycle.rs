//! Pieces of the v1 write side that front ends still compose themselves: the handoff's
//! outcome and replay id as the writing commands print them, the artifact paths they name,
//! and the writes the page's demo workspace is made with.

pub use crate::authoring::handoff::ReplayId;
pub use crate::authoring::plan::plan_rel;
pub use crate::authoring::plan_edit::{edit_plan, PlanRequest as EditPlanRequest};
pub use crate::authoring::progress::progress_rel;
pub use crate::authoring::record::{add_progress, checkpoint, RecordRequest};
pub use crate::authoring::session::{write_handoff, HandoffOutcome, HandoffRequest, SummarySource};
