//! `small session list`: every session of a 2.0.0 workspace.

use std::path::PathBuf;

use small_core::ops::{self, Workspace};

use crate::error::{from_op, CmdResult};
use crate::GlobalArgs;

/// List the sessions: id, label, status (active; closed by a session_closed event; or
/// superseded, taken over by another session), when
/// it was created, the frontier it observed and how many events it holds.
///
/// Exit codes: 0 listed; 1 a v1 workspace (no sessions; `small migrate` makes it 2.0.0) or
/// damaged 2.0.0 records; 2 bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the list as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    let l = ops::session::list(&ws).map_err(|e| from_op(e, g))?;
    g.listing(args.json, &l)
}
