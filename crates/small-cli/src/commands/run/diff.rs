//! `small run diff`

use super::{to_cli, Context};
use crate::error::CmdResult;
use crate::GlobalArgs;
use small_core::ops::runs::{self, DiffSide};
use small_core::ops::runs::{compare_runs, live_side};

/// Compare two runs: unified diffs of intent, constraints, plan and handoff, and a summary
/// of progress (entry counts, newly completed tasks, newest timestamps).
///
/// Two 2.0.0 trees are compared by their states: both frontiers, the events added or
/// removed per session, sessions opened, closed or taken over, tasks whose status,
/// revision or title changed, receipts added or removed, conflicts, mode, policy revision
/// and the latest handoff. A v1 run and a 2.0.0 tree cannot be compared.
///
/// Each side is a replay ID (or unambiguous prefix) from the store, or `live` for the
/// current .small/ directory. With one argument, the snapshot is compared with the live
/// workspace. Exit code 0 whether or not the runs differ.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The older side: a replay ID or prefix, or `live`
    #[arg(value_name = "FROM")]
    pub from: String,
    /// The newer side: a replay ID or prefix, or `live` [default: live]
    #[arg(value_name = "TO")]
    pub to: Option<String>,
    /// Include the full diff of progress.small.yml
    #[arg(long)]
    pub full: bool,
    /// Print the comparison as JSON
    #[arg(long)]
    pub json: bool,
}

fn side(ctx: &Context, spec: &str) -> Result<DiffSide, crate::error::CliError> {
    if spec.trim().eq_ignore_ascii_case("live") {
        live_side(&ctx.root).map_err(to_cli)
    } else {
        runs::find(&ctx.store, spec)
            .map(|s| DiffSide::Snapshot(Box::new(s)))
            .map_err(to_cli)
    }
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let from = side(ctx, &args.from)?;
    let to = side(ctx, args.to.as_deref().unwrap_or("live"))?;
    let d = compare_runs(&from, &to, args.full).map_err(to_cli)?;
    g.outcome(args.json, &d)
}
