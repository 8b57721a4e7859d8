//! Protocol invariants beyond the JSON Schemas: the rules `small lint` enforces (and `verify`
//! and `check` include). Every rule has a stable code, documented in docs/rules.md:
//!
//! | code | rule |
//! |---|---|
//! | `INV5` | `small_version` is exactly the string `"1.0.0"` |
//! | `OWN` | `owner` is the one the spec assigns to the artifact |
//! | `KEYS` | only the artifact's known top-level keys |
//! | `SHAPE` | required fields have the right shape (non-empty strings, arrays, mappings) |
//! | `DUP` | plan task ids and constraint ids are unique |
//! | `TS` | progress timestamps are RFC 3339 with fractional seconds, strictly increasing |
//! | `INV2` | every progress entry carries evidence |
//! | `INV1` | no secrets (error in strict mode, warning otherwise) |
//! | `LINK` | no insecure `http://` links (error in strict mode, warning otherwise) |
//! | `FMT` | `small_version` written as a double-quoted string (warning; error with format-strict) |
//! | `S1` | strict: completed/blocked tasks have a progress entry with evidence or notes |
//! | `S2` | strict: progress task ids of the current run exist in the plan |
//! | `S3` | strict: the handoff's current task exists in the plan |
//! | `S4` | strict: only canonical files (and `ext/`) under `.small/` (see `layout`) |
//!
//! The progress log can be very long, so its rules run entry by entry through
//! [`ProgressLinter`]; nothing here needs the whole log at once.

//! The rules live one concern to a file: `shape` (per-file structure), `progress` (the log,
//! entry by entry), `strict` (cross-file S1-S3 and the evidence gate), `secrets`, `links`,
//! `format`. The plan model they share is [`crate::spec::plan`].

mod format;
mod links;
mod progress;
mod secrets;
mod shape;
mod strict;

pub use crate::spec::plan::{handoff_replay_scope, scalar_text, PlanIndex};
pub use crate::workspace::Docs;
pub use format::version_format_drift;
pub use links::{check_links, check_links_at, has_external_http, quote_local_literals};
pub use progress::{progress_facts, ProgressFacts, ProgressLinter};
pub use secrets::{check_secrets, check_secrets_at};
pub use strict::{check_evidence_gate, check_s1, check_s2, check_s3};

use crate::diag::{Diagnostic, Severity, Span};
use crate::spec::consts::ArtifactKind;
use crate::yaml::{Node, Value};

/// Options shared by lint, verify and check.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Strict mode: S1-S3 (and S4, checked by the caller) and secrets/links as errors.
    pub strict: bool,
}

pub(super) fn diag(
    code: &str,
    kind: ArtifactKind,
    span: Option<Span>,
    path: &str,
    msg: String,
) -> Diagnostic {
    let mut d = Diagnostic::error(code, msg)
        .in_file(kind.rel_path())
        .at(span);
    if !path.is_empty() {
        d = d.with_path(path);
    }
    d
}

pub(super) fn non_empty_str(node: Option<&Node>) -> bool {
    matches!(node.map(|n| &n.value), Some(Value::Str(s)) if !s.trim().is_empty())
}

/// A short rendering of a value for messages.
pub fn show(n: &Node) -> String {
    match &n.value {
        Value::Str(s) => format!("{:?}", s),
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b} (a boolean)"),
        Value::Int(i) => format!("{i} (a number)"),
        Value::Float(f) => format!("{f} (a number)"),
        Value::Seq(_) => "a sequence".into(),
        Value::Map(_) => "a mapping".into(),
    }
}

pub(super) fn need(
    out: &mut Vec<Diagnostic>,
    kind: ArtifactKind,
    root: &Node,
    parent: &Node,
    pointer: &str,
    ok: bool,
    what: &str,
) {
    if !ok {
        let span = root.pointer(pointer).map_or(parent.span, |n| n.span);
        out.push(diag(
            "SHAPE",
            kind,
            Some(span),
            pointer,
            format!("{} must be {what}", display(pointer)),
        ));
    }
}

/// `/scope/include` as `scope.include`, `/tasks/0/id` as `tasks[0].id`.
pub fn display(pointer: &str) -> String {
    let mut s = String::new();
    for tok in crate::yaml::pointer_tokens(pointer) {
        if tok.parse::<usize>().is_ok() {
            s.push_str(&format!("[{tok}]"));
        } else {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(&tok);
        }
    }
    s
}

pub(super) fn is_seq(n: Option<&Node>) -> bool {
    n.is_some_and(|n| n.as_seq().is_some())
}

pub(super) fn severity(strict: bool) -> Severity {
    if strict {
        Severity::Error
    } else {
        Severity::Warning
    }
}

// ---------------------------------------------------------------------------------------
// Entry point

/// All lint rules over the loaded artifacts (S4 excepted: it needs the directory, see
/// `layout`). Diagnostics come out in the stable order (file, then position).
#[cfg(test)]
pub fn lint(docs: &Docs, opts: Options) -> Vec<Diagnostic> {
    let plan = PlanIndex::from_plan(docs.plan);
    let scope = handoff_replay_scope(docs.handoff);
    let log = docs
        .progress
        .map(|p| progress_facts(&plan, &scope, Some(p)));
    let state = crate::state::v1::from_docs(docs, &plan, log);
    lint_with(docs, opts, None, &state)
}

/// [`lint`] of documents whose project state the gates built (`state`: its cross-file
/// rules read it). `streamed`: the progress entries' diagnostics when the log was checked
/// while streaming (from [`ProgressLinter::entry_all`]; the progress document then holds
/// only its header); otherwise the entries are checked here.
pub fn lint_with(
    docs: &Docs,
    opts: Options,
    streamed: Option<&[Diagnostic]>,
    state: &crate::state::ProjectState,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // Whether the log's facts stand for the log: its top level is sound (and, checked here,
    // it has its list of entries).
    let mut log_checked = false;
    for kind in ArtifactKind::ALL {
        let Some(root) = docs.get(kind) else { continue };
        if !shape::check_common(kind, root, &mut out) {
            continue;
        }
        match kind {
            ArtifactKind::Intent => shape::check_intent(root, &mut out),
            ArtifactKind::Constraints => shape::check_constraints(root, &mut out),
            ArtifactKind::Plan => shape::check_plan(root, &mut out),
            ArtifactKind::Handoff => shape::check_handoff(root, &mut out),
            ArtifactKind::Progress => {
                if let Some(diags) = streamed {
                    progress::check_progress_header(root, &mut out);
                    out.extend_from_slice(diags);
                    log_checked = true;
                } else if let Some(entries) = progress::check_progress_header(root, &mut out) {
                    let plan = PlanIndex::from_plan(docs.plan);
                    let scope = handoff_replay_scope(docs.handoff);
                    let mut pl = ProgressLinter::new(&plan, &scope);
                    for (i, e) in entries.iter().enumerate() {
                        pl.entry(i, e);
                    }
                    out.append(&mut pl.diags);
                    log_checked = true;
                }
            }
        }
        check_secrets(kind, root, opts.strict, &mut out);
        check_links(kind, root, opts.strict, &mut out);
    }
    if opts.strict {
        if docs.plan.is_some() && log_checked {
            check_s1(state, &mut out);
            check_s2(state, &mut out);
        }
        if docs.plan.and_then(|p| p.as_map()).is_some() {
            check_s3(state, &mut out);
        }
    }
    crate::diag::sort(&mut out);
    out
}

#[cfg(test)]
mod tests {
    //! One test per rule code: a minimal valid workspace passes, and one change to it
    //! produces exactly the rule's diagnostic.
    use super::*;
    use crate::yaml::{parse_str, Document, Limits};

    const INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Ship it\"\nscope:\n  include: []\n  exclude: []\nsuccess_criteria: []\n";
    const CONSTRAINTS: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"c1\"\n    rule: \"be careful\"\n    severity: \"error\"\n";
    const PLAN: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"task-1\"\n    title: \"First\"\n    status: \"completed\"\n  - id: \"task-2\"\n    title: \"Second\"\n";
    const PROGRESS: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    status: \"completed\"\n    timestamp: \"2026-01-01T00:00:00.100Z\"\n    evidence: \"cargo test: ok\"\n";
    const HANDOFF: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"Working\"\nresume:\n  current_task_id: \"task-2\"\n  next_steps: []\nlinks: []\n";

    struct Ws([Document; 5]);

    impl Ws {
        fn new(edit: impl Fn(ArtifactKind, &str) -> String) -> Ws {
            let text = |k: ArtifactKind, base: &str| {
                parse_str(&edit(k, base), &Limits::default()).expect("valid YAML")
            };
            Ws([
                text(ArtifactKind::Intent, INTENT),
                text(ArtifactKind::Constraints, CONSTRAINTS),
                text(ArtifactKind::Plan, PLAN),
                text(ArtifactKind::Progress, PROGRESS),
                text(ArtifactKind::Handoff, HANDOFF),
            ])
        }

        fn codes(&self, strict: bool) -> Vec<(String, Severity)> {
            let mut docs = Docs::default();
            for (k, d) in ArtifactKind::ALL.into_iter().zip(&self.0) {
                docs.set(k, Some(&d.root));
            }
            lint(&docs, Options { strict })
                .into_iter()
                .map(|d| (d.code, d.severity))
                .collect()
        }
    }

    /// The workspace with `from` replaced by `to` in artifact `kind`.
    fn with(kind: ArtifactKind, from: &'static str, to: &'static str) -> Ws {
        Ws::new(move |k, base| {
            if k == kind {
                assert!(base.contains(from), "{from:?} not in {kind:?}");
                base.replacen(from, to, 1)
            } else {
                base.to_string()
            }
        })
    }

    fn errors(ws: &Ws, strict: bool) -> Vec<String> {
        ws.codes(strict)
            .into_iter()
            .filter(|(_, s)| *s == Severity::Error)
            .map(|(c, _)| c)
            .collect()
    }

    #[test]
    fn the_base_workspace_passes_strict_lint() {
        assert_eq!(Ws::new(|_, b| b.to_string()).codes(true), vec![]);
    }

    #[test]
    fn inv5_version_must_be_1_0_0() {
        let ws = with(ArtifactKind::Plan, "\"1.0.0\"", "\"2.0.0\"");
        assert_eq!(errors(&ws, false), vec!["INV5"]);
    }

    #[test]
    fn own_owner_is_the_specs() {
        let ws = with(ArtifactKind::Intent, "owner: \"human\"", "owner: \"agent\"");
        assert_eq!(errors(&ws, false), vec!["OWN"]);
    }

    #[test]
    fn keys_only_known_top_level_keys() {
        let ws = with(ArtifactKind::Plan, "tasks:", "extra: 1\ntasks:");
        assert_eq!(errors(&ws, false), vec!["KEYS"]);
    }

    #[test]
    fn shape_required_fields_have_their_shape() {
        let ws = with(ArtifactKind::Intent, "intent: \"Ship it\"", "intent: \"\"");
        assert_eq!(errors(&ws, false), vec!["SHAPE"]);
    }

    #[test]
    fn dup_plan_ids_are_unique() {
        let ws = with(ArtifactKind::Plan, "id: \"task-2\"", "id: \"task-1\"");
        assert!(errors(&ws, false).contains(&"DUP".to_string()));
    }

    #[test]
    fn ts_timestamps_need_a_fraction() {
        let ws = with(ArtifactKind::Progress, "00:00:00.100Z", "00:00:00Z");
        assert_eq!(errors(&ws, false), vec!["TS"]);
    }

    #[test]
    fn inv2_every_entry_has_evidence() {
        let ws = with(
            ArtifactKind::Progress,
            "evidence: \"cargo test: ok\"",
            "notes: \"x\"",
        );
        assert_eq!(errors(&ws, false), vec!["INV2"]);
    }

    #[test]
    fn inv1_secrets_warn_and_fail_strict() {
        let ws = with(
            ArtifactKind::Handoff,
            "summary: \"Working\"",
            "summary: \"token ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R\"",
        );
        assert_eq!(
            ws.codes(false),
            vec![("INV1".to_string(), Severity::Warning)]
        );
        assert_eq!(errors(&ws, true), vec!["INV1"]);
    }

    #[test]
    fn link_http_warns_and_fails_strict() {
        let ws = with(
            ArtifactKind::Handoff,
            "links: []",
            "links: [\"http://example.com/x\"]",
        );
        assert_eq!(
            ws.codes(false),
            vec![("LINK".to_string(), Severity::Warning)]
        );
        assert_eq!(errors(&ws, true), vec!["LINK"]);
        let local = with(
            ArtifactKind::Progress,
            "evidence: \"cargo test: ok\"",
            "evidence: \"served on http://localhost:8080\"",
        );
        assert_eq!(local.codes(true), vec![]);
    }

    #[test]
    fn fmt_version_written_unquoted_is_drift() {
        let doc = parse_str("small_version: 1.0.0\n", &Limits::default()).unwrap();
        let d = version_format_drift(".small/plan.small.yml", &doc.root).unwrap();
        assert_eq!((d.code.as_str(), d.severity), ("FMT", Severity::Warning));
        let quoted = parse_str("small_version: \"1.0.0\"\n", &Limits::default()).unwrap();
        assert!(version_format_drift("x", &quoted.root).is_none());
    }

    #[test]
    fn s1_completed_tasks_need_evidence_in_strict_mode() {
        let ws = with(
            ArtifactKind::Progress,
            "task_id: \"task-1\"",
            "task_id: \"meta/x\"",
        );
        assert_eq!(errors(&ws, false), Vec::<String>::new());
        assert_eq!(errors(&ws, true), vec!["S1"]);
    }

    #[test]
    fn s2_progress_names_plan_tasks_in_strict_mode() {
        let ws = with(
            ArtifactKind::Progress,
            "entries:\n",
            "entries:\n  - task_id: \"task-9\"\n    timestamp: \"2025-12-31T00:00:00.100Z\"\n    evidence: \"x\"\n",
        );
        assert_eq!(errors(&ws, false), Vec::<String>::new());
        assert_eq!(errors(&ws, true), vec!["S2"]);
    }

    #[test]
    fn s3_the_current_task_is_a_plan_task_in_strict_mode() {
        let ws = with(ArtifactKind::Handoff, "\"task-2\"", "\"task-9\"");
        assert_eq!(errors(&ws, true), vec!["S3"]);
    }

    #[test]
    fn gate_completed_tasks_have_an_entry() {
        let ws = with(
            ArtifactKind::Progress,
            "task_id: \"task-1\"",
            "task_id: \"meta/x\"",
        );
        let plan = PlanIndex::from_plan(Some(&ws.0[2].root));
        let facts = progress_facts(&plan, "", Some(&ws.0[3].root));
        let mut docs = Docs::default();
        for (k, d) in ArtifactKind::ALL.into_iter().zip(&ws.0) {
            docs.set(k, Some(&d.root));
        }
        let state = crate::state::v1::from_docs(&docs, &plan, Some(facts));
        let mut out = Vec::new();
        check_evidence_gate(&state, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].code, "GATE");
        assert!(out[0].help.as_deref().unwrap().contains("task-1"));
    }
}
