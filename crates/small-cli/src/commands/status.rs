//! `small status`: a compact summary of where the project stands.

use std::path::PathBuf;

use small_core::ops::claims::Lease;
use small_core::ops::status::{Status, KNOWN_STATUSES};
use small_core::ops::status::{StatusReport, StatusRequest};
use small_core::ops::{self, Workspace};

use crate::error::{CliError, CmdResult};
use crate::render::pad;
use crate::GlobalArgs;

/// Show the project status: which artifacts exist, the plan by status, the next actionable
/// tasks (pending tasks whose dependencies are all completed), the current run, and the most
/// recent progress entries.
///
/// Only the end of the progress log is read, so status stays fast on very long logs.
/// SMALL_PROGRESS_MODE=audit shows every entry; the default (signal) hides apply
/// bookkeeping entries.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the status as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Number of recent progress entries to show
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub recent: usize,
    /// Number of next actionable tasks to show
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub tasks: usize,
    /// 2.0.0: read every record, not the state cached in .small-cache/ (the cache is used
    /// only when no file under .small/ changed since it was written)
    #[arg(long)]
    pub no_cache: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let audit = crate::settings::progress_mode_is_audit()?;
    let dir = small_core::ops::workspace::small_dir_for(args.dir.as_deref())
        .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?;
    let ws = Workspace::from_small_dir(dir);
    let req = StatusRequest {
        recent: args.recent,
        tasks: args.tasks,
        audit,
        cache: !args.no_cache,
    };
    let st = ops::status::status(&ws, &req);
    if args.json {
        g.json(&st)?;
    } else {
        let mut text = match &st.report {
            StatusReport::V1(s) => render(s),
            StatusReport::V2(s) => render_v2(s),
        };
        text.push_str(&render_claims(&st.claims));
        g.info_raw(text);
    }
    crate::error::verdict(small_core::ops::gate::Verdict::from_code(st.exit_code()))
}

/// The leases seen, one line each (nothing when there is none).
fn render_claims(claims: &[Lease]) -> String {
    let mut o = String::new();
    if claims.is_empty() {
        return o;
    }
    o.push_str("\nClaims (as last seen; `small claims` asks the remote):\n");
    for l in claims {
        let when = match (l.state, &l.done) {
            ("done", Some(d)) if d.commit.is_empty() => format!("{} (not pushed yet)", d.outcome),
            ("done", Some(d)) => format!("{} (on {})", d.outcome, d.branch),
            ("damaged", _) => "damaged record".to_string(),
            ("held", _) => format!("held until {}", l.ends),
            _ => format!("ended {}", l.ends),
        };
        o.push_str(&format!("  {}  {}  {when}\n", pad(&l.task, 10), l.label));
    }
    o
}

/// The human status report.
fn render(st: &Status) -> String {
    let mut o = String::new();
    let mut line = |s: String| {
        o.push_str(&s);
        o.push('\n');
    };
    line(format!("small {} (SMALL {})", st.version, st.spec_version));
    if st.progress_mode == "audit" {
        line("progress mode: audit".into());
    }
    if !st.small_dir_exists {
        line(String::new());
        match st.problems.first() {
            // e.g. a linked .small/, which is refused
            Some(p) => line(format!("problem: {p}")),
            None => line(".small/ does not exist here or in any parent directory. Run `small init` to start a SMALL project.".into()),
        }
        return o;
    }
    line(String::new());
    line("Artifacts:".into());
    let a = &st.artifacts;
    for (name, present) in [
        ("intent.small.yml", a.intent),
        ("constraints.small.yml", a.constraints),
        ("plan.small.yml", a.plan),
        ("progress.small.yml", a.progress),
        ("handoff.small.yml", a.handoff),
    ] {
        line(format!("  [{}] {name}", if present { "x" } else { " " }));
    }
    line(String::new());
    if let Some(r) = &st.replay_id {
        line(format!("Run: {r}"));
    }
    if let Some(p) = &st.plan {
        line(format!(
            "Plan: {} task{}",
            p.total_tasks,
            if p.total_tasks == 1 { "" } else { "s" }
        ));
        for s in KNOWN_STATUSES {
            line(format!(
                "  {s}: {}",
                p.tasks_by_status.get(s).copied().unwrap_or(0)
            ));
        }
        for (s, n) in &p.tasks_by_status {
            if !KNOWN_STATUSES.contains(&s.as_str()) {
                line(format!("  {s}: {n} (not a standard status)"));
            }
        }
        let width = p.tasks.iter().map(|t| t.id.len()).max().unwrap_or(0);
        let sw = p.tasks.iter().map(|t| t.status.len()).max().unwrap_or(0);
        for t in &p.tasks {
            line(format!(
                "  {}  {}  {}",
                pad(&t.id, width),
                pad(&t.status, sw),
                shorten(&t.title, 80)
            ));
        }
        if p.next_actionable.is_empty() {
            line("Next actionable: none".into());
        } else {
            line(format!("Next actionable: {}", p.next_actionable.join(", ")));
        }
    }
    if let Some(t) = &st.next_task {
        match st.plan.as_ref().and_then(|p| p.title_of(t)) {
            Some(title) => line(format!("Next task: {t} ({})", shorten(title, 80))),
            None => line(format!("Next task: {t}")),
        }
    }
    if !st.recent_progress.is_empty() {
        line(String::new());
        let kind = if st.progress_mode == "audit" {
            "progress"
        } else {
            "signal progress"
        };
        line(format!("Recent {kind} (newest first):"));
        for e in &st.recent_progress {
            let when = e.timestamp.replacen('T', " ", 1);
            let detail = e
                .evidence
                .as_deref()
                .or(e.notes.as_deref())
                .map(str::trim)
                .filter(|s| !s.is_empty());
            match detail {
                Some(d) => line(format!(
                    "  [{when}] {}: {} - {}",
                    e.task_id,
                    e.status,
                    shorten(d, 100)
                )),
                None => line(format!("  [{when}] {}: {}", e.task_id, e.status)),
            }
        }
    }
    for p in &st.problems {
        line(format!("warning: {p}"));
    }
    o
}

fn shorten(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    if first.chars().count() <= max && first.len() == s.len() {
        return first.to_string();
    }
    let cut: String = first.chars().take(max).collect();
    format!("{cut}…")
}

/// The human status report of a 2.0.0 workspace.
fn render_v2(st: &small_core::ops::session::Status) -> String {
    let mut o = format!(
        "small {} (SMALL profile {}, mode {})\n\nfrontier: {}\n",
        st.version, st.profile, st.mode, st.frontier
    );
    let counts: Vec<String> = st
        .task_counts
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    o.push_str(&format!(
        "\nTasks ({}): {}\n",
        st.tasks.len(),
        if counts.is_empty() {
            "none".to_string()
        } else {
            counts.join(", ")
        }
    ));
    for t in st.tasks.iter().map(|t| &t.task) {
        let name = if t.alias.is_empty() { &t.id } else { &t.alias };
        o.push_str(&format!("  [{}] {name}  {}\n", t.status, t.title));
    }
    if let Some(t) = st.next_task.as_ref().map(|t| &t.task) {
        let name = if t.alias.is_empty() { &t.id } else { &t.alias };
        o.push_str(&format!("\nNext task: {name} ({})\n", t.title));
    }
    o.push_str(&format!("\nSessions ({}):\n", st.sessions));
    for s in &st.session_list {
        o.push_str(&format!(
            "  {} {} {} event(s){}\n",
            s.id,
            match s.status() {
                "active" => "open",
                other => other,
            },
            s.events,
            if s.label.is_empty() {
                String::new()
            } else {
                format!(" ({})", s.label)
            }
        ));
    }
    if !st.conflicts.is_empty() {
        o.push_str(&format!("\nConflicts ({}):\n", st.conflicts.len()));
        for c in &st.conflicts {
            o.push_str(&format!("  {} {}: {}\n", c.id, c.kind, c.message));
        }
    }
    if !st.problems.is_empty() {
        o.push_str(&format!(
            "\nProblems ({}): run `small check --strict --workspace any` for details\n",
            st.problems.len()
        ));
        for d in &st.problems {
            o.push_str(&format!("  {}\n", small_core::ops::gate::compact_line(d)));
        }
    }
    o
}
