//! `small evidence verify`: check every receipt's evidence.

use small_core::ops::{self};

use crate::error::{from_op, CliError, CmdResult, EXIT_INVALID};
use crate::GlobalArgs;

/// Check the evidence of every receipt: an artifact's blob must be a regular file under
/// `.small/evidence/blobs/sha256/` (no symlink is followed) with the recorded digest and
/// size, read with a bound. Read-only.
///
/// Status per receipt: verified, unavailable (the blob is missing), failed (a mismatch, a
/// symlink, not a regular file), with the reason; a receipt without an artifact shows its
/// availability. Exit codes: 0 every receipt verified; 1 otherwise (the report, then the
/// error), or damaged records; 2 bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = args.at.open();
    let report = ops::evidence::verify(&ws).map_err(|e| from_op(e, g))?;
    let refusal = report.refusal().map(|e| from_op(e, g));
    if args.json {
        // The report, then (as the reference prints it) the error document when it refuses.
        g.json(&report)?;
        return match refusal {
            Some(r) => {
                r.print_json();
                r.print_text(g);
                Err(CliError::silent(EXIT_INVALID))
            }
            None => Ok(()),
        };
    }
    g.outcome(false, &report)?;
    refusal.map_or(Ok(()), Err)
}
