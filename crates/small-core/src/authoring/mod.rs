//! The write side of the protocol: transactions, span-preserving edits, plan, progress,
//! handoff and the AGENTS.md harness block.

pub mod agents;
pub mod edit;
pub mod handoff;
pub mod hooks;
pub mod merge;
pub mod plan;
pub mod plan_edit;
pub mod progress;
pub mod record;
pub mod resume;
pub mod session;
pub mod templates;
pub mod txn;
