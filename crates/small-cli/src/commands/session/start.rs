//! `small session start`: start a session in a 2.0.0 workspace.

use std::path::PathBuf;

use small_core::v2::gojson::GoValue;
use small_core::v2::write::{self, StartRequest};

use crate::error::CmdResult;
use crate::v2writes::{self as v2w, SessionFlags};
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
    /// How long to wait for the workspace lock (seconds, or 90s, 2m) [default: SMALL_LOCK_TIMEOUT, else 60s]
    #[arg(long, value_name = "DURATION")]
    pub lock_timeout: Option<String>,
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the session and its events as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = v2w::require_v2(args.dir.as_deref(), "sessions")?;
    let flags = SessionFlags {
        session: None,
        lock_timeout: args.lock_timeout.clone(),
    };
    let mut w = flags.open(&root)?;
    let req = StartRequest {
        label: args.label,
        actor_label: args.actor_label,
        model_label: args.model_label,
        parent_session: args.parent_session,
        from_handoff: args.from_handoff,
        takeover: args.takeover,
        reason: args.reason,
    };
    let out = write::start_session(&mut w, &req)?;
    if args.json {
        return v2w::print(&GoValue::map(vec![
            (
                "events".into(),
                GoValue::Arr(out.events.iter().map(v2w::event).collect()),
            ),
            ("session".into(), v2w::obj(&out.session_members)),
        ]));
    }
    g.info(format!(
        "Started session {} ({} mode)",
        out.session.session_id, w.state.mode
    ));
    if let Some(t) = out.events.get(1) {
        g.info(format!(
            "  took over {}",
            t.draft
                .payload
                .iter()
                .find(|(k, _)| k == "prior_session")
                .map(|(_, v)| small_core::v2::gojson::compact(v))
                .unwrap_or_default()
        ));
    }
    Ok(())
}
