//! `small claims`: every lease on the workspace's tasks, live or ended, as the remote (or
//! the local refs) holds them.

use small_core::ops::claims::{self};

use crate::commands::claim::Place;
use crate::error::CmdResult;
use crate::GlobalArgs;

/// List the leases: task, who holds it, until when, its state and its generation. A lease is
/// `held` until its end plus SMALL_CLAIM_SKEW, then `expired`; a completed or cancelled task's
/// lease is `done` until the remote's default branch shows it; a record that cannot be read
/// is `damaged` (named by its ref, it blocks nothing).
///
/// Exit codes: 0 listed; 2 bad flags, no repository or remote, or the remote cannot be
/// reached.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Remove the done records whose tasks the remote's default branch (as fetched now)
    /// shows finished
    #[arg(long)]
    pub prune: bool,
    #[command(flatten)]
    pub place: Place,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the leases as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = args.at.open();
    g.op_listing(
        args.json,
        claims::list(&ws, args.place.where_().as_ref(), args.prune),
    )
}
