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

use std::collections::{HashMap, HashSet};

use crate::diag::{Diagnostic, Severity, Span};
use crate::spec::consts::{
    ArtifactKind, EVIDENCE_FIELDS, META_TASK_PREFIX, PROTOCOL_VERSION, SMALL_DIR,
};
use crate::spec::timestamp::{self, Instant, TimestampError};
use crate::yaml::{Node, Style, Value};

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

/// Workspace-relative path of an artifact: `.small/plan.small.yml`.
pub fn rel_path(kind: ArtifactKind) -> String {
    format!("{SMALL_DIR}/{}", kind.file_name())
}

fn diag(code: &str, kind: ArtifactKind, span: Option<Span>, path: &str, msg: String) -> Diagnostic {
    let mut d = Diagnostic::error(code, msg)
        .in_file(rel_path(kind))
        .at(span);
    if !path.is_empty() {
        d = d.with_path(path);
    }
    d
}

/// The text of a scalar as the reference's `%v` would show it, for ids and statuses that
/// are not strings. Mappings and sequences give `None`.
pub fn scalar_text(node: &Node) -> Option<String> {
    match &node.value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        Value::Seq(_) | Value::Map(_) => None,
    }
}

fn trimmed_text(node: Option<&Node>) -> String {
    node.and_then(scalar_text)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn non_empty_str(node: Option<&Node>) -> bool {
    matches!(node.map(|n| &n.value), Some(Value::Str(s)) if !s.trim().is_empty())
}

fn allowed_keys(kind: ArtifactKind) -> &'static [&'static str] {
    match kind {
        ArtifactKind::Intent => &[
            "small_version",
            "owner",
            "intent",
            "scope",
            "success_criteria",
        ],
        ArtifactKind::Constraints => &["small_version", "owner", "constraints"],
        ArtifactKind::Plan => &["small_version", "owner", "tasks"],
        ArtifactKind::Progress => &["small_version", "owner", "entries"],
        ArtifactKind::Handoff => &[
            "small_version",
            "owner",
            "summary",
            "resume",
            "links",
            "replayId",
            "run",
        ],
    }
}

/// One plan task, as the cross-file rules need it.
#[derive(Debug, Clone)]
pub struct TaskInfo {
    pub index: usize,
    pub id: String,
    pub title: String,
    pub status: String,
    pub dependencies: Vec<String>,
    /// Span of the task's `id` value (or of the task when it has none).
    pub span: Span,
}

impl TaskInfo {
    /// Status lower-cased and trimmed (`Completed` is `completed`).
    pub fn status_norm(&self) -> String {
        self.status.trim().to_lowercase()
    }
}

/// The plan's tasks in order, with an index by id.
#[derive(Debug, Clone, Default)]
pub struct PlanIndex {
    pub tasks: Vec<TaskInfo>,
    pub ids: HashSet<String>,
}

impl PlanIndex {
    pub fn from_plan(plan: Option<&Node>) -> PlanIndex {
        let mut idx = PlanIndex::default();
        let Some(tasks) = plan.and_then(|p| p.get("tasks")).and_then(Node::as_seq) else {
            return idx;
        };
        for (i, t) in tasks.iter().enumerate() {
            if t.as_map().is_none() {
                continue;
            }
            let id = trimmed_text(t.get("id"));
            let dependencies = t
                .get("dependencies")
                .and_then(Node::as_seq)
                .map(|deps| {
                    deps.iter()
                        .filter_map(scalar_text)
                        .map(|s| s.trim().to_string())
                        .collect()
                })
                .unwrap_or_default();
            let span = t.get("id").map_or(t.span, |n| n.span);
            if !id.is_empty() {
                idx.ids.insert(id.clone());
            }
            idx.tasks.push(TaskInfo {
                index: i,
                id,
                title: trimmed_text(t.get("title")),
                status: trimmed_text(t.get("status")),
                dependencies,
                span,
            });
        }
        idx
    }

    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Up to `limit` plan ids that contain, or are contained in, `id`; else equal ignoring
    /// case. Used for "did you mean" hints.
    pub fn closest(&self, id: &str, limit: usize) -> Vec<String> {
        let mut m: Vec<String> = self
            .tasks
            .iter()
            .filter(|t| !t.id.is_empty() && (t.id.contains(id) || id.contains(t.id.as_str())))
            .map(|t| t.id.clone())
            .collect();
        if m.is_empty() {
            m = self
                .tasks
                .iter()
                .filter(|t| !t.id.is_empty() && t.id.eq_ignore_ascii_case(id))
                .map(|t| t.id.clone())
                .collect();
        }
        m.sort();
        m.dedup();
        m.truncate(limit);
        m
    }
}

/// The handoff's replayId value (trimmed), which scopes S2 to the current run.
pub fn handoff_replay_scope(handoff: Option<&Node>) -> String {
    trimmed_text(
        handoff
            .and_then(|h| h.get("replayId"))
            .and_then(|r| r.get("value")),
    )
}

// ---------------------------------------------------------------------------------------
// Per-file rules

/// Rules every artifact shares: a mapping at the top, version, owner, known keys.
fn check_common(kind: ArtifactKind, root: &Node, out: &mut Vec<Diagnostic>) -> bool {
    if root.as_map().is_none() {
        out.push(
            diag(
                "SHAPE",
                kind,
                Some(root.span),
                "",
                format!(
                    "the top level must be a mapping, found {}",
                    root.type_name()
                ),
            )
            .with_help(format!(
                "start the file with `small_version: \"{PROTOCOL_VERSION}\"`"
            )),
        );
        return false;
    }
    match root.get("small_version") {
        Some(v) if v.as_str() == Some(PROTOCOL_VERSION) => {}
        Some(v) => out.push(
            diag(
                "INV5",
                kind,
                Some(v.span),
                "/small_version",
                format!(
                    "small_version must be the string \"{PROTOCOL_VERSION}\", found {}",
                    show(v)
                ),
            )
            .with_help(format!("write `small_version: \"{PROTOCOL_VERSION}\"`")),
        ),
        None => out.push(
            diag(
                "INV5",
                kind,
                Some(root.span),
                "/small_version",
                "small_version is missing".into(),
            )
            .with_help(format!("add `small_version: \"{PROTOCOL_VERSION}\"`")),
        ),
    }
    let want = kind.owner();
    match root.get("owner") {
        Some(o) if o.as_str() == Some(want) => {}
        other => {
            let found = other.map_or("nothing".to_string(), show);
            out.push(
                diag(
                    "OWN",
                    kind,
                    Some(other.map_or(root.span, |o| o.span)),
                    "/owner",
                    format!(
                        "owner of the {} artifact must be \"{want}\", found {found}",
                        kind.name()
                    ),
                )
                .with_help(format!("write `owner: \"{want}\"`")),
            );
        }
    }
    let allowed = allowed_keys(kind);
    for e in root.as_map().unwrap_or(&[]) {
        if !allowed.contains(&e.key.as_str()) {
            out.push(
                diag(
                    "KEYS",
                    kind,
                    Some(e.key_span),
                    &format!("/{}", escape_pointer(&e.key)),
                    format!(
                        "unknown top-level key `{}` in the {} artifact",
                        e.key,
                        kind.name()
                    ),
                )
                .with_help(format!("allowed keys: {}", allowed.join(", "))),
            );
        }
    }
    true
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

fn need(
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

fn is_seq(n: Option<&Node>) -> bool {
    n.is_some_and(|n| n.as_seq().is_some())
}

fn check_intent(root: &Node, out: &mut Vec<Diagnostic>) {
    let k = ArtifactKind::Intent;
    need(
        out,
        k,
        root,
        root,
        "/intent",
        non_empty_str(root.get("intent")),
        "a non-empty string",
    );
    let Some(scope) = root.get("scope").filter(|s| s.as_map().is_some()) else {
        need(
            out,
            k,
            root,
            root,
            "/scope",
            false,
            "a mapping with `include` and `exclude` lists",
        );
        return;
    };
    need(
        out,
        k,
        root,
        scope,
        "/scope/include",
        is_seq(scope.get("include")),
        "a list",
    );
    need(
        out,
        k,
        root,
        scope,
        "/scope/exclude",
        is_seq(scope.get("exclude")),
        "a list",
    );
    need(
        out,
        k,
        root,
        root,
        "/success_criteria",
        is_seq(root.get("success_criteria")),
        "a list",
    );
}

/// Report ids that occur more than once in a list of mappings.
fn check_unique_ids(kind: ArtifactKind, list: &str, items: &[Node], out: &mut Vec<Diagnostic>) {
    let mut first: HashMap<String, usize> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let Some(idn) = item.get("id") else { continue };
        let Some(id) = idn.as_str().map(str::trim).filter(|s| !s.is_empty()) else {
            continue;
        };
        if let Some(&j) = first.get(id) {
            out.push(
                diag(
                    "DUP",
                    kind,
                    Some(idn.span),
                    &format!("/{list}/{i}/id"),
                    format!("duplicate id \"{id}\": {list}[{i}] repeats the id of {list}[{j}]"),
                )
                .with_help("give every item its own id"),
            );
        } else {
            first.insert(id.to_string(), i);
        }
    }
}

fn check_constraints(root: &Node, out: &mut Vec<Diagnostic>) {
    let k = ArtifactKind::Constraints;
    let items = root
        .get("constraints")
        .and_then(Node::as_seq)
        .filter(|s| !s.is_empty());
    let Some(items) = items else {
        need(
            out,
            k,
            root,
            root,
            "/constraints",
            false,
            "a non-empty list",
        );
        return;
    };
    for (i, it) in items.iter().enumerate() {
        let p = format!("/constraints/{i}");
        if it.as_map().is_none() {
            need(out, k, root, root, &p, false, "a mapping");
            continue;
        }
        need(
            out,
            k,
            root,
            it,
            &format!("{p}/id"),
            non_empty_str(it.get("id")),
            "a non-empty string",
        );
        need(
            out,
            k,
            root,
            it,
            &format!("{p}/rule"),
            non_empty_str(it.get("rule")),
            "a non-empty string",
        );
        let sev_ok = matches!(
            it.get("severity").and_then(Node::as_str),
            Some("error" | "warn")
        );
        need(
            out,
            k,
            root,
            it,
            &format!("{p}/severity"),
            sev_ok,
            "\"error\" or \"warn\"",
        );
    }
    check_unique_ids(k, "constraints", items, out);
}

fn check_plan(root: &Node, out: &mut Vec<Diagnostic>) {
    let k = ArtifactKind::Plan;
    let Some(tasks) = root
        .get("tasks")
        .and_then(Node::as_seq)
        .filter(|s| !s.is_empty())
    else {
        need(out, k, root, root, "/tasks", false, "a non-empty list");
        return;
    };
    for (i, t) in tasks.iter().enumerate() {
        let p = format!("/tasks/{i}");
        if t.as_map().is_none() {
            need(out, k, root, root, &p, false, "a mapping");
            continue;
        }
        need(
            out,
            k,
            root,
            t,
            &format!("{p}/id"),
            non_empty_str(t.get("id")),
            "a non-empty string",
        );
        need(
            out,
            k,
            root,
            t,
            &format!("{p}/title"),
            non_empty_str(t.get("title")),
            "a non-empty string",
        );
    }
    check_unique_ids(k, "tasks", tasks, out);
}

fn check_handoff(root: &Node, out: &mut Vec<Diagnostic>) {
    let k = ArtifactKind::Handoff;
    need(
        out,
        k,
        root,
        root,
        "/summary",
        non_empty_str(root.get("summary")),
        "a non-empty string",
    );
    let Some(resume) = root.get("resume").filter(|r| r.as_map().is_some()) else {
        need(out, k, root, root, "/resume", false, "a mapping");
        return;
    };
    if let Some(cur) = resume.get("current_task_id") {
        match &cur.value {
            Value::Null => {}
            Value::Str(s) if s.trim().is_empty() => out.push(
                diag(
                    "SHAPE",
                    k,
                    Some(cur.span),
                    "/resume/current_task_id",
                    "resume.current_task_id must not be an empty string".into(),
                )
                .with_help("name a plan task, or write `current_task_id: null`"),
            ),
            Value::Str(_) => {}
            _ => need(
                out,
                k,
                root,
                resume,
                "/resume/current_task_id",
                false,
                "a string or null",
            ),
        }
    }
    need(
        out,
        k,
        root,
        resume,
        "/resume/next_steps",
        is_seq(resume.get("next_steps")),
        "a list",
    );
    need(
        out,
        k,
        root,
        root,
        "/links",
        is_seq(root.get("links")),
        "a list",
    );
}

// ---------------------------------------------------------------------------------------
// Progress, entry by entry

/// What the cross-file rules need to know about the progress log.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProgressFacts {
    /// Task ids (trimmed) that have at least one entry.
    pub with_entries: HashSet<String>,
    /// Task ids with an entry carrying non-empty `evidence` or `notes` (S1's notion).
    pub with_strict_evidence: HashSet<String>,
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
    /// When set, timestamps are recorded here instead of being compared with the previous
    /// entry's (a part of the log checked apart from the rest; see [`check_order`]).
    deferred: Option<Vec<Stamp>>,
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
            deferred: None,
            facts_only: false,
            facts: ProgressFacts::default(),
            diags: Vec::new(),
        }
    }

    /// Record each entry's timestamp in [`ProgressLinter::stamps`] rather than checking the
    /// order (for a part of the log checked apart from the entries before it).
    /// `expected`: about how many entries will be checked (the room reserved).
    pub fn defer_order(mut self, expected: usize) -> Self {
        self.deferred = Some(Vec::with_capacity(expected));
        self
    }

    /// The recorded timestamps (with [`ProgressLinter::defer_order`]).
    pub fn take_stamps(&mut self) -> Vec<Stamp> {
        self.deferred
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
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
            let prefix = format!("/entries/{i}");
            check_secrets_at(ArtifactKind::Progress, e, &prefix, strict, &mut self.diags);
            check_links_at(ArtifactKind::Progress, e, &prefix, strict, &mut self.diags);
        }
    }

    fn diagnose(&mut self, i: usize, e: &Node) {
        let k = ArtifactKind::Progress;
        let base = format!("/entries/{i}");
        if e.as_map().is_none() {
            self.diags.push(diag(
                "SHAPE",
                k,
                Some(e.span),
                &base,
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
                    &format!("{base}/task_id"),
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
            diag("TS", k, ts_span, &format!("{base}/timestamp"), why).with_help(TS_HELP)
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
                Ok(t) => match self.deferred.as_mut() {
                    Some(stamps) => stamps.push(Stamp {
                        index: i,
                        at: t,
                        span: ts_node.map_or(e.span, |n| n.span),
                    }),
                    None => order_step(
                        &mut self.prev,
                        i,
                        t,
                        ts_text,
                        ts_node.map_or(e.span, |n| n.span),
                        &mut self.diags,
                    ),
                },
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
                    &base,
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
        let strict_evidence =
            [e.get("evidence"), e.get("notes")]
                .into_iter()
                .any(|n| match n.map(|n| &n.value) {
                    None | Some(Value::Null) => false,
                    Some(Value::Str(s)) => !s.trim().is_empty(),
                    Some(_) => true,
                });
        if strict_evidence && !self.facts.with_strict_evidence.contains(task_id) {
            self.facts.with_strict_evidence.insert(task_id.to_string());
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

/// A valid timestamp of one entry, recorded for a later order check (its text is read back
/// from the source at `span` when it is reported).
#[derive(Debug, Clone)]
pub struct Stamp {
    pub index: usize,
    pub at: Instant,
    pub span: Span,
}

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

/// The TS ordering rule over timestamps recorded apart (see [`ProgressLinter::defer_order`]),
/// in log order, continuing from `prev`: exactly what checking them in one pass reports.
/// `text_of`: the timestamp's text (only asked for those reported).
pub fn check_order(
    stamps: impl IntoIterator<Item = Stamp>,
    prev: &mut Option<(Instant, usize)>,
    out: &mut Vec<Diagnostic>,
    text_of: &dyn Fn(&Stamp) -> String,
) {
    for s in stamps {
        match *prev {
            Some((p, _)) if s.at <= p => order_step(prev, s.index, s.at, &text_of(&s), s.span, out),
            _ => *prev = Some((s.at, s.index)),
        }
    }
}

const TS_HELP: &str = "write RFC 3339 with fractional seconds, later than the previous entry, e.g. \"2026-01-02T15:04:05.123456Z\"";

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
fn check_progress_header<'n>(root: &'n Node, out: &mut Vec<Diagnostic>) -> Option<&'n [Node]> {
    let k = ArtifactKind::Progress;
    match root.get("entries").and_then(Node::as_seq) {
        Some(s) => Some(s),
        None => {
            need(out, k, root, root, "/entries", false, "a list");
            None
        }
    }
}

// ---------------------------------------------------------------------------------------
// Cross-file strict rules

/// S1: every completed or blocked plan task has a progress entry with `evidence` or `notes`.
pub fn check_s1(plan: &PlanIndex, facts: &ProgressFacts, out: &mut Vec<Diagnostic>) {
    for t in &plan.tasks {
        let st = t.status_norm();
        if t.id.is_empty() || (st != "completed" && st != "blocked") {
            continue;
        }
        if facts.with_strict_evidence.contains(&t.id) {
            continue;
        }
        let why = if facts.with_entries.contains(&t.id) {
            "its progress entries have no `evidence` or `notes`"
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
    for (i, id, span) in &facts.s2_offenders {
        let closest = plan.closest(id, 3);
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

// ---------------------------------------------------------------------------------------
// Secrets and links

fn severity(strict: bool) -> Severity {
    if strict {
        Severity::Error
    } else {
        Severity::Warning
    }
}

/// INV1: secrets in one artifact.
pub fn check_secrets(kind: ArtifactKind, root: &Node, strict: bool, out: &mut Vec<Diagnostic>) {
    check_secrets_at(kind, root, "", strict, out);
}

/// INV1 on a node found at JSON pointer `prefix` (a progress entry while streaming).
pub fn check_secrets_at(
    kind: ArtifactKind,
    node: &Node,
    prefix: &str,
    strict: bool,
    out: &mut Vec<Diagnostic>,
) {
    for hit in crate::gates::secrets::scan_node(node, prefix) {
        let mut d = diag(
            "INV1",
            kind,
            Some(hit.span),
            &hit.path,
            format!("possible secret at {}: {}", display(&hit.path), hit.what),
        )
        .with_help("remove it and rotate the credential; keep secrets outside .small/");
        d.severity = severity(strict);
        out.push(d);
    }
}

const LOCAL_HTTP: [&str; 4] = [
    "http://localhost",
    "http://127.0.0.1",
    "http://0.0.0.0",
    "http://[::1]",
];

/// The first `http://` URL with a host in a string (IPv6 brackets kept together).
pub fn insecure_urls(s: &str) -> Vec<&str> {
    let mut urls = Vec::new();
    let mut from = 0;
    while let Some(rel) = s[from..].find("http://") {
        let start = from + rel;
        let rest = &s[start..];
        let mut end = rest.len();
        let mut bracket = false;
        for (i, c) in rest.char_indices() {
            match c {
                '[' => bracket = true,
                ']' => bracket = false,
                ' ' | '\t' | '\n' | '\r' | '"' | '\'' | '>' if !bracket => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let url = &rest[..end];
        let host = &url["http://".len()..];
        if !host.is_empty() && !host.starts_with('/') {
            urls.push(url);
        }
        from = start + "http://".len();
    }
    urls
}

/// LINK: non-local `http://` links (localhost allowed in progress only, as the reference).
pub fn check_links(kind: ArtifactKind, root: &Node, strict: bool, out: &mut Vec<Diagnostic>) {
    check_links_at(kind, root, "", strict, out);
}

/// LINK on a node found at JSON pointer `prefix`.
pub fn check_links_at(
    kind: ArtifactKind,
    node: &Node,
    prefix: &str,
    strict: bool,
    out: &mut Vec<Diagnostic>,
) {
    let allow_local = kind == ArtifactKind::Progress;
    let mut path = prefix.to_string();
    walk_strings(node, &mut path, &mut |p, node, s| {
        if !s.contains("http://") {
            return;
        }
        if let Some(url) = insecure_urls(s)
            .into_iter()
            .find(|u| !(allow_local && LOCAL_HTTP.iter().any(|l| u.starts_with(l))))
        {
            let mut d = diag(
                "LINK",
                kind,
                Some(node.span),
                p,
                format!("insecure link {url} at {}", display(p)),
            )
            .with_help(if allow_local {
                "use https:// (http://localhost and loopback addresses are fine in progress)"
            } else {
                "use https://"
            });
            d.severity = severity(strict);
            out.push(d);
        }
    });
}

fn walk_strings(node: &Node, path: &mut String, f: &mut dyn FnMut(&str, &Node, &str)) {
    match &node.value {
        Value::Str(s) => f(path, node, s),
        Value::Seq(items) => {
            for (i, it) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk_strings(it, path, f);
                path.truncate(len);
            }
        }
        Value::Map(entries) => {
            for e in entries {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(&e.key));
                walk_strings(&e.value, path, f);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// FMT: `small_version` should be written as a double-quoted string. `None` if fine.
pub fn version_format_drift(file: &str, root: &Node) -> Option<Diagnostic> {
    let v = root.get("small_version")?;
    if v.style == Style::DoubleQuoted {
        return None;
    }
    let how = match v.style {
        Style::SingleQuoted => "single-quoted",
        Style::Plain => "unquoted",
        _ => "not a double-quoted string",
    };
    let mut d = Diagnostic::warning(
        "FMT",
        format!("small_version is {how}; write it as \"{PROTOCOL_VERSION}\""),
    )
    .in_file(file)
    .at(Some(v.span))
    .with_path("/small_version")
    .with_help("small fix --versions");
    d.severity = Severity::Warning;
    Some(d)
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
        if !check_common(kind, root, &mut out) {
            continue;
        }
        match kind {
            ArtifactKind::Intent => check_intent(root, &mut out),
            ArtifactKind::Constraints => check_constraints(root, &mut out),
            ArtifactKind::Plan => check_plan(root, &mut out),
            ArtifactKind::Handoff => check_handoff(root, &mut out),
            ArtifactKind::Progress => {
                if let Some(sl) = streamed.take() {
                    check_progress_header(root, &mut out);
                    out.extend(sl.diags);
                    facts = Some(sl.facts);
                } else if let Some(entries) = check_progress_header(root, &mut out) {
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

/// The evidence gate (`verify`): every completed plan task has at least one progress entry.
/// In strict mode S1 already covers it with a stronger requirement.
pub fn check_evidence_gate(plan: &PlanIndex, facts: &ProgressFacts, out: &mut Vec<Diagnostic>) {
    for t in &plan.tasks {
        if t.id.is_empty() || t.status_norm() != "completed" || facts.with_entries.contains(&t.id) {
            continue;
        }
        out.push(
            diag(
                "GATE",
                ArtifactKind::Plan,
                Some(t.span),
                &format!("/tasks/{}/id", t.index),
                format!("task \"{}\" is completed but no progress entry records it", t.id),
            )
            .with_help(format!(
                "record the work: small progress add --task {} --status completed --evidence \"...\"",
                t.id
            )),
        );
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
