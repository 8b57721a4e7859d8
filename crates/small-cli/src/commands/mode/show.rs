//! `small mode show`: the mode, the active sessions and the frontier.

use std::path::PathBuf;

use small_core::v2::gojson::GoValue;
use small_core::v2::write::{Writer, DEFAULT_READ_WAIT};

use crate::error::CmdResult;
use crate::v2writes as v2w;
use crate::GlobalArgs;

/// Show the mode (solo or collaborative), the active sessions and the frontier (the value
/// `mode set --expect-state` takes).
///
/// Exit codes: 0 shown; 1 a v1 workspace or damaged records; 2 bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print it as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = v2w::require_v2(args.dir.as_deref(), "the mode")?;
    let w = Writer::open(&root, DEFAULT_READ_WAIT)?;
    let active = w.active_sessions();
    if args.json {
        return v2w::print(&GoValue::map(vec![
            (
                "active_sessions".into(),
                GoValue::Arr(active.iter().map(|s| v2w::s(s)).collect()),
            ),
            ("frontier".into(), v2w::s(&w.state.frontier)),
            ("mode".into(), v2w::s(&w.state.mode)),
        ]));
    }
    g.info(format!("Mode: {}", w.state.mode));
    g.info(format!(
        "Active sessions: {}",
        if active.is_empty() {
            "none".to_string()
        } else {
            active.join(", ")
        }
    ));
    g.info(format!("Frontier: {}", w.state.frontier));
    Ok(())
}
