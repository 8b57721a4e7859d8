//! Cross-file rules: S1-S3 (strict mode) and the evidence gate `verify` applies (GATE).
//!
//! They read the project state the gates built from their parse of the files
//! ([`crate::state::v1::from_workspace`]): its tasks with their places in the plan, its
//! handoff, and what the pass over the progress log gathered (`ProjectState::log`).

use std::collections::HashMap;

use super::diag;
use crate::diag::Diagnostic;
use crate::spec::consts::{ArtifactKind, META_TASK_PREFIX};
use crate::spec::model::TaskStatus;
use crate::spec::plan::closest_ids;
use crate::state::{ProjectState, Task};

/// A diagnostic on task `t` of the plan (at its `id` when the state knows where it is).
fn task_diag(code: &str, t: &Task, msg: String) -> Diagnostic {
    let path = t
        .source
        .map(|s| format!("/tasks/{}/id", s.index))
        .unwrap_or_default();
    diag(
        code,
        ArtifactKind::Plan,
        t.source.map(|s| s.span),
        &path,
        msg,
    )
}

/// The plan's tasks that have an id, with their status lower-cased (`Completed` is
/// `completed`).
fn tasks_by_status(st: &ProjectState) -> impl Iterator<Item = (&Task, String)> {
    st.task_list()
        .iter()
        .filter(|t| !t.id.is_empty())
        .map(|t| (t, t.status.to_lowercase()))
}

/// S1: every completed plan task has a completion entry of its own (status `completed`) with
/// `evidence` or `notes`, and every blocked task an entry with `evidence` or `notes`. The
/// tool's bookkeeping entries do not count.
pub fn check_s1(st: &ProjectState, out: &mut Vec<Diagnostic>) {
    let Some(facts) = &st.log else { return };
    for (t, status) in tasks_by_status(st) {
        let completed = status == TaskStatus::Completed.as_str();
        if !completed && status != TaskStatus::Blocked.as_str() {
            continue;
        }
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
            task_diag(
                "S1",
                t,
                format!("task \"{}\" is {} but {why}", t.id, t.status),
            )
            .with_help(format!(
                "record evidence: small progress add --task {} --status {status} --evidence \"...\"",
                t.id
            )),
        );
    }
}

/// S2: progress entries of the current run (the handoff's replayId) name plan tasks
/// (`meta/*` exempt).
pub fn check_s2(st: &ProjectState, out: &mut Vec<Diagnostic>) {
    let Some(facts) = &st.log else { return };
    let scope = st
        .handoff
        .as_ref()
        .and_then(|h| h.replay_id.as_deref())
        .unwrap_or_default();
    let scope_label = if scope.is_empty() {
        "all entries (the handoff has no replayId)"
    } else {
        scope
    };
    let ids: Vec<&str> = st.task_list().iter().map(|t| t.id.as_str()).collect();
    // A log can name the same unknown task in many entries: each is looked up once.
    let mut suggestions: HashMap<&str, Vec<String>> = HashMap::new();
    for (i, id, span) in &facts.s2_offenders {
        let closest = suggestions
            .entry(id.as_str())
            .or_insert_with(|| closest_ids(id, &ids, 3));
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
pub fn check_s3(st: &ProjectState, out: &mut Vec<Diagnostic>) {
    let Some(h) = &st.handoff else { return };
    let (Some(id), Some(span)) = (h.current_task_id.as_deref(), h.current_task_span) else {
        return;
    };
    if id.starts_with(META_TASK_PREFIX) || st.task(id).is_some() {
        return;
    }
    out.push(
        diag(
            "S3",
            ArtifactKind::Handoff,
            Some(span),
            "/resume/current_task_id",
            format!("resume.current_task_id \"{id}\" is not a task of the plan"),
        )
        .with_help("regenerate the handoff with `small handoff`, or add the task to the plan"),
    );
}

/// The evidence gate (`verify`): every completed plan task has a progress entry recording the
/// completion (status `completed`, or none) that is not the tool's bookkeeping.
/// In strict mode S1 already covers it with a stronger requirement.
pub fn check_evidence_gate(st: &ProjectState, out: &mut Vec<Diagnostic>) {
    let Some(facts) = &st.log else { return };
    for (t, status) in tasks_by_status(st) {
        if status != TaskStatus::Completed.as_str() || facts.with_completion.contains(&t.id) {
            continue;
        }
        out.push(
            task_diag(
                "GATE",
                t,
                format!("task \"{}\" is completed but no progress entry of its own records the completion", t.id),
            )
            .with_help(format!(
                "record the work: small progress add --task {} --status completed --evidence \"...\"",
                t.id
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    //! The rules read the project state: a state changed in memory, with no file behind
    //! it, changes their verdicts.
    use super::*;
    use crate::gates::invariants::{progress_facts, Docs, PlanIndex};
    use crate::yaml::{parse_str, Document, Limits};

    const PLAN: &str = "tasks:\n  - id: a\n    status: completed\n  - id: b\n    status: pending\n";
    const PROGRESS: &str = "entries:\n  - task_id: a\n    status: completed\n    evidence: ok\n  - task_id: ghost\n    evidence: x\n";
    const HANDOFF: &str = "replayId:\n  value: run-1\nresume:\n  current_task_id: b\n";

    fn state() -> ProjectState {
        let doc = |t: &str| -> Document { parse_str(t, &Limits::default()).unwrap() };
        let (plan, progress, handoff) = (doc(PLAN), doc(PROGRESS), doc(HANDOFF));
        let docs = Docs {
            plan: Some(&plan.root),
            progress: Some(&progress.root),
            handoff: Some(&handoff.root),
            ..Docs::default()
        };
        let idx = PlanIndex::from_plan(docs.plan);
        let log = progress_facts(&idx, "", docs.progress);
        crate::state::v1::from_docs(&docs, &idx, Some(log))
    }

    fn codes(st: &ProjectState) -> Vec<(String, Option<u32>, Option<String>)> {
        let mut out = Vec::new();
        check_s1(st, &mut out);
        check_s2(st, &mut out);
        check_s3(st, &mut out);
        check_evidence_gate(st, &mut out);
        out.into_iter()
            .map(|d| (d.code, d.span.map(|s| s.start.line), d.path))
            .collect()
    }

    #[test]
    fn a_sound_state_passes_but_the_unknown_task_of_its_run() {
        let st = state();
        let s2 = |line| {
            (
                "S2".to_string(),
                Some(line),
                Some("/entries/1/task_id".into()),
            )
        };
        assert_eq!(codes(&st), [s2(5)]);
    }

    #[test]
    fn a_task_completed_in_the_state_needs_its_evidence() {
        let mut st = state();
        st.tasks.as_mut().unwrap()[1].status = "Completed".into();
        let got = codes(&st);
        let at_b = |code: &str| (code.to_string(), Some(4), Some("/tasks/1/id".to_string()));
        assert!(got.contains(&at_b("S1")), "{got:?}");
        assert!(got.contains(&at_b("GATE")), "{got:?}");
    }

    #[test]
    fn a_current_task_the_plan_lacks_is_s3_and_a_meta_task_is_not() {
        let mut st = state();
        let h = st.handoff.as_mut().unwrap();
        h.current_task_id = Some("gone".into());
        assert!(codes(&st)
            .iter()
            .any(|(c, line, _)| c == "S3" && *line == Some(4)));
        st.handoff.as_mut().unwrap().current_task_id = Some("meta/setup".into());
        assert!(!codes(&st).iter().any(|(c, ..)| c == "S3"));
        // Without a place (not written as a string), S3 leaves it alone.
        let h = st.handoff.as_mut().unwrap();
        h.current_task_id = Some("gone".into());
        h.current_task_span = None;
        assert!(!codes(&st).iter().any(|(c, ..)| c == "S3"));
    }

    #[test]
    fn the_scope_of_s2_is_the_handoffs_run() {
        let mut st = state();
        st.handoff.as_mut().unwrap().replay_id = Some("run-1".into());
        let mut out = Vec::new();
        check_s2(&st, &mut out);
        assert!(
            out[0].message.contains("run scope: run-1"),
            "{}",
            out[0].message
        );
        assert_eq!(out[0].help.as_deref(), Some("use a plan task id, a `meta/...` id for bootstrap work, or run `small fix --orphan-progress`"));
    }

    #[test]
    fn without_the_log_the_log_rules_have_nothing_to_read() {
        let mut st = state();
        st.log = None;
        st.tasks.as_mut().unwrap()[1].status = "completed".into();
        assert!(codes(&st).is_empty());
    }
}
