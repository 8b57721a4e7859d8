//! `small session show`: one session of a 2.0.0 workspace and what it did.

use std::path::PathBuf;

use small_core::ops::{self, Workspace};

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Show one session: its record (label, actor, when it started, the frontier it observed),
/// its status (active, closed or superseded), its events (count, first and last, kinds), the
/// tasks they name, the receipts they cite, and the summary of its handoff.
///
/// ID is a session id or a prefix of exactly one (the `session_` start may be left out);
/// without it, the session selected in this checkout (the one `session start` began).
///
/// Exit codes: 0 shown; 1 a v1 workspace, damaged 2.0.0 records, no such session, or no
/// session selected; 2 bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session id or a unique prefix [default: the session selected here]
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    /// Print the session as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    g.op_listing(args.json, ops::session::show(&ws, args.id.as_deref()))
}
