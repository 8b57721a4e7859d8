//! `small run snapshot`

use super::{print_json, shown, to_cli, warn_all, Context};
use crate::error::CmdResult;
use crate::outln;
use crate::GlobalArgs;
use small_core::ops::runs;

/// Save the current run (intent, plan, progress, handoff, constraints) into the run store.
///
/// On a 2.0.0 workspace the snapshot is the whole `.small/` tree (copied into
/// `state/.small/`, a SHA-256 per path in meta.json), filed under the state's frontier; the
/// tree must pass `small check --strict` (no damage, no unresolved conflict).
///
/// The snapshot is filed under the replay ID recorded in handoff.small.yml; run
/// `small handoff` first if there is none. Runs may share a replay ID (it fingerprints
/// intent, plan and constraints): a snapshot that differs from every stored one of the same
/// replay ID becomes its next generation, addressed as `<ID>~N`; one identical to a stored
/// snapshot writes nothing. --force replaces the newest generation instead.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replace the newest snapshot of the same replay ID instead of adding a generation
    #[arg(long)]
    pub force: bool,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Out<'a> {
    #[serde(rename = "replayId")]
    replay_id: &'a str,
    snapshot: &'a str,
    generation: u32,
    dir: String,
    replaced: bool,
    unchanged: bool,
    artifacts: &'a [String],
    meta: &'a runs::Meta,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    super::buffered(g, |o| body(args, ctx, g, o))
}

fn body(args: Args, ctx: &Context, g: &GlobalArgs, o: &mut String) -> CmdResult {
    let res = runs::snapshot(&ctx.root, &ctx.store, args.force).map_err(to_cli)?;
    warn_all(g, &res.warnings);
    let s = &res.snapshot;
    if args.json {
        return print_json(&Out {
            replay_id: &s.replay_id,
            snapshot: &s.name,
            generation: s.generation,
            dir: s.dir.display().to_string(),
            replaced: res.replaced,
            unchanged: res.unchanged,
            artifacts: &s.artifacts,
            meta: &s.meta,
        });
    }
    if res.unchanged {
        outln!(
            o,
            "Snapshot {} already holds this state of the run; nothing written",
            runs::short_name(&s.name, 16)
        );
        outln!(o, "snapshot: {}", s.name);
        return Ok(());
    }
    let verb = if res.replaced {
        "Replaced snapshot"
    } else {
        "Saved snapshot"
    };
    outln!(
        o,
        "{verb} of run {} in {}",
        runs::short_name(&s.name, 16),
        shown(&ctx.root, &s.dir)
    );
    if s.generation > 1 {
        outln!(
            o,
            "generation {} of this replay ID (runs with the same intent, plan and constraints share it); address it as {}",
            s.generation,
            runs::short_name(&s.name, 16)
        );
    }
    outln!(o, "replayId: {}", s.replay_id);
    outln!(o, "snapshot: {}", s.name);
    if s.meta.workspace_kind == runs::WORKSPACE_KIND {
        outln!(
            o,
            "files:    {} (the whole .small/ tree, in {}/.small/)",
            s.artifacts.len(),
            runs::STATE_DIR
        );
    } else {
        outln!(o, "files:    {}", s.artifacts.join(", "));
    }
    if !s.meta.git_sha.is_empty() {
        let dirty = if s.meta.git_dirty {
            " (uncommitted changes)"
        } else {
            ""
        };
        outln!(
            o,
            "git:      {}{dirty}",
            runs::short_id(&s.meta.git_sha, 12)
        );
    }
    Ok(())
}
