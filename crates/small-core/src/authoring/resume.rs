//! Resume context: what an agent starting or resuming a session must read, and nothing more.
//!
//! The handoff is the resume point the protocol defines; an agent also needs the task to work
//! on (with its steps and dependencies), what is in progress or blocked, the constraints it must
//! respect, the last few progress entries, and whether the gates pass. [`resume`] gathers that
//! from the small files and the *end* of the progress log (`gates::status::recent_entries`),
//! so it costs what `small status` costs, whatever the log's length. Session-start hooks and
//! the MCP server inject it into an agent's context.
//!
//! Whether the gates pass needs the whole log. On a log up to [`CHECK_INLINE_BYTES`] the
//! strict check simply runs; on a longer one the verdict of the last check resume ran is
//! reused while no artifact changed since (size and modification time of each file, kept in
//! `.small-cache/resume-check.json`), and otherwise the gates are reported as not checked,
//! with the command that checks them. `GateMode::Always` runs the check whatever the size.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::gates::check::{self, GateOptions};
use crate::gates::schemas::SchemaSet;
use crate::spec::consts::{ArtifactKind, WORKSPACE_FILE};
use crate::state::report::RecentEntry;
use crate::workspace::Location;

/// Progress logs up to this size are checked on every resume (a few milliseconds).
pub const CHECK_INLINE_BYTES: u64 = 1024 * 1024;

/// Where the last verdict is kept, relative to the workspace root.
pub const VERDICT_FILE: &str = ".small-cache/resume-check.json";

/// What the context tells an agent to run before it starts, where claims can be shared: the
/// first step of the loop (docs/agents.md, "The loop").
const CLAIM_NEXT: &str = "small claim --next";

/// When to run the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GateMode {
    /// Small logs: run; large logs: reuse a fresh verdict, else report "not checked".
    #[default]
    Auto,
    /// Always run the strict check.
    Always,
    /// Never run it (a fresh cached verdict is still reported).
    Never,
}

#[derive(Debug, Clone)]
pub struct ResumeOptions {
    /// How many recent progress entries (signal entries: not apply bookkeeping).
    pub recent: usize,
    pub gates: GateMode,
    /// 2.0.0: read the state from the cache in `.small-cache/` when no record changed since
    /// it was written (the same answer; `--no-cache` reads every record).
    pub cache: bool,
    /// The tasks other live holders have claimed (by id), as the operation layer read them:
    /// the next task skips them, and the context says who has them (docs/agents.md).
    pub claimed: Vec<ClaimedView>,
    /// The workspace is in a git repository, where agents share claims: the context tells
    /// an agent to claim its next task before it starts.
    pub claims_available: bool,
    /// The tasks (ids) this checkout holds live leases on: its next task needs no claim.
    pub held_here: Vec<String>,
}

/// A task another agent holds a live lease on.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ClaimedView {
    /// The task's alias, else its id.
    pub task: String,
    pub task_id: String,
    /// Who holds it (the holder's label).
    pub label: String,
    /// When the lease ends (RFC 3339).
    pub ends: String,
    /// `held` (a live lease), or `done` (finished, not yet on the default branch).
    pub state: String,
}

impl Default for ResumeOptions {
    fn default() -> Self {
        ResumeOptions {
            recent: 5,
            gates: GateMode::Auto,
            cache: true,
            claimed: Vec::new(),
            claims_available: false,
            held_here: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HandoffView {
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_id_source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_task_id: Option<String>,
    pub next_steps: Vec<String>,
    /// A merge of two branches left the handoff stale: run `small handoff`.
    pub needs_regeneration: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TaskRef {
    pub id: String,
    pub title: String,
    pub status: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NextTask {
    pub id: String,
    pub title: String,
    pub status: String,
    pub steps: Vec<String>,
    pub acceptance: Vec<String>,
    /// Each dependency with its status (`missing` when the plan lacks it).
    pub dependencies: Vec<TaskRef>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ConstraintView {
    pub id: String,
    pub rule: String,
    pub severity: String,
}

/// The gates' verdict.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GateVerdict {
    /// `pass`, `fail` or `unknown`.
    pub status: String,
    pub errors: usize,
    pub warnings: usize,
    /// The first few errors, `CODE: message`.
    pub first_errors: Vec<String>,
    /// `checked now`, `cached` (no artifact changed since), or why it was not checked.
    pub source: String,
}

/// Everything `small resume` reports (docs/agents.md).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Resume {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff: Option<HandoffView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_task: Option<NextTask>,
    pub in_progress: Vec<TaskRef>,
    pub blocked: Vec<TaskRef>,
    pub constraints: Vec<ConstraintView>,
    pub recent_progress: Vec<RecentEntry>,
    pub gates: GateVerdict,
    /// 2.0.0: the unresolved conflicts, each with its heads and the `small reconcile` steps
    /// that resolve it (the real conflict id and frontier).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<ConflictView>,
    /// The command that claims the next task (`small claim --next`), where claims can be
    /// shared (a git repository): the first step of the loop (claim, work, `small checkpoint
    /// --status completed`, `small sync`), so no other agent starts the task too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_with: Option<String>,
    /// Tasks other agents hold (live leases): the next task is none of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claimed_by_others: Vec<ClaimedView>,
    /// Entries or items dropped to fit `--max-chars`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trimmed: Vec<String>,
    /// Files that could not be read; the rest is still reported.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// An unresolved 2.0.0 conflict as resume shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ConflictView {
    /// The task's alias (or id) when the conflict is about a task.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task: String,
    pub message: String,
    #[serde(flatten)]
    pub steps: crate::v2::ResolutionSteps,
}

fn task_ref(t: &crate::state::Task) -> TaskRef {
    TaskRef {
        id: t.name().to_string(),
        title: t.title.clone(),
        status: t.status.clone(),
    }
}

/// What [`resume`] reads of the state: the newest `opts.recent` entries, and the cached
/// 2.0.0 state unless a verdict checked now is asked for (`--check`).
pub fn load_options(opts: &ResumeOptions) -> (crate::state::LoadOptions, bool) {
    (
        crate::state::LoadOptions {
            recent: opts.recent,
            audit: false,
        },
        opts.cache && opts.gates != GateMode::Always,
    )
}

/// Gather the resume context (either profile) from the workspace's
/// [`ProjectState`](crate::state::ProjectState); the profile's own checks complete it
/// ([`v1_checks`], [`v2_checks`]).
pub fn resume(st: &crate::state::ProjectState, opts: &ResumeOptions) -> Resume {
    let mut r = Resume {
        intent: st
            .intent
            .as_ref()
            .map(|i| i.intent.clone())
            .filter(|s| !s.is_empty()),
        handoff: st.handoff.as_ref().map(|h| HandoffView {
            summary: h.summary.clone(),
            replay_id: h.replay_id.clone(),
            replay_id_source: h.replay_id_source.clone(),
            current_task_id: h.current_task_id.clone(),
            next_steps: h.next_steps.clone(),
            needs_regeneration: h.needs_regeneration,
        }),
        next_task: None,
        in_progress: Vec::new(),
        blocked: Vec::new(),
        constraints: st
            .constraints
            .iter()
            .map(|c| ConstraintView {
                id: c.id.clone(),
                rule: c.rule.clone(),
                severity: c.severity.clone(),
            })
            .collect(),
        // Oldest first: the order they happened in.
        recent_progress: st.recent.iter().rev().cloned().collect(),
        gates: GateVerdict {
            status: "unknown".into(),
            errors: 0,
            warnings: 0,
            first_errors: Vec::new(),
            source: "not checked".into(),
        },
        conflicts: Vec::new(),
        claimed_by_others: opts.claimed.clone(),
        claim_with: None,
        trimmed: Vec::new(),
        problems: st.problems.clone(),
    };
    if let Some(ss) = &st.sessions {
        let view = crate::v2::State {
            frontier: ss.frontier.clone(),
            sessions: ss.sessions.clone(),
            ..Default::default()
        };
        for c in &ss.conflicts {
            let Some(steps) = crate::v2::resolution_steps(c, &view) else {
                continue;
            };
            let task = st
                .task_list()
                .iter()
                .find(|t| t.id == c.task_id)
                .map(|t| t.name().to_string())
                .unwrap_or_else(|| c.task_id.clone());
            r.conflicts.push(ConflictView {
                task,
                message: c.message.clone(),
                steps,
            });
        }
    }
    for t in st.task_list() {
        match t.status.as_str() {
            "in_progress" => r.in_progress.push(task_ref(t)),
            "blocked" => r.blocked.push(task_ref(t)),
            _ => {}
        }
    }
    let held = |t: &crate::state::Task| opts.claimed.iter().any(|c| c.task_id == t.id);
    let next = crate::spec::next::resume_at(st.task_list(), held);
    let mine = next.is_some_and(|t| opts.held_here.contains(&t.id));
    if next.is_some() && opts.claims_available && !mine {
        r.claim_with = Some(CLAIM_NEXT.to_string());
    }
    if let Some(t) = next {
        r.next_task = Some(NextTask {
            id: t.name().to_string(),
            title: t.title.clone(),
            status: t.status.clone(),
            steps: t.steps.clone(),
            acceptance: t.acceptance.clone(),
            dependencies: t
                .dependencies
                .iter()
                .map(|d| match st.task(d) {
                    Some(dep) => task_ref(dep),
                    None => TaskRef {
                        id: d.clone(),
                        title: String::new(),
                        status: "missing".into(),
                    },
                })
                .collect(),
        });
    }
    r
}

/// A v1 resume context's checks: the handoff it resumes from, and the gates (as `mode` says).
pub fn v1_checks(loc: &Location, st: &crate::state::ProjectState, mode: GateMode, r: &mut Resume) {
    if st.handoff.is_none() {
        r.problems
            .push(format!("{} is missing", ArtifactKind::Handoff.file_name()));
    }
    r.gates = gates(loc, mode);
}

/// A 2.0.0 resume context's checks: the verdict of the checks its state was loaded with.
pub fn v2_checks(st: &crate::state::ProjectState, r: &mut Resume) {
    r.gates = v2_verdict(st);
}

/// The strict verdict of a 2.0.0 workspace, from the checks its state was loaded with:
/// damaged records, a broken event graph and unresolved conflicts fail it.
fn v2_verdict(st: &crate::state::ProjectState) -> GateVerdict {
    let findings = st.sessions.as_ref().map_or(&[][..], |s| &s.findings[..]);
    let errors: Vec<String> = findings
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    GateVerdict {
        status: if errors.is_empty() { "pass" } else { "fail" }.into(),
        errors: errors.len(),
        warnings: findings.len() - errors.len(),
        first_errors: errors.into_iter().take(3).collect(),
        source: match st.sessions.as_ref() {
            Some(s) if s.from_cache && s.folded > 0 => format!(
                "cached, with the {} event(s) written since checked now",
                s.folded
            ),
            Some(s) if s.from_cache => "cached: no record changed since the last check".into(),
            _ => "checked now".into(),
        },
    }
}

/// Size and modification time of every artifact: equal fingerprints, same verdict.
fn fingerprint(small: &Path) -> String {
    let mut out = String::new();
    let mut names: Vec<&str> = ArtifactKind::ALL.iter().map(|k| k.file_name()).collect();
    names.push(WORKSPACE_FILE);
    for name in names {
        match std::fs::metadata(small.join(name)) {
            Ok(m) => {
                let mtime = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                out.push_str(&format!("{name}:{}:{mtime};", m.len()));
            }
            Err(_) => out.push_str(&format!("{name}:-;")),
        }
    }
    out
}

#[derive(Serialize, Deserialize)]
struct Cached {
    fingerprint: String,
    verdict: GateVerdict,
}

fn verdict_path(root: &Path) -> PathBuf {
    root.join(VERDICT_FILE)
}

/// The strict check's verdict on the workspace at `loc` (running it now).
pub fn run_gates(loc: &Location) -> GateVerdict {
    let schemas: Arc<SchemaSet> = SchemaSet::embedded();
    let opts = GateOptions {
        strict: true,
        ..GateOptions::default()
    };
    let loaded = check::load(loc.clone(), Some(&schemas), &opts);
    let report = check::run_check(&loaded, &schemas, &opts);
    let errors: Vec<String> = report
        .diagnostics
        .iter()
        .filter(|(_, d)| d.is_error())
        .map(|(_, d)| format!("{}: {}", d.code, d.message))
        .collect();
    GateVerdict {
        status: if report.exit_code == 0 {
            "pass"
        } else {
            "fail"
        }
        .into(),
        errors: errors.len(),
        warnings: report.diagnostics.len() - errors.len(),
        first_errors: errors.into_iter().take(3).collect(),
        source: "checked now".into(),
    }
}

fn gates(loc: &Location, mode: GateMode) -> GateVerdict {
    let fp = fingerprint(&loc.small_dir);
    let cached = std::fs::read(verdict_path(&loc.root))
        .ok()
        .and_then(|b| serde_json::from_slice::<Cached>(&b).ok())
        .filter(|c| c.fingerprint == fp)
        .map(|c| GateVerdict {
            source: "cached: no artifact changed since the last check".into(),
            ..c.verdict
        });
    let size = std::fs::metadata(loc.small_dir.join(ArtifactKind::Progress.file_name()))
        .map_or(0, |m| m.len());
    let run = match mode {
        GateMode::Always => true,
        GateMode::Never => false,
        GateMode::Auto => size <= CHECK_INLINE_BYTES && cached.is_none(),
    };
    if !run {
        return cached.unwrap_or(GateVerdict {
            status: "unknown".into(),
            errors: 0,
            warnings: 0,
            first_errors: Vec::new(),
            source: "not checked (long progress log): run `small check --strict` or `small resume --check`"
                .into(),
        });
    }
    let v = run_gates(loc);
    // Best effort: a read-only workspace still gets its answer.
    if fingerprint(&loc.small_dir) == fp {
        let c = Cached {
            fingerprint: fp,
            verdict: v.clone(),
        };
        if let Ok(bytes) = serde_json::to_vec(&c) {
            let p = verdict_path(&loc.root);
            if p.parent()
                .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
            {
                let _ = crate::workspace::txn::atomic_write(&p, &bytes);
            }
        }
    }
    v
}

// ---------------------------------------------------------------------------------------
// Rendering

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The compact Markdown form.
pub fn to_markdown(r: &Resume) -> String {
    let mut o = String::new();
    o.push_str("# SMALL resume\n");
    if let Some(i) = &r.intent {
        o.push_str(&format!("Intent: {}\n", one_line(i)));
    }
    if let Some(h) = &r.handoff {
        o.push_str("\n## Handoff\n");
        if h.needs_regeneration {
            o.push_str("STALE: merged from two branches; run `small handoff` first\n");
        }
        o.push_str(&format!("{}\n", one_line(&h.summary)));
        if let Some(id) = &h.replay_id {
            o.push_str(&format!(
                "replayId: {id} ({})\n",
                h.replay_id_source.as_deref().unwrap_or("?")
            ));
        }
        for s in &h.next_steps {
            o.push_str(&format!("- {}\n", one_line(s)));
        }
    }
    if !r.claimed_by_others.is_empty() {
        o.push_str("\n## Claimed by other agents (skip these)\n");
        for c in &r.claimed_by_others {
            if c.state == "done" {
                o.push_str(&format!(
                    "- {}: done by {} (not on the default branch yet: `small sync` brings it)\n",
                    c.task,
                    one_line(&c.label)
                ));
            } else {
                o.push_str(&format!(
                    "- {}: {} until {}\n",
                    c.task,
                    one_line(&c.label),
                    c.ends
                ));
            }
        }
    }
    if let Some(t) = &r.next_task {
        o.push_str(&format!(
            "\n## Next task: {} {} ({})\n",
            t.id,
            one_line(&t.title),
            t.status
        ));
        if !t.dependencies.is_empty() {
            let deps: Vec<String> = t
                .dependencies
                .iter()
                .map(|d| format!("{} ({})", d.id, d.status))
                .collect();
            o.push_str(&format!("Depends on: {}\n", deps.join(", ")));
        }
        if let Some(c) = &r.claim_with {
            o.push_str(&format!(
                "Claim it before you start, so no other agent starts it too: `{c}`; after the \
                 work, `small checkpoint --status completed --evidence \"…\"` and `small sync`\n"
            ));
        }
        for s in &t.steps {
            o.push_str(&format!("- step: {}\n", one_line(s)));
        }
        for s in &t.acceptance {
            o.push_str(&format!("- accept: {}\n", one_line(s)));
        }
    }
    let tasks = |o: &mut String, head: &str, ts: &[TaskRef]| {
        if ts.is_empty() {
            return;
        }
        o.push_str(&format!("\n## {head}\n"));
        for t in ts {
            o.push_str(&format!("- {} {}\n", t.id, one_line(&t.title)));
        }
    };
    tasks(&mut o, "In progress", &r.in_progress);
    tasks(&mut o, "Blocked", &r.blocked);
    if !r.constraints.is_empty() {
        o.push_str("\n## Constraints\n");
        for c in &r.constraints {
            if c.rule.is_empty() {
                o.push_str(&format!("- {} ({})\n", c.id, c.severity));
            } else {
                o.push_str(&format!(
                    "- {} ({}): {}\n",
                    c.id,
                    c.severity,
                    one_line(&c.rule)
                ));
            }
        }
    }
    if !r.recent_progress.is_empty() {
        o.push_str("\n## Recent progress\n");
        for e in &r.recent_progress {
            let mut line = format!("- {} {} {}", e.timestamp, e.task_id, e.status);
            if let Some(ev) = &e.evidence {
                line.push_str(&format!(": {}", one_line(ev)));
            }
            o.push_str(&line);
            o.push('\n');
        }
    }
    if !r.conflicts.is_empty() {
        o.push_str(&format!(
            "\n## Conflicts: {} unresolved; resolve each before handing off\n",
            r.conflicts.len()
        ));
        for c in &r.conflicts {
            let on = if c.task.is_empty() {
                String::new()
            } else {
                format!(" on {}", c.task)
            };
            o.push_str(&format!(
                "- {} ({}{on}): {}\n",
                c.steps.conflict_id,
                c.steps.kind,
                one_line(&c.message)
            ));
            for h in &c.steps.heads {
                o.push_str(&format!("  - head {}: {}\n", h.event, one_line(&h.says)));
            }
            let mut n = 1;
            if let Some(start) = &c.steps.start_session {
                o.push_str(&format!(
                    "  {n}. no session is active: `{start}` (this changes the frontier: take the new one from `small reconcile --preview --json`)\n"
                ));
                n += 1;
            }
            o.push_str(&format!(
                "  {n}. review: `{}`\n  {}. write a resolution file, selected_event = the head to keep, reason = why:\n     {}\n  {}. apply it: `{}`\n",
                c.steps.preview,
                n + 1,
                c.steps.resolution_file,
                n + 2,
                c.steps.apply
            ));
        }
    }
    o.push_str(&format!(
        "\n## Gates: {}\n",
        match r.gates.status.as_str() {
            "pass" => format!("pass, {}", r.gates.source),
            "fail" => format!(
                "FAIL, {} error(s), {}; run `small check --strict`",
                r.gates.errors, r.gates.source
            ),
            _ => format!("unknown: {}", r.gates.source),
        }
    ));
    for e in &r.gates.first_errors {
        o.push_str(&format!("- {}\n", one_line(e)));
    }
    if !r.trimmed.is_empty() {
        o.push_str(&format!("\n(trimmed to fit: {})\n", r.trimmed.join(", ")));
    }
    for p in &r.problems {
        o.push_str(&format!("problem: {p}\n"));
    }
    o
}

/// Drop the least important parts until `render(r)` fits in `max` characters: oldest progress
/// entries first, then blocked tasks, constraints' text, acceptance criteria, tasks in progress,
/// steps, the handoff's next steps, then the summary and intent are shortened. With `hard_cut`
/// (text output) the last resort cuts the text; JSON stays whole and valid, so it may exceed
/// `max` when even the skeleton is longer.
pub fn fit(
    mut r: Resume,
    max: usize,
    hard_cut: bool,
    render: &dyn Fn(&Resume) -> String,
) -> (Resume, String) {
    let len = |r: &Resume| render(r).chars().count();
    if len(&r) <= max {
        let s = render(&r);
        return (r, s);
    }
    type Drop = fn(&mut Resume) -> bool;
    fn first<T>(v: &mut Vec<T>) -> bool {
        if v.is_empty() {
            false
        } else {
            v.remove(0);
            true
        }
    }
    fn last<T>(v: &mut Vec<T>) -> bool {
        v.pop().is_some()
    }
    let steps: [(&str, Drop); 8] = [
        ("progress entries", |r| first(&mut r.recent_progress)),
        ("blocked tasks", |r| last(&mut r.blocked)),
        ("constraint rules", |r| {
            match r.constraints.iter_mut().find(|c| !c.rule.is_empty()) {
                Some(c) => {
                    c.rule.clear();
                    true
                }
                None => false,
            }
        }),
        ("constraints", |r| last(&mut r.constraints)),
        ("acceptance criteria", |r| {
            r.next_task
                .as_mut()
                .is_some_and(|t| last(&mut t.acceptance))
        }),
        ("tasks in progress", |r| last(&mut r.in_progress)),
        ("steps", |r| {
            r.next_task.as_mut().is_some_and(|t| last(&mut t.steps))
        }),
        ("handoff next steps", |r| {
            r.handoff.as_mut().is_some_and(|h| last(&mut h.next_steps))
        }),
    ];
    let mut dropped: Vec<String> = Vec::new();
    for (label, drop) in steps {
        let mut n = 0;
        while len(&r) > max && drop(&mut r) {
            n += 1;
            let mut t = dropped.clone();
            t.push(format!("{n} {label}"));
            r.trimmed = t;
        }
        if n > 0 {
            dropped.push(format!("{n} {label}"));
        }
    }
    // Then shorten the free texts (summary, intent), keeping every structure valid.
    let mut keep = 400usize;
    while len(&r) > max && keep > 0 {
        keep /= 2;
        let cut = |s: &mut String| {
            if s.chars().count() > keep {
                *s = s.chars().take(keep).collect::<String>() + "…";
            }
        };
        if let Some(h) = r.handoff.as_mut() {
            cut(&mut h.summary);
        }
        if let Some(i) = r.intent.as_mut() {
            cut(i);
        }
    }
    let s = render(&r);
    if s.chars().count() <= max || !hard_cut {
        return (r, s);
    }
    let cut: String = s.chars().take(max.saturating_sub(1)).collect();
    (r, format!("{cut}…"))
}
