//! The outcomes whose documents differ by profile, as the front ends see them: one human
//! report and the facts they act on (an exit code), whichever profile built the outcome.
//! Which profile's words an outcome gets is decided here, with the back end, and nowhere
//! else.

mod v1;
mod v2;

use crate::ops::apply::Applied;
use crate::ops::handoff::HandedOff;
use crate::ops::plan::Planned;
use crate::ops::reconstruct::Reconstructed;
use crate::ops::record::{Checkpointed, Progressed};
use crate::ops::report::Report;
use crate::ops::runs::{AnyDiff, CheckedOut};
use crate::ops::status::StatusReport;

impl Report for StatusReport {
    fn text(&self) -> String {
        match self {
            StatusReport::V1(s) => v1::status(s),
            StatusReport::V2(s) => v2::status(s),
        }
    }
}

impl StatusReport {
    /// 0, or for a 2.0.0 workspace whose records cannot be read, its check's exit code. A v1
    /// status is advice and always 0 (as the reference's).
    pub fn exit_code(&self) -> u8 {
        match self {
            StatusReport::V1(_) => 0,
            StatusReport::V2(s) => s.exit_code,
        }
    }
}

impl Report for Progressed {
    fn text(&self) -> String {
        match self {
            Progressed::V1(p) => v1::progress(p),
            Progressed::V2(t) => v2::progress(t),
        }
    }
}

impl Report for Checkpointed {
    fn text(&self) -> String {
        match self {
            Checkpointed::V1(c) => v1::checkpoint(c),
            Checkpointed::V2(t) => v2::checkpoint(t),
        }
    }
}

impl Checkpointed {
    /// The task closed and the record that closed it (the entry's time, or the event), for
    /// the lease that the checkpoint finishes.
    pub(crate) fn finish(&self) -> (&str, crate::ops::claims::fence::Finish) {
        use crate::ops::claims::fence::Finish;
        match self {
            Checkpointed::V1(c) => (
                c.task_id.as_str(),
                Finish {
                    entry: c.checkpoint_at.clone(),
                    ..Default::default()
                },
            ),
            Checkpointed::V2(t) => (
                t.task_id.as_str(),
                Finish {
                    event: t.event_id.clone(),
                    ..Default::default()
                },
            ),
        }
    }
}

impl Report for HandedOff {
    fn text(&self) -> String {
        match self {
            HandedOff::V1(h) => v1::handoff(h),
            HandedOff::V2(h) => v2::handoff(h),
        }
    }
}

impl Report for Planned {
    fn text(&self) -> String {
        match self {
            Planned::V1(p) => v1::plan(p),
            Planned::V2(p) => v2::plan(p),
            Planned::V2Tasks { tasks, .. } => v2::task_list(tasks),
        }
    }
}

impl Planned {
    /// Whether the outcome is a listing (the tasks, no change asked for): data a script
    /// reads, not a report of what changed.
    pub fn is_listing(&self) -> bool {
        matches!(self, Planned::V2Tasks { .. })
    }
}

impl Report for Applied {
    /// What the run came to (a v1 run reports its steps as they happen, and nothing here).
    fn text(&self) -> String {
        match self {
            Applied::V1(_) => String::new(),
            Applied::V2(o) => v2::applied(o),
            Applied::V2DryRun(d) => v2::dry_run(d),
        }
    }
}

impl Applied {
    /// The command's exit code (0 when nothing ran).
    pub fn exit_code(&self) -> i32 {
        match self {
            Applied::V1(o) => o.exit_code,
            Applied::V2(o) => o.child_exit_code,
            Applied::V2DryRun(_) => 0,
        }
    }
}

impl Report for Reconstructed {
    fn text(&self) -> String {
        match self {
            Reconstructed::V1(r) => v1::reconstruction(r),
            Reconstructed::V2(r) => v2::reconstruction(r),
        }
    }
}

impl Report for AnyDiff {
    fn text(&self) -> String {
        match self {
            AnyDiff::V1(d) => v1::run_diff(d),
            AnyDiff::V2(d) => v2::run_diff(d),
        }
    }
}

impl Report for CheckedOut {
    fn text(&self) -> String {
        match self {
            CheckedOut::V1(r) => v1::checkout(r),
            CheckedOut::V2(r) => v2::checkout(r),
        }
    }
}

/// The label of a run diff's side: the live workspace, or a snapshot's short name.
fn side_label(s: &str) -> String {
    if s == "live" {
        "live workspace".to_string()
    } else {
        crate::ops::runs::short_name(s, 16)
    }
}
