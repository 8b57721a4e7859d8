//! `small policy revise`: new policy files, compare-and-swap on the frontier.

use std::path::PathBuf;

use small_core::ops::policy::PolicyRequest;
use small_core::ops::{self};

use crate::error::CmdResult;
use crate::v2writes::SessionFlags;
use crate::GlobalArgs;

/// Revise the policy: a policy_changed event naming the new files' digests and revision,
/// then the files themselves in `.small/policy/`. Written only if the frontier is still the
/// one you reviewed (--expect-state; `small policy show` prints it), with a reason, and
/// when no conflict is unresolved. A file not given stays as it is.
///
/// Exit codes: 0 revised; 1 refused (stale frontier, conflicts, v1 workspace, damaged
/// records, an unreadable file); 2 bad flags or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The new intent file
    #[arg(long, value_name = "FILE")]
    pub intent: Option<PathBuf>,
    /// The new constraints file
    #[arg(long, value_name = "FILE")]
    pub constraints: Option<PathBuf>,
    /// Why (required, recorded)
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// Who asked for it (recorded)
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub requester: String,
    /// The frontier you reviewed (compare-and-swap)
    #[arg(long, value_name = "FRONTIER")]
    pub expect_state: String,
    #[command(flatten)]
    pub v2: SessionFlags,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let req = PolicyRequest {
        intent: args.intent,
        constraints: args.constraints,
        reason: args.reason,
        requester: args.requester,
        expect_state: args.expect_state,
        lock_timeout: Some(args.v2.timeout()?),
        session: args.v2.session,
    };
    let ws = args.at.open();
    g.op(args.json, ops::policy::revise(&ws, &req))
}
