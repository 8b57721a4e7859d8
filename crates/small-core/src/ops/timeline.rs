//! The timeline the page pages through: v1's progress log read from its end and 2.0.0's
//! events in order.

pub use crate::gates::timeline::{Facets, Filter, Page, Timeline, TimelineEntry};
pub use crate::state::{event_timeline, EventEntry};
