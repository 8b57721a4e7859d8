//! `small status`: a compact summary of where the project stands.

use std::path::PathBuf;

use small_core::ops::status::StatusRequest;
use small_core::ops::{self, Workspace};

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// Show the project status: which artifacts exist, the plan by status, the next actionable
/// tasks (pending tasks whose dependencies are all completed), the current run, and the most
/// recent progress entries.
///
/// Only the end of the progress log is read, so status stays fast on very long logs.
/// SMALL_PROGRESS_MODE=audit shows every entry; the default (signal) hides apply
/// bookkeeping entries.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the status as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Number of recent progress entries to show
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub recent: usize,
    /// Number of next actionable tasks to show
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub tasks: usize,
    /// 2.0.0: read every record, not the state cached in .small-cache/ (the cache is used
    /// only when no file under .small/ changed since it was written)
    #[arg(long)]
    pub no_cache: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let audit = crate::settings::progress_mode_is_audit()?;
    let dir = small_core::ops::workspace::small_dir_for(args.dir.as_deref())
        .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?;
    let ws = Workspace::from_small_dir(dir);
    let req = StatusRequest {
        recent: args.recent,
        tasks: args.tasks,
        audit,
        cache: !args.no_cache,
    };
    let st = ops::status::status(&ws, &req);
    g.outcome(args.json, &st)?;
    crate::error::verdict(small_core::ops::gate::Verdict::from_code(st.exit_code()))
}
