//! `small session show`: one session of a 2.0.0 workspace and what it did.

use std::path::PathBuf;

use small_core::ops::runs;
use small_core::ops::session;
use small_core::ops::{self, Workspace};

use crate::error::{from_op, CmdResult};
use crate::outln;
use crate::GlobalArgs;

/// Show one session: its record (label, actor, when it started, the frontier it observed),
/// its status (active, closed or superseded), its events (count, first and last, kinds), the
/// tasks they name, the receipts they cite, and the summary of its handoff.
///
/// ID is a session id or a prefix of exactly one (the `session_` start may be left out);
/// without it, the session selected in this checkout (the one `session start` began).
///
/// Exit codes: 0 shown; 1 a v1 workspace, damaged 2.0.0 records, no such session, or no
/// session selected; 2 bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The session id or a unique prefix [default: the session selected here]
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    /// Print the session as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    let s = ops::session::show(&ws, args.id.as_deref()).map_err(|e| from_op(e, g))?;
    if args.json {
        return g.json(&s);
    }
    crate::output::data(&crate::render::escape_controls(&render(&s)))
}

fn render(s: &session::SessionShow) -> String {
    let mut o = String::new();
    let or_dash = |v: &str| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.to_string()
        }
    };
    outln!(
        o,
        "Session {}{}",
        s.session_id,
        if s.selected { " (selected here)" } else { "" }
    );
    outln!(o, "  label:      {}", or_dash(&s.label));
    if !s.actor_label.is_empty() {
        outln!(o, "  actor:      {}", s.actor_label);
    }
    if s.superseded_by.is_empty() {
        outln!(o, "  status:     {}", s.status);
    } else {
        outln!(
            o,
            "  status:     {} (taken over by {})",
            s.status,
            s.superseded_by
        );
    }
    outln!(o, "  created:    {}", s.created_at);
    outln!(o, "  observed:   {}", or_dash(&s.observed_frontier));
    let kinds: Vec<String> = s.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if kinds.is_empty() {
        outln!(o, "Events: {}", s.events);
    } else {
        outln!(o, "Events: {} ({})", s.events, kinds.join(", "));
    }
    for (what, e) in [("first", &s.first_event), ("last", &s.last_event)] {
        if let Some(e) = e {
            outln!(
                o,
                "  {what:<5} #{:<4} {}  {}  {}",
                e.sequence,
                e.kind,
                e.occurred_at,
                e.event_id
            );
        }
    }
    if !s.tasks.is_empty() {
        outln!(o, "Tasks ({}):", s.tasks.len());
        for t in &s.tasks {
            let name = if t.alias.is_empty() {
                &t.task_id
            } else {
                &t.alias
            };
            outln!(
                o,
                "  [{}] {name}  {}  ({} event(s))",
                t.status,
                t.title,
                t.events
            );
        }
    }
    if !s.receipts.is_empty() {
        outln!(o, "Receipts ({}):", s.receipts.len());
        for r in &s.receipts {
            outln!(
                o,
                "  {}  {} {}{}",
                runs::short_id(&r.digest, 12),
                r.strength,
                r.availability,
                if r.outcome.is_empty() {
                    String::new()
                } else {
                    format!("  {}", r.outcome)
                }
            );
        }
    }
    if let Some(h) = &s.handoff {
        outln!(o, "Handoff: {h}");
    }
    o
}
