//! The v1.0.0 reports: the words of the v1 outcomes.

use super::side_label;
use crate::ops::handoff::V1Handoff;
use crate::ops::plan::V1Plan;
use crate::ops::record::{V1Checkpoint, V1Progress};
use crate::ops::report::{files, indented, open_tasks, outln, pad, shorten, HandoffLines};
use crate::ops::runs::{CheckoutReport, Reconstruction};
use crate::ops::status::{Status, KNOWN_STATUSES};

/// `status` of a v1 workspace.
pub(super) fn status(st: &Status) -> String {
    let mut o = String::new();
    outln!(o, "small {} (SMALL {})", st.version, st.spec_version);
    if st.progress_mode == "audit" {
        outln!(o, "progress mode: audit");
    }
    if !st.small_dir_exists {
        outln!(o);
        match st.problems.first() {
            // e.g. a linked .small/, which is refused
            Some(p) => outln!(o, "problem: {p}"),
            None => outln!(o, ".small/ does not exist here or in any parent directory. Run `small init` to start a SMALL project."),
        }
        return o;
    }
    outln!(o);
    outln!(o, "Artifacts:");
    let a = &st.artifacts;
    for (name, present) in [
        ("intent.small.yml", a.intent),
        ("constraints.small.yml", a.constraints),
        ("plan.small.yml", a.plan),
        ("progress.small.yml", a.progress),
        ("handoff.small.yml", a.handoff),
    ] {
        outln!(o, "  [{}] {name}", if present { "x" } else { " " });
    }
    outln!(o);
    if let Some(r) = &st.replay_id {
        outln!(o, "Run: {r}");
    }
    if let Some(p) = &st.plan {
        outln!(
            o,
            "Plan: {} task{}",
            p.total_tasks,
            if p.total_tasks == 1 { "" } else { "s" }
        );
        for s in KNOWN_STATUSES {
            outln!(
                o,
                "  {s}: {}",
                p.tasks_by_status.get(s).copied().unwrap_or(0)
            );
        }
        for (s, n) in &p.tasks_by_status {
            if !KNOWN_STATUSES.contains(&s.as_str()) {
                outln!(o, "  {s}: {n} (not a standard status)");
            }
        }
        let width = p.tasks.iter().map(|t| t.id.len()).max().unwrap_or(0);
        let sw = p.tasks.iter().map(|t| t.status.len()).max().unwrap_or(0);
        for t in &p.tasks {
            outln!(
                o,
                "  {}  {}  {}",
                pad(&t.id, width),
                pad(&t.status, sw),
                shorten(&t.title, 80)
            );
        }
        if p.next_actionable.is_empty() {
            outln!(o, "Next actionable: none");
        } else {
            outln!(o, "Next actionable: {}", p.next_actionable.join(", "));
        }
    }
    if let Some(t) = &st.next_task {
        match st.plan.as_ref().and_then(|p| p.title_of(t)) {
            Some(title) => outln!(o, "Next task: {t} ({})", shorten(title, 80)),
            None => outln!(o, "Next task: {t}"),
        }
    }
    if !st.recent_progress.is_empty() {
        outln!(o);
        let kind = if st.progress_mode == "audit" {
            "progress"
        } else {
            "signal progress"
        };
        outln!(o, "Recent {kind} (newest first):");
        for e in &st.recent_progress {
            let when = e.timestamp.replacen('T', " ", 1);
            let detail = e
                .evidence
                .as_deref()
                .or(e.notes.as_deref())
                .map(str::trim)
                .filter(|s| !s.is_empty());
            match detail {
                Some(d) => outln!(
                    o,
                    "  [{when}] {}: {} - {}",
                    e.task_id,
                    e.status,
                    shorten(d, 100)
                ),
                None => outln!(o, "  [{when}] {}: {}", e.task_id, e.status),
            }
        }
    }
    for p in &st.problems {
        outln!(o, "warning: {p}");
    }
    o
}

/// `progress add` on a v1 workspace.
pub(super) fn progress(p: &V1Progress) -> String {
    let r = &p.outcome;
    let mut o = format!(
        "Recorded progress: {} {} at {}\n",
        r.task_id, r.status, r.timestamp
    );
    o.push_str(&files(&p.written, &p.appended));
    o
}

/// `checkpoint` on a v1 workspace.
pub(super) fn checkpoint(c: &V1Checkpoint) -> String {
    let mut o = String::new();
    outln!(o, "{}", c.checkpoint);
    if !c.forced_past.is_empty() {
        let ids: Vec<&str> = c.forced_past.iter().map(|t| t.id.as_str()).collect();
        outln!(
            o,
            "forced: dependencies not completed ({}); recorded in the entry's notes",
            ids.join(", ")
        );
    }
    o.push_str(&files(&c.written, &c.appended));
    o
}

/// `handoff` on a v1 workspace.
pub(super) fn handoff(h: &V1Handoff) -> String {
    let mut o = HandoffLines {
        summary: &h.summary,
        current_task_id: h.current_task_id.as_deref(),
        next_steps: h.next_steps.len(),
        source: h.summary_source,
        replaced: h.replaced_summary.as_deref(),
        replay: &h.replay,
    }
    .text("Wrote handoff");
    if !h.final_check {
        o.push_str(&open_tasks(&h.open));
    }
    o.push_str(&files(&h.files_written, &h.appended));
    o
}

/// `plan` on a v1 workspace.
pub(super) fn plan(p: &V1Plan) -> String {
    let out = &p.outcome;
    let mut o = String::new();
    if out.unchanged {
        outln!(
            o,
            "No changes to the plan (use --add, --title, --done, --pending, --blocked, --cancel or --depends)"
        );
        return o;
    }
    if out.created {
        outln!(o, "No plan yet: creating one from the template");
    }
    for c in &out.changes {
        match c.kind.as_str() {
            "added" => outln!(
                o,
                "Added task {}: {}",
                c.task_id,
                c.title.as_deref().unwrap_or("")
            ),
            "retitled" => outln!(
                o,
                "Retitled task {}: {}",
                c.task_id,
                c.title.as_deref().unwrap_or("")
            ),
            "status" => outln!(
                o,
                "Marked task {} {}",
                c.task_id,
                c.status.as_deref().unwrap_or("")
            ),
            "dependency" => outln!(
                o,
                "Added dependency: {} depends on {}",
                c.task_id,
                c.dependency.as_deref().unwrap_or("")
            ),
            _ => outln!(
                o,
                "Plan reset to the template (one placeholder task, task-1)"
            ),
        }
    }
    if out.created {
        outln!(o, "Created {}", crate::ops::lifecycle::plan_rel());
    }
    o.push_str(&files(&p.written, &p.appended));
    o
}

/// `reconstruct` of a v1 workspace.
pub(super) fn reconstruction(r: &Reconstruction) -> String {
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

/// `run diff` of two v1 runs.
pub(super) fn run_diff(d: &crate::ops::runs::RunDiff) -> String {
    let mut o = String::new();
    outln!(
        o,
        "Run diff: {} -> {}",
        side_label(&d.from),
        side_label(&d.to)
    );
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
        use crate::ops::report::or_dash;
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
    } else if !d.full && p.entry_delta != 0 {
        outln!(o, "  (pass --full for the complete progress diff)");
    }
    o
}

/// `run checkout` into a v1 workspace.
pub(super) fn checkout(r: &CheckoutReport) -> String {
    let mut o = String::new();
    let short = crate::ops::runs::short_name(&r.snapshot, 16);
    if r.restored.is_empty() {
        outln!(
            o,
            "Workspace already matches snapshot {short}; nothing to restore."
        );
    } else {
        outln!(o, "Restored snapshot {short} into {}", r.small_dir);
        for f in &r.restored {
            let note = if r.discarded.contains(f) {
                " (local changes discarded)"
            } else {
                ""
            };
            outln!(o, "  restored  {f}{note}");
        }
    }
    for f in &r.kept {
        outln!(o, "  kept      {f} (not in the snapshot)");
    }
    if let Some(other) = &r.workspace_run {
        outln!(
            o,
            "note: .small/workspace.small.yml (kept as it is) still names run {} as current",
            crate::ops::runs::short_id(other, 16)
        );
    }
    o
}
