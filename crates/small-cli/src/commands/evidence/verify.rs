//! `small evidence verify`: check every receipt's evidence.

use std::path::PathBuf;

use small_core::v2::gojson::GoValue;
use small_core::v2::{self, write};

use crate::error::{CliError, CmdResult};
use crate::v2writes as v2w;
use crate::GlobalArgs;

/// Check the evidence of every receipt: an artifact's blob must be a regular file under
/// `.small/evidence/blobs/sha256/` (no symlink is followed) with the recorded digest and
/// size, read with a bound. Read-only.
///
/// Status per receipt: verified, missing, mismatch, refused; a receipt without an artifact
/// shows its availability. Exit codes: 0 nothing missing, mismatched or refused; 1
/// otherwise, or damaged records; 2 bad flags.
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
    let root = v2w::require_v2(args.dir.as_deref(), "evidence")?;
    let (checked, store) = v2::check_store(&root, &root.join(".small"));
    let damaged: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && v2::stage_of(&d.code) != v2::Stage::State)
        .cloned()
        .collect();
    if !damaged.is_empty() {
        g.diagnostics(&damaged, |_| None, true);
        return Err(CliError::invalid(
            "the 2.0.0 records are damaged (see `small check --strict`)",
        ));
    }
    let found = write::verify_evidence(&store, &root);
    let all = found.iter().all(|v| v.status == "verified");
    let failed = found
        .iter()
        .any(|v| matches!(v.status.as_str(), "missing" | "mismatch" | "refused"));
    if args.json {
        v2w::print(&GoValue::map(vec![
            ("all_verified".into(), GoValue::Bool(all)),
            ("profile".into(), v2w::s("2.0.0")),
            (
                "receipts".into(),
                GoValue::Arr(
                    found
                        .iter()
                        .map(|v| {
                            GoValue::map(vec![
                                ("receipt_digest".into(), v2w::s(&v.receipt_digest)),
                                ("status".into(), v2w::s(&v.status)),
                            ])
                        })
                        .collect(),
                ),
            ),
        ]))?;
    } else {
        for v in &found {
            g.info(format!("{}  {}", v.receipt_digest, v.status));
        }
        g.info(format!(
            "{} receipt(s); {}",
            found.len(),
            if all {
                "all verified"
            } else {
                "not all verified"
            }
        ));
    }
    if failed {
        return Err(CliError::silent(crate::error::EXIT_INVALID));
    }
    Ok(())
}
