//! `small run list`

use super::{to_cli, warn_all, Context};
use crate::error::CmdResult;
use crate::GlobalArgs;
use small_core::ops::runs;

/// List the snapshots in the run store, newest first.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Show at most N snapshots (0 shows all)
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub limit: usize,
    /// Print the list as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let out = runs::list::list(&ctx.root, &ctx.store, args.limit).map_err(to_cli)?;
    warn_all(g, &out.warnings);
    g.outcome(args.json, &out)
}
