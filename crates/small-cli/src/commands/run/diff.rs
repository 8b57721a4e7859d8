//! `small run diff`

use super::{print_json, to_cli, Context};
use crate::error::CmdResult;
use crate::outln;
use crate::GlobalArgs;
use small_core::ops::runs::{self, DiffSide};
use small_core::ops::runs::{compare_runs, live_side, AnyDiff, V2RunDiff};

/// Compare two runs: unified diffs of intent, constraints, plan and handoff, and a summary
/// of progress (entry counts, newly completed tasks, newest timestamps).
///
/// Two 2.0.0 trees are compared by their states: both frontiers, the events added or
/// removed per session, sessions opened, closed or taken over, tasks whose status,
/// revision or title changed, receipts added or removed, conflicts, mode, policy revision
/// and the latest handoff. A v1 run and a 2.0.0 tree cannot be compared.
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
    // Nothing printed (a refusal) leaves stdout to the error document of --json.
    if !o.is_empty() {
        g.info_raw(&o);
    }
    result
}

fn body(args: Args, ctx: &Context, _g: &GlobalArgs, o: &mut String) -> CmdResult {
    let from = side(ctx, &args.from)?;
    let to = side(ctx, args.to.as_deref().unwrap_or("live"))?;
    let d = match compare_runs(&from, &to, args.full).map_err(to_cli)? {
        AnyDiff::V1(d) => d,
        AnyDiff::V2(d) if args.json => return print_json(&d),
        AnyDiff::V2(d) => {
            let mut text = String::new();
            render_v2(&d, &mut text);
            o.push_str(&crate::render::escape_controls(&text));
            return Ok(());
        }
    };
    if args.json {
        return print_json(&d);
    }
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

fn label(s: &str) -> String {
    if s == "live" {
        "live workspace".to_string()
    } else {
        runs::short_name(s, 16)
    }
}

fn counts(m: &std::collections::BTreeMap<String, usize>) -> String {
    m.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn render_v2(d: &V2RunDiff, o: &mut String) {
    let s = &d.state;
    outln!(
        o,
        "Run diff: {} -> {} (2.0.0)",
        label(&d.from),
        label(&d.to)
    );
    if s.frontier.before == s.frontier.after {
        outln!(o, "Frontier: {} (unchanged)", s.frontier.after);
    } else {
        outln!(o, "Frontier: {} -> {}", s.frontier.before, s.frontier.after);
    }
    if !s.has_changes() {
        outln!(
            o,
            "No changes: both trees hold the same events, tasks and receipts."
        );
    }
    outln!(o, "Events: +{} -{}", s.events_added, s.events_removed);
    for e in &s.events {
        let mut parts = Vec::new();
        if e.added > 0 {
            parts.push(format!("+{} ({})", e.added, counts(&e.added_kinds)));
        }
        if e.removed > 0 {
            parts.push(format!("-{} ({})", e.removed, counts(&e.removed_kinds)));
        }
        outln!(o, "  {}  {}", e.session_id, parts.join("  "));
    }
    let sess = &s.sessions;
    for (what, ids) in [
        ("opened", &sess.opened),
        ("closed", &sess.closed),
        ("superseded", &sess.superseded),
        ("removed", &sess.removed),
    ] {
        if !ids.is_empty() {
            outln!(o, "Sessions {what}: {}", ids.join(", "));
        }
    }
    if !s.tasks.is_empty() {
        outln!(o, "Tasks:");
        for t in &s.tasks {
            let name = if t.alias.is_empty() {
                &t.task_id
            } else {
                &t.alias
            };
            let mut parts = Vec::new();
            match t.change {
                "added" | "removed" => {
                    let (status, title) = if t.change == "added" {
                        (
                            t.status.as_ref().map(|c| c.after.clone()),
                            t.title.as_ref().map(|c| c.after.clone()),
                        )
                    } else {
                        (
                            t.status.as_ref().map(|c| c.before.clone()),
                            t.title.as_ref().map(|c| c.before.clone()),
                        )
                    };
                    parts.push(status.unwrap_or_default());
                    if let Some(title) = title.filter(|t| !t.is_empty()) {
                        parts.push(format!("\"{title}\""));
                    }
                }
                _ => {
                    if let Some(c) = &t.status {
                        parts.push(format!("status {} -> {}", c.before, c.after));
                    }
                    if let Some(c) = &t.revision {
                        parts.push(format!("revision {} -> {}", c.before, c.after));
                    }
                    if let Some(c) = &t.title {
                        parts.push(format!("title \"{}\" -> \"{}\"", c.before, c.after));
                    }
                }
            }
            outln!(o, "  {:<8} {name}  {}", t.change, parts.join(", "));
        }
    }
    if !s.receipts_added.is_empty() || !s.receipts_removed.is_empty() {
        outln!(
            o,
            "Receipts: +{} -{}",
            s.receipts_added.len(),
            s.receipts_removed.len()
        );
        for (sign, list) in [("+", &s.receipts_added), ("-", &s.receipts_removed)] {
            for r in list {
                outln!(
                    o,
                    "  {sign} {}  {} {}{}",
                    runs::short_id(&r.digest, 12),
                    r.strength,
                    r.availability,
                    if r.task_id.is_empty() {
                        String::new()
                    } else {
                        format!("  {}", r.task_id)
                    }
                );
            }
        }
    }
    let c = &s.conflicts;
    if c.before + c.after > 0 {
        outln!(o, "Conflicts: {} -> {}", c.before, c.after);
        for id in &c.new {
            outln!(o, "  new       {id}");
        }
        for id in &c.resolved {
            outln!(o, "  resolved  {id}");
        }
    }
    if let Some(m) = &s.mode {
        outln!(o, "Mode: {} -> {}", m.before, m.after);
    }
    if let Some(p) = &s.policy_revision {
        outln!(o, "Policy revision: {} -> {}", p.before, p.after);
    }
    if let Some(h) = &s.handoff {
        let q = |v: &str| {
            if v.is_empty() {
                "-".to_string()
            } else {
                format!("\"{v}\"")
            }
        };
        outln!(o, "Handoff: {} -> {}", q(&h.before), q(&h.after));
    }
}
