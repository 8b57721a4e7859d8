//! `small reconstruct`: a task's or the run's evidence, from the workspace state alone.

use std::path::PathBuf;

use small_core::ops::reconstruct::ReconstructRequest;
use small_core::ops::workspace::Scope;
use small_core::ops::{self, Workspace};

use crate::error::{from_op, CmdResult};
use crate::GlobalArgs;

/// Reconstruct the evidence of a task or of the run from plan, progress and handoff.
///
/// Lists the progress entries (index, time, task, status, evidence, notes, command summary,
/// command proof reference), the handoff, and with --task the task as the plan describes it.
/// Reads state only: nothing is inferred from elsewhere and nothing is written. Evidence that
/// is a mapping (such as apply's outcome) is shown as JSON. Secrets are masked.
///
/// On a 2.0.0 workspace: the tasks not completed, the handoffs, conflicts, receipts with
/// their evidence checked, and the events (of --task and of no task; of --session), the newest
/// --limit within --max-bytes, from the records (docs/v2.md). --resume is the bounded resume
/// packet of a session (--session, else the active one) for a fresh clone: the session is
/// checked and named, and the events of every session are returned.
///
/// Exit codes: 0 reconstructed (also for a task with no entries); 1 a bad --since value, an
/// unreadable progress log, damaged 2.0.0 records, an unknown 2.0.0 task or session; 2 no
/// workspace, or --resume/--session on a v1 workspace.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only the entries of this task id (and the task's description from the plan)
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Only entries at or after this time (RFC 3339 with fractional seconds, e.g. 2026-03-02T14:30:00.000000Z)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Show the newest N matching entries (0 or less: all)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 50,
        allow_negative_numbers = true
    )]
    pub limit: i64,
    /// 2.0.0: the session whose events to show (with --resume: the session to resume; default the active one)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// 2.0.0: the bounded resume packet of a session: obligations, handoffs, conflicts, evidence and the newest events of every session
    #[arg(long)]
    pub resume: bool,
    /// 2.0.0: the most bytes of encoded events returned (0: no cap)
    #[arg(long = "max-bytes", value_name = "N", default_value_t = 65536)]
    pub max_bytes: u64,
    /// Workspace scope: root or any (v1)
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print the reconstruction as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    let req = ReconstructRequest {
        task: args.task,
        since: args.since,
        limit: usize::try_from(args.limit.max(0)).unwrap_or(usize::MAX),
        max_bytes: usize::try_from(args.max_bytes).unwrap_or(usize::MAX),
        session: args.session,
        resume: args.resume,
        scope: args.workspace,
    };
    let r = ops::reconstruct::reconstruct(&ws, &req).map_err(|e| from_op(e, g))?;
    g.listing(args.json, &r)
}
