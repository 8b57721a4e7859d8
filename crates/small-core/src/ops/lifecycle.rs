//! `start`, `reset` and the v1 handoff write: a run's lifecycle (built in
//! `authoring::session`), and the pieces of the handoff and plan those commands compose.

pub use crate::authoring::handoff::{check_command_scope, handoff_rel, ReplayId};
pub use crate::authoring::plan::plan_rel;
pub use crate::authoring::plan_edit::{edit_plan, PlanRequest as EditPlanRequest};
pub use crate::authoring::progress::progress_rel;
pub use crate::authoring::record::{add_progress, checkpoint, migrate_progress, RecordRequest};
pub use crate::authoring::session::{
    check_started, create_missing, refuse_v2_reset, reset, start, write_handoff, HandoffOutcome,
    HandoffRequest, ResetRequest, StartRequest, SummarySource,
};
