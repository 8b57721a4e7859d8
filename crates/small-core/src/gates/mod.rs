//! The read-only gates: schema validation, invariants, strict layout, verify, check, status,
//! emit. `report` holds them as operations (typed request, typed outcome) for the front ends.

pub mod check;
pub mod doctor;
pub mod emit;
pub mod health;
pub mod invariants;
pub mod layout;
pub mod progress_check;
pub mod proofs;
pub mod report;
pub mod schemas;
pub mod timeline;
pub mod validate;
pub mod verify;
