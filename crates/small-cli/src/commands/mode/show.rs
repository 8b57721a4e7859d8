//! `small mode show`: the mode, the active sessions and the frontier.

use small_core::ops::{self};

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Show the mode (solo or collaborative), the active sessions and the frontier (the value
/// `mode set --expect-state` takes).
///
/// Exit codes: 0 shown; 1 a v1 workspace or damaged records; 2 bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print it as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = args.at.open();
    g.op(args.json, ops::mode::show(&ws))
}
