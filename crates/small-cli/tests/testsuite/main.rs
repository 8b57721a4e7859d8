//! The CLI integration tests: one test binary (cargo's `tests/testsuite` pattern) that runs
//! the real `small` binary in temporary workspaces. Each module is one area of behaviour.

mod agents_hooks;
mod agents_mcp;
mod agents_mcp_fuzz;
mod agents_merge;
mod agents_resume;
mod author_support;
mod runs_common;
#[path = "../../../small-server/tests/common/mod.rs"]
mod server_common;
mod tools_support;

mod agent_loop;
mod author_concurrency;
mod author_conformance;
mod author_crash;
mod author_errors;
mod author_fix;
mod author_handoff;
mod author_plan;
mod author_progress;
mod author_scope;
mod author_secrets;
mod author_snapshots;
mod cli_conventions;
mod conformance;
mod conformance_v11;
mod conformance_v11_commands;
mod conformance_v2;
mod conformance_v2_artifacts;
mod conformance_v2_migrate;
mod conformance_v2_state;
mod docs;
mod gate_cache;
mod gate_check;
mod gate_compat;
mod gate_golden;
mod gate_lint;
mod gate_secrets;
mod gate_secrets_frontends;
mod hostile_files;
mod hostile_limits;
mod internal_errors;
mod manifest_cli;
mod runs_archive;
mod runs_concurrency;
mod runs_diff_checkout;
mod runs_hostile;
mod runs_list_show;
mod runs_snapshot;
mod runs_verify;
mod store_cli;
mod store_http;
mod store_scaleout;
mod tools_agents;
mod tools_apply;
mod tools_completion;
mod tools_draft_accept;
mod tools_init;
mod tools_selftest;
mod ui_browser;
mod ui_http;

mod v2_write;
mod validate_cli;
mod validate_conformance;
