//! `small doctor`: a read-only health report with a suggested next step for each finding.

use std::path::PathBuf;

use small_core::ops::doctor;

use crate::error::CmdResult;
use crate::GlobalArgs;
use small_core::ops::gate::schemas;

/// Diagnose the workspace and suggest fixes; never changes anything.
///
/// Checks that .small/ and its files exist and parse, schemas, invariants, workspace
/// metadata, leftovers of the old runtime layout (.small/runs/, .small/archive/), and
/// summarises the run state. Always exits 0: it is advice, not a gate (use `small check`).
/// The progress log is checked as the gates check it, resuming from .small-cache/ (the
/// gates' cache) unless --no-cache is given; .small/ itself is never changed.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory to diagnose [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the findings as JSON: {findings: [{level, area, message, fix}], errors, warnings}
    #[arg(long)]
    pub json: bool,
    /// Check the whole progress log: do not read or update the cache in .small-cache/
    #[arg(long)]
    pub no_cache: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let r = doctor::diagnose(
        args.dir.as_deref(),
        schemas(None).map_err(|d| *d),
        !args.no_cache,
    );
    if args.json {
        return g.json(&r);
    }
    for said in r.lines() {
        g.say(said);
    }
    Ok(())
}
