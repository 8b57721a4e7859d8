//! `small run verify`

use super::{print_json, to_cli, Context};
use crate::error::{CliError, CmdResult};
use crate::outln;
use crate::GlobalArgs;
use small_core::ops::runs::{self, VerifyStatus};

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
    if args.json {
        print_json(&v)?;
    } else {
        let mut o = String::new();
        outln!(o, "ReplayId: {}", v.replay_id);
        if v.snapshot != v.replay_id {
            outln!(o, "Snapshot: {}", v.snapshot);
        }
        match v.status {
            VerifyStatus::Ok => outln!(o, "Status: ok (artifacts match recorded digest)"),
            VerifyStatus::Mismatch => outln!(
                o,
                "Status: MISMATCH (snapshot artifacts differ from recorded digest)"
            ),
            VerifyStatus::Unverifiable => outln!(
                o,
                "Status: unverifiable (snapshot predates digest recording)"
            ),
        }
        if let Some(r) = &v.recorded_digest {
            outln!(o, "Recorded digest: {r}");
        }
        outln!(o, "Computed digest: {}", v.computed_digest);
        for m in &v.mismatches {
            outln!(o, "  - {}: {}", m.filename, m.reason.as_str());
        }
        super::emit(&o)?;
    }
    match v.status {
        VerifyStatus::Ok => Ok(()),
        VerifyStatus::Unverifiable if args.allow_unverifiable => {
            g.warn(format!(
                "warning: snapshot {} records no digests; its files were not checked",
                v.snapshot
            ));
            Ok(())
        }
        VerifyStatus::Unverifiable => Err(CliError::invalid(format!(
            "snapshot {} records no digests, so its files cannot be checked\n  help: take a new snapshot with `small run snapshot`, or pass --allow-unverifiable to accept it unchecked",
            v.snapshot
        ))),
        VerifyStatus::Mismatch => Err(CliError::invalid(format!(
            "snapshot {} does not match the digests recorded when it was taken",
            v.snapshot
        ))),
    }
}
