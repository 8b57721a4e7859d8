//! `small run checkout`

use super::{print_json, to_cli, Context};
use crate::error::CmdResult;
use crate::outln;
use crate::GlobalArgs;
use small_core::ops::runs;

/// Restore a snapshot's artifacts into .small/ (workspace.small.yml is never touched).
///
/// On a 2.0.0 workspace the whole `.small/` tree is replaced by the snapshot's (verified
/// against its digests first, staged in .small-cache/ and swapped in with one rename); a
/// live file that no snapshot holds (a newer event, a receipt) is dropped only with --force.
///
/// A file that differs from the snapshot is overwritten only if its current content is
/// saved in some snapshot of the store; otherwise the checkout stops and changes nothing,
/// unless --force is given.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replay ID of the snapshot, or any prefix that names only one
    #[arg(value_name = "REPLAY_ID")]
    pub replay_id: String,
    /// Overwrite local changes that no snapshot holds
    #[arg(long)]
    pub force: bool,
    /// Print what was restored as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let mut o = String::new();
    let result = body(args, ctx, g, &mut o);
    // Nothing printed (a refusal) leaves stdout to the error document of --json.
    if !o.is_empty() {
        g.info_raw(&o);
    }
    result
}

fn body(args: Args, ctx: &Context, _g: &GlobalArgs, o: &mut String) -> CmdResult {
    let out = runs::checkout(&ctx.root, &ctx.store, &args.replay_id, args.force).map_err(to_cli)?;
    if args.json {
        return print_json(&out);
    }
    match &out {
        runs::CheckedOut::V1(r) => render_v1(r, ctx, o),
        runs::CheckedOut::V2(r) => render_v2(r, ctx, o),
    }
    Ok(())
}

/// What a 2.0.0 checkout restored, removed and kept aside.
fn render_v2(r: &runs::V2CheckoutReport, ctx: &Context, o: &mut String) {
    let short = runs::short_name(&r.snapshot, 16);
    if r.restored.is_empty() && r.removed.is_empty() {
        outln!(
            o,
            "Workspace already matches snapshot {short}; nothing to restore."
        );
        return;
    }
    outln!(
        o,
        "Restored snapshot {short} (2.0.0) into {}: {} file(s) restored, {} removed",
        ctx.root.join(".small").display(),
        r.restored.len(),
        r.removed.len()
    );
    if let Some(b) = &r.backup {
        outln!(
            o,
            "dropped {} file(s) no snapshot held; the replaced tree is kept in {b}",
            r.discarded.len()
        );
    }
}

/// What a v1 checkout restored and kept.
fn render_v1(r: &runs::CheckoutReport, ctx: &Context, o: &mut String) {
    let short = runs::short_name(&r.snapshot, 16);
    if r.restored.is_empty() {
        outln!(
            o,
            "Workspace already matches snapshot {short}; nothing to restore."
        );
    } else {
        outln!(
            o,
            "Restored snapshot {short} into {}",
            ctx.root.join(".small").display()
        );
        for f in &r.restored {
            let note = if r.discarded.contains(f) {
                " (local changes discarded)"
            } else {
                ""
            };
            outln!(o, "  restored  {f}{note}");
        }
    }
    for f in &r.kept {
        outln!(o, "  kept      {f} (not in the snapshot)");
    }
    if let Some(other) = &r.workspace_run {
        outln!(
            o,
            "note: .small/workspace.small.yml (kept as it is) still names run {} as current",
            runs::short_id(other, 16)
        );
    }
}
