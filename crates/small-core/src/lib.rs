//! The SMALL protocol library: everything `small` knows about the protocol, with no
//! terminal, flag or HTTP code. The CLI, the HTTP server and the MCP server are thin front
//! ends on it.
//!
//! The folders are the architecture; dependencies point down this list, never up:
//! - `par`: work on a second thread that still gets done when no thread can be started.
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

pub mod par;

pub mod diag;
pub mod json;
pub mod spec;
pub mod yaml;

pub mod workspace;

pub mod secrets;

pub mod gates;

pub mod authoring;

pub mod history;

pub mod api;

pub mod migrate;
pub mod state;
pub mod v2;

pub mod ops;
