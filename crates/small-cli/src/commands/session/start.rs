//! `small session start`: start a session in a 2.0.0 workspace.

use small_core::ops::session::StartRequest;
use small_core::ops::{self};

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Start a session: its record, a session_started event (and ownership_taken_over with
/// --takeover), and the local selection in .small-cache/active-session, which the writing
/// commands use when --session is not given.
///
/// Solo mode (the default) allows one active session: a second one is refused unless it
/// takes over an active session with --takeover ID --reason TEXT (the old session is then
/// superseded and writes nothing more). Collaborative mode allows several.
///
/// Exit codes: 0 started; 1 refused (solo mode, an unknown session or handoff, a v1
/// workspace, damaged records); 2 bad flags or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A label for the session
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Who works in it (a person or an agent)
    #[arg(long, value_name = "TEXT")]
    pub actor_label: Option<String>,
    /// The model, for an agent
    #[arg(long, value_name = "TEXT")]
    pub model_label: Option<String>,
    /// The session this one continues
    #[arg(long, value_name = "ID")]
    pub parent_session: Option<String>,
    /// The handoff event this one resumes from
    #[arg(long, value_name = "EVENT_ID")]
    pub from_handoff: Option<String>,
    /// Solo mode: take over this active session (needs --reason)
    #[arg(long, value_name = "ID", requires = "reason")]
    pub takeover: Option<String>,
    /// Why the session is taken over (recorded)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub wait: crate::v2writes::LockWait,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the session and its events as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let lock = args.wait.timeout()?;
    let req = StartRequest {
        label: args.label,
        actor_label: args.actor_label,
        model_label: args.model_label,
        parent_session: args.parent_session,
        from_handoff: args.from_handoff,
        takeover: args.takeover,
        reason: args.reason,
    };
    let ws = args.at.open();
    g.op(args.json, ops::session::start(&ws, &req, Some(lock)))
}
