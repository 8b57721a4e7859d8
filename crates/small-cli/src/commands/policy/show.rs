//! `small policy show`: the policy revision in force and its material digests.

use small_core::ops::{self};

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Show the policy revision in force, the digests of the policy files, the frontier (the
/// value `policy revise --expect-state` takes) and the conflicts.
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
    g.op(args.json, ops::policy::show(&ws))
}
