//! `small run diff`

use super::{print_json, to_cli, Context};
use crate::error::CmdResult;
use crate::outln;
use crate::GlobalArgs;
use small_core::history::runs::{self, diff::live_side, DiffSide};

/// Compare two runs: unified diffs of intent, constraints, plan and handoff, and a summary
/// of progress (entry counts, newly completed tasks, newest timestamps).
///
/// Each side is a replay ID (or unambiguous prefix) from the store, or `live` for the
/// current .small/ directory. With one argument, the snapshot is compared with the live
/// workspace. Exit code 0 whether or not the runs differ.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The older side: a replay ID or prefix, or `live`
    #[arg(value_name = "FROM")]
    pub from: String,
    /// The newer side: a replay ID or prefix, or `live` [default: live]
    #[arg(value_name = "TO")]
    pub to: Option<String>,
    /// Include the full diff of progress.small.yml
    #[arg(long)]
    pub full: bool,
    /// Print the comparison as JSON
    #[arg(long)]
    pub json: bool,
}

fn side(ctx: &Context, spec: &str) -> Result<DiffSide, crate::error::CliError> {
    if spec.trim().eq_ignore_ascii_case("live") {
        live_side(&ctx.root).map_err(to_cli)
    } else {
        runs::find(&ctx.store, spec)
            .map(|s| DiffSide::Snapshot(Box::new(s)))
            .map_err(to_cli)
    }
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    let mut o = String::new();
    let result = body(args, ctx, g, &mut o);
    g.info_raw(&o);
    result
}

fn body(args: Args, ctx: &Context, _g: &GlobalArgs, o: &mut String) -> CmdResult {
    let from = side(ctx, &args.from)?;
    let to = side(ctx, args.to.as_deref().unwrap_or("live"))?;
    let d = runs::diff_runs(&from, &to, args.full).map_err(to_cli)?;
    if args.json {
        return print_json(&d);
    }
    let label = |s: &str| {
        if s == "live" {
            "live workspace".to_string()
        } else {
            runs::short_name(s, 16)
        }
    };
    outln!(o, "Run diff: {} -> {}", label(&d.from), label(&d.to));
    let changed: Vec<_> = d.files.iter().filter(|f| f.changed).collect();
    if changed.is_empty() {
        outln!(o, "No changes in intent, constraints, plan or handoff.");
    }
    for f in changed {
        outln!(o);
        outln!(o, "diff {} (+{} -{})", f.name, f.added, f.removed);
        o.push_str(&f.diff);
        if !f.diff.ends_with('\n') {
            outln!(o);
        }
    }
    let p = &d.progress;
    outln!(o);
    outln!(o, "Progress:");
    outln!(
        o,
        "  entries: {} -> {} ({:+})",
        p.entries_before,
        p.entries_after,
        p.entry_delta
    );
    if p.completed_delta.is_empty() {
        outln!(o, "  newly completed tasks: none");
    } else {
        outln!(
            o,
            "  newly completed tasks: {}",
            p.completed_delta.join(", ")
        );
    }
    if !p.latest_before.is_empty() || !p.latest_after.is_empty() {
        let or_dash = |v: &str| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.to_string()
            }
        };
        outln!(
            o,
            "  newest entry: {} -> {}",
            or_dash(&p.latest_before),
            or_dash(&p.latest_after)
        );
    }
    if !p.diff.is_empty() {
        outln!(o);
        outln!(o, "diff progress.small.yml");
        o.push_str(&p.diff);
    } else if !args.full && p.entry_delta != 0 {
        outln!(o, "  (pass --full for the complete progress diff)");
    }
    Ok(())
}
