//! `small version`: which small this is (version, commit, build date) and the profiles it speaks.

use small_core::ops::formats::{PROTOCOL_VERSION, TOOL_VERSION};
use small_core::ops::session::PROFILE_VERSION;

use crate::error::CmdResult;
use crate::GlobalArgs;

/// The commit this binary was built from (build.rs), "unknown" outside a git checkout.
pub const COMMIT: &str = env!("SMALL_BUILD_COMMIT");
/// When this binary was built (RFC 3339, UTC; `SOURCE_DATE_EPOCH` when the build set it).
pub const BUILD_DATE: &str = env!("SMALL_BUILD_DATE");

/// Print the version of small, its commit and build date, and the SMALL versions it supports.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print as JSON: {"version", "commit", "build_date", "spec_versions"}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let specs = [PROTOCOL_VERSION, PROFILE_VERSION];
    if args.json {
        let v = serde_json::json!({
            "version": TOOL_VERSION,
            "commit": COMMIT,
            "build_date": BUILD_DATE,
            "spec_versions": specs,
        });
        return g.data(format!("{v}\n"));
    }
    g.info(format!(
        "small {TOOL_VERSION} (commit {COMMIT}, built {BUILD_DATE})"
    ));
    g.info(format!(
        "Supported spec versions: {}",
        serde_json::to_string(&specs).unwrap_or_default()
    ));
    Ok(())
}
