//! The SMALL protocol library: everything `small` knows about the protocol, with no
//! terminal, flag or HTTP code. The CLI, the HTTP server and the MCP server are thin front
//! ends on it.
//!
//! The folders are the architecture; dependencies point down this list, never up (the
//! `layers` test holds every source file to it, `spec/` included):
//! - `par`: work on a second thread that still gets done when no thread can be started.
//! - `fsio`: bounded, link-safe file reads and writes.
//! - `diag`: the one diagnostic shape every rule and operation reports through.
//! - `yaml`, `json`: loading YAML with positions; canonical JSON.
//! - `spec`: constants, kinds and formats the specification fixes (file names, versions,
//!   timestamps, replay IDs) and the typed model (task status, the plan's tasks).
//! - `workspace`: locating and locking a `.small/` workspace, its transactions and caches.
//! - `secrets`: the secret detectors and masking every reader and writer uses.
//! - `v2`: the SMALL 2.0.0 session profile's records: reading, the event graph, writing.
//! - `state`: the project state, one typed value built from either profile, and the reports
//!   computed from it (status, resume); every reader of a whole workspace starts here.
//! - `gates`: schemas, validation, invariants, verify, check.
//! - `authoring`: the v1 write side (plan, progress, handoff, agents block, init, drafts).
//! - `history`: run snapshots and archives.
//! - `migrate`: migration of a v1 workspace to the 2.0.0 session profile.
//! - `api`: manifests and replay for the HTTP API.
//! - `ops`: the operation layer and the crate's only public module: one function per
//!   command, for both profiles, returning the outcome every front end prints or returns.
//!   Its `backend` module decides a workspace's profile once, when it is opened.

pub(crate) mod par;

pub(crate) mod fsio;

pub(crate) mod diag;

pub(crate) mod yaml;

pub(crate) mod json;

pub(crate) mod spec;

pub(crate) mod workspace;

pub(crate) mod secrets;

pub(crate) mod v2;

pub(crate) mod state;

pub(crate) mod gates;

pub(crate) mod authoring;

pub(crate) mod history;

pub(crate) mod migrate;

pub(crate) mod api;

pub mod ops;

#[cfg(test)]
mod tests;
