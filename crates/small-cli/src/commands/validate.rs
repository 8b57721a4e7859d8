//! `small validate`: check every canonical artifact (and `workspace.small.yml`, when present)
//! against the SMALL v1.0.0 JSON Schemas.

use std::path::PathBuf;

use small_core::ops::validate::{self, ValidateRequest};

use crate::error::{self, CmdResult};
use crate::GlobalArgs;

/// Validate the five canonical artifacts against their JSON Schemas.
///
/// Reads .small/intent, constraints, plan, progress and handoff (.small.yml) and checks each
/// against its schema; also checks .small/workspace.small.yml when it exists. Every problem
/// is reported with its file, line, column and JSON path.
///
/// Schemas: --spec-dir DIR, else $SMALL_SPEC_DIR, else the schemas built into small. DIR may
/// hold the *.schema.json files directly or in spec/small/v1.0.0/schemas/.
///
/// Exit codes: 0 valid; 1 invalid (schema errors, missing files, YAML errors); 2 no
/// workspace, unreadable files or unusable schemas.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Directory with the JSON Schemas to use instead of the built-in ones (falls back to $SMALL_SPEC_DIR)
    #[arg(long, value_name = "DIR")]
    pub spec_dir: Option<PathBuf>,
    /// Do not read or update the cache of earlier checks in .small-cache/ (a full check)
    #[arg(long)]
    pub no_cache: bool,
    /// Print the result as JSON on stdout (see docs/validate.md)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let v = validate::validate(&ValidateRequest {
        dir: args.dir,
        spec_dir: args.spec_dir,
        cache: !args.no_cache,
    });
    if args.json {
        g.json(&v)?;
        return error::verdict(v.verdict);
    }
    let ws = v.workspace.as_ref();
    g.diagnostics(&v.diagnostics, |f| ws.and_then(|w| w.source_of(f)), false);
    if let Some(s) = v.summary() {
        g.say(s);
    }
    if v.ok && !v.stopped {
        Ok(())
    } else {
        error::verdict(v.verdict)
    }
}
