//! The handoff (the resume entrypoint) and run metadata.
//!
//! * Resume state is computed from the plan and a strict check of the workspace, as the
//!   reference does: a strict failure or an explicitly blocked task with nothing runnable
//!   gives a *blocked* run (`meta/blocker` when the strict check is what blocks), all tasks
//!   completed gives a *complete* run, otherwise the next runnable task (an `in_progress`
//!   task, else the first pending task whose dependencies are all completed).
//! * The handoff operations themselves (mid-run and final handoffs, start, reset) are in
//!   `crate::authoring::session`.
//! * The replayId is the workspace's `run.replay_id` if set, else the hash of intent, plan
//!   and constraints (`crate::spec::replayid`), or a manual one (64 hex digits, stored lower case).
//! * An existing handoff is edited in place (`crate::authoring::edit`): comments, links and other keys
//!   a human wrote stay; a missing or unreadable one is written fresh.
//! * `workspace.small.yml` carries the run identity (`run.replay_id`) and `updated_at`,
//!   both updated in place by [`touch_workspace`].

use crate::spec::model::TaskStatus;
use crate::spec::model::{HANDOFF_REPLAY_ID_POINTER, RUN_REPLAY_ID_POINTER};
use crate::workspace::error::{code, Error};
use std::str::FromStr;

use crate::authoring::edit::{self, NewValue};
use crate::authoring::plan::Task;
use crate::authoring::snapshot::Artifacts;
use crate::diag::Severity;
use crate::gates::schemas::SchemaSet;
use crate::spec::consts::{ArtifactKind, PROTOCOL_VERSION, SMALL_DIR, WORKSPACE_FILE};
use crate::workspace::txn::{Transaction, TxnError};
use crate::workspace::{Scope, WorkspaceKind};
use crate::yaml::{self, Document, Limits, Node, Style};

/// Workspace-relative path of the workspace metadata.
pub fn workspace_rel() -> String {
    crate::spec::consts::small_rel(WORKSPACE_FILE)
}

/// Workspace-relative path of the handoff.
pub fn handoff_rel() -> String {
    ArtifactKind::Handoff.rel_path()
}

fn artifact_rel(kind: ArtifactKind) -> String {
    kind.rel_path()
}

/// How many next steps a handoff lists at most.
pub const NEXT_STEPS_LIMIT: usize = 3;

/// Parse a file as the transaction sees it. `Ok(None)` if it does not exist.
pub fn parse_file(txn: &Transaction, rel: &str) -> Result<Option<Document>, TxnError> {
    crate::authoring::snapshot::parse_read(rel, txn.read(rel)?)
}

/// Enforce `--workspace` for `small <command>`: like [`check_scope`], and `examples` is a
/// `usage` error for the commands that only run on a repository-root workspace
/// (`examples_allowed` false: plan, handoff, start, reset).
pub fn check_command_scope(
    txn: &Transaction,
    scope: Scope,
    command: &str,
    examples_allowed: bool,
) -> Result<(), Error> {
    check_command_scope_in(txn, &Artifacts::new(), scope, command, examples_allowed)
}

/// [`check_command_scope`], reading workspace metadata through the operation's snapshot (so
/// the operation that follows does not read it again).
pub fn check_command_scope_in(
    txn: &Transaction,
    snap: &Artifacts,
    scope: Scope,
    command: &str,
    examples_allowed: bool,
) -> Result<(), Error> {
    if scope == Scope::Examples && !examples_allowed {
        return Err(Error::usage(
            code::USAGE,
            format!("--workspace examples is not supported by `small {command}`"),
        )
        .with_help("use --workspace any to run it on an examples workspace"));
    }
    check_scope_in(txn, snap, scope)
}

/// Enforce `--workspace` against `workspace.small.yml`'s kind: a refusal is `WS` (the code
/// of the gate that checks the same), with the fix as help.
pub fn check_scope(txn: &Transaction, scope: Scope) -> Result<(), Error> {
    check_scope_in(txn, &Artifacts::new(), scope)
}

/// [`check_scope`], reading workspace metadata through the operation's snapshot.
fn check_scope_in(txn: &Transaction, snap: &Artifacts, scope: Scope) -> Result<(), Error> {
    if scope == Scope::Any {
        return Ok(());
    }
    let rel = workspace_rel();
    let refuse = |message: String, help: String| {
        Error::invalid(code::SCOPE, message)
            .in_file(rel.clone())
            .with_help(help)
    };
    let Some(doc) = snap.parse(txn, &rel)? else {
        return Err(refuse(
            format!("workspace metadata {rel} is missing"),
            "create it with `small fix workspace` (or pass --workspace any)".into(),
        ));
    };
    let kind = doc.root.get("kind").and_then(Node::as_str).unwrap_or("");
    match WorkspaceKind::from_str(kind) {
        Ok(k) if scope.allows(k) => Ok(()),
        Ok(k) => Err(refuse(
            format!(
                "workspace kind \"{}\" is not allowed with --workspace {scope}",
                k.as_str()
            ),
            format!("pass --workspace {} or --workspace any", k.scope_name()),
        )
        .at(doc.root.get("kind").map(|n| n.span))),
        Err(()) => Err(refuse(
            format!("{rel} has kind {kind:?}, which is not a workspace kind"),
            "use repo-root or examples; `small fix workspace --force` rewrites it".into(),
        )),
    }
}

/// The current run's replay id (`run.replay_id` in workspace metadata), if set.
pub fn run_replay_id(txn: &Transaction) -> Result<Option<String>, TxnError> {
    run_replay_id_in(txn, &Artifacts::new())
}

/// [`run_replay_id`], reading workspace metadata through the operation's snapshot.
pub fn run_replay_id_in(txn: &Transaction, snap: &Artifacts) -> Result<Option<String>, TxnError> {
    let Some(doc) = snap.parse(txn, &workspace_rel())? else {
        return Ok(None);
    };
    Ok(doc
        .root
        .pointer(RUN_REPLAY_ID_POINTER)
        .and_then(Node::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string))
}

/// Now, as written into metadata timestamps (RFC 3339 UTC, nanoseconds).
pub fn now_text() -> String {
    crate::spec::timestamp::format_utc(crate::authoring::progress::now())
}

/// Set `updated_at` to now and, when given, `run.replay_id`, editing workspace metadata in
/// place. Does nothing when the file does not exist. Returns whether anything was staged.
pub fn touch_workspace(txn: &mut Transaction, replay_id: Option<&str>) -> Result<bool, TxnError> {
    touch_workspace_in(txn, &Artifacts::new(), replay_id)
}

/// [`touch_workspace`], reading workspace metadata through the operation's snapshot.
pub fn touch_workspace_in(
    txn: &mut Transaction,
    snap: &Artifacts,
    replay_id: Option<&str>,
) -> Result<bool, TxnError> {
    let rel = workspace_rel();
    let Some(doc) = snap.parse(txn, &rel)? else {
        return Ok(false);
    };
    if doc.root.as_map().is_none() || doc.root.style == Style::Flow {
        return Ok(false);
    }
    let mut src = doc.source.clone();
    let mut changes: Vec<(Vec<&str>, NewValue)> = vec![(
        vec!["updated_at"],
        NewValue::Scalar(edit::quote(&now_text())),
    )];
    if let Some(id) = replay_id {
        let current = doc
            .root
            .pointer(RUN_REPLAY_ID_POINTER)
            .and_then(Node::as_str)
            .map(str::trim);
        if current != Some(id) {
            changes.push((vec!["run", "replay_id"], NewValue::Scalar(edit::quote(id))));
        }
    }
    for (path, value) in changes {
        src = set_path(&src, &path, &value).map_err(|e| {
            TxnError::invalid(code::UNEDITABLE, format!("cannot update {rel}: {e}"))
        })?;
    }
    txn.write(rel, src.into_bytes());
    Ok(true)
}

/// Set `a.b.c` in a block-mapping document, creating missing intermediate mappings.
pub fn set_path(src: &str, path: &[&str], value: &NewValue) -> Result<String, String> {
    let doc = yaml::parse_str(src, &Limits::default()).map_err(|e| e.to_string())?;
    let mut node = &doc.root;
    for (i, key) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        match node.get(key) {
            Some(child) if !last && child.as_map().is_some() && child.style != Style::Flow => {
                node = child
            }
            Some(_) | None if last => {
                let e = edit::set_key(src, node, key, value).map_err(|e| e.to_string())?;
                return edit::apply(src, vec![e]).map_err(|e| e.to_string());
            }
            _ => {
                // Build the rest of the path as a nested block under this key.
                let mut lines = Vec::new();
                let rest = &path[i + 1..];
                for (depth, k) in rest.iter().enumerate() {
                    let pad = "  ".repeat(depth);
                    if depth + 1 == rest.len() {
                        match value {
                            NewValue::Scalar(s) => lines.push(format!("{pad}{k}: {s}")),
                            _ => return Err("nested block values are not supported here".into()),
                        }
                    } else {
                        lines.push(format!("{pad}{k}:"));
                    }
                }
                let e = edit::set_key(src, node, key, &NewValue::Block(lines))
                    .map_err(|e| e.to_string())?;
                return edit::apply(src, vec![e]).map_err(|e| e.to_string());
            }
        }
    }
    Err("empty path".into())
}

/// The auto replay id of the artifacts as the transaction sees them.
pub fn auto_replay_id(txn: &Transaction) -> Result<String, TxnError> {
    auto_replay_id_in(txn, &Artifacts::new())
}

/// [`auto_replay_id`], reading the artifacts through the operation's snapshot.
pub fn auto_replay_id_in(txn: &Transaction, snap: &Artifacts) -> Result<String, TxnError> {
    let need = |k: ArtifactKind| -> Result<Vec<u8>, TxnError> {
        let rel = artifact_rel(k);
        snap.read(txn, &rel)?.ok_or_else(|| {
            TxnError::invalid(
                code::MISSING,
                format!("cannot compute the replayId: {rel} is missing"),
            )
        })
    };
    let intent = need(ArtifactKind::Intent)?;
    let plan = need(ArtifactKind::Plan)?;
    let constraints = snap.read(txn, &artifact_rel(ArtifactKind::Constraints))?;
    Ok(crate::spec::replayid::auto_replay_id(
        &intent,
        &plan,
        constraints.as_deref(),
    ))
}

/// The run's replay id; when workspace metadata exists without one, compute the auto id
/// and record it. `None` when there is no workspace metadata.
pub fn ensure_run_replay_id(txn: &mut Transaction) -> Result<Option<String>, TxnError> {
    if let Some(id) = run_replay_id(txn)? {
        return Ok(Some(id));
    }
    if !txn.exists(&workspace_rel()) {
        return Ok(None);
    }
    let id = auto_replay_id(txn)?;
    touch_workspace(txn, Some(&id))?;
    Ok(Some(id))
}

/// Bind a progress entry to the current run (adds `replayId` unless it has one).
pub fn attach_replay_id(
    txn: &Transaction,
    entry: &mut crate::authoring::progress::NewEntry,
) -> Result<(), TxnError> {
    if !entry.has("replayId") {
        if let Some(id) = run_replay_id(txn)? {
            entry.set("replayId", id);
        }
    }
    Ok(())
}

/// A replayId and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReplayId {
    pub value: String,
    /// `auto` or `manual`.
    pub source: String,
}

/// Check and normalise a `--replay-id` value.
pub fn manual_replay_id(s: &str) -> Result<ReplayId, String> {
    let t = s.trim();
    if crate::spec::replayid::is_well_formed(t) {
        Ok(ReplayId {
            value: t.to_ascii_lowercase(),
            source: "manual".into(),
        })
    } else {
        Err(format!(
            "invalid --replay-id {s:?}: a replayId is exactly 64 hexadecimal digits"
        ))
    }
}

/// `run:` metadata of a handoff.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunMeta {
    pub created_at: String,
    pub transition_reason: String,
    pub previous_replay_id: Option<String>,
}

/// What an existing handoff holds that a new one may keep.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Existing {
    pub summary: Option<String>,
    pub replay_id: Option<ReplayId>,
}

/// Read the existing handoff (`Ok(None)` if there is none).
pub fn existing(txn: &Transaction) -> Result<Option<Existing>, TxnError> {
    let Some(doc) = parse_file(txn, &handoff_rel())? else {
        return Ok(None);
    };
    let summary = doc
        .root
        .get("summary")
        .and_then(Node::as_str)
        .map(str::to_string);
    let replay_id = doc.root.get("replayId").and_then(|r| {
        let v = r.get("value").and_then(Node::as_str)?.trim().to_string();
        if !crate::spec::replayid::is_well_formed(&v) {
            return None;
        }
        let s = r
            .get("source")
            .and_then(Node::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("auto");
        Some(ReplayId {
            value: v.to_ascii_lowercase(),
            source: s.to_string(),
        })
    });
    Ok(Some(Existing { summary, replay_id }))
}

/// The result of the strict check the resume state depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strict {
    pub ok: bool,
    /// The first problem, in one line, when not ok.
    pub summary: String,
    /// When the whole progress log was read by the line-level fast path (one-line scalars in
    /// block mappings, nothing after the entries): the task ids its entries name. Every line
    /// opening an item at the sequence's indentation then starts an entry, so a reader may
    /// start at any such line, and a task not named here has no entry at all
    /// ([`crate::authoring::activity::scan_tail`]).
    pub log_tasks: Option<crate::spec::plan::TaskSet>,
}

/// The strict check of `small check --strict` (validate, lint with S1-S4, verify), run on the
/// workspace as the transaction sees it (staged files included). The handoff may be missing;
/// any other missing artifact is an error.
pub fn strict_check(txn: &Transaction) -> Result<Strict, TxnError> {
    strict_check_in(txn, &Artifacts::new())
}

/// [`strict_check`], answering which files exist and what is staged through the operation's
/// snapshot. (The gates load the files themselves, as `small check --strict` does.)
pub fn strict_check_in(txn: &Transaction, snap: &Artifacts) -> Result<Strict, TxnError> {
    use crate::gates::check::{load_overlay, run_check, GateOptions};
    use crate::workspace::Location;
    for kind in ArtifactKind::ALL {
        let rel = artifact_rel(kind);
        if kind != ArtifactKind::Handoff && !snap.exists(txn, &rel) {
            return Err(TxnError::invalid(code::MISSING, format!(
                "cannot work out the resume state: {rel} is missing (restore it, or run `small start` to create missing files)"
            )));
        }
    }
    let loc = Location {
        root: txn.root().to_path_buf(),
        small_dir: txn.root().join(SMALL_DIR),
    };
    let overlay = |rel: &str| {
        if txn.is_staged(rel) {
            snap.read(txn, rel).ok().flatten()
        } else {
            None
        }
    };
    let mut kinds = ArtifactKind::ALL.to_vec();
    if !snap.exists(txn, &handoff_rel()) {
        kinds.retain(|k| *k != ArtifactKind::Handoff);
    }
    let gate = GateOptions {
        strict: true,
        scope: Scope::Any,
        // The progress log is streamed, and resumed from the gates' cache when unchanged.
        cache: true,
        ..GateOptions::default()
    };
    let schemas = SchemaSet::embedded();
    // The log is read from its file, followed by what this transaction appends to it.
    let log = txn.staged(&ArtifactKind::Progress.rel_path());
    let loaded = load_overlay(loc, Some(&schemas), &gate, &overlay, log, &kinds);
    // The state has the log's facts exactly when the log was loaded.
    let log_tasks = match (&loaded.streamed, &loaded.state.log) {
        (Some(s), Some(facts)) => {
            use crate::gates::progress_check::Method;
            matches!(
                s.method,
                Some(
                    Method::Sequential
                        | Method::Parallel(_)
                        | Method::Resumed(_)
                        | Method::Streamed(_)
                )
            )
            .then(|| facts.with_entries.clone())
        }
        _ => None,
    };
    let report = run_check(&loaded, &schemas, &gate);
    match report
        .diagnostics
        .iter()
        .map(|(_, d)| d)
        .find(|d| d.severity == Severity::Error)
    {
        Some(d) => Ok(Strict {
            ok: false,
            summary: one_line(d),
            log_tasks,
        }),
        None => Ok(Strict {
            ok: true,
            summary: String::new(),
            log_tasks,
        }),
    }
}

fn one_line(d: &crate::diag::Diagnostic) -> String {
    match &d.file {
        Some(f) => format!("{f}: {}", d.message),
        None => d.message.clone(),
    }
}

/// Overall state of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Complete,
    Blocked,
    InProgress,
}

/// The resume part of a handoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub status: RunStatus,
    pub summary: String,
    pub current_task_id: Option<String>,
    pub next_steps: Vec<String>,
}

fn first_with_status(tasks: &[Task], status: &str) -> Option<String> {
    tasks
        .iter()
        .find(|t| t.effective_status() == status)
        .map(|t| t.id.clone())
        .filter(|s| !s.is_empty())
}

/// Pending tasks whose dependencies are all completed, in plan order.
pub fn actionable(tasks: &[Task], limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for t in tasks {
        if t.effective_status() != TaskStatus::Pending.as_str() {
            continue;
        }
        let ok = t.dependencies.iter().all(|d| {
            tasks
                .iter()
                .find(|x| &x.id == d)
                .is_some_and(|x| matches!(x.effective_status(), "completed" | "cancelled"))
        });
        if ok {
            out.push(t.id.clone());
            if limit > 0 && out.len() >= limit {
                break;
            }
        }
    }
    out
}

/// The task to work on now: an in-progress task, else the first actionable one.
pub fn next_runnable(tasks: &[Task]) -> Option<String> {
    first_with_status(tasks, TaskStatus::InProgress.as_str())
        .or_else(|| actionable(tasks, 1).into_iter().next())
}

/// Every task there is to work on, in the order [`next_runnable`] picks from: those in
/// progress, then the actionable ones, in plan order.
pub fn runnable(tasks: &[Task]) -> Vec<String> {
    tasks
        .iter()
        .filter(|t| !t.id.is_empty() && t.effective_status() == TaskStatus::InProgress.as_str())
        .map(|t| t.id.clone())
        .chain(actionable(tasks, 0))
        .collect()
}

/// The task to resume at when the tasks in `skip` (ids) are held elsewhere: the next
/// runnable one, unless it is held; then the first runnable task not held, else it anyway.
pub fn next_runnable_skipping(tasks: &[Task], skip: &[String]) -> Option<String> {
    let next = next_runnable(tasks)?;
    if !skip.contains(&next) {
        return Some(next);
    }
    runnable(tasks)
        .into_iter()
        .find(|id| !skip.contains(id))
        .or(Some(next))
}

/// Compute the resume state from the plan's tasks and the strict check.
#[cfg(test)]
pub fn compute_state(tasks: &[Task], strict: &Strict) -> State {
    compute_state_skipping(tasks, strict, &[])
}

/// [`compute_state`] for a checkout that must not resume at the tasks in `skip` (ids: the
/// tasks other agents hold, `small claims`): a run in progress resumes at the first
/// runnable task nobody else holds, or at the held one when every runnable task is held.
pub fn compute_state_skipping(tasks: &[Task], strict: &Strict, skip: &[String]) -> State {
    let blocked = first_with_status(tasks, TaskStatus::Blocked.as_str());
    let runnable = next_runnable_skipping(tasks, skip);
    if !strict.ok || (blocked.is_some() && runnable.is_none()) {
        let mut current = blocked.clone();
        if current.is_none() && !strict.ok {
            current = Some("meta/blocker".into());
        }
        let current = current
            .or_else(|| first_with_status(tasks, TaskStatus::Pending.as_str()))
            .unwrap_or_else(|| "meta/blocker".into());
        let mut steps = Vec::new();
        if current != "meta/blocker" {
            steps.push(format!("Unblock {current}"));
        }
        if !strict.ok {
            if strict.summary.is_empty() {
                steps.push("Resolve strict check failures".into());
            } else {
                steps.push(format!("Resolve strict check failures: {}", strict.summary));
            }
            steps.push("Run: small check --strict".into());
        }
        if steps.is_empty() {
            steps.push("Add plan tasks via small plan --add".into());
        }
        let summary = if current != "meta/blocker" {
            format!("Run blocked on {current}.")
        } else {
            "Run blocked. strict check failed.".into()
        };
        return State {
            status: RunStatus::Blocked,
            summary,
            current_task_id: Some(current),
            next_steps: steps,
        };
    }
    if !tasks.is_empty()
        && tasks
            .iter()
            .all(|t| matches!(t.effective_status(), "completed" | "cancelled"))
    {
        return State {
            status: RunStatus::Complete,
            summary: "Run complete. strict check passed. All plan tasks completed.".into(),
            current_task_id: None,
            next_steps: Vec::new(),
        };
    }
    let next = runnable.unwrap_or_default();
    State {
        status: RunStatus::InProgress,
        summary: format!("Run in progress. Next task: {next}."),
        next_steps: if next.is_empty() {
            Vec::new()
        } else {
            vec![format!("Continue with {next}")]
        },
        current_task_id: Some(next).filter(|s| !s.is_empty()),
    }
}

/// Everything a new handoff says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    pub summary: String,
    pub current_task_id: Option<String>,
    pub next_steps: Vec<String>,
    pub replay_id: ReplayId,
    /// `Some` replaces the `run:` block; `None` keeps an existing one.
    pub run: Option<RunMeta>,
}

fn resume_lines(h: &Handoff) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(c) = &h.current_task_id {
        lines.push(format!("current_task_id: {}", edit::quote(c)));
    }
    if h.next_steps.is_empty() {
        lines.push("next_steps: []".into());
    } else {
        lines.push("next_steps:".into());
        for s in h
            .next_steps
            .iter()
            .take(NEXT_STEPS_LIMIT.max(h.next_steps.len()))
        {
            lines.push(format!("  - {}", edit::quote(s)));
        }
    }
    lines
}

fn replay_lines(r: &ReplayId) -> Vec<String> {
    vec![
        format!("value: {}", edit::quote(&r.value)),
        format!("source: {}", edit::quote(&r.source)),
    ]
}

fn run_lines(r: &RunMeta) -> Vec<String> {
    let mut lines = vec![
        format!("created_at: {}", edit::quote(&r.created_at)),
        format!("transition_reason: {}", edit::quote(&r.transition_reason)),
    ];
    if let Some(p) = &r.previous_replay_id {
        lines.push(format!("previous_replay_id: {}", edit::quote(p)));
    }
    lines
}

/// A complete new handoff file.
pub fn render_fresh(h: &Handoff) -> String {
    let mut out = format!(
        "small_version: \"{PROTOCOL_VERSION}\"\nowner: \"agent\"\nsummary: {}\nresume:\n",
        edit::quote(&h.summary)
    );
    for l in resume_lines(h) {
        out.push_str("  ");
        out.push_str(&l);
        out.push('\n');
    }
    out.push_str("links: []\nreplayId:\n");
    for l in replay_lines(&h.replay_id) {
        out.push_str("  ");
        out.push_str(&l);
        out.push('\n');
    }
    if let Some(r) = &h.run {
        out.push_str("run:\n");
        for l in run_lines(r) {
            out.push_str("  ");
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// The new handoff text: `existing` edited in place when it is a readable block mapping
/// (comments, links and other keys kept), else a fresh file.
pub fn render(h: &Handoff, existing: Option<&str>) -> String {
    let Some(src) = existing else {
        return render_fresh(h);
    };
    // A regenerated handoff is no longer the stale one a merge marked.
    let src = crate::authoring::merge::strip_handoff_mark(src);
    match render_in_place(h, src) {
        Ok(s) => s,
        Err(_) => render_fresh(h),
    }
}

fn render_in_place(h: &Handoff, src: &str) -> Result<String, String> {
    let doc = yaml::parse_str(src, &Limits::default()).map_err(|e| e.to_string())?;
    if doc.root.as_map().is_none()
        || doc.root.style == Style::Flow
        || doc.root.as_map().is_some_and(|m| m.is_empty())
    {
        return Err("not a block mapping".into());
    }
    let mut changes = vec![
        ("summary", NewValue::Scalar(edit::quote(&h.summary))),
        ("resume", NewValue::Block(resume_lines(h))),
        ("replayId", NewValue::Block(replay_lines(&h.replay_id))),
    ];
    if doc.root.get("links").is_none() {
        changes.push(("links", NewValue::Scalar("[]".into())));
    }
    if let Some(r) = &h.run {
        changes.push(("run", NewValue::Block(run_lines(r))));
    }
    let mut text = src.to_string();
    for (key, value) in changes {
        let d = yaml::parse_str(&text, &Limits::default()).map_err(|e| e.to_string())?;
        let e = edit::set_key(&text, &d.root, key, &value).map_err(|e| e.to_string())?;
        text = edit::apply(&text, vec![e]).map_err(|e| e.to_string())?;
    }
    // The result must read back as what we meant to write.
    let check = yaml::parse_str(&text, &Limits::default()).map_err(|e| e.to_string())?;
    let ok = check.root.get("summary").and_then(Node::as_str) == Some(h.summary.as_str())
        && check
            .root
            .pointer(HANDOFF_REPLAY_ID_POINTER)
            .and_then(Node::as_str)
            == Some(h.replay_id.value.as_str());
    if !ok {
        return Err("in-place edit did not read back".into());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, status: &str, deps: &[&str]) -> Task {
        Task {
            id: id.into(),
            title: id.into(),
            status: status.into(),
            dependencies: deps.iter().map(|s| s.to_string()).collect(),
        }
    }
    const OK: Strict = Strict {
        ok: true,
        summary: String::new(),
        log_tasks: None,
    };

    #[test]
    fn a_scope_refusal_is_ws_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".small")).unwrap();
        let txn = Transaction::begin(dir.path()).unwrap();
        let e = check_scope(&txn, Scope::Root).unwrap_err();
        assert_eq!(
            (e.code(), e.kind),
            (code::SCOPE, crate::workspace::error::ErrorKind::Invalid)
        );
        assert!(e
            .diagnostic
            .help
            .as_deref()
            .unwrap()
            .contains("small fix workspace"));
        check_scope(&txn, Scope::Any).unwrap();
        drop(txn);
        std::fs::write(
            dir.path().join(".small/workspace.small.yml"),
            "small_version: \"1.0.0\"\nkind: examples\n",
        )
        .unwrap();
        let txn = Transaction::begin(dir.path()).unwrap();
        let e = check_scope(&txn, Scope::Root).unwrap_err();
        assert_eq!(e.code(), code::SCOPE);
        assert_eq!(e.diagnostic.span.map(|s| s.start.line), Some(2));
        assert!(e
            .diagnostic
            .help
            .as_deref()
            .unwrap()
            .contains("--workspace any"));
        check_scope(&txn, Scope::Examples).unwrap();
    }

    /// The strict check of a transaction sees the entries it appends, in a log read whole
    /// and in one read piece by piece from its file (4 MiB and more), and leaves the file as
    /// it was.
    #[test]
    fn the_strict_check_sees_the_entries_a_transaction_appends() {
        use crate::authoring::init::{init, InitRequest};
        let rel = ArtifactKind::Progress.rel_path();
        for notes in [0usize, 40_000] {
            let dir = tempfile::tempdir().unwrap();
            init(&InitRequest {
                root: dir.path(),
                intent: Some("Check staged appends"),
                force: false,
                agents: None,
                tasks: &[],
            })
            .unwrap();
            let mut log = std::fs::read_to_string(dir.path().join(&rel)).unwrap();
            for i in 0..notes {
                log.push_str(&format!(
                    "  - task_id: \"meta/note\"\n    status: \"completed\"\n    \
                     timestamp: \"2099-01-01T00:00:00.{i:06}Z\"\n    evidence: \"note {i}\"\n"
                ));
            }
            std::fs::write(dir.path().join(&rel), &log).unwrap();
            assert!(log.len() > 4 << 20 || notes == 0);
            let mut txn = Transaction::begin(dir.path()).unwrap();
            let before = strict_check(&txn).unwrap();
            assert!(before.ok, "{}", before.summary);
            txn.append(
                &rel,
                b"  - task_id: \"meta/note\"\n    status: \"completed\"\n    \
                  timestamp: \"2099-13-01\"\n    evidence: \"staged\"\n"
                    .to_vec(),
            )
            .unwrap();
            let after = strict_check(&txn).unwrap();
            assert!(!after.ok, "{notes} notes");
            assert!(after.summary.contains("timestamp"), "{}", after.summary);
            drop(txn);
            assert_eq!(std::fs::read_to_string(dir.path().join(&rel)).unwrap(), log);
        }
    }

    #[test]
    fn a_held_task_is_skipped_for_the_next_free_one() {
        let tasks = [
            t("task-1", "completed", &[]),
            t("task-2", "in_progress", &[]),
            t("task-3", "pending", &["task-1"]),
            t("task-4", "pending", &["task-2"]),
            t("task-5", "", &[]),
        ];
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(runnable(&tasks), ids(&["task-2", "task-3", "task-5"]));
        let current = |skip: &[&str]| compute_state_skipping(&tasks, &OK, &ids(skip));
        assert_eq!(current(&[]).current_task_id.as_deref(), Some("task-2"));
        let s = current(&["task-2"]);
        assert_eq!(s.current_task_id.as_deref(), Some("task-3"));
        assert_eq!(s.next_steps, ["Continue with task-3"]);
        assert_eq!(s.summary, "Run in progress. Next task: task-3.");
        let s = current(&["task-2", "task-3"]);
        assert_eq!(s.current_task_id.as_deref(), Some("task-5"));
        // A held task that is not the next one changes nothing.
        let s = current(&["task-5"]);
        assert_eq!(s.current_task_id.as_deref(), Some("task-2"));
        // Every runnable task held: the handoff keeps the one it would resume at.
        let s = current(&["task-2", "task-3", "task-5"]);
        assert_eq!(s.current_task_id.as_deref(), Some("task-2"));
        assert_eq!(s.status, RunStatus::InProgress);
    }

    #[test]
    fn states() {
        let s = compute_state(
            &[t("task-1", "completed", &[]), t("task-2", "", &["task-1"])],
            &OK,
        );
        assert_eq!(s.status, RunStatus::InProgress);
        assert_eq!(s.current_task_id.as_deref(), Some("task-2"));
        let s = compute_state(&[t("task-1", "completed", &[])], &OK);
        assert_eq!(s.status, RunStatus::Complete);
        assert_eq!(s.current_task_id, None);
        let s = compute_state(
            &[
                t("task-1", "blocked", &[]),
                t("task-2", "pending", &["task-1"]),
            ],
            &OK,
        );
        assert_eq!(s.summary, "Run blocked on task-1.");
        let bad = Strict {
            ok: false,
            summary: "x".into(),
            log_tasks: None,
        };
        let s = compute_state(&[t("task-1", "pending", &[])], &bad);
        assert_eq!(s.current_task_id.as_deref(), Some("meta/blocker"));
        assert_eq!(
            s.next_steps,
            vec![
                "Resolve strict check failures: x",
                "Run: small check --strict"
            ]
        );
    }

    #[test]
    fn in_place_keeps_comments_and_links() {
        let src = "# keep me\nsmall_version: \"1.0.0\"\nowner: \"agent\"\nsummary: old # c\nresume:\n  current_task_id: task-1\n  next_steps:\n    - a\nlinks:\n  - url: https://example.com\nreplayId:\n  value: \"x\"\n  source: auto\n";
        let h = Handoff {
            summary: "new".into(),
            current_task_id: None,
            next_steps: vec![],
            replay_id: ReplayId {
                value: "a".repeat(64),
                source: "auto".into(),
            },
            run: Some(RunMeta {
                created_at: "2026-01-01T00:00:00Z".into(),
                transition_reason: "reset".into(),
                previous_replay_id: Some("b".repeat(64)),
            }),
        };
        let out = render(&h, Some(src));
        assert!(out.starts_with("# keep me\n"), "{out}");
        assert!(out.contains("summary: \"new\" # c\n"), "{out}");
        assert!(out.contains("https://example.com"));
        let d = yaml::parse_str(&out, &Limits::default()).unwrap();
        assert_eq!(
            d.root.pointer("/resume/next_steps").unwrap().to_json(),
            serde_json::json!([])
        );
        assert!(d.root.pointer("/resume/current_task_id").is_none());
        assert_eq!(
            d.root.pointer("/run/previous_replay_id").unwrap().as_str(),
            Some("b".repeat(64).as_str())
        );
        let fresh = render(&h, None);
        let d = yaml::parse_str(&fresh, &Limits::default()).unwrap();
        assert_eq!(
            d.root.pointer("/replayId/source").unwrap().as_str(),
            Some("auto")
        );
    }

    #[test]
    fn set_path_creates_run_block() {
        let src = "small_version: \"1.0.0\"\nkind: repo-root\n";
        let out = set_path(
            src,
            &["run", "replay_id"],
            &NewValue::Scalar("\"r\"".into()),
        )
        .unwrap();
        assert_eq!(
            out,
            "small_version: \"1.0.0\"\nkind: repo-root\nrun:\n  replay_id: \"r\"\n"
        );
        let out2 = set_path(
            &out,
            &["run", "replay_id"],
            &NewValue::Scalar("\"s\"".into()),
        )
        .unwrap();
        assert!(out2.contains("replay_id: \"s\""));
    }

    #[test]
    fn manual_ids() {
        assert_eq!(
            manual_replay_id(&"AB".repeat(32)).unwrap().value,
            "ab".repeat(32)
        );
        assert!(manual_replay_id("abc").is_err());
    }
}
