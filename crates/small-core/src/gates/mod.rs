//! The read-only gates: schema validation, invariants, strict layout, verify, check, status.

pub mod check;
pub mod doctor;
pub mod invariants;
pub mod layout;
pub mod progress_check;
pub mod schemas;
pub mod secrets;
pub mod status;
pub mod validate;
pub mod verify;
