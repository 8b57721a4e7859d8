//! `small session close`: record a handoff and close a session.

use std::path::PathBuf;

use small_core::v2::gojson::GoValue;
use small_core::v2::write;

use crate::error::CmdResult;
use crate::v2writes::{self as v2w, SessionFlags};
use crate::GlobalArgs;

/// Close a session: a handoff_recorded event with the summary, then session_closed. The
/// local selection is cleared when it named this session.
///
/// Exit codes: 0 closed; 1 refused (no session given or active, a closed or superseded
/// session, damaged records); 2 bad flags or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What was done and what is next (required)
    #[arg(long, value_name = "TEXT")]
    pub summary: String,
    #[command(flatten)]
    pub v2: SessionFlags,
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the events as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = v2w::require_v2(args.dir.as_deref(), "sessions")?;
    let session = args.v2.session(&root)?;
    let mut w = args.v2.open(&root)?;
    let events = write::close_session(&mut w, &session, &args.summary)?;
    if args.json {
        return v2w::print(&GoValue::map(vec![
            (
                "events".into(),
                GoValue::Arr(events.iter().map(v2w::event).collect()),
            ),
            ("session_id".into(), v2w::s(&session)),
        ]));
    }
    g.info(format!(
        "Closed session {session}; handoff {}",
        events[0].draft.event_id
    ));
    Ok(())
}
