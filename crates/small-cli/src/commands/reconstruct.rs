//! `small reconstruct`: a task's or the run's evidence, from the workspace state alone.

use std::path::PathBuf;

use small_core::diag::Diagnostic;
use small_core::history::reconstruct::{self, ReconstructOptions, Reconstruction};
use small_core::history::runs::{self, ErrorKind, RunError};

use crate::error::{CliError, CmdResult, EXIT_INVALID, EXIT_USAGE};
use crate::outln;
use crate::GlobalArgs;

/// Reconstruct the evidence of a task or of the run from plan, progress and handoff.
///
/// Lists the progress entries (index, time, task, status, evidence, notes, command summary,
/// command proof reference), the handoff, and with --task the task as the plan describes it.
/// Reads state only: nothing is inferred from elsewhere and nothing is written. Evidence that
/// is a mapping (such as apply's outcome) is shown as JSON. Secrets are masked.
///
/// Exit codes: 0 reconstructed (also for a task with no entries); 1 a bad --since value or an
/// unreadable progress log; 2 no workspace.
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
    /// Print the reconstruction as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = runs::discover_root(args.dir.as_deref());
    let opts = ReconstructOptions {
        task: args.task,
        since: args.since,
        limit: usize::try_from(args.limit.max(0)).unwrap_or(usize::MAX),
    };
    let r = reconstruct::reconstruct(&root, &opts).map_err(to_cli)?;
    if args.json {
        return g.json(&r);
    }
    crate::output::data(&crate::render::escape_controls(&render(&r)))
}

fn to_cli(e: RunError) -> CliError {
    let mut d = Diagnostic::error("reconstruct", e.message.clone());
    if let Some(h) = &e.help {
        d = d.with_help(h.clone());
    }
    CliError {
        exit: match e.kind {
            ErrorKind::Usage => EXIT_USAGE,
            ErrorKind::Invalid => EXIT_INVALID,
        },
        message: e.message,
        diagnostic: Some(Box::new(d)),
    }
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
            line.push_str(&indented(&reconstruct::display_value(ev)));
        }
        outln!(o, "{line}");
        if let Some(n) = &e.notes {
            outln!(
                o,
                "      notes: {}",
                indented(&reconstruct::display_value(n))
            );
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
