//! `small run show`

use super::{to_cli, Context};
use crate::error::CmdResult;
use crate::GlobalArgs;
use small_core::ops::runs;

/// Show one snapshot: when and where it was taken, its files and the handoff it carries.
///
/// Also checks the files against the hashes recorded when the snapshot was taken and exits
/// with 1 if any changed or disappeared.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replay ID of the snapshot, or any prefix that names only one
    #[arg(value_name = "REPLAY_ID")]
    pub replay_id: String,
    /// Print the snapshot as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let out = runs::show::show(&ctx.store, &args.replay_id).map_err(to_cli)?;
    g.outcome(args.json, &out)?;
    out.refusal().map_or(Ok(()), |e| Err(to_cli(e)))
}
