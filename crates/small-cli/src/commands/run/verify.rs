//! `small run verify`

use super::{to_cli, Context};
use crate::error::CmdResult;
use crate::GlobalArgs;
use small_core::ops::runs;

/// Check a snapshot's files against the digests recorded when it was taken.
///
/// Recomputes the SHA-256 of every copied artifact and the aggregate `artifact_digest`, and
/// compares them with meta.json (also with the per-file hashes older small versions record
/// as `files`). Exit codes: 0 the snapshot matches; 1 a file changed, disappeared or was
/// added, the aggregate differs, or the snapshot records no digest at all (unverifiable;
/// --allow-unverifiable accepts that with exit 0); 2 unknown replay ID, or meta.json or a
/// required artifact missing.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replay ID of the snapshot, any prefix that names only one, or ID~N for generation N
    #[arg(value_name = "REPLAY_ID")]
    pub replay_id: String,
    /// Exit 0 for a snapshot that records no digests (taken by an older tool) instead of 1
    #[arg(long)]
    pub allow_unverifiable: bool,
    /// Print the verification as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let v = runs::verify(&ctx.store, &args.replay_id).map_err(to_cli)?;
    g.listing(args.json, &v)?;
    if let Some(warning) = runs::verify::verdict(&v, args.allow_unverifiable).map_err(to_cli)? {
        g.warn(warning);
    }
    Ok(())
}
