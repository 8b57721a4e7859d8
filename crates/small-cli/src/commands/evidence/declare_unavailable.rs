//! `small evidence declare-unavailable`: record that a task's evidence cannot be produced here.

use std::path::PathBuf;

use small_core::v2::write;

use crate::error::CmdResult;
use crate::v2writes as v2w;
use crate::GlobalArgs;

/// Record that evidence for a task is unavailable, and why: a narrative_assertion receipt
/// with availability unavailable. It proves nothing; it says what is missing.
///
/// Exit codes: 0 recorded; 1 refused (unknown task, v1 workspace, damaged records); 2 bad
/// flags (a blank reason) or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The task (id or alias) [default: none; the receipt names no task]
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Why the evidence is unavailable (required)
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// How long to wait for the workspace lock (seconds, or 90s, 2m) [default: SMALL_LOCK_TIMEOUT, else 60s]
    #[arg(long, value_name = "DURATION")]
    pub lock_timeout: Option<String>,
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the receipt as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = v2w::require_v2(args.dir.as_deref(), "evidence")?;
    let flags = v2w::SessionFlags {
        session: None,
        lock_timeout: args.lock_timeout.clone(),
    };
    let mut w = flags.open(&root)?;
    let r = write::declare_unavailable(&mut w, args.task.as_deref().unwrap_or(""), &args.reason)?;
    if args.json {
        return v2w::print(&v2w::receipt(&r));
    }
    g.info(format!(
        "Declared evidence unavailable; receipt {}",
        r.digest
    ));
    Ok(())
}
