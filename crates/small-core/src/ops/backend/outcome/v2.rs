//! The SMALL 2.0.0 reports: the words of the 2.0.0 outcomes.

use super::side_label;
use crate::ops::apply::{V2Applied, V2DryRun};
use crate::ops::handoff::V2Handoff;
use crate::ops::plan::{V2Plan, V2Task};
use crate::ops::record::V2Transition;
use crate::ops::report::{indented, outln};
use crate::ops::runs::{V2CheckoutReport, V2RunDiff};
use crate::ops::session;

/// A task's name: its alias, else its id.
fn name<'a>(alias: &'a str, id: &'a str) -> &'a str {
    if alias.is_empty() {
        id
    } else {
        alias
    }
}

/// `status` of a 2.0.0 workspace.
pub(super) fn status(st: &session::Status) -> String {
    let mut o = format!(
        "small {} (SMALL profile {}, mode {})\n\nfrontier: {}\n",
        st.version, st.profile, st.mode, st.frontier
    );
    let counts: Vec<String> = st
        .task_counts
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    outln!(o);
    outln!(
        o,
        "Tasks ({}): {}",
        st.tasks.len(),
        if counts.is_empty() {
            "none".to_string()
        } else {
            counts.join(", ")
        }
    );
    for t in st.tasks.iter().map(|t| &t.task) {
        outln!(o, "  [{}] {}  {}", t.status, name(&t.alias, &t.id), t.title);
    }
    if let Some(t) = st.next_task.as_ref().map(|t| &t.task) {
        outln!(o);
        outln!(o, "Next task: {} ({})", name(&t.alias, &t.id), t.title);
    }
    outln!(o);
    outln!(o, "Sessions ({}):", st.sessions);
    for s in &st.session_list {
        outln!(
            o,
            "  {} {} {} event(s){}",
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
        );
    }
    if !st.conflicts.is_empty() {
        outln!(o);
        outln!(o, "Conflicts ({}):", st.conflicts.len());
        for c in &st.conflicts {
            outln!(o, "  {} {}: {}", c.id, c.kind, c.message);
        }
    }
    if !st.problems.is_empty() {
        outln!(o);
        outln!(
            o,
            "Problems ({}): run `small check --strict --workspace any` for details",
            st.problems.len()
        );
        for d in &st.problems {
            outln!(o, "  {}", crate::ops::gate::compact_line(d));
        }
    }
    o
}

/// `progress add` on a 2.0.0 workspace.
pub(super) fn progress(t: &V2Transition) -> String {
    format!(
        "progress added: {} {} {}\n",
        t.alias, t.recorded_status, t.event_id
    )
}

/// `checkpoint` on a 2.0.0 workspace.
pub(super) fn checkpoint(t: &V2Transition) -> String {
    format!(
        "checkpoint: {} -> {} [{} receipt:{}]\n",
        t.alias,
        t.status.as_deref().unwrap_or_default(),
        t.event_id,
        t.receipt_digest
    )
}

/// `handoff` on a 2.0.0 workspace.
pub(super) fn handoff(h: &V2Handoff) -> String {
    format!("Handoff recorded: {} [{}]\n", h.summary, h.handoff_event)
}

/// `plan` on a 2.0.0 workspace.
pub(super) fn plan(p: &V2Plan) -> String {
    let ev = &p.event_id;
    let mut o = String::new();
    match p.kind {
        "added" => outln!(
            o,
            "Added task {} ({}): {} [{ev}]",
            p.alias,
            p.task_id,
            p.detail
        ),
        "status" => outln!(o, "Marked task {} as {} [{ev}]", p.alias, p.detail),
        _ => {
            for (alias, ev) in &p.changes {
                outln!(o, "Updated {alias} dependencies [{ev}]");
            }
        }
    }
    o
}

/// The tasks of a 2.0.0 plan, one tab-separated line each (alias, id, status, title).
pub(super) fn task_list(tasks: &[V2Task]) -> String {
    let mut o = String::new();
    for t in tasks {
        outln!(o, "{}\t{}\t{}\t{}", t.alias, t.id, t.status, t.title);
    }
    o
}

/// `apply` on a 2.0.0 workspace: what the command came to.
pub(super) fn applied(a: &V2Applied) -> String {
    if a.child_exit_code != 0 {
        return format!(
            "child command failed with exit code {} after evidence was recorded\n",
            a.child_exit_code
        );
    }
    format!(
        "Command completed successfully (exit code: 0); evidence {}\n",
        a.receipt
    )
}

/// `apply --dry-run` on a 2.0.0 workspace.
pub(super) fn dry_run(d: &V2DryRun) -> String {
    match &d.command {
        Some(c) => format!("Dry run: would run `{c}` in {}\n", d.root.display()),
        None => "Dry run: no command given (--cmd), nothing runs\n".to_string(),
    }
}

/// `reconstruct` of a 2.0.0 workspace.
pub(super) fn reconstruction(r: &session::Reconstruction) -> String {
    let mut o = String::new();
    outln!(o, "Profile: {} ({} mode)", r.profile, r.mode);
    outln!(o, "Frontier: {}", r.frontier);
    if let Some(t) = &r.task {
        outln!(
            o,
            "Task: {} - {} ({})",
            name(&t.task.alias, &t.task.id),
            t.task.title,
            t.task.status
        );
    }
    if !r.obligations.is_empty() {
        outln!(o, "Obligations:");
        for t in &r.obligations {
            outln!(
                o,
                "  - {} ({}): {}",
                name(&t.task.alias, &t.task.id),
                t.task.status,
                t.task.title
            );
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

/// Kind counts as `kind n, kind n`.
fn counts(m: &std::collections::BTreeMap<String, usize>) -> String {
    m.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `run diff` of two 2.0.0 trees.
pub(super) fn run_diff(d: &V2RunDiff) -> String {
    let mut o = String::new();
    let s = &d.state;
    outln!(
        o,
        "Run diff: {} -> {} (2.0.0)",
        side_label(&d.from),
        side_label(&d.to)
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
            outln!(
                o,
                "  {:<8} {}  {}",
                t.change,
                name(&t.alias, &t.task_id),
                parts.join(", ")
            );
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
                    crate::ops::runs::short_id(&r.digest, 12),
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
    o
}

/// `run checkout` into a 2.0.0 workspace.
pub(super) fn checkout(r: &V2CheckoutReport) -> String {
    let mut o = String::new();
    let short = crate::ops::runs::short_name(&r.snapshot, 16);
    if r.restored.is_empty() && r.removed.is_empty() {
        outln!(
            o,
            "Workspace already matches snapshot {short}; nothing to restore."
        );
        return o;
    }
    outln!(
        o,
        "Restored snapshot {short} (2.0.0) into {}: {} file(s) restored, {} removed",
        r.small_dir,
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
    o
}
