//! `small reconcile`: preview or resolve the conflicts of a 2.0.0 workspace.

use std::path::PathBuf;

use small_core::ops::reconcile::ResolveRequest;
use small_core::ops::{self, Workspace};

use crate::error::{from_op, CmdResult};
use crate::v2writes::SessionFlags;
use crate::GlobalArgs;

/// Preview the semantic conflicts of a SMALL 2.0.0 workspace (concurrent task outcomes,
/// definitions, modes, policies), or resolve one with a reviewed resolution file:
///
///   {"profile": "2.0.0", "conflict_id": "...", "heads": [...], "selected_event": "...",
///    "reason": "...", "expected_frontier": "..."}
///
/// --apply writes a conflict_resolved event in the session, only if --expect-state and the
/// file's expected_frontier are the current frontier and the heads are the conflict's.
///
/// Exit codes: 0 previewed or resolved; 1 refused (stale frontier, no such conflict, heads
/// that differ, an unreadable file, v1 workspace, damaged records); 2 bad flags, a malformed
/// file, or the lock wait ran out.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// List the conflicts and what resolves them (read-only)
    #[arg(long, conflicts_with = "apply", required_unless_present = "apply")]
    pub preview: bool,
    /// Apply this reviewed resolution file
    #[arg(long, value_name = "FILE")]
    pub apply: Option<PathBuf>,
    /// With --apply: the frontier you reviewed (compare-and-swap)
    #[arg(long, value_name = "FRONTIER", requires = "apply")]
    pub expect_state: Option<String>,
    #[command(flatten)]
    pub v2: SessionFlags,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = args.at.open();
    let Some(file) = args.apply else {
        return preview(&ws, args.json, g);
    };
    let req = ResolveRequest {
        file,
        expect_state: args.expect_state,
        lock_timeout: Some(args.v2.timeout()?),
        session: args.v2.session,
    };
    let out = ops::reconcile::resolve(&ws, &req).map_err(|e| from_op(e, g))?;
    if args.json {
        return g.json(&out);
    }
    g.info(format!(
        "Resolved {} with {}; frontier {}",
        out.resolved, out.event_id, out.frontier
    ));
    Ok(())
}

fn preview(ws: &Workspace, json: bool, g: &GlobalArgs) -> CmdResult {
    g.op(json, ops::reconcile::preview(ws))
}
