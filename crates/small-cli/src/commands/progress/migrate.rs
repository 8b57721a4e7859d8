//! `small progress migrate`: rewrite progress timestamps into canonical form.

use small_core::ops::{progress_migrate, Workspace};

use crate::error::{from_op, CmdResult};
use crate::writes::TargetArgs;
use crate::GlobalArgs;

/// Rewrite progress timestamps to RFC 3339 UTC with nanoseconds, strictly increasing.
///
/// The only command that rewrites existing progress entries, and only their `timestamp`
/// values: entry order, every other field and all comments stay as they are. A timestamp
/// that is not after the previous one becomes one nanosecond after it.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print what was done as JSON: {entries, rewritten, changed, written, appended}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.target.dir.as_deref());
    let out = progress_migrate::migrate(&ws, args.target.workspace).map_err(|e| from_op(e, g))?;
    g.outcome(args.json, &out)
}
