//! `small progress migrate`: rewrite progress timestamps into canonical form.

use small_core::ops::lifecycle;

use crate::error::CmdResult;
use crate::writes::{self as shared, TargetArgs};
use crate::GlobalArgs;

/// Rewrite progress timestamps to RFC 3339 UTC with nanoseconds, strictly increasing.
///
/// The only command that rewrites existing progress entries, and only their `timestamp`
/// values: entry order, every other field and all comments stay as they are. A timestamp
/// that is not after the previous one becomes one nanosecond after it.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print what was done as JSON: {entries, rewritten, changed, written, appended}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = shared::root(args.target.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.target.workspace, "progress migrate", true)?;
    let out = lifecycle::migrate_progress(&mut txn)?;
    let report = if !out.changed {
        None
    } else {
        Some(txn.commit()?)
    };
    if args.json {
        let v = serde_json::to_value(&out).unwrap_or_default();
        return shared::print_json(report.as_ref(), v);
    }
    let rel = lifecycle::progress_rel();
    match &report {
        None => shared::say(
            g,
            format!(
                "{rel} already has canonical, strictly increasing timestamps ({} entries); nothing to do",
                out.entries
            ),
        ),
        Some(r) => {
            shared::say(
                g,
                format!(
                    "Rewrote {} of {} progress timestamps in {rel}",
                    out.rewritten, out.entries
                ),
            );
            shared::print_changes(g, r);
        }
    }
    Ok(())
}
