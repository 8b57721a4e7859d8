//! The next task, by the one rule `claim --next`, `resume` and the page share (it lives in
//! `spec::next`, below the layers that use it): for the page's "Next task" and its board.

pub use crate::spec::next::{
    counts_as_task, counts_as_work, dependencies_met, free_ready, next_free,
};
