//! `small version`: the version of this tool and the protocol versions it implements.

use small_core::spec::consts::{PROTOCOL_VERSION, TOOL_VERSION};

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Print the version of small and the SMALL spec versions it supports.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print as JSON: {"version": "...", "spec_versions": ["1.0.0"]}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if args.json {
        let v = serde_json::json!({ "version": TOOL_VERSION, "spec_versions": [PROTOCOL_VERSION] });
        return g.data(format!("{v}\n"));
    }
    g.info(format!("small {TOOL_VERSION}"));
    g.info(format!("Supported spec versions: [\"{PROTOCOL_VERSION}\"]"));
    Ok(())
}
