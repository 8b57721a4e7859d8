//! The progress log, entry by entry: timestamps (TS), evidence (INV2), and the facts the
//! cross-file rules need. The log can be very long; nothing here needs all of it at once.

use super::{check_links_at, check_secrets_at, diag, need, non_empty_str, show};
use crate::diag::{Diagnostic, Span};
use crate::spec::consts::{ArtifactKind, EVIDENCE_FIELDS, META_TASK_PREFIX};
use crate::spec::model::TaskStatus;
use crate::spec::plan::{trimmed_text, PlanIndex};
use crate::spec::timestamp::{self, Instant, TimestampError};
use crate::yaml::{Node, Value};

pub use crate::spec::facts::ProgressFacts;

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
            facts: ProgressFacts::new(plan),
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
        if let Some(c) = crate::spec::command::CommandClaim::of(i, e) {
            self.facts.commands.push(c);
        }
        let f = Fields::of(e);
        if !self.facts_only {
            self.diagnose(i, e, &f);
        }
        if e.as_map().is_some() {
            self.gather(i, e, &f);
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

    fn diagnose(&mut self, i: usize, e: &Node, f: &Fields<'_>) {
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
        let task_node = f.task_id;
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
        let ts_node = f.timestamp;
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
        if !f.has_evidence {
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
    fn gather(&mut self, i: usize, e: &Node, f: &Fields<'_>) {
        let task_node = f.task_id;
        let task_cow = trimmed_cow(task_node);
        let task_id: &str = &task_cow;
        if task_id.is_empty() {
            return;
        }
        // Evidence for S1: `notes` or any seed-000 evidence field (evidence, verification,
        // command, test, link, commit).
        let strict_evidence = f.has_evidence || holds_something(f.notes);
        fn text(n: Option<&Node>) -> Option<&str> {
            match n.map(|n| &n.value) {
                Some(Value::Str(s)) => Some(crate::spec::trim(s)),
                _ => None,
            }
        }
        let bookkeeping = crate::spec::bookkeeping::is_bookkeeping(text(f.evidence), text(f.notes));
        // One lookup files the id in every set below and answers S2.
        let slot = self.plan.slot(task_id);
        if bookkeeping {
            // The tool's own records (a task added, set back to pending, canned text) are
            // history, not evidence: they count for nothing below but `with_entries`.
        } else {
            if strict_evidence {
                self.facts.with_strict_evidence.insert(slot, task_id);
            }
            let completes = match f.status.map(|n| &n.value) {
                None | Some(Value::Null) => true,
                Some(Value::Str(s)) => TaskStatus::Completed.is(s),
                Some(_) => false,
            };
            if completes {
                self.facts.with_completion.insert(slot, task_id);
                if strict_evidence {
                    self.facts.with_completion_evidence.insert(slot, task_id);
                }
            }
        }
        let in_scope = if self.scope.is_empty() {
            true
        } else {
            let rid = trimmed_cow(f.replay_id);
            !rid.is_empty() && *rid == *self.scope
        };
        if in_scope
            && !task_id.starts_with(META_TASK_PREFIX)
            && !self.plan.tasks.is_empty()
            && slot.is_none()
        {
            self.facts.s2_offenders.push((
                i,
                task_id.to_string(),
                task_node.map_or(e.span, |n| n.span),
            ));
        }
        self.facts.with_entries.insert(slot, task_id);
    }
}

/// The fields of one entry the rules read, found in one pass over its keys. Each is the
/// first of its key, as [`Node::get`] finds it.
#[derive(Default)]
struct Fields<'n> {
    task_id: Option<&'n Node>,
    timestamp: Option<&'n Node>,
    status: Option<&'n Node>,
    evidence: Option<&'n Node>,
    notes: Option<&'n Node>,
    replay_id: Option<&'n Node>,
    /// One of [`EVIDENCE_FIELDS`] holds something (invariant 2).
    has_evidence: bool,
}

impl<'n> Fields<'n> {
    fn of(e: &'n Node) -> Fields<'n> {
        let mut f = Fields::default();
        let Some(map) = e.as_map() else {
            return f;
        };
        // Evidence fields already seen (bit i: `EVIDENCE_FIELDS[i]`).
        let mut seen = 0u8;
        for entry in map {
            let key: &str = &entry.key;
            let slot = match key {
                "task_id" => &mut f.task_id,
                "timestamp" => &mut f.timestamp,
                "status" => &mut f.status,
                "notes" => &mut f.notes,
                "replayId" => &mut f.replay_id,
                _ => {
                    if let Some(b) = EVIDENCE_FIELDS.iter().position(|k| *k == key) {
                        if seen & 1 << b == 0 {
                            seen |= 1 << b;
                            f.has_evidence |= holds_something(Some(&entry.value));
                            if key == "evidence" {
                                f.evidence = Some(&entry.value);
                            }
                        }
                    }
                    continue;
                }
            };
            slot.get_or_insert(&entry.value);
        }
        f
    }
}

/// Whether a field counts as holding something: not null, and not a blank string.
fn holds_something(n: Option<&Node>) -> bool {
    match n.map(|n| &n.value) {
        None | Some(Value::Null) => false,
        Some(Value::Str(s)) => !crate::spec::trim(s).is_empty(),
        Some(_) => true,
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
        Some(Value::Str(s)) => std::borrow::Cow::Borrowed(crate::spec::trim(s)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{parse_str, Limits};

    /// The codes one entry gets, and whether its task counts as having strict evidence.
    fn lint(entry: &str) -> (Vec<String>, bool) {
        let doc = parse_str(entry, &Limits::default()).unwrap();
        let plan = PlanIndex::default();
        let mut l = ProgressLinter::new(&plan, "");
        l.entry(0, &doc.root);
        let codes = l.diags.iter().map(|d| d.code.clone()).collect();
        (codes, l.facts.with_strict_evidence.contains("task-1"))
    }

    #[test]
    fn every_evidence_field_counts_and_blank_or_null_does_not() {
        let head = "task_id: \"task-1\"\ntimestamp: \"2026-01-01T00:00:00.1Z\"\n";
        for field in EVIDENCE_FIELDS {
            assert_eq!(
                lint(&format!("{head}{field}: \"x\"\n")),
                (vec![], true),
                "{field}"
            );
            assert_eq!(
                lint(&format!("{head}{field}: 3\n")),
                (vec![], true),
                "{field}"
            );
            let blank = lint(&format!("{head}{field}: \"  \"\n"));
            assert_eq!(blank, (vec!["INV2".to_string()], false), "{field}");
            let null = lint(&format!("{head}{field}: null\n"));
            assert_eq!(null, (vec!["INV2".to_string()], false), "{field}");
        }
        // Notes are evidence for S1 only.
        let notes = lint(&format!("{head}notes: \"did it\"\n"));
        assert_eq!(notes, (vec!["INV2".to_string()], true));
        let none = lint(&format!("{head}summary: \"x\"\n"));
        assert_eq!(none, (vec!["INV2".to_string()], false));
    }

    #[test]
    fn the_fields_are_read_wherever_they_stand() {
        let late = "evidence: \"x\"\ncommand: \"y\"\nnotes: \"z\"\ntimestamp: \"2026-01-01T00:00:00Z\"\ntask_id: \"task-1\"\n";
        assert_eq!(lint(late), (vec!["TS".to_string()], true));
        let no_task = "timestamp: \"2026-01-01T00:00:00.1Z\"\nevidence: \"x\"\n";
        assert_eq!(lint(no_task).0, vec!["SHAPE".to_string()]);
    }
}
