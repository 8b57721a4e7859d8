//! `small unclaim`: release a lease this checkout holds, so another agent can take the task.

use small_core::ops::claims::{self, UnclaimRequest};

use crate::commands::claim::Place;
use crate::error::CmdResult;
use crate::GlobalArgs;

/// Release the lease on a task: delete its claim ref by compare-and-swap on the record this
/// checkout holds. Only the holder releases a lease; another's ends by itself.
///
/// Exit codes: 0 released; 1 the task is not claimed, another checkout holds it, or an
/// unknown task; 2 bad flags, no repository or remote, or the remote cannot be reached.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The task (id or alias)
    #[arg(value_name = "TASK")]
    pub task: String,
    #[command(flatten)]
    pub place: Place,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the released lease as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = args.at.open();
    let req = UnclaimRequest {
        task: args.task,
        holder: None,
        where_: args.place.where_(),
    };
    g.op(args.json, claims::unclaim(&ws, &req))
}
