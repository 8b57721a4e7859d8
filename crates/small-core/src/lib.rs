//! The SMALL protocol library: everything `small` knows about the protocol, with no
//! terminal, flag or HTTP code. The CLI, the HTTP server and the MCP server are thin front
//! ends on it.
//!
//! The folders are the architecture; dependencies point down this list, never up:
//! - `par`: work on a second thread that still gets done when no thread can be started.
//! - `fsio`: bounded, link-safe file reads and writes.
//! - `diag`: the one diagnostic shape every rule and operation reports through.
//! - `yaml`, `json`: loading YAML with positions; canonical JSON.
//! - `spec`: constants, kinds and formats the specification fixes (file names, versions,
//!   timestamps, replay IDs) and the typed model (task status, the plan's tasks).
//! - `workspace`: locating and loading a `.small/` workspace.
//! - `secrets`: the secret detectors and masking every reader and writer uses.
//! - `gates`: schemas, validation, invariants, verify, check, status.
//! - `authoring`: the write side (transactions, plan, progress, handoff, agents block).
//! - `history`: run snapshots and archives.
//! - `api`: manifests and replay for the HTTP API.
//! - `v2`: the read side of the SMALL 2.0.0 session profile (records, event graph, state).
//! - `migrate`: migration of a v1 workspace to the 2.0.0 session profile.
//! - `state`: the project state, one typed value built from either profile, and the reports
//!   computed from it (status, resume); every reader of a whole workspace starts here.
//! - `ops`: the operation layer: one function per protocol command, for both profiles,
//!   returning the outcome every front end prints or returns.

pub(crate) mod fsio;
pub(crate) mod par;

pub(crate) mod diag;
pub(crate) mod json;
pub(crate) mod spec;
pub(crate) mod yaml;

pub(crate) mod workspace;

pub(crate) mod secrets;

pub(crate) mod gates;

pub(crate) mod authoring;

pub(crate) mod history;

pub(crate) mod api;

pub(crate) mod migrate;
pub(crate) mod state;
pub(crate) mod v2;

pub mod ops;

#[cfg(test)]
mod tests;
