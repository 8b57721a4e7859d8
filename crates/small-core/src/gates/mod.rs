//! The read-only rules of a v1 workspace: schema validation, invariants, strict layout, the
//! verify-only rules, the staged check and the progress log's checks. The gate commands are
//! operations in `ops` (`check`, `lint`, `verify`, `validate`, `emit`, `doctor`, `health`).

pub mod check;
pub mod invariants;
pub mod layout;
pub mod progress_check;
pub mod proofs;
pub mod schemas;
pub mod timeline;
pub mod validate;
pub mod verify;
