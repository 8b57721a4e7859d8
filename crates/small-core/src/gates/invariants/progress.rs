//! The progress log, entry by entry: timestamps (TS), evidence (INV2), and the facts the
//! cross-file rules need. The log can be very long; nothing here needs all of it at once.

use super::{check_links_at, check_secrets_at, diag, need, non_empty_str, show};
use crate::diag::{Diagnostic, Span};
use crate::spec::consts::{ArtifactKind, EVIDENCE_FIELDS, META_TASK_PREFIX};
use crate::spec::model::TaskStatus;
use crate::spec::plan::{trimmed_text, IdSet, PlanIndex};
use crate::spec::timestamp::{self, Instant, TimestampError};
use crate::yaml::{Node, Value};

/// What the cross-file rules need to know about the progress log.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProgressFacts {
    /// Task ids (trimmed) that have at least one entry.
    pub with_entries: IdSet,
    /// Task ids with an entry carrying non-empty `evidence` or `notes` (S1's notion).
    pub with_strict_evidence: IdSet,
    /// Task ids with a completion record of their own: an entry that is not the tool's
    /// bookkeeping (`crate::spec::bookkeeping`) whose status is `completed` (or absent).
    pub with_completion: IdSet,
    /// Like `with_completion`, with non-empty `evidence` or `notes` (S1 for completed tasks).
    pub with_completion_evidence: IdSet,
    /// Entries in the S2 scope whose task id is not in the plan: (index, id, span).
    pub s2_offenders: Vec<(usize, String, Span)>,
    /// Number of entries seen.
    pub count: usize,
}

/// Checks progress entries one at a time (timestamps, evidence, task ids) and gathers the
/// facts S1/S2 and the evidence gate need. Feed [`ProgressLinter::entry`] in log order.
pub struct ProgressLinter<'p> {
    plan: &'p PlanIndex,
    scope: String,
    prev: Option<(Instant, usize)>,
    /// The first valid timestamp seen, and its entry: a part of the log checked apart from
    /// the entries before it is ordered exactly as in one pass when this is later than their
    /// latest timestamp (see [`ProgressLinter::first_stamp`]).
    first: Option<(Instant, usize)>,
    /// Only gather facts; report nothing (the entries were linted elsewhere).
    facts_only: bool,
    pub facts: ProgressFacts,
    pub diags: Vec<Diagnostic>,
}

impl<'p> ProgressLinter<'p> {
    /// `scope`: the handoff replayId value (empty when there is none).
    pub fn new(plan: &'p PlanIndex, scope: &str) -> Self {
        ProgressLinter {
            plan,
            scope: scope.to_string(),
            prev: None,
            first: None,
            facts_only: false,
            facts: ProgressFacts::default(),
            diags: Vec::new(),
        }
    }

    /// The first valid timestamp this linter saw, and its entry. A part of the log checked
    /// apart from (and at the same time as) the entries before it orders its entries among
    /// themselves; that is exactly what one pass over the whole log reports when this stamp is
    /// later than the latest timestamp before the part, because every timestamp the part
    /// compares with is then its own. Otherwise the caller checks the log in one pass.
    pub fn first_stamp(&self) -> Option<(Instant, usize)> {
        self.first
    }

    /// The latest timestamp so far and its entry (what the next entry must be later than).
    pub fn order_state(&self) -> Option<(Instant, usize)> {
        self.prev
    }

    /// Continue after entries checked elsewhere whose latest timestamp was `prev`.
    pub fn set_order_state(&mut self, prev: Option<(Instant, usize)>) {
        self.prev = prev;
    }

    /// Check entry `i` of `entries`.
    pub fn entry(&mut self, i: usize, e: &Node) {
        self.facts.count += 1;
        if !self.facts_only {
            self.diagnose(i, e);
        }
        if e.as_map().is_some() {
            self.gather(i, e);
        }
    }

    /// [`ProgressLinter::entry`] plus the secret and link rules on the entry.
    pub fn entry_all(&mut self, i: usize, e: &Node, strict: bool) {
        self.entry(i, e);
        if !self.facts_only {
            // The entry's pointer, built only for a finding.
            let prefix = || format!("/entries/{i}");
            check_secrets_at(ArtifactKind::Progress, e, &prefix, strict, &mut self.diags);
            check_links_at(ArtifactKind::Progress, e, &prefix, strict, &mut self.diags);
        }
    }

    fn diagnose(&mut self, i: usize, e: &Node) {
        let k = ArtifactKind::Progress;
        // The entry's pointer, built only for a diagnostic.
        let base = || format!("/entries/{i}");
        if e.as_map().is_none() {
            self.diags.push(diag(
                "SHAPE",
                k,
                Some(e.span),
                &base(),
                format!("entries[{i}] must be a mapping, found {}", e.type_name()),
            ));
            return;
        }
        let task_node = e.get("task_id");
        let task_id = trimmed_cow(task_node);
        if !non_empty_str(task_node) {
            self.diags.push(
                diag(
                    "SHAPE",
                    k,
                    Some(task_node.map_or(e.span, |n| n.span)),
                    &format!("{}/task_id", base()),
                    format!("entries[{i}].task_id must be a non-empty string"),
                )
                .with_help("name the plan task (or a `meta/...` id) the entry is about"),
            );
        }
        // Timestamps.
        let ts_node = e.get("timestamp");
        let ts_text = ts_node.and_then(Node::as_str).unwrap_or("");
        let ts_span = Some(ts_node.map_or(e.span, |n| n.span));
        let ts_err = |why: String| {
            diag("TS", k, ts_span, &format!("{}/timestamp", base()), why).with_help(TS_HELP)
        };
        match ts_node.map(|n| &n.value) {
            None => self
                .diags
                .push(ts_err(format!("entries[{i}].timestamp is missing"))),
            Some(Value::Str(_)) => match timestamp::parse(ts_text) {
                Err(TimestampError::Missing) => self
                    .diags
                    .push(ts_err(format!("entries[{i}].timestamp is empty"))),
                Err(err) => self.diags.push(ts_err(format!(
                    "entries[{i}].timestamp {ts_text:?} is {err}"
                ))),
                Ok(t) => {
                    self.first.get_or_insert((t, i));
                    order_step(
                        &mut self.prev,
                        i,
                        t,
                        ts_text,
                        ts_node.map_or(e.span, |n| n.span),
                        &mut self.diags,
                    )
                }
            },
            Some(_) => self.diags.push(ts_err(format!(
                "entries[{i}].timestamp must be a string, found {}",
                ts_node.map_or_else(String::new, show)
            ))),
        }
        // Invariant 2: evidence.
        let has_evidence = EVIDENCE_FIELDS
            .iter()
            .any(|f| match e.get(f).map(|n| &n.value) {
                None | Some(Value::Null) => false,
                Some(Value::Str(s)) => !s.trim().is_empty(),
                Some(_) => true,
            });
        if !has_evidence {
            let shown = if task_id.is_empty() {
                String::new()
            } else {
                format!(" ({task_id})")
            };
            self.diags.push(
                diag(
                    "INV2",
                    k,
                    Some(e.span),
                    &base(),
                    format!("entries[{i}]{shown} has no evidence"),
                )
                .with_help(format!("add one of: {}", EVIDENCE_FIELDS.join(", "))),
            );
        }
    }

    /// Facts for S1, S2 and the evidence gate.
    fn gather(&mut self, i: usize, e: &Node) {
        let task_node = e.get("task_id");
        let task_cow = trimmed_cow(task_node);
        let task_id: &str = &task_cow;
        if task_id.is_empty() {
            return;
        }
        // Evidence for S1: `notes` or any seed-000 evidence field (evidence, verification,
        // command, test, link, commit).
        let strict_evidence = EVIDENCE_FIELDS
            .iter()
            .chain(["notes"].iter())
            .map(|f| e.get(f))
            .any(|n| match n.map(|n| &n.value) {
                None | Some(Value::Null) => false,
                Some(Value::Str(s)) => !s.trim().is_empty(),
                Some(_) => true,
            });
        let text = |k: &str| match e.get(k).map(|n| &n.value) {
            Some(Value::Str(s)) => Some(s.trim()),
            _ => None,
        };
        let bookkeeping = crate::spec::bookkeeping::is_bookkeeping(text("evidence"), text("notes"));
        if bookkeeping {
            // The tool's own records (a task added, set back to pending, canned text) are
            // history, not evidence: they count for nothing below but `with_entries`.
        } else {
            if strict_evidence && !self.facts.with_strict_evidence.contains(task_id) {
                self.facts.with_strict_evidence.insert(task_id.to_string());
            }
            let completes = match e.get("status").map(|n| &n.value) {
                None | Some(Value::Null) => true,
                Some(Value::Str(s)) => TaskStatus::Completed.is(s),
                Some(_) => false,
            };
            if completes {
                self.facts.with_completion.insert(task_id.to_string());
                if strict_evidence {
                    self.facts
                        .with_completion_evidence
                        .insert(task_id.to_string());
                }
            }
        }
        let in_scope = if self.scope.is_empty() {
            true
        } else {
            let rid = trimmed_cow(e.get("replayId"));
            !rid.is_empty() && *rid == *self.scope
        };
        if in_scope
            && !task_id.starts_with(META_TASK_PREFIX)
            && !self.plan.tasks.is_empty()
            && !self.plan.contains(task_id)
        {
            self.facts.s2_offenders.push((
                i,
                task_id.to_string(),
                task_node.map_or(e.span, |n| n.span),
            ));
        }
        if !self.facts.with_entries.contains(task_id) {
            self.facts.with_entries.insert(task_id.to_string());
        }
    }
}

const TS_HELP: &str = "write RFC 3339 with fractional seconds, later than the previous entry, e.g. \"2026-01-02T15:04:05.123456Z\"";

/// TS ordering of one entry: it must be later than `prev` (the latest timestamp so far),
/// which it then becomes.
fn order_step(
    prev: &mut Option<(Instant, usize)>,
    i: usize,
    t: Instant,
    ts_text: &str,
    span: Span,
    out: &mut Vec<Diagnostic>,
) {
    match *prev {
        Some((p, j)) if t <= p => out.push(
            diag(
                "TS",
                ArtifactKind::Progress,
                Some(span),
                &format!("/entries/{i}/timestamp"),
                format!(
                    "entries[{i}].timestamp {ts_text:?} is not later than entries[{j}]'s; timestamps must strictly increase"
                ),
            )
            .with_help(TS_HELP),
        ),
        _ => *prev = Some((t, i)),
    }
}

/// A scalar's text, trimmed, borrowed when it is a string.
fn trimmed_cow(node: Option<&Node>) -> std::borrow::Cow<'_, str> {
    match node.map(|n| &n.value) {
        Some(Value::Str(s)) => std::borrow::Cow::Borrowed(s.trim()),
        Some(_) => std::borrow::Cow::Owned(trimmed_text(node)),
        None => std::borrow::Cow::Borrowed(""),
    }
}

/// Lint the progress artifact's header (everything except the entries' contents).
/// Returns the entries to feed to a [`ProgressLinter`], if `entries` is a list.
pub(super) fn check_progress_header<'n>(
    root: &'n Node,
    out: &mut Vec<Diagnostic>,
) -> Option<&'n [Node]> {
    let k = ArtifactKind::Progress;
    match root.get("entries").and_then(Node::as_seq) {
        Some(s) => Some(s),
        None => {
            need(out, k, root, root, "/entries", false, "a list");
            None
        }
    }
}

/// Progress facts computed without diagnostics (for verify's gate when lint ran elsewhere).
pub fn progress_facts(plan: &PlanIndex, scope: &str, progress: Option<&Node>) -> ProgressFacts {
    let mut pl = ProgressLinter::new(plan, scope);
    pl.facts_only = true;
    if let Some(entries) = progress
        .and_then(|p| p.get("entries"))
        .and_then(Node::as_seq)
    {
        for (i, e) in entries.iter().enumerate() {
            pl.entry(i, e);
        }
    }
    pl.facts
}
