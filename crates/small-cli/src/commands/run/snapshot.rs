//! `small run snapshot`

use super::{to_cli, warn_all, Context};
use crate::error::CmdResult;
use crate::GlobalArgs;
use small_core::ops::runs;

/// Save the current run (intent, plan, progress, handoff, constraints) into the run store.
///
/// On a 2.0.0 workspace the snapshot is the whole `.small/` tree (copied into
/// `state/.small/`, a SHA-256 per path in meta.json), filed under the state's frontier; the
/// tree must pass `small check --strict` (no damage, no unresolved conflict).
///
/// The snapshot is filed under the replay ID recorded in handoff.small.yml; run
/// `small handoff` first if there is none. Runs may share a replay ID (it fingerprints
/// intent, plan and constraints): a snapshot that differs from every stored one of the same
/// replay ID becomes its next generation, addressed as `<ID>~N`; one identical to a stored
/// snapshot writes nothing. --force replaces the newest generation instead.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replace the newest snapshot of the same replay ID instead of adding a generation
    #[arg(long)]
    pub force: bool,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let out = runs::snapshot::take(&ctx.root, &ctx.store, args.force).map_err(to_cli)?;
    warn_all(g, &out.warnings);
    g.outcome(args.json, &out)
}
