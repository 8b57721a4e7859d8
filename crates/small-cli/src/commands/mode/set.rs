//! `small mode set`: change the mode, compare-and-swap on the frontier.

use small_core::ops::mode::ModeRequest;
use small_core::ops::{self};

use crate::error::CmdResult;
use crate::v2writes::SessionFlags;
use crate::GlobalArgs;

/// Set the mode to solo or collaborative: a mode_changed event in the session, written only
/// if the frontier is still the one you reviewed (--expect-state; `small mode show` prints
/// it) and with a reason. Solo is refused while more than one session is active. Setting
/// the mode in force changes nothing.
///
/// Exit codes: 0 set (or unchanged); 1 refused (stale frontier, sessions, v1 workspace,
/// damaged records); 2 bad flags (a blank reason) or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// solo or collaborative
    #[arg(value_name = "MODE")]
    pub mode: String,
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
    let req = ModeRequest {
        mode: args.mode,
        reason: args.reason,
        requester: args.requester,
        expect_state: args.expect_state,
        lock_timeout: Some(args.v2.timeout()?),
        session: args.v2.session,
    };
    let ws = args.at.open();
    g.op(args.json, ops::mode::set(&ws, &req))
}
