//! `emit`: the workspace's state as one JSON document (built in `gates::emit`).

pub use crate::gates::emit::{emit, EmitError, EmitRequest, Section};
