//! `small run snapshot`

use super::{print_json, shown, to_cli, warn_all, Context};
use crate::error::CmdResult;
use crate::outln;
use crate::GlobalArgs;
use small_core::history::runs;

/// Save the current run (intent, plan, progress, handoff, constraints) into the run store.
///
/// The snapshot is filed under the replay ID recorded in handoff.small.yml; run
/// `small handoff` first if there is none. An existing snapshot of the same run is kept
/// unless --force is given, in which case it is replaced as a whole.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replace an existing snapshot of the same replay ID
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
    dir: String,
    replaced: bool,
    artifacts: &'a [String],
    meta: &'a runs::Meta,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let mut o = String::new();
    let result = body(args, ctx, g, &mut o);
    g.info_raw(&o);
    result
}

fn body(args: Args, ctx: &Context, g: &GlobalArgs, o: &mut String) -> CmdResult {
    let res = runs::snapshot(&ctx.root, &ctx.store, args.force).map_err(to_cli)?;
    warn_all(g, &res.warnings);
    let s = &res.snapshot;
    if args.json {
        return print_json(&Out {
            replay_id: &s.replay_id,
            dir: s.dir.display().to_string(),
            replaced: res.replaced,
            artifacts: &s.artifacts,
            meta: &s.meta,
        });
    }
    let verb = if res.replaced {
        "Replaced snapshot"
    } else {
        "Saved snapshot"
    };
    outln!(
        o,
        "{verb} of run {} in {}",
        runs::short_id(&s.replay_id, 16),
        shown(&ctx.root, &s.dir)
    );
    outln!(o, "replayId: {}", s.replay_id);
    outln!(o, "files:    {}", s.artifacts.join(", "));
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
