//! `small reconstruct`: a task's or the run's evidence, from the workspace state alone.

use std::path::PathBuf;

use small_core::ops::reconstruct::{ReconstructRequest, Reconstructed};
use small_core::ops::runs::Reconstruction;
use small_core::ops::session;
use small_core::ops::workspace::Scope;
use small_core::ops::{self, Workspace};

use crate::error::{from_op, CmdResult};
use crate::outln;
use crate::GlobalArgs;

/// Reconstruct the evidence of a task or of the run from plan, progress and handoff.
///
/// Lists the progress entries (index, time, task, status, evidence, notes, command summary,
/// command proof reference), the handoff, and with --task the task as the plan describes it.
/// Reads state only: nothing is inferred from elsewhere and nothing is written. Evidence that
/// is a mapping (such as apply's outcome) is shown as JSON. Secrets are masked.
///
/// On a 2.0.0 workspace: the tasks not completed, the handoffs, conflicts, receipts with
/// their evidence checked, and the events (of --task and of no task; of --session), the newest
/// --limit within --max-bytes, from the records (docs/v2.md). --resume is the bounded resume
/// packet of a session (--session, else the active one) for a fresh clone: the session is
/// checked and named, and the events of every session are returned.
///
/// Exit codes: 0 reconstructed (also for a task with no entries); 1 a bad --since value, an
/// unreadable progress log, damaged 2.0.0 records, an unknown 2.0.0 task or session; 2 no
/// workspace, or --resume/--session on a v1 workspace.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only the entries of this task id (and the task's description from the plan)
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Only entries at or after this time (RFC 3339 with fractional seconds, e.g. 2026-03-02T14:30:00.000000Z)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Show the newest N matching entries (0 or less: all)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 50,
        allow_negative_numbers = true
    )]
    pub limit: i64,
    /// 2.0.0: the session whose events to show (with --resume: the session to resume; default the active one)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// 2.0.0: the bounded resume packet of a session: obligations, handoffs, conflicts, evidence and the newest events of every session
    #[arg(long)]
    pub resume: bool,
    /// 2.0.0: the most bytes of encoded events returned (0: no cap)
    #[arg(long = "max-bytes", value_name = "N", default_value_t = 65536)]
    pub max_bytes: u64,
    /// Workspace scope: root or any (v1)
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print the reconstruction as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = Workspace::find(args.dir.as_deref());
    let req = ReconstructRequest {
        task: args.task,
        since: args.since,
        limit: usize::try_from(args.limit.max(0)).unwrap_or(usize::MAX),
        max_bytes: usize::try_from(args.max_bytes).unwrap_or(usize::MAX),
        session: args.session,
        resume: args.resume,
        scope: args.workspace,
    };
    let r = ops::reconstruct::reconstruct(&ws, &req).map_err(|e| from_op(e, g))?;
    if args.json {
        return g.json(&r);
    }
    let text = match &r {
        Reconstructed::V1(r) => render(r),
        Reconstructed::V2(r) => render_v2(r),
    };
    crate::output::data(&crate::render::escape_controls(&text))
}

fn render_v2(r: &session::Reconstruction) -> String {
    let mut o = String::new();
    outln!(o, "Profile: {} ({} mode)", r.profile, r.mode);
    outln!(o, "Frontier: {}", r.frontier);
    if let Some(t) = &r.task {
        let name = if t.task.alias.is_empty() {
            &t.task.id
        } else {
            &t.task.alias
        };
        outln!(o, "Task: {name} - {} ({})", t.task.title, t.task.status);
    }
    if !r.obligations.is_empty() {
        outln!(o, "Obligations:");
        for t in &r.obligations {
            let name = if t.task.alias.is_empty() {
                &t.task.id
            } else {
                &t.task.alias
            };
            outln!(o, "  - {name} ({}): {}", t.task.status, t.task.title);
        }
    }
    if let Some(h) = r.handoffs.last() {
        if let Some(sum) = h.payload.get("summary").and_then(|v| v.as_str()) {
            outln!(o, "Handoff: {}", indented(sum));
        }
    }
    for c in &r.conflicts {
        outln!(o, "Conflict: {} {} ({})", c.id, c.kind, c.message);
    }
    if r.truncated {
        outln!(
            o,
            "Events: {} of {} (the newest; older ones left out by --limit or the size cap)",
            r.returned_events,
            r.matched_events
        );
    } else {
        outln!(o, "Events: {}", r.returned_events);
    }
    for e in &r.events {
        let mut line = format!(
            "  {} {} #{} {}",
            e.occurred_at, e.session_id, e.sequence, e.kind
        );
        if !e.task_id.is_empty() {
            line.push(' ');
            line.push_str(&e.task_id);
        }
        outln!(o, "{line}");
    }
    o
}

/// Continuation lines of a multi-line value, indented under their field.
fn indented(text: &str) -> String {
    text.trim_end().replace('\n', "\n        ")
}

fn render(r: &Reconstruction) -> String {
    let mut o = String::new();
    outln!(o, "Workspace: {}", r.workspace);
    if let Some(t) = &r.task {
        let status = if t.status.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.status)
        };
        outln!(o, "Task: {} - {}{status}", t.id, t.title);
        for (label, items) in [
            ("Steps", &t.steps),
            ("Acceptance", &t.acceptance),
            ("Depends on", &t.dependencies),
        ] {
            if !items.is_empty() {
                outln!(o, "{label}: {}", items.join("; "));
            }
        }
    }
    let h = &r.handoff;
    if !h.summary.is_empty() {
        outln!(o, "Handoff: {}", indented(&h.summary));
    }
    if !h.replay_id.is_empty() {
        outln!(o, "ReplayId: {}", h.replay_id);
    }
    if !h.next_steps.is_empty() {
        outln!(o, "Next steps:");
        for s in &h.next_steps {
            outln!(o, "  - {s}");
        }
    }
    if r.truncated {
        outln!(
            o,
            "Progress entries: {} of {} (the newest; older ones left out by --limit)",
            r.returned_entries,
            r.matched_entries
        );
    } else {
        outln!(o, "Progress entries: {}", r.returned_entries);
    }
    for e in &r.entries {
        let mut line = format!("  [{}] {} {} {}", e.index, e.timestamp, e.task_id, e.status);
        if let Some(ev) = &e.evidence {
            line.push_str(" - ");
            line.push_str(&indented(ev));
        }
        outln!(o, "{line}");
        if let Some(n) = &e.notes {
            outln!(o, "      notes: {}", indented(n));
        }
        if let Some(c) = &e.command_summary {
            outln!(o, "      command: {c}");
        }
        if let Some(c) = &e.command_ref {
            outln!(o, "      command_ref: {c}");
        }
    }
    o
}
