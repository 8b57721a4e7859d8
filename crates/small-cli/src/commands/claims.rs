//! `small claims`: every lease on the workspace's tasks, live or ended, as the remote (or
//! the local refs) holds them.

use small_core::ops::claims::{self, ClaimsOutcome};

use crate::commands::claim::Place;
use crate::error::{from_op, CmdResult};
use crate::outln;
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
    let out =
        claims::list(&ws, args.place.where_().as_ref(), args.prune).map_err(|e| from_op(e, g))?;
    if args.json {
        return g.json(&out);
    }
    crate::output::data(&crate::render::escape_controls(&render(&out)))
}

fn render(out: &ClaimsOutcome) -> String {
    let mut o = String::new();
    let place = out.remote.as_deref().unwrap_or("local refs");
    if let Some(pruned) = &out.pruned {
        outln!(
            o,
            "Pruned: {} done record(s) the default branch shows",
            pruned.len()
        );
        for c in pruned {
            outln!(o, "  {}  {}", c.task, c.label);
        }
    }
    outln!(o, "Claims: {} ({place})", out.claims.len());
    for c in &out.claims {
        outln!(o, "  {}", row(c));
    }
    for r in &out.stray_refs {
        outln!(o, "  (stray ref {r}: names no task; ignored)");
    }
    if out.unread_refs > 0 {
        outln!(o, "  ({} more refs not read)", out.unread_refs);
    }
    o
}

/// One lease: `task-3  alice  held until …  generation 2`.
fn row(c: &small_core::ops::claims::Lease) -> String {
    match (c.state, &c.done, &c.problem) {
        ("done", Some(d), _) => {
            let place = if d.commit.is_empty() {
                "not pushed yet".to_string()
            } else {
                format!("commit {}", &d.commit[..d.commit.len().min(12)])
            };
            format!(
                "{}  {}  done ({} at {}, {place})  generation {}",
                c.task, c.label, d.outcome, d.at, c.generation
            )
        }
        ("damaged", _, Some(p)) => format!("{}  damaged: {p}", c.task),
        (state, _, _) => format!(
            "{}  {}  {state} until {}  generation {}",
            c.task, c.label, c.ends, c.generation
        ),
    }
}
