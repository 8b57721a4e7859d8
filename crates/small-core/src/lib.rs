//! The SMALL protocol library: everything `small` knows about the protocol, with no
//! terminal, flag or HTTP code. The CLI and the HTTP server are thin front ends on it.

pub mod consts;
pub mod diag;
pub mod yaml;

// Workspace model, schema validation (issue: workspace core).
pub mod schemas;
pub mod validate;
pub mod workspace;

// Invariants and the read-only gates.
pub mod check;
pub mod invariants;
pub mod layout;
pub mod replayid;
pub mod secrets;
pub mod status;
pub mod timestamp;
pub mod verify;

// Canonical JSON and the API manifest (seed 001 / 004).
pub mod canonical;
pub mod manifest;

// Authoring: transactions, progress log, span-preserving edits.
pub mod edit;
pub mod handoff;
pub mod plan;
pub mod progress;
pub mod txn;

// AGENTS.md harness block, templates, run history, archives.
pub mod agents;
pub mod archive;
pub mod runs;
pub mod templates;
