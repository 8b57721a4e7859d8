//! `small policy revise`: new policy files, compare-and-swap on the frontier.

use std::path::PathBuf;

use small_core::v2::gojson::GoValue;
use small_core::v2::write::{self, PolicyMaterial};

use crate::error::{CliError, CmdResult};
use crate::v2writes::{self as v2w, SessionFlags};
use crate::GlobalArgs;

/// Revise the policy: a policy_changed event naming the new files' digests and revision,
/// then the files themselves in `.small/policy/`. Written only if the frontier is still the
/// one you reviewed (--expect-state; `small policy show` prints it), with a reason, and
/// when no conflict is unresolved. A file not given stays as it is.
///
/// Exit codes: 0 revised; 1 refused (stale frontier, conflicts, v1 workspace, damaged
/// records); 2 bad flags, an unreadable file, or the lock wait ran out.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The new intent file
    #[arg(long, value_name = "FILE")]
    pub intent: Option<PathBuf>,
    /// The new constraints file
    #[arg(long, value_name = "FILE")]
    pub constraints: Option<PathBuf>,
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

fn read(p: &Option<PathBuf>) -> Result<Option<Vec<u8>>, CliError> {
    match p {
        None => Ok(None),
        Some(p) => {
            small_core::workspace::fsio::read_user_input(p, small_core::v2::MAX_RECORD_BYTES)
                .map(Some)
                .map_err(|e| CliError::usage(format!("cannot read {}: {e}", p.display())))
        }
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = v2w::require_v2(args.dir.as_deref(), "the policy")?;
    let material = PolicyMaterial {
        intent: read(&args.intent)?,
        constraints: read(&args.constraints)?,
    };
    let session = args.v2.session(&root)?;
    let mut w = args.v2.open(&root)?;
    let e = write::revise_policy(
        &mut w,
        &session,
        &material,
        &args.reason,
        &args.requester,
        &args.expect_state,
    )?;
    if args.json {
        return v2w::print(&GoValue::map(vec![
            ("event".into(), v2w::event(&e)),
            ("frontier".into(), v2w::s(&w.state.frontier)),
            ("policy_revision".into(), v2w::s(&w.state.policy_revision)),
            ("profile".into(), v2w::s("2.0.0")),
        ]));
    }
    g.info(format!(
        "Policy revised to {} [{}]",
        w.state.policy_revision, e.draft.event_id
    ));
    Ok(())
}
