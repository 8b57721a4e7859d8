//! `small run list`

use super::{print_json, to_cli, warn_all, Context};
use crate::error::CmdResult;
use crate::outln;
use crate::render::pad;
use crate::GlobalArgs;
use small_core::ops::runs;

/// List the snapshots in the run store, newest first.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Show at most N snapshots (0 shows all)
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub limit: usize,
    /// Print the list as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Item<'a> {
    created_at: &'a str,
    #[serde(rename = "replayId")]
    replay_id: &'a str,
    /// The snapshot's address: `<replayId>` or `<replayId>~N`.
    snapshot: &'a str,
    generation: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    summary: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    git_sha: &'a str,
    git_dirty: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    branch: &'a str,
    /// The run the live handoff names.
    current: bool,
}

#[derive(serde::Serialize)]
struct Out<'a> {
    runs: Vec<Item<'a>>,
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    super::buffered(g, |o| body(args, ctx, g, o))
}

fn body(args: Args, ctx: &Context, g: &GlobalArgs, o: &mut String) -> CmdResult {
    let (mut snaps, warnings) = runs::list(&ctx.store).map_err(to_cli)?;
    let current = runs::live_replay_id(&ctx.root).unwrap_or_default();
    warn_all(g, &warnings);
    // The live run is the newest generation of the replay ID the live handoff names.
    let current_name = snaps
        .iter()
        .filter(|s| s.replay_id.eq_ignore_ascii_case(&current))
        .max_by_key(|s| s.generation)
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let is_current = |s: &runs::Snapshot| !current_name.is_empty() && s.name == current_name;
    if args.limit > 0 {
        snaps.truncate(args.limit);
    }
    if args.json {
        let runs = snaps
            .iter()
            .map(|s| Item {
                created_at: &s.meta.created_at,
                replay_id: &s.replay_id,
                snapshot: &s.name,
                generation: s.generation,
                summary: &s.summary,
                git_sha: &s.meta.git_sha,
                git_dirty: s.meta.git_dirty,
                branch: &s.meta.branch,
                current: is_current(s),
            })
            .collect();
        return print_json(&Out { runs });
    }
    if snaps.is_empty() {
        outln!(
            o,
            "No snapshots in {} yet; take one with `small run snapshot`.",
            ctx.store.display()
        );
        return Ok(());
    }
    let dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    let rows: Vec<[String; 5]> = snaps
        .iter()
        .map(|s| {
            [
                dash(&s.meta.created_at),
                format!(
                    "{}{}",
                    if is_current(s) { "*" } else { " " },
                    runs::short_name(&s.name, 12)
                ),
                dash(&runs::short_id(&s.meta.git_sha, 8)),
                if s.meta.git_sha.is_empty() {
                    "-".into()
                } else {
                    s.meta.git_dirty.to_string()
                },
                dash(&s.summary.replace('\n', " ")),
            ]
        })
        .collect();
    let head = ["CREATED", " REPLAY ID", "GIT", "DIRTY", "SUMMARY"];
    let mut widths = head.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut line = |cells: [&str; 5]| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 4 {
                out.push_str(c);
            } else {
                out.push_str(&pad(c, widths[i]));
                out.push_str("  ");
            }
        }
        outln!(o, "{}", out.trim_end());
    };
    line(head);
    for r in &rows {
        line([&r[0], &r[1], &r[2], &r[3], &r[4]]);
    }
    Ok(())
}
