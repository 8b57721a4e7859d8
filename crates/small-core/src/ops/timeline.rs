//! The timeline the page pages through: v1's progress log read from its end and 2.0.0's
//! events in order.

pub use crate::gates::timeline::{Facets, Filter, Page, Timeline, TimelineEntry};
pub use crate::state::{EventEntry, EventTimeline};

/// Every event of the workspace under `small_dir`, in timeline order; `None` for a profile
/// without events (a v1 workspace's timeline is its progress log).
pub fn event_timeline(
    root: &std::path::Path,
    small_dir: &std::path::Path,
) -> Option<EventTimeline> {
    crate::ops::Workspace::from_small_dir(small_dir.to_path_buf())
        .backend()
        .events(root, small_dir)
}
