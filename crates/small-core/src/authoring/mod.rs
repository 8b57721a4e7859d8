//! The write side of the protocol: transactions, span-preserving edits, plan, progress,
//! handoff and the AGENTS.md harness block.

pub mod activity;
pub mod agents;
pub mod apply;
pub mod draft;
pub mod edit;
pub mod handoff;
pub mod hooks;
pub mod init;
pub mod merge;
pub mod plan;
pub mod plan_edit;
pub mod progress;
pub mod record;
pub mod repair;
pub mod resume;
pub mod selftest;
pub mod session;
pub mod snapshot;
pub mod templates;
