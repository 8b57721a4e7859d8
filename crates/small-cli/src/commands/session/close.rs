//! `small session close`: record a handoff and close a session.

use small_core::ops::{self};

use crate::error::CmdResult;
use crate::v2writes::SessionFlags;
use crate::GlobalArgs;

/// Close a session: a handoff_recorded event with the summary, then session_closed. The
/// local selection is cleared when it named this session.
///
/// Exit codes: 0 closed; 1 refused (no session given or active, a closed or superseded
/// session, damaged records); 2 bad flags or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What was done and what is next (required)
    #[arg(long, value_name = "TEXT")]
    pub summary: String,
    #[command(flatten)]
    pub v2: SessionFlags,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the events as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let lock = args.v2.timeout()?;
    let ws = args.at.open();
    g.op(
        args.json,
        ops::session::close(&ws, args.v2.session.as_deref(), &args.summary, Some(lock)),
    )
}
