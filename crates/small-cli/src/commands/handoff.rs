//! `small handoff`: write the resume entrypoint from the plan and the progress log.

use std::path::PathBuf;

use small_core::ops::handoff::HandoffRequest;
use small_core::ops::workspace::Scope;
use small_core::ops::{self, Workspace};

use crate::error::CmdResult;
use crate::v2writes::SessionFlags;
use crate::GlobalArgs;

/// Generate or update .small/handoff.small.yml, the file every session resumes from.
///
/// Works at any point of a run. The handoff records the task to resume, tasks with work in
/// this run that are not closed, blocked tasks and the last evidence, computed from the plan,
/// the current run's progress entries and the strict check (`small check --strict`). A summary
/// written with --summary is kept by later handoffs while the state is unchanged. The
/// replayId is the run's (`run.replay_id` in workspace.small.yml), else the hash of intent,
/// plan and constraints; --replay-id sets a manual one. An existing handoff is edited in
/// place: comments and links stay. Where agents share claims (`small claims`), the task to
/// resume is not one another agent holds (a live lease or a done record) while another task
/// is ready; another agent's lease never refuses a handoff.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Summary to write (default: keep one written with --summary while the state is unchanged, else computed)
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// Manual replayId: 64 hexadecimal digits (stored in lower case, source: manual)
    #[arg(long = "replay-id", value_name = "HEX")]
    pub replay_id: Option<String>,
    /// End of run: refuse while a task has work in this run but is not completed, blocked or cancelled
    #[arg(long = "final")]
    pub final_check: bool,
    /// Directory containing .small/ (default: search upward from the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print what was written as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub v2: SessionFlags,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    let req = HandoffRequest {
        summary: args.summary.clone(),
        replay_id: args.replay_id.clone(),
        final_check: args.final_check,
        scope: args.workspace,
        session: args.v2.session.clone(),
        lock_timeout: args.v2.lock()?,
    };
    g.op(args.json, ops::handoff::handoff(&ws, &req))
}
