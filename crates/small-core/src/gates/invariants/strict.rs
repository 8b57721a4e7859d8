//! Cross-file rules: S1-S3 (strict mode) and the evidence gate `verify` applies (GATE).

use std::collections::HashMap;

use super::{diag, ProgressFacts};
use crate::diag::Diagnostic;
use crate::spec::consts::{ArtifactKind, META_TASK_PREFIX};
use crate::spec::model::TaskStatus;
use crate::spec::plan::PlanIndex;
use crate::yaml::Node;

/// S1: every completed plan task has a completion entry of its own (status `completed`) with
/// `evidence` or `notes`, and every blocked task an entry with `evidence` or `notes`. The
/// tool's bookkeeping entries do not count.
pub fn check_s1(plan: &PlanIndex, facts: &ProgressFacts, out: &mut Vec<Diagnostic>) {
    for t in &plan.tasks {
        let st = t.status_norm();
        if t.id.is_empty()
            || (st != TaskStatus::Completed.as_str() && st != TaskStatus::Blocked.as_str())
        {
            continue;
        }
        let completed = st == TaskStatus::Completed.as_str();
        let ok = if completed {
            facts.with_completion_evidence.contains(&t.id)
        } else {
            facts.with_strict_evidence.contains(&t.id)
        };
        if ok {
            continue;
        }
        let why = if completed && facts.with_strict_evidence.contains(&t.id) {
            "none of its progress entries records the completion (status completed) with `evidence` or `notes`"
        } else if facts.with_entries.contains(&t.id) {
            "its progress entries have no `evidence` or `notes` of their own (entries the tool writes when a task is added or changed do not count)"
        } else {
            "it has no progress entry"
        };
        out.push(
            diag(
                "S1",
                ArtifactKind::Plan,
                Some(t.span),
                &format!("/tasks/{}/id", t.index),
                format!("task \"{}\" is {} but {why}", t.id, t.status),
            )
            .with_help(format!(
                "record evidence: small progress add --task {} --status {} --evidence \"...\"",
                t.id, st
            )),
        );
    }
}

/// S2: progress entries of the current run name plan tasks (`meta/*` exempt).
pub fn check_s2(plan: &PlanIndex, scope: &str, facts: &ProgressFacts, out: &mut Vec<Diagnostic>) {
    let scope_label = if scope.is_empty() {
        "all entries (the handoff has no replayId)"
    } else {
        scope
    };
    // A log can name the same unknown task in many entries: each is looked up once.
    let mut suggestions: HashMap<&str, Vec<String>> = HashMap::new();
    for (i, id, span) in &facts.s2_offenders {
        let closest = suggestions
            .entry(id.as_str())
            .or_insert_with(|| plan.closest(id, 3));
        let mut d = diag(
            "S2",
            ArtifactKind::Progress,
            Some(*span),
            &format!("/entries/{i}/task_id"),
            format!("entries[{i}] names task \"{id}\", which is not in the plan (run scope: {scope_label})"),
        );
        d = if closest.is_empty() {
            d.with_help("use a plan task id, a `meta/...` id for bootstrap work, or run `small fix --orphan-progress`")
        } else {
            d.with_help(format!("did you mean {}?", closest.join(", ")))
        };
        out.push(d);
    }
}

/// S3: `resume.current_task_id`, when set, names a plan task (or a `meta/...` id).
pub fn check_s3(plan: &PlanIndex, handoff: Option<&Node>, out: &mut Vec<Diagnostic>) {
    let Some(cur) = handoff
        .and_then(|h| h.get("resume"))
        .and_then(|r| r.get("current_task_id"))
    else {
        return;
    };
    let Some(id) = cur.as_str().map(str::trim).filter(|s| !s.is_empty()) else {
        return;
    };
    if id.starts_with(META_TASK_PREFIX) || plan.contains(id) {
        return;
    }
    out.push(
        diag(
            "S3",
            ArtifactKind::Handoff,
            Some(cur.span),
            "/resume/current_task_id",
            format!("resume.current_task_id \"{id}\" is not a task of the plan"),
        )
        .with_help("regenerate the handoff with `small handoff`, or add the task to the plan"),
    );
}

/// The evidence gate (`verify`): every completed plan task has a progress entry recording the
/// completion (status `completed`, or none) that is not the tool's bookkeeping.
/// In strict mode S1 already covers it with a stronger requirement.
pub fn check_evidence_gate(plan: &PlanIndex, facts: &ProgressFacts, out: &mut Vec<Diagnostic>) {
    for t in &plan.tasks {
        if t.id.is_empty()
            || t.status_norm() != TaskStatus::Completed.as_str()
            || facts.with_completion.contains(&t.id)
        {
            continue;
        }
        out.push(
            diag(
                "GATE",
                ArtifactKind::Plan,
                Some(t.span),
                &format!("/tasks/{}/id", t.index),
                format!("task \"{}\" is completed but no progress entry of its own records the completion", t.id),
            )
            .with_help(format!(
                "record the work: small progress add --task {} --status completed --evidence \"...\"",
                t.id
            )),
        );
    }
}
