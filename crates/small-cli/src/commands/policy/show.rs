//! `small policy show`: the policy revision in force and its material digests.

use std::path::PathBuf;

use small_core::v2::gojson::GoValue;
use small_core::v2::write::{Writer, DEFAULT_READ_WAIT};

use crate::error::CmdResult;
use crate::v2writes as v2w;
use crate::GlobalArgs;

/// Show the policy revision in force, the digests of the policy files, the frontier (the
/// value `policy revise --expect-state` takes) and the conflicts.
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
    let root = v2w::require_v2(args.dir.as_deref(), "the policy")?;
    let w = Writer::open(&root, DEFAULT_READ_WAIT)?;
    let conflicts: Vec<String> = w.state.conflicts.iter().map(|c| c.id.clone()).collect();
    if args.json {
        return v2w::print(&GoValue::map(vec![
            (
                "conflicts".into(),
                GoValue::Arr(conflicts.iter().map(|c| v2w::s(c)).collect()),
            ),
            (
                "constraints_digest".into(),
                v2w::s(&w.store.policy_constraints_digest),
            ),
            ("frontier".into(), v2w::s(&w.state.frontier)),
            (
                "intent_digest".into(),
                v2w::s(&w.store.policy_intent_digest),
            ),
            ("policy_revision".into(), v2w::s(&w.state.policy_revision)),
            ("profile".into(), v2w::s("2.0.0")),
        ]));
    }
    g.info(format!("Policy revision: {}", w.state.policy_revision));
    g.info(format!("  intent:      {}", w.store.policy_intent_digest));
    g.info(format!(
        "  constraints: {}",
        w.store.policy_constraints_digest
    ));
    g.info(format!("Frontier: {}", w.state.frontier));
    Ok(())
}
