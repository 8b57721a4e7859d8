//! `health`: the workspace's state in one verdict (built in `gates::health`).

pub use crate::gates::health::{inspect, HealthOptions, WorkspaceHealth};
