//! `small evidence verify`: check every receipt's evidence.

use std::path::PathBuf;

use small_core::ops::{self, Workspace};

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
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    let report = ops::evidence::verify(&ws).map_err(|e| from_op(e, g))?;
    let refusal = report.refusal().map(|e| from_op(e, g));
    if args.json {
        // One document: the report, and the reference's error object when it refuses.
        let mut doc = serde_json::to_value(&report).map_err(|e| CliError::usage(e.to_string()))?;
        if let (Some(r), Some(obj)) = (&refusal, doc.as_object_mut()) {
            let e = r.error_object();
            obj.insert(
                "error".into(),
                serde_json::json!({"code": e.code, "message": e.message}),
            );
        }
        g.json(&doc)?;
        if let Some(r) = refusal {
            g.error(format!("error: {}", r.message));
            return Err(CliError::silent(EXIT_INVALID));
        }
        return Ok(());
    }
    for v in &report.receipts {
        let reason = if v.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.reason)
        };
        g.info(format!("{}  {}{reason}", v.receipt_digest, v.status));
    }
    g.info(format!(
        "{} receipt(s); {}",
        report.receipts.len(),
        if report.all_verified {
            "all verified"
        } else {
            "not all verified"
        }
    ));
    refusal.map_or(Ok(()), Err)
}
