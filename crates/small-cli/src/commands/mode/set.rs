//! `small mode set`: change the mode, compare-and-swap on the frontier.

use std::path::PathBuf;

use small_core::v2::gojson::GoValue;
use small_core::v2::write;

use crate::error::CmdResult;
use crate::v2writes::{self as v2w, SessionFlags};
use crate::GlobalArgs;

/// Set the mode to solo or collaborative: a mode_changed event in the session, written only
/// if the frontier is still the one you reviewed (--expect-state; `small mode show` prints
/// it) and with a reason. Solo is refused while more than one session is active. Setting
/// the mode in force changes nothing.
///
/// Exit codes: 0 set (or unchanged); 1 refused (stale frontier, sessions, v1 workspace,
/// damaged records); 2 bad flags (a blank reason) or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// solo or collaborative
    #[arg(value_name = "MODE")]
    pub mode: String,
    /// Why (required, recorded)
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// Who asked for it (recorded)
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub requester: String,
    /// The frontier you reviewed (compare-and-swap)
    #[arg(long, value_name = "FRONTIER")]
    pub expect_state: String,
    #[command(flatten)]
    pub v2: SessionFlags,
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = v2w::require_v2(args.dir.as_deref(), "the mode")?;
    let session = args.v2.session(&root)?;
    let mut w = args.v2.open(&root)?;
    let e = write::set_mode(
        &mut w,
        &session,
        &args.mode,
        &args.reason,
        &args.requester,
        &args.expect_state,
    )?;
    if e.is_some() {
        w.refresh()?;
    }
    if args.json {
        let mut m = vec![
            ("changed".into(), GoValue::Bool(e.is_some())),
            ("mode".into(), v2w::s(&w.state.mode)),
        ];
        if let Some(e) = &e {
            m.push(("event".into(), v2w::event(e)));
        }
        return v2w::print(&GoValue::map(m));
    }
    match e {
        Some(e) => g.info(format!(
            "Mode set to {} [{}]",
            w.state.mode, e.draft.event_id
        )),
        None => g.info(format!(
            "Mode is already {}; nothing recorded",
            w.state.mode
        )),
    }
    Ok(())
}
