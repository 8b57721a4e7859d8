//! What the HTTP API serves: manifest validation and replay.

pub mod manifest;
pub mod replay;
