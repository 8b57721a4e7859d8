//! `small run checkout`

use super::{to_cli, Context};
use crate::error::CmdResult;
use crate::GlobalArgs;
use small_core::ops::runs;

/// Restore a snapshot's artifacts into .small/ (workspace.small.yml is never touched).
///
/// On a 2.0.0 workspace the whole `.small/` tree is replaced by the snapshot's (verified
/// against its digests first, staged in .small-cache/ and swapped in with one rename); a
/// live file that no snapshot holds (a newer event, a receipt) is dropped only with --force.
///
/// A file that differs from the snapshot is overwritten only if its current content is
/// saved in some snapshot of the store; otherwise the checkout stops and changes nothing,
/// unless --force is given.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replay ID of the snapshot, or any prefix that names only one
    #[arg(value_name = "REPLAY_ID")]
    pub replay_id: String,
    /// Overwrite local changes that no snapshot holds
    #[arg(long)]
    pub force: bool,
    /// Print what was restored as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let out = runs::checkout(&ctx.root, &ctx.store, &args.replay_id, args.force).map_err(to_cli)?;
    g.outcome(args.json, &out)
}
