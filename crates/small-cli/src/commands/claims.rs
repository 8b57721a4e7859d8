//! `small claims`: every lease on the workspace's tasks, live or ended, as the remote (or
//! the local refs) holds them.

use std::path::PathBuf;

use small_core::ops::claims::{self, ClaimsOutcome};
use small_core::ops::Workspace;

use crate::commands::claim::Place;
use crate::error::{from_op, CmdResult};
use crate::outln;
use crate::GlobalArgs;

/// List the leases: task, who holds it, until when, whether it is still live (its end plus
/// SMALL_CLAIM_SKEW is ahead) and its generation.
///
/// Exit codes: 0 listed; 2 bad flags, no repository or remote, or the remote cannot be
/// reached.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub place: Place,
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the leases as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    let out = claims::list(&ws, args.place.where_().as_ref()).map_err(|e| from_op(e, g))?;
    if args.json {
        return g.json(&out);
    }
    crate::output::data(&crate::render::escape_controls(&render(&out)))
}

fn render(out: &ClaimsOutcome) -> String {
    let mut o = String::new();
    let place = out.remote.as_deref().unwrap_or("local refs");
    outln!(o, "Claims: {} ({place})", out.claims.len());
    for c in &out.claims {
        let state = if c.live { "live" } else { "ended" };
        outln!(
            o,
            "  {}  {}  until {}  {state}  generation {}",
            c.task,
            c.label,
            c.ends,
            c.generation
        );
    }
    o
}
