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

pub use crate::spec::plan::{handoff_replay_scope, scalar_text, PlanIndex, TaskInfo};
pub use format::version_format_drift;
pub use links::{check_links, check_links_at, insecure_urls};
pub use progress::{check_order, progress_facts, ProgressFacts, ProgressLinter, Stamp};
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

/// The parsed roots of the five artifacts (any may be absent).
#[derive(Debug, Clone, Copy, Default)]
pub struct Docs<'a> {
    pub intent: Option<&'a Node>,
    pub constraints: Option<&'a Node>,
    pub plan: Option<&'a Node>,
    pub progress: Option<&'a Node>,
    pub handoff: Option<&'a Node>,
}

impl<'a> Docs<'a> {
    pub fn get(&self, kind: ArtifactKind) -> Option<&'a Node> {
        match kind {
            ArtifactKind::Intent => self.intent,
            ArtifactKind::Constraints => self.constraints,
            ArtifactKind::Plan => self.plan,
            ArtifactKind::Progress => self.progress,
            ArtifactKind::Handoff => self.handoff,
        }
    }

    pub fn set(&mut self, kind: ArtifactKind, node: Option<&'a Node>) {
        match kind {
            ArtifactKind::Intent => self.intent = node,
            ArtifactKind::Constraints => self.constraints = node,
            ArtifactKind::Plan => self.plan = node,
            ArtifactKind::Progress => self.progress = node,
            ArtifactKind::Handoff => self.handoff = node,
        }
    }
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

pub fn escape_pointer(key: &str) -> std::borrow::Cow<'_, str> {
    if key.contains(['~', '/']) {
        std::borrow::Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
    } else {
        std::borrow::Cow::Borrowed(key)
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
pub fn lint(docs: &Docs, opts: Options) -> Vec<Diagnostic> {
    lint_with(docs, opts, None)
}

/// What streaming the progress log produced for lint: the entries' diagnostics (from
/// [`ProgressLinter::entry_all`]) and the facts.
#[derive(Debug, Default)]
pub struct StreamedLint {
    pub diags: Vec<Diagnostic>,
    pub facts: ProgressFacts,
}

/// [`lint`], with the progress entries already checked while streaming (the progress
/// document then holds only its header).
pub fn lint_with(
    docs: &Docs,
    opts: Options,
    mut streamed: Option<StreamedLint>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let plan = PlanIndex::from_plan(docs.plan);
    let scope = handoff_replay_scope(docs.handoff);
    let mut facts = None;
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
                if let Some(sl) = streamed.take() {
                    progress::check_progress_header(root, &mut out);
                    out.extend(sl.diags);
                    facts = Some(sl.facts);
                } else if let Some(entries) = progress::check_progress_header(root, &mut out) {
                    let mut pl = ProgressLinter::new(&plan, &scope);
                    for (i, e) in entries.iter().enumerate() {
                        pl.entry(i, e);
                    }
                    out.append(&mut pl.diags);
                    facts = Some(pl.facts);
                }
            }
        }
        check_secrets(kind, root, opts.strict, &mut out);
        check_links(kind, root, opts.strict, &mut out);
    }
    if opts.strict {
        if let (Some(_), Some(f)) = (docs.plan, facts.as_ref()) {
            check_s1(&plan, f, &mut out);
            check_s2(&plan, &scope, f, &mut out);
        }
        if docs.plan.is_some() && docs.plan.and_then(|p| p.as_map()).is_some() {
            check_s3(&plan, docs.handoff, &mut out);
        }
    }
    crate::diag::sort(&mut out);
    out
}
