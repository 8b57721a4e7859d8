//! Every mapping from small-core's types to what the page shows lives here, and only here.
//!
//! The page never reads an artifact itself: it calls the same small-core operations as the
//! commands (the project state `ops::state`, `ops::check`, `ops::timeline`, `ops::runs`) and
//! turns their typed results into the plain, serialisable values the templates render. Every string handed to a template is escaped
//! by the template engine; strings that came from artifacts are also masked as the gates mask
//! secrets.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use small_core::ops::claims::Lease;
use small_core::ops::diag::Severity;
use small_core::ops::formats::ArtifactKind;
use small_core::ops::gate::{GateOptions, StageReport, StageStatus};
use small_core::ops::gate::{GateRequest, Verdict};
use small_core::ops::runs::{self, DiffSide};
use small_core::ops::secrets::redact;
use small_core::ops::state::{ProjectState, Task};
use small_core::ops::status::StatusOptions;
use small_core::ops::timeline::{Facets, Filter, Page, Timeline, TimelineEntry};
use small_core::ops::workspace::Location;

/// Entries per timeline page.
pub const PAGE_SIZE: usize = 50;
/// Entries the workspace page lists (the full timeline keeps everything).
pub const RECENT: usize = 10;

fn mask(s: &str) -> String {
    redact(s).into_owned()
}

/// A long id shortened for narrow screens (the page gives the whole id as a tooltip).
fn short_id(s: &str) -> String {
    truncate(s, 20)
}

/// A status as words, so that no status is told by colour alone.
pub fn status_label(status: &str) -> String {
    match status {
        "pending" => "pending".into(),
        "in_progress" => "in progress".into(),
        "blocked" => "blocked".into(),
        "completed" => "completed".into(),
        "cancelled" => "cancelled".into(),
        "" => "pending".into(),
        other => other.replace('_', " "),
    }
}

/// A short glyph beside the status word.
fn status_mark(status: &str) -> &'static str {
    match status {
        "completed" => "✓",
        "in_progress" => "▶",
        "blocked" => "■",
        "cancelled" => "✗",
        _ => "○",
    }
}

/// The CSS class of a status (known statuses only; anything else is `other`).
fn status_class(status: &str) -> &'static str {
    match status {
        "pending" | "" => "pending",
        "in_progress" => "in_progress",
        "blocked" => "blocked",
        "completed" => "completed",
        "cancelled" => "cancelled",
        _ => "other",
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusView {
    pub value: String,
    pub label: String,
    pub mark: &'static str,
    pub class: &'static str,
}

pub fn status_view(s: &str) -> StatusView {
    StatusView {
        value: s.to_string(),
        label: status_label(s),
        mark: status_mark(s),
        class: status_class(s),
    }
}

// ---------------------------------------------------------------------------------------
// Summary (the overview card and the head of a workspace page)

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub index: usize,
    pub name: String,
    pub root: String,
    pub profile: &'static str,
    pub intent: String,
    /// The page's heading: the intent, else the folder's name.
    pub heading: String,
    /// The first ready task no lease holds (the rule of `claim --next` and `resume`).
    pub next_task: Option<TaskRef>,
    /// Ready tasks, all held (the next task is then none).
    pub all_ready_held: bool,
    pub completed: usize,
    pub total: usize,
    pub by_status: Vec<(StatusView, usize)>,
    pub last_activity: Option<When>,
    pub entries: usize,
    pub handoff_summary: Option<String>,
    pub handoff_stale: Option<String>,
    pub verdict: Option<VerdictView>,
    pub problems: Vec<String>,
    /// 2.0.0: the sessions, mode and frontier.
    pub sessions: Option<SessionsView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerdictView {
    pub word: &'static str,
    pub class: &'static str,
    pub errors: usize,
    pub warnings: usize,
}

/// The project state of a workspace, loaded once per request (either profile): every view
/// below reads it, none reads a file.
pub fn state(loc: &Location) -> ProjectState {
    small_core::ops::state::load(
        loc,
        &small_core::ops::state::LoadOptions {
            recent: 1,
            audit: true,
        },
    )
}

/// The summary of a workspace.
pub fn summary(
    index: usize,
    loc: &Location,
    ps: &ProjectState,
    timeline: &Timeline,
    checks: Option<&Checks>,
) -> Summary {
    let name = loc
        .root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| loc.root.display().to_string());
    let st = small_core::ops::state::status_of(
        ps,
        StatusOptions {
            recent: 1,
            tasks: 1,
            audit: true,
        },
    );
    let intent = ps
        .intent
        .as_ref()
        .map(|i| mask(&i.intent))
        .unwrap_or_default();
    let handoff_summary = ps
        .handoff
        .as_ref()
        .map(|h| mask(&h.summary))
        .filter(|s| !s.is_empty());
    // Cancelled and meta/* tasks are not counted as tasks.
    let counted: Vec<&Task> = ps
        .task_list()
        .iter()
        .filter(|t| small_core::ops::next::counts_as_task(*t))
        .collect();
    let leases = leases(loc);
    let next_task = next_task(ps, &leases);
    let all_ready_held = next_task.is_none()
        && !small_core::ops::next::free_ready(ps.task_list(), |_| false).is_empty();
    let (completed, total, by_status) = match &st.plan {
        Some(p) => (
            counted.iter().filter(|t| t.status == "completed").count(),
            counted.len(),
            p.tasks_by_status
                .keys()
                .map(|s| {
                    let n = counted.iter().filter(|t| &t.status == s).count();
                    (status_view(s), n)
                })
                .filter(|(_, n)| *n > 0)
                .collect(),
        ),
        None => (0, 0, Vec::new()),
    };
    let handoff_stale = small_core::ops::state::handoff_staleness(loc, ps);
    let mut problems: Vec<String> = st.problems.iter().map(|p| mask(p)).collect();
    problems.extend(
        ps.record_problems
            .iter()
            .map(|d| mask(&small_core::ops::gate::compact_line(d))),
    );
    if let Some(p) = &timeline.problem {
        if loc
            .small_dir
            .join(ArtifactKind::Progress.file_name())
            .exists()
        {
            problems.push(p.clone());
        }
    }
    let mut sessions = None;
    if let Some(s) = &ps.sessions {
        let labels = small_core::ops::session::labels(&small_core::ops::Workspace::from_small_dir(
            loc.small_dir.clone(),
        ));
        let now = unix_now();
        for c in &s.conflicts {
            problems.push(mask(&format!(
                "unresolved {} conflict{}: {} ({})",
                c.kind,
                if c.task_id.is_empty() {
                    String::new()
                } else {
                    format!(" on {}", c.task_id)
                },
                c.message,
                c.id
            )));
        }
        sessions = Some(SessionsView {
            mode: mask(&s.mode),
            frontier: mask(&s.frontier),
            events: s.events,
            open: s
                .sessions
                .iter()
                .filter(|x| !x.closed && !x.superseded)
                .count(),
            sessions: s
                .sessions
                .iter()
                .map(|x| {
                    let (actor, model) = session_labels(&labels, &x.id);
                    SessionView {
                        id: mask(&x.id),
                        short: mask(&short_id(&x.id)),
                        label: mask(&x.label),
                        actor,
                        model,
                        started: when(&x.created_at, now),
                        events: x.events,
                        open: !x.closed && !x.superseded,
                        superseded: x.superseded,
                    }
                })
                .collect(),
            conflicts: s.conflicts.len(),
            receipts: s.receipts.len(),
            receipts_verified: s
                .receipts
                .iter()
                .filter(|r| r.availability == "verified")
                .count(),
        });
    }
    Summary {
        index,
        name: mask(&name),
        root: mask(&loc.root.display().to_string()),
        profile: small_core::ops::Workspace::from_small_dir(loc.small_dir.clone())
            .profile_version(),
        heading: if intent.is_empty() {
            mask(&name)
        } else {
            intent.clone()
        },
        intent,
        next_task,
        all_ready_held,
        completed,
        total,
        by_status,
        last_activity: timeline
            .last_timestamp()
            .or_else(|| st.recent_progress.first().map(|e| e.timestamp.clone()))
            .filter(|s| !s.is_empty())
            .map(|s| when(&s, unix_now())),
        // A 2.0.0 workspace's entries are its events; a v1 one's its progress entries.
        entries: ps.sessions.as_ref().map_or(timeline.len(), |s| s.events),
        handoff_summary,
        handoff_stale,
        verdict: checks.map(|c| c.verdict.clone()),
        problems,
        sessions,
    }
}

/// The sessions of a 2.0.0 workspace.
#[derive(Debug, Clone, Serialize)]
pub struct SessionsView {
    pub mode: String,
    pub frontier: String,
    pub events: usize,
    pub open: usize,
    pub sessions: Vec<SessionView>,
    pub conflicts: usize,
    pub receipts: usize,
    pub receipts_verified: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    pub id: String,
    /// The id shortened for narrow screens (the whole id is its tooltip).
    pub short: String,
    pub label: String,
    /// `session start --actor-label`, `--model-label`.
    pub actor: String,
    pub model: String,
    /// When it started; `—` for none (a migration's session carries the Unix epoch).
    pub started: When,
    pub events: usize,
    pub open: bool,
    /// Taken over by another session.
    pub superseded: bool,
}

// ---------------------------------------------------------------------------------------
// Intent and constraints

#[derive(Debug, Clone, Serialize, Default)]
pub struct IntentView {
    pub intent: String,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub success_criteria: Vec<String>,
    pub constraints: Vec<ConstraintView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConstraintView {
    pub id: String,
    pub rule: String,
    pub severity: String,
}

pub fn intent(ps: &ProjectState) -> IntentView {
    let mut v = IntentView::default();
    if let Some(i) = &ps.intent {
        v.intent = mask(&i.intent);
        v.include = i.scope_include.iter().map(|x| mask(x)).collect();
        v.exclude = i.scope_exclude.iter().map(|x| mask(x)).collect();
        v.success_criteria = i.success_criteria.iter().map(|x| mask(x)).collect();
    }
    v.constraints = ps
        .constraints
        .iter()
        .map(|c| ConstraintView {
            id: mask(&c.id),
            rule: mask(&c.rule),
            severity: mask(&c.severity),
        })
        .collect();
    v
}

// ---------------------------------------------------------------------------------------
// The plan: tasks, board, dependency graph, and the leases on its tasks

#[derive(Debug, Clone, Serialize)]
pub struct TaskRef {
    pub id: String,
    pub title: String,
    pub status: StatusView,
    pub exists: bool,
    /// The lease on it this checkout has seen (live, in its grace period, or a done record).
    pub claim: Option<ClaimView>,
    /// Blocked: why (the newest blocking entry's notes or evidence).
    pub reason: Option<String>,
    /// Waiting: the dependencies not completed yet.
    pub waiting_on: Vec<String>,
}

/// A lease as the page shows it: on whom, by whom, until when.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimView {
    /// The task's name and title (the title empty when the plan does not have the task).
    pub task: String,
    pub title: String,
    pub label: String,
    /// `held`, `grace` (past its end, still held for the skew margin), `expired`, `done`
    /// or `damaged`.
    pub state: &'static str,
    /// The end (RFC 3339) and when it is, as Unix seconds, for the countdown in the browser;
    /// `grace_unix`: when the grace period ends.
    pub ends: When,
    pub ends_unix: i64,
    pub grace_unix: i64,
    /// What is left, as words: `12m left`, `in grace period`, `expired`, `done (completed)`.
    pub left: String,
    /// A done record: finished, not yet on the default branch.
    pub done: bool,
    /// Whether the task's dependencies are completed (`None`: the task is not in the plan).
    pub deps_met: Option<bool>,
    /// Whether it keeps others off the task now (held, in grace, done).
    pub holds: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    pub id: String,
    pub title: String,
    pub status: StatusView,
    pub description: String,
    pub steps: Vec<String>,
    pub acceptance: Vec<String>,
    pub dependencies: Vec<TaskRef>,
    pub dependents: Vec<TaskRef>,
    pub entries: usize,
    pub claim: Option<ClaimView>,
}

/// A board column.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub key: &'static str,
    pub label: &'static str,
    pub mark: &'static str,
    pub hint: &'static str,
    pub tasks: Vec<TaskRef>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Graph {
    pub width: u32,
    pub height: u32,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphNode {
    pub id: String,
    /// The first line: mark, id (shortened when long) and status.
    pub head: String,
    /// The title's lines (wrapped, the last one shortened when it does not fit).
    pub lines: Vec<(String, u32)>,
    pub title: String,
    pub status: StatusView,
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
    /// The baseline of the holder's line.
    pub claim_y: u32,
    pub claim: Option<ClaimView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    pub path: String,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct PlanView {
    pub tasks: Vec<TaskView>,
    pub board: Vec<Column>,
    /// Cancelled and `meta/*` tasks: not on the board, not counted.
    pub not_counted: usize,
    pub graph: Graph,
    /// Every lease this checkout has seen: held first (soonest end first), then in grace,
    /// expired, done.
    pub claims: Vec<ClaimView>,
    pub problem: Option<String>,
}

/// The leases this checkout has seen (its own refs and each remote's mirror, no network),
/// one per task: the most recently renewed.
pub fn leases(loc: &Location) -> Vec<Lease> {
    let ws = small_core::ops::Workspace::from_small_dir(loc.small_dir.clone());
    let mut by_task: BTreeMap<String, Lease> = BTreeMap::new();
    for l in small_core::ops::claims::seen_all(&ws) {
        match by_task.get(&l.task_id) {
            Some(cur) if cur.renewed >= l.renewed => {}
            _ => {
                by_task.insert(l.task_id.clone(), l);
            }
        }
    }
    by_task.into_values().collect()
}

/// The masked actor and model labels of session `id` (empty when it has none).
fn session_labels(
    labels: &BTreeMap<String, small_core::ops::session::Labels>,
    id: &str,
) -> (String, String) {
    labels
        .get(id)
        .map_or_else(Default::default, |l| (mask(&l.actor), mask(&l.model)))
}

/// The Unix time now.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn claim_view(l: &Lease, task: Option<(&Task, &[Task])>, now: i64) -> ClaimView {
    let end = small_core::ops::claims::record::parse_time(&l.ends).map(|t| t.unix_timestamp());
    let ends_unix = end.unwrap_or(0);
    let grace_unix = ends_unix + small_core::ops::claims::grace().as_secs() as i64;
    let state: &'static str = match l.state {
        "done" => "done",
        "damaged" => "damaged",
        _ if l.live && end.is_some_and(|e| e <= now) => "grace",
        _ if l.live => "held",
        _ => "expired",
    };
    let left = match (state, &l.done) {
        ("done", Some(d)) => format!("done ({})", mask(&d.outcome)),
        ("done", None) => "done".into(),
        ("grace", _) => "in grace period".into(),
        ("held", _) => format!("{} left", time_left(ends_unix - now)),
        ("damaged", _) => "damaged record".into(),
        _ => "expired".into(),
    };
    ClaimView {
        task: mask(task.map_or(l.task.as_str(), |(t, _)| t.name())),
        title: task.map(|(t, _)| mask(&t.title)).unwrap_or_default(),
        label: mask(&l.label),
        state,
        ends: when(&l.ends, now),
        ends_unix,
        grace_unix,
        left,
        done: state == "done",
        deps_met: task.map(|(t, all)| small_core::ops::next::dependencies_met(all, t)),
        holds: matches!(state, "held" | "grace" | "done"),
    }
}

/// `45s`, `12m`, `1h 5m`.
fn time_left(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{}s", s.max(0)),
        s if s < 3600 => format!("{}m", s / 60),
        s => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

/// The board's columns, in working order.
const COLUMNS: [(&str, &str, &str, &str); 5] = [
    ("ready", "Ready", "○", "dependencies met, nobody holds it"),
    (
        "in_progress",
        "In progress",
        "▶",
        "held, or its newest entry is in progress",
    ),
    (
        "waiting",
        "Waiting on dependencies",
        "◌",
        "a dependency is not completed",
    ),
    ("blocked", "Blocked", "■", "with the reason"),
    ("completed", "Done", "✓", "completed, or done elsewhere"),
];

// The graph's measures: pixels per character (11 px monospace, 12 px sans), line height,
// paddings and gaps.
const ID_CHAR: f32 = 6.8;
const TEXT_CHAR: f32 = 6.7;
const LINE: u32 = 16;
const NODE_PAD: u32 = 8;
const NODE_MIN_W: u32 = 150;
const NODE_MAX_W: u32 = 300;
const TITLE_LINES: usize = 2;
const GAP_X: u32 = 56;
const GAP_Y: u32 = 16;
const PAD: u32 = 12;
/// Most characters of a task id shown in a box (the whole id is the box's tooltip).
const NODE_ID_CHARS: usize = 28;

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn px(chars: usize, per: f32) -> u32 {
    (chars as f32 * per).ceil() as u32
}

/// `text` in lines of at most `width` characters, at most `max` lines, the last one
/// shortened with `…` when the text does not fit.
fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let len = cur.chars().count();
        if len == 0 && w.chars().count() > width {
            // A word longer than a line: cut it.
            let head: String = w.chars().take(width).collect();
            let rest: String = w.chars().skip(width).collect();
            lines.push(head);
            if rest.is_empty() {
                i += 1;
            } else {
                // Work on the rest as the next word.
                let mut rest_words = vec![rest];
                rest_words.extend(words[i + 1..].iter().map(|s| s.to_string()));
                let joined = rest_words.join(" ");
                let mut more = wrap(&joined, width, max.saturating_sub(lines.len()).max(1));
                lines.append(&mut more);
                break;
            }
        } else if len == 0 {
            cur.push_str(w);
            i += 1;
        } else if len + 1 + w.chars().count() <= width {
            cur.push(' ');
            cur.push_str(w);
            i += 1;
        } else {
            lines.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    if lines.len() > max {
        lines.truncate(max);
        if let Some(last) = lines.last_mut() {
            *last = truncate(&format!("{last} …"), width);
            if !last.ends_with('…') {
                last.push('…');
            }
        }
    }
    lines
}

/// Each task's layer: one more than its deepest dependency (cycles and missing tasks ignored).
fn layers(tasks: &[Task], pos: &HashMap<&str, usize>) -> Vec<usize> {
    let n = tasks.len();
    let mut depth = vec![usize::MAX; n];
    // 0 = unvisited, 1 = on the stack, 2 = done; iterative to bound the stack on deep chains.
    let mut state = vec![0u8; n];
    for start in 0..n {
        if state[start] == 2 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        state[start] = 1;
        while let Some(&mut (i, ref mut k)) = stack.last_mut() {
            let deps = &tasks[i].dependencies;
            if *k < deps.len() {
                let d = &deps[*k];
                *k += 1;
                if let Some(&j) = pos.get(d.as_str()) {
                    if state[j] == 0 {
                        state[j] = 1;
                        stack.push((j, 0));
                    }
                }
            } else {
                let mut best = 0;
                for d in deps {
                    if let Some(&j) = pos.get(d.as_str()) {
                        if state[j] == 2 {
                            best = best.max(depth[j] + 1);
                        }
                    }
                }
                depth[i] = best;
                state[i] = 2;
                stack.pop();
            }
        }
    }
    depth
}

/// The dependency graph: a column per layer, as wide as its widest box; boxes sized to
/// their text. An arrow between neighbouring layers stays in the gap between them; a longer
/// one runs below the boxes of the layers it passes, so no arrow crosses a box.
fn graph(
    all: &[Task],
    shown: &[String],
    pos: &HashMap<&str, usize>,
    held: &HashMap<String, ClaimView>,
) -> Graph {
    let depth = layers(all, pos);
    let layer_of = |i: usize| depth[i].min(10_000);
    let max_layer = (0..all.len()).map(layer_of).max().unwrap_or(0);
    let title_chars = ((NODE_MAX_W - 2 * NODE_PAD) as f32 / TEXT_CHAR) as usize;
    struct Pre {
        head: String,
        lines: Vec<String>,
        w: u32,
        h: u32,
    }
    let pre: Vec<Pre> = all
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let sv = status_view(&shown[i]);
            let head = format!(
                "{} {} · {}",
                sv.mark,
                truncate(t.name(), NODE_ID_CHARS),
                sv.label
            );
            let lines = wrap(&t.title, title_chars, TITLE_LINES);
            let claim = held.get(t.name());
            let claim_chars = claim.map_or(0, |c| c.label.chars().count() + 18);
            let widest = px(head.chars().count(), ID_CHAR)
                .max(
                    lines
                        .iter()
                        .map(|l| px(l.chars().count(), TEXT_CHAR))
                        .max()
                        .unwrap_or(0),
                )
                .max(px(claim_chars, TEXT_CHAR));
            let w = (widest + 2 * NODE_PAD).clamp(NODE_MIN_W, NODE_MAX_W);
            let text_lines = 1 + lines.len().max(1) as u32 + u32::from(claim.is_some());
            Pre {
                head,
                lines,
                w,
                h: 2 * NODE_PAD + text_lines * LINE,
            }
        })
        .collect();
    let mut col_w = vec![NODE_MIN_W; max_layer + 1];
    for (i, p) in pre.iter().enumerate() {
        col_w[layer_of(i)] = col_w[layer_of(i)].max(p.w);
    }
    let mut col_x = vec![PAD; max_layer + 1];
    for l in 1..=max_layer {
        col_x[l] = col_x[l - 1] + col_w[l - 1] + GAP_X;
    }
    let mut col_bottom = vec![PAD; max_layer + 1];
    let mut nodes = Vec::with_capacity(all.len());
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (i, t) in all.iter().enumerate() {
        let l = layer_of(i);
        let (x, y) = (col_x[l], col_bottom[l]);
        let p = &pre[i];
        let w = col_w[l];
        col_bottom[l] = y + p.h + GAP_Y;
        at.entry(t.name()).or_insert(nodes.len());
        if !t.alias.is_empty() {
            at.entry(t.id.as_str()).or_insert(nodes.len());
        }
        let first = y + NODE_PAD + 12;
        let lines: Vec<(String, u32)> = p
            .lines
            .iter()
            .enumerate()
            .map(|(k, s)| (mask(s), first + LINE * (k as u32 + 1)))
            .collect();
        let claim_y = first + LINE * (p.lines.len().max(1) as u32 + 1);
        nodes.push(GraphNode {
            id: mask(t.name()),
            head: mask(&p.head),
            lines,
            title: mask(&t.title),
            status: status_view(&shown[i]),
            x,
            y,
            w,
            h: p.h,
            claim_y,
            claim: held.get(t.name()).cloned(),
        });
    }
    let mut edges = Vec::new();
    let mut lanes: HashMap<(usize, usize), u32> = HashMap::new();
    let mut lowest = nodes.iter().map(|n| n.y + n.h).max().unwrap_or(0);
    for (ti, t) in all.iter().enumerate() {
        let Some(&b) = at.get(t.name()) else {
            continue;
        };
        for d in &t.dependencies {
            let Some(&a) = at.get(d.as_str()) else {
                continue;
            };
            let (na, nb) = (&nodes[a], &nodes[b]);
            let (sx, sy) = (na.x + na.w, na.y + na.h / 2);
            let (ex, ey) = (nb.x, nb.y + nb.h / 2);
            let la = pos.get(d.as_str()).map_or(0, |&j| layer_of(j));
            let lb = layer_of(ti);
            let path = if lb > la + 1 {
                // Below every box of the layers in between, one lane per pair of layers.
                let k = lanes.entry((la, lb)).or_insert(0);
                let base = (la + 1..lb).map(|l| col_bottom[l]).max().unwrap_or(PAD);
                let ly = base + *k * 6;
                *k += 1;
                lowest = lowest.max(ly);
                let g1 = sx + GAP_X / 2;
                let g2 = ex.saturating_sub(GAP_X / 2);
                format!("M{sx} {sy} L{g1} {sy} L{g1} {ly} L{g2} {ly} L{g2} {ey} L{ex} {ey}")
            } else {
                let bend = GAP_X / 2;
                format!(
                    "M{sx} {sy} C{} {sy} {} {ey} {ex} {ey}",
                    sx + bend,
                    ex.saturating_sub(bend)
                )
            };
            let from = pos.get(d.as_str()).map_or(d.as_str(), |&j| all[j].name());
            edges.push(GraphEdge {
                from: mask(from),
                to: mask(t.name()),
                path,
            });
        }
    }
    let width = nodes.iter().map(|n| n.x + n.w).max().unwrap_or(0) + PAD;
    let height = lowest + PAD;
    Graph {
        width,
        height,
        nodes,
        edges,
    }
}

/// The plan: its tasks, the board, the graph and the leases on its tasks.
pub fn plan(loc: &Location, ps: &ProjectState, timeline: &Timeline, leases: &[Lease]) -> PlanView {
    let Some(all) = ps.tasks.as_deref() else {
        return PlanView {
            problem: Some(
                ps.problems
                    .iter()
                    .find(|p| p.starts_with(ArtifactKind::Plan.file_name()))
                    .map(|p| mask(p))
                    .unwrap_or_else(|| "there is no plan".into()),
            ),
            claims: leases
                .iter()
                .map(|l| claim_view(l, None, unix_now()))
                .collect(),
            ..PlanView::default()
        };
    };
    let now = unix_now();
    // Tasks are named as people and commands name them (a 2.0.0 task by its alias), and
    // dependencies may use either name.
    let mut pos: HashMap<&str, usize> = HashMap::new();
    for (i, t) in all.iter().enumerate() {
        pos.entry(t.id.as_str()).or_insert(i);
        if !t.alias.is_empty() {
            pos.entry(t.alias.as_str()).or_insert(i);
        }
    }
    let task_shown = small_core::ops::state::shown_tasks(loc, all, timeline);
    let shown: Vec<String> = task_shown.iter().map(|s| s.status.clone()).collect();
    // The leases by task name.
    let mut claims: Vec<ClaimView> = Vec::new();
    let mut held: HashMap<String, ClaimView> = HashMap::new();
    for l in leases {
        let task = pos
            .get(l.task_id.as_str())
            .or_else(|| pos.get(l.task.as_str()))
            .map(|&i| &all[i]);
        let c = claim_view(l, task.map(|t| (t, all)), now);
        if let Some(t) = task {
            held.insert(t.name().to_string(), c.clone());
        }
        claims.push(c);
    }
    let rank = |s: &str| match s {
        "held" => 0,
        "grace" => 1,
        "expired" => 2,
        "done" => 3,
        _ => 4,
    };
    claims.sort_by(|a, b| {
        rank(a.state)
            .cmp(&rank(b.state))
            .then(a.ends_unix.cmp(&b.ends_unix))
            .then_with(|| a.task.cmp(&b.task))
    });
    let task_ref = |id: &str| match pos.get(id) {
        Some(&i) => TaskRef {
            id: mask(all[i].name()),
            title: mask(&all[i].title),
            status: status_view(&shown[i]),
            exists: true,
            claim: held.get(all[i].name()).filter(|c| c.holds).cloned(),
            reason: None,
            waiting_on: Vec::new(),
        },
        None => TaskRef {
            id: mask(id),
            title: String::new(),
            status: status_view("unknown"),
            exists: false,
            claim: None,
            reason: None,
            waiting_on: Vec::new(),
        },
    };
    let mut dependents: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, t) in all.iter().enumerate() {
        for d in &t.dependencies {
            if let Some(&j) = pos.get(d.as_str()) {
                dependents.entry(j).or_default().push(i);
            }
        }
    }
    let tasks: Vec<TaskView> = all
        .iter()
        .enumerate()
        .map(|(i, t)| TaskView {
            id: mask(t.name()),
            title: mask(&t.title),
            status: status_view(&shown[i]),
            description: mask(&t.description),
            steps: t.steps.iter().map(|x| mask(x)).collect(),
            acceptance: t.acceptance.iter().map(|x| mask(x)).collect(),
            dependencies: t.dependencies.iter().map(|d| task_ref(d)).collect(),
            dependents: dependents
                .get(&i)
                .map(|v| v.iter().map(|&j| task_ref(all[j].name())).collect())
                .unwrap_or_default(),
            entries: timeline.count_for_task(t.name()),
            claim: held.get(t.name()).cloned(),
        })
        .collect();
    // The board: five columns; cancelled and meta/* tasks are not counted.
    let mut board: Vec<Column> = COLUMNS
        .iter()
        .map(|&(key, label, mark, hint)| Column {
            key,
            label,
            mark,
            hint,
            tasks: Vec::new(),
        })
        .collect();
    let mut not_counted = 0;
    for (i, t) in all.iter().enumerate() {
        if !small_core::ops::next::counts_as_task(t) {
            not_counted += 1;
            continue;
        }
        let claim = held.get(t.name());
        let holding = claim.is_some_and(|c| c.holds && !c.done);
        let mut r = task_ref(t.name());
        let key = match shown[i].as_str() {
            "completed" => "completed",
            _ if claim.is_some_and(|c| c.done) => "completed",
            "blocked" => {
                r.reason = task_shown[i].blocked_reason.as_deref().map(mask);
                "blocked"
            }
            "in_progress" => "in_progress",
            _ if holding => "in_progress",
            _ if small_core::ops::next::dependencies_met(all, t) => "ready",
            _ => {
                r.waiting_on = t
                    .dependencies
                    .iter()
                    .filter(|d| {
                        pos.get(d.as_str())
                            .is_none_or(|&j| all[j].status != "completed")
                    })
                    .map(|d| mask(pos.get(d.as_str()).map_or(d.as_str(), |&j| all[j].name())))
                    .collect();
                "waiting"
            }
        };
        if let Some(c) = board.iter_mut().find(|c| c.key == key) {
            c.tasks.push(r);
        }
    }
    let graph = graph(all, &shown, &pos, &held);
    PlanView {
        tasks,
        board,
        not_counted,
        graph,
        claims,
        problem: None,
    }
}

/// The next task by the rule `claim --next` and `resume` follow
/// ([`small_core::ops::next::next_free`]): the first ready task no lease holds.
pub fn next_task(ps: &ProjectState, leases: &[Lease]) -> Option<TaskRef> {
    let all = ps.tasks.as_deref()?;
    let held = |t: &Task| {
        leases
            .iter()
            .any(|l| l.holds() && (l.task_id == t.id || l.task_id == t.alias || l.task == t.name()))
    };
    let t = small_core::ops::next::next_free(all, held)?;
    Some(TaskRef {
        id: mask(t.name()),
        title: mask(&t.title),
        status: status_view(&t.status),
        exists: true,
        claim: None,
        reason: None,
        waiting_on: Vec::new(),
    })
}

// ---------------------------------------------------------------------------------------
// Times

/// A time as the page shows it.
#[derive(Debug, Clone, Serialize, Default)]
pub struct When {
    /// RFC 3339 to the second (a `datetime` attribute); empty when the value is not a time.
    pub iso: String,
    /// `2026-12-06 08:23:21 UTC`; `—` when the value is not a time (or the Unix epoch,
    /// which stands for "not known").
    pub full: String,
    /// `5 min ago`; empty when not a time.
    pub rel: String,
    /// The value as written.
    pub raw: String,
}

/// `ts` (RFC 3339) as the page shows it, relative to `now` (Unix seconds).
pub fn when(ts: &str, now: i64) -> When {
    let raw = mask(ts.trim());
    match small_core::ops::claims::record::parse_time(ts) {
        Some(t) if t.unix_timestamp() > 0 => {
            let t = t.to_offset(time::UtcOffset::UTC);
            let t = t.replace_nanosecond(0).unwrap_or(t);
            When {
                iso: format!(
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                    t.year(),
                    u8::from(t.month()),
                    t.day(),
                    t.hour(),
                    t.minute(),
                    t.second()
                ),
                full: format!(
                    "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
                    t.year(),
                    u8::from(t.month()),
                    t.day(),
                    t.hour(),
                    t.minute(),
                    t.second()
                ),
                rel: ago(now - t.unix_timestamp()),
                raw,
            }
        }
        _ => When {
            full: "—".into(),
            raw,
            ..When::default()
        },
    }
}

/// `just now`, `5 min ago`, `3 h ago`, `2 days ago`.
fn ago(secs: i64) -> String {
    match secs {
        s if s < 45 => "just now".into(),
        s if s < 90 => "1 min ago".into(),
        s if s < 3600 => format!("{} min ago", s / 60),
        s if s < 2 * 3600 => "1 h ago".into(),
        s if s < 86_400 => format!("{} h ago", s / 3600),
        s if s < 2 * 86_400 => "1 day ago".into(),
        s => format!("{} days ago", s / 86_400),
    }
}

// ---------------------------------------------------------------------------------------
// The timeline

/// One entry of a timeline as the page shows it, in one shape for both kinds of history: a
/// progress entry (v1) or an event (2.0.0). What an entry does not have is empty.
#[derive(Debug, Clone, Serialize)]
pub struct EntryView {
    /// Its place in the whole timeline (the log's index, the event's position).
    pub index: usize,
    pub timestamp: String,
    pub when: When,
    pub task_id: String,
    /// An event's kind (`data-kind`) and its words.
    pub kind: String,
    pub kind_label: String,
    /// The session that recorded an event (`data-session`).
    pub session_id: String,
    pub status: Option<StatusView>,
    /// Where it was recorded: a progress entry's run, an event's session and sequence.
    pub place: Option<Place>,
    /// The recording session's actor and model labels.
    pub actor: String,
    pub model: String,
    pub evidence: Option<String>,
    pub verification: Option<String>,
    pub command: Option<String>,
    pub command_ref: Option<String>,
    pub receipt: Option<&'static str>,
    pub test: Option<String>,
    pub link: Option<String>,
    /// The link when it is an http(s) URL, to be rendered as a link.
    pub href: Option<String>,
    pub commit: Option<String>,
    pub notes: Option<String>,
    /// Why an entry could not be read (it is shown in place of the entry).
    pub problem: Option<String>,
}

/// Where an entry was recorded: its words, the title that says it in full, and an ID shown
/// as code.
#[derive(Debug, Clone, Serialize)]
pub struct Place {
    pub title: String,
    pub label: String,
    pub id: String,
}

fn is_web_link(s: &str) -> bool {
    let l = s.trim().to_ascii_lowercase();
    (l.starts_with("https://") || l.starts_with("http://"))
        && !s.chars().any(|c| c.is_whitespace() || c == '"' || c == '<')
}

fn receipt(verified: Option<bool>) -> Option<&'static str> {
    verified.map(|v| if v { "verified" } else { "not verified" })
}

/// A progress entry of a v1 log.
fn entry_view(e: TimelineEntry) -> EntryView {
    let href = e
        .link
        .as_deref()
        .filter(|l| is_web_link(l))
        .map(str::to_string);
    EntryView {
        index: e.index,
        status: Some(status_view(&e.status)),
        place: (!e.replay_id.is_empty()).then(|| Place {
            title: format!("run {}", e.replay_id),
            label: "run".into(),
            id: runs::short_id(&e.replay_id, 12),
        }),
        when: when(&e.timestamp, unix_now()),
        timestamp: e.timestamp,
        task_id: e.task_id,
        kind: String::new(),
        kind_label: String::new(),
        session_id: String::new(),
        actor: String::new(),
        model: String::new(),
        evidence: e.evidence,
        verification: e.verification,
        command: e.command.or(e.command_summary),
        command_ref: e.command_ref,
        receipt: receipt(e.receipt_verified),
        test: e.test,
        link: e.link,
        href,
        commit: e.commit,
        notes: e.notes,
        problem: e.problem,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Choice {
    pub value: String,
    pub label: String,
    pub count: usize,
    pub selected: bool,
}

/// One list a timeline is filtered by: the query parameter, its label, its values.
#[derive(Debug, Clone, Serialize)]
pub struct FilterView {
    pub name: &'static str,
    pub label: &'static str,
    pub choices: Vec<Choice>,
}

/// How a timeline names its entries.
#[derive(Debug, Clone, Serialize)]
pub struct Words {
    /// `Entries 1–50 of …`.
    pub title: &'static str,
    /// `No entries`, `the last 10 entries`.
    pub many: &'static str,
    /// A task's count: `1 progress entry`, `2 progress entries`.
    pub task_one: &'static str,
    pub task_many: &'static str,
    /// What the list of recent work leaves out.
    pub left_out: &'static str,
}

const LOG_WORDS: Words = Words {
    title: "Entries",
    many: "entries",
    task_one: "progress entry",
    task_many: "progress entries",
    left_out: "the tool's bookkeeping is left out",
};

const EVENT_WORDS: Words = Words {
    title: "Events",
    many: "events",
    task_one: "event",
    task_many: "events",
    left_out: "task definitions and the import are left out",
};

/// A page of a workspace's timeline, whichever history it keeps.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineView {
    pub entries: Vec<EntryView>,
    #[serde(flatten)]
    pub paging: Paging,
    pub filters: Vec<FilterView>,
    /// The query string of the filter (no offset), for links and live refreshes.
    pub query: String,
    pub problems: Vec<String>,
    pub words: Words,
}

/// Where a page of a timeline (progress entries or events) stands among the entries that
/// match its filter, and the offsets of the pages before and after it.
#[derive(Debug, Clone, Serialize)]
pub struct Paging {
    pub matching: usize,
    pub total: usize,
    pub offset: usize,
    pub first_shown: usize,
    pub last_shown: usize,
    pub newer: Option<usize>,
    pub older: Option<usize>,
    /// The workspace page's list of recent work, not a page of the timeline.
    pub recent: bool,
}

impl Paging {
    /// The page of `shown` entries from `offset`, of `matching` of `total`.
    fn of(offset: usize, shown: usize, matching: usize, total: usize) -> Paging {
        Paging {
            matching,
            total,
            offset,
            first_shown: if shown > 0 { offset + 1 } else { 0 },
            last_shown: offset + shown,
            newer: (offset > 0).then(|| offset.saturating_sub(PAGE_SIZE)),
            older: (offset + PAGE_SIZE < matching).then_some(offset + PAGE_SIZE),
            recent: false,
        }
    }

    /// The list of the `shown` most recent entries that record work, with no pages around.
    fn recent(self, shown: usize) -> Paging {
        Paging {
            first_shown: usize::from(shown > 0),
            last_shown: shown,
            newer: None,
            older: None,
            recent: true,
            ..self
        }
    }
}

/// Most choices a filter list offers (the most frequent values).
const MAX_CHOICES: usize = 500;

fn choices(
    values: &[(String, usize)],
    selected: Option<&str>,
    label: &dyn Fn(&str) -> String,
) -> Vec<Choice> {
    let selected = selected.unwrap_or("");
    values
        .iter()
        .take(MAX_CHOICES)
        .map(|(v, n)| Choice {
            value: mask(v),
            label: label(v),
            count: *n,
            selected: v == selected,
        })
        .collect()
}

/// The query string of a filter: its set parameters, in order.
fn query_of(params: &[(&str, &Option<String>)]) -> String {
    let mut parts = Vec::new();
    for (k, v) in params {
        if let Some(v) = v {
            parts.push(format!("{k}={}", pct(v)));
        }
    }
    parts.join("&")
}

/// Percent-encode a query value.
fn pct(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A page of the timeline of the workspace at `loc`, `PAGE_SIZE` from `offset`, filtered by
/// the query `q`: its events when the back end keeps them, else its progress log `log`.
pub fn timeline(
    loc: &Location,
    log: &Timeline,
    q: &HashMap<String, String>,
    offset: usize,
) -> TimelineView {
    let v = |k: &str| q.get(k).filter(|s| !s.is_empty()).cloned();
    let events = EventFilter {
        task: v("task"),
        session: v("session"),
        kind: v("kind"),
        work_only: false,
    };
    events_limited(loc, &events, offset, PAGE_SIZE).unwrap_or_else(|| {
        let filter = Filter {
            task: v("task"),
            status: v("status"),
            run: v("run"),
        };
        log_page(log, &filter, offset)
    })
}

/// The newest [`RECENT`] entries of the workspace at `loc` that record work (the workspace
/// page's list): of its events when the back end keeps them, else of its progress log `log`.
pub fn recent(loc: &Location, log: &Timeline) -> TimelineView {
    recent_events(loc).unwrap_or_else(|| recent_log(log))
}

/// Most entries read back while looking for the recent ones that record work.
const RECENT_SCAN: usize = 1000;

/// The newest [`RECENT`] progress entries that record work: the tool's bookkeeping
/// (`plan --add`, added dependencies) and `meta/*` entries are left out.
fn recent_log(t: &Timeline) -> TimelineView {
    let mut v = log_page(t, &Filter::default(), 0);
    let mut kept = Vec::new();
    let mut offset = 0;
    while kept.len() < RECENT && offset < RECENT_SCAN.min(t.len()) {
        let page = t.page(&Filter::default(), offset, PAGE_SIZE);
        if page.entries.is_empty() {
            break;
        }
        offset += page.entries.len();
        for e in page.entries {
            let work = e.problem.is_some()
                || small_core::ops::next::counts_as_work(
                    &e.task_id,
                    e.evidence.as_deref(),
                    e.notes.as_deref(),
                );
            if work && kept.len() < RECENT {
                kept.push(entry_view(e));
            }
        }
    }
    v.paging = v.paging.recent(kept.len());
    v.entries = kept;
    v
}

/// A page of a v1 progress log, filtered by task, status and run.
fn log_page(t: &Timeline, filter: &Filter, offset: usize) -> TimelineView {
    let page: Page = t.page(filter, offset, PAGE_SIZE);
    let facets: Facets = t.facets();
    let shown = page.entries.len();
    TimelineView {
        paging: Paging::of(offset, shown, page.matching, page.total),
        entries: page.entries.into_iter().map(entry_view).collect(),
        filters: vec![
            FilterView {
                name: "task",
                label: "Task",
                choices: choices(&facets.tasks, filter.task.as_deref(), &|v| mask(v)),
            },
            FilterView {
                name: "status",
                label: "Status",
                choices: choices(&facets.statuses, filter.status.as_deref(), &|v| {
                    status_label(v)
                }),
            },
            FilterView {
                name: "run",
                label: "Run",
                choices: choices(&facets.runs, filter.run.as_deref(), &|v| {
                    if v.is_empty() {
                        "(no run)".into()
                    } else {
                        runs::short_id(v, 12)
                    }
                }),
            },
        ],
        query: query_of(&[
            ("task", &filter.task),
            ("status", &filter.status),
            ("run", &filter.run),
        ]),
        problems: t.problem.iter().cloned().collect(),
        words: LOG_WORDS,
    }
}

// ---------------------------------------------------------------------------------------
// The handoff

#[derive(Debug, Clone, Serialize, Default)]
pub struct HandoffView {
    pub present: bool,
    pub summary: String,
    pub current_task: Option<String>,
    pub next_steps: Vec<String>,
    pub links: Vec<LinkView>,
    pub replay_id: String,
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkView {
    pub text: String,
    pub href: Option<String>,
    pub description: String,
}

pub fn handoff(ps: &ProjectState) -> HandoffView {
    let Some(h) = &ps.handoff else {
        return HandoffView {
            problem: ps
                .problems
                .iter()
                .find(|p| p.starts_with(ArtifactKind::Handoff.file_name()))
                .map(|p| mask(p)),
            ..HandoffView::default()
        };
    };
    HandoffView {
        present: true,
        summary: mask(&h.summary),
        current_task: h.current_task_id.as_deref().map(mask),
        next_steps: h.next_steps.iter().map(|x| mask(x)).collect(),
        links: h
            .links
            .iter()
            .map(|l| {
                let url = mask(&l.url);
                LinkView {
                    href: is_web_link(&url).then(|| url.clone()),
                    text: url,
                    description: mask(&l.description),
                }
            })
            .collect(),
        replay_id: h.replay_id.as_deref().map(mask).unwrap_or_default(),
        problem: None,
    }
}

// ---------------------------------------------------------------------------------------
// The gates' diagnostics

#[derive(Debug, Clone, Serialize)]
pub struct Checks {
    pub verdict: VerdictView,
    pub stages: Vec<StageView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageView {
    pub name: &'static str,
    pub status: &'static str,
    pub reason: Option<String>,
    pub diagnostics: Vec<DiagView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiagView {
    pub code: String,
    pub severity: &'static str,
    pub location: Option<String>,
    pub message: String,
    pub help: Option<String>,
}

fn stage_view(name: &'static str, s: &StageReport) -> StageView {
    let diag = |d: &small_core::ops::gate::JsonDiagnostic, sev: &'static str| DiagView {
        code: d.code.clone(),
        severity: sev,
        location: d.file.as_ref().map(|f| match (d.line, d.column) {
            (Some(l), Some(c)) => format!("{f}:{l}:{c}"),
            (Some(l), None) => format!("{f}:{l}"),
            _ => f.clone(),
        }),
        message: mask(&d.message),
        help: d.help.as_deref().map(mask),
    };
    StageView {
        name,
        status: match s.status {
            StageStatus::Ok => "ok",
            StageStatus::Failed => "failed",
            StageStatus::Skipped => "skipped",
            StageStatus::Error => "error",
        },
        reason: s.reason.clone(),
        // Errors first, then warnings.
        diagnostics: s
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| diag(d, "error"))
            .chain(
                s.diagnostics
                    .iter()
                    .filter(|d| d.severity != Severity::Error)
                    .map(|d| diag(d, "warning")),
            )
            .collect(),
    }
}

/// The gates as `small check --strict` runs them (the progress cache is neither read nor
/// written: the page leaves the workspace as it found it).
pub fn checks(loc: &Location) -> Checks {
    let req = GateRequest {
        dir: Some(loc.root.clone()),
        spec_dir: None,
        options: GateOptions {
            strict: true,
            cache: false,
            ..GateOptions::default()
        },
    };
    let checked = small_core::ops::check::check(&req);
    let r = &checked.report;
    let stages = vec![
        stage_view("validate", &r.validate),
        stage_view("lint", &r.lint),
        stage_view("verify", &r.verify),
    ];
    let errors = stages
        .iter()
        .flat_map(|s| &s.diagnostics)
        .filter(|d| d.severity == "error")
        .count();
    let warnings = stages
        .iter()
        .flat_map(|s| &s.diagnostics)
        .filter(|d| d.severity == "warning")
        .count();
    let (word, class) = match checked.verdict() {
        Verdict::Pass => ("pass", "pass"),
        Verdict::Invalid => ("invalid", "invalid"),
        Verdict::Error => ("error", "error"),
    };
    Checks {
        verdict: VerdictView {
            word,
            class,
            errors,
            warnings,
        },
        stages,
    }
}

// ---------------------------------------------------------------------------------------
// Run snapshots

#[derive(Debug, Clone, Serialize, Default)]
pub struct RunsView {
    pub snapshots: Vec<RunView>,
    pub problem: Option<String>,
    pub from: String,
    pub to: String,
    pub diff: Option<DiffView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub name: String,
    pub short: String,
    pub created: String,
    pub summary: String,
    pub artifacts: usize,
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiffView {
    pub from: String,
    pub to: String,
    pub files: Vec<FileDiffView>,
    pub entries_before: usize,
    pub entries_after: usize,
    pub completed: Vec<String>,
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileDiffView {
    pub name: String,
    pub changed: bool,
    pub added: usize,
    pub removed: usize,
    pub lines: Vec<(String, &'static str)>,
}

pub fn runs(loc: &Location, from: Option<&str>, to: Option<&str>) -> RunsView {
    let store = runs::store_dir(&loc.root, None);
    let mut v = RunsView::default();
    match runs::list(&store) {
        Ok((snaps, _)) => {
            v.snapshots = snaps
                .iter()
                .rev()
                .map(|s| RunView {
                    name: mask(&s.name),
                    short: runs::short_name(&s.name, 16),
                    created: mask(&s.meta.created_at),
                    summary: mask(&s.summary),
                    artifacts: s.artifacts.len(),
                    problems: s.problems.iter().map(|p| mask(p)).collect(),
                })
                .collect()
        }
        Err(e) => v.problem = Some(mask(&e.message)),
    }
    if let (Some(from), Some(to)) = (from, to) {
        v.from = mask(from);
        v.to = mask(to);
        let side = |q: &str| -> Result<DiffSide, String> {
            if q == "live" {
                runs::live_side(&loc.root).map_err(|e| mask(&e.message))
            } else {
                runs::find(&store, q)
                    .map(|s| DiffSide::Snapshot(Box::new(s)))
                    .map_err(|e| mask(&e.message))
            }
        };
        v.diff = Some(match side(from).and_then(|a| Ok((a, side(to)?))) {
            Err(e) => DiffView {
                from: mask(from),
                to: mask(to),
                files: Vec::new(),
                entries_before: 0,
                entries_after: 0,
                completed: Vec::new(),
                problem: Some(e),
            },
            Ok((a, b)) => match runs::diff_runs(&a, &b, false) {
                Err(e) => DiffView {
                    from: mask(from),
                    to: mask(to),
                    files: Vec::new(),
                    entries_before: 0,
                    entries_after: 0,
                    completed: Vec::new(),
                    problem: Some(mask(&e.message)),
                },
                Ok(d) => DiffView {
                    from: mask(&d.from),
                    to: mask(&d.to),
                    files: d
                        .files
                        .iter()
                        .map(|f| FileDiffView {
                            name: mask(&f.name),
                            changed: f.changed,
                            added: f.added,
                            removed: f.removed,
                            lines: f
                                .diff
                                .lines()
                                .take(2000)
                                .map(|l| {
                                    let class = if l.starts_with("+++") || l.starts_with("---") {
                                        "head"
                                    } else if l.starts_with('+') {
                                        "add"
                                    } else if l.starts_with('-') {
                                        "del"
                                    } else if l.starts_with("@@") {
                                        "hunk"
                                    } else {
                                        "ctx"
                                    };
                                    (mask(l), class)
                                })
                                .collect(),
                        })
                        .collect(),
                    entries_before: d.progress.entries_before,
                    entries_after: d.progress.entries_after,
                    completed: d.progress.completed_delta.iter().map(|s| mask(s)).collect(),
                    problem: None,
                },
            },
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_words_not_only_a_colour() {
        for s in [
            "pending",
            "in_progress",
            "blocked",
            "completed",
            "cancelled",
            "weird",
        ] {
            let v = status_view(s);
            assert!(!v.label.is_empty());
            assert!(!v.mark.is_empty());
        }
        assert_eq!(status_view("in_progress").label, "in progress");
        assert_eq!(status_view("weird").class, "other");
    }

    #[test]
    fn only_web_links_become_links() {
        assert!(is_web_link("https://example.com/a"));
        assert!(!is_web_link("javascript:alert(1)"));
        assert!(!is_web_link("https://x\" onmouseover=\"y"));
        assert!(!is_web_link("data:text/html,<script>"));
    }

    #[test]
    fn layers_follow_dependencies_and_survive_cycles() {
        let task = |id: &str, deps: &[&str]| Task {
            id: id.into(),
            alias: String::new(),
            title: id.into(),
            description: String::new(),
            status: "pending".into(),
            revision: 0,
            steps: Vec::new(),
            acceptance: Vec::new(),
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
            evidence: Vec::new(),
            attestation_count: 0,
            source: None,
        };
        let tasks = [
            task("a", &[]),
            task("b", &["a"]),
            task("c", &["b", "a"]),
            task("x", &["y"]),
            task("y", &["x"]),
        ];
        let pos: HashMap<&str, usize> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        let d = layers(&tasks, &pos);
        assert_eq!(&d[..3], &[0, 1, 2]);
        assert!(d[3] <= 1 && d[4] <= 1);
    }

    fn task(id: &str, title: &str, status: &str, deps: &[&str]) -> Task {
        Task {
            id: id.into(),
            alias: String::new(),
            title: title.into(),
            description: String::new(),
            status: status.into(),
            revision: 0,
            steps: Vec::new(),
            acceptance: Vec::new(),
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
            evidence: Vec::new(),
            attestation_count: 0,
            source: None,
        }
    }

    /// The points of a path made of `M` and `L` commands (`None` for a curve).
    fn polyline(d: &str) -> Option<Vec<(u32, u32)>> {
        if d.contains('C') {
            return None;
        }
        let nums: Vec<u32> = d
            .split(['M', 'L', ' '])
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        Some(nums.chunks(2).map(|p| (p[0], p[1])).collect())
    }

    #[test]
    fn arrows_do_not_cross_boxes_and_boxes_fit_their_text() {
        let tasks = vec![
            task("t1", "Set up the schema", "completed", &[]),
            task(
                "t2",
                "Admin dashboard billing page with charts",
                "pending",
                &["t1"],
            ),
            task("t3", "x", "pending", &["t2"]),
            task("t4", "A fourth task", "pending", &["t1", "t3"]),
            task("t5", "Another one in the middle layer", "pending", &["t1"]),
        ];
        let pos: HashMap<&str, usize> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        let shown: Vec<String> = tasks.iter().map(|t| t.status.clone()).collect();
        let g = graph(&tasks, &shown, &pos, &HashMap::new());
        assert_eq!(g.edges.len(), 5);
        // The whole title of a short task fits: nothing is cut.
        let n2 = g.nodes.iter().find(|n| n.id == "t2").unwrap();
        let text: Vec<&str> = n2.lines.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(text.join(" "), "Admin dashboard billing page with charts");
        for n in &g.nodes {
            assert!(n.x + n.w <= g.width && n.y + n.h <= g.height, "{n:?}");
        }
        let inside =
            |x: u32, y: u32, n: &GraphNode| x > n.x && x < n.x + n.w && y > n.y && y < n.y + n.h;
        for e in &g.edges {
            let from = g.nodes.iter().find(|n| n.id == e.from).unwrap();
            let to = g.nodes.iter().find(|n| n.id == e.to).unwrap();
            match polyline(&e.path) {
                Some(points) => {
                    // Every point along every segment stays out of every box.
                    for w in points.windows(2) {
                        let ((x1, y1), (x2, y2)) = (w[0], w[1]);
                        let steps = x1.abs_diff(x2).max(y1.abs_diff(y2)).max(1);
                        for k in 0..=steps {
                            let x = (x1 as i64 + (x2 as i64 - x1 as i64) * k as i64 / steps as i64)
                                as u32;
                            let y = (y1 as i64 + (y2 as i64 - y1 as i64) * k as i64 / steps as i64)
                                as u32;
                            for n in &g.nodes {
                                assert!(!inside(x, y, n), "{} crosses {} at {x},{y}", e.path, n.id);
                            }
                        }
                    }
                }
                None => {
                    // A curve between neighbouring layers stays in the gap between them.
                    assert!(from.x + from.w < to.x);
                    for n in &g.nodes {
                        assert!(
                            n.x + n.w <= from.x + from.w || n.x >= to.x,
                            "a box in the gap of {}",
                            e.path
                        );
                    }
                }
            }
        }
        // t1 -> t4 skips a layer: it is routed, not drawn through t2, t3 or t5.
        let long = g
            .edges
            .iter()
            .find(|e| e.from == "t1" && e.to == "t4")
            .unwrap();
        assert!(polyline(&long.path).is_some(), "{}", long.path);
    }

    #[test]
    fn a_long_title_wraps_and_a_long_word_is_cut() {
        assert_eq!(wrap("a b c", 10, 2), ["a b c"]);
        let lines = wrap("one two three four five six seven", 9, 2);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].ends_with('…'), "{lines:?}");
        let id = "f".repeat(64);
        let lines = wrap(&id, 20, 2);
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
    }

    #[test]
    fn times_are_relative_with_no_epoch_and_no_nanoseconds() {
        let w = when("2026-12-06T08:00:00.123456789Z", 1_796_544_000 + 300);
        assert_eq!(w.iso, "2026-12-06T08:00:00Z");
        assert_eq!(w.full, "2026-12-06 08:00:00 UTC");
        assert_eq!(w.rel, "5 min ago");
        assert_eq!(when("1970-01-01T00:00:00Z", 0).full, "—");
        let odd = when("legacy-import-complete", 0);
        assert_eq!((odd.full.as_str(), odd.iso.as_str()), ("—", ""));
        assert_eq!(odd.raw, "legacy-import-complete");
    }

    #[test]
    fn a_query_value_is_percent_encoded() {
        let task = Some("a&b=<c>".to_string());
        assert_eq!(
            query_of(&[("task", &task), ("status", &None)]),
            "task=a%26b%3D%3Cc%3E"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The event timeline of a 2.0.0 workspace

/// What a 2.0.0 timeline is filtered by.
#[derive(Debug, Clone, Default)]
struct EventFilter {
    task: Option<String>,
    session: Option<String>,
    kind: Option<String>,
    /// Only the events that record work (the overview's recent list): not task definitions,
    /// the import of a v1 workspace, or mode and policy changes.
    work_only: bool,
}

/// Event kinds that are bookkeeping rather than work.
const BOOKKEEPING_KINDS: [&str; 5] = [
    "task_created",
    "task_updated",
    "v1_imported",
    "mode_changed",
    "policy_changed",
];

fn counted<'a>(values: impl Iterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut m: BTreeMap<&str, usize> = BTreeMap::new();
    for v in values {
        *m.entry(v).or_default() += 1;
    }
    let mut v: Vec<(String, usize)> = m.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The newest [`RECENT`] events that record work; `None` when the workspace keeps no events.
fn recent_events(loc: &Location) -> Option<TimelineView> {
    let filter = EventFilter {
        work_only: true,
        ..EventFilter::default()
    };
    let mut v = events_limited(loc, &filter, 0, RECENT)?;
    v.paging = v.paging.recent(v.entries.len());
    Some(v)
}

/// The events of the workspace at `loc`, newest first, at most `limit` a page from `offset`,
/// filtered by task (alias or id), session and kind; a command receipt is marked verified or
/// not. `None` when the workspace keeps no events (its back end says so).
fn events_limited(
    loc: &Location,
    filter: &EventFilter,
    offset: usize,
    limit: usize,
) -> Option<TimelineView> {
    let tl = small_core::ops::timeline::event_timeline(&loc.root, &loc.small_dir)?;
    let labels = small_core::ops::session::labels(&small_core::ops::Workspace::from_small_dir(
        loc.small_dir.clone(),
    ));
    let now = unix_now();
    let total = tl.entries.len();
    let keep = |e: &small_core::ops::timeline::EventEntry| {
        filter.task.as_deref().is_none_or(|t| e.entry.task_id == t)
            && filter.session.as_deref().is_none_or(|s| e.session_id == s)
            && filter.kind.as_deref().is_none_or(|k| e.kind == k)
            && (!filter.work_only || !BOOKKEEPING_KINDS.contains(&e.kind.as_str()))
    };
    let matching: Vec<&small_core::ops::timeline::EventEntry> = if filter.work_only {
        // The payload says whether it is work: read it for the newest events only.
        tl.entries
            .iter()
            .rev()
            .filter(|e| keep(e))
            .filter(|e| {
                let f = tl.full(e);
                small_core::ops::next::counts_as_work(
                    &f.task_id,
                    f.evidence.as_deref(),
                    f.notes.as_deref(),
                )
            })
            .take(offset + limit)
            .collect()
    } else {
        tl.entries.iter().rev().filter(|e| keep(e)).collect()
    };
    let n = matching.len();
    let entries: Vec<EntryView> = matching
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|e| {
            let r = tl.full(e);
            let (actor, model) = session_labels(&labels, &e.session_id);
            let short = truncate(
                e.session_id
                    .strip_prefix("session_")
                    .unwrap_or(&e.session_id),
                13,
            );
            EntryView {
                index: e.position,
                place: Some(Place {
                    title: mask(&format!(
                        "session {}, event {} ({})",
                        e.session_id, e.sequence, e.event_id
                    )),
                    label: mask(&format!("session {short} #{}", e.sequence)),
                    id: String::new(),
                }),
                session_id: mask(&e.session_id),
                kind_label: e.kind.replace('_', " "),
                kind: mask(&e.kind),
                when: when(&r.timestamp, now),
                actor,
                model,
                timestamp: mask(&r.timestamp),
                task_id: mask(&r.task_id),
                status: (e.kind == "task_transitioned").then(|| status_view(&r.status)),
                evidence: r.evidence,
                verification: None,
                command: r.command_summary,
                command_ref: r.command_ref,
                receipt: receipt(e.receipt_verified),
                test: None,
                link: None,
                href: None,
                commit: None,
                notes: r.notes,
                problem: None,
            }
        })
        .collect();
    let shown = entries.len();
    Some(TimelineView {
        paging: Paging::of(offset, shown, n, total),
        entries,
        filters: vec![
            FilterView {
                name: "task",
                label: "Task",
                choices: choices(
                    &counted(
                        tl.entries
                            .iter()
                            .map(|e| e.entry.task_id.as_str())
                            .filter(|t| !t.is_empty()),
                    ),
                    filter.task.as_deref(),
                    &|v| mask(v),
                ),
            },
            FilterView {
                name: "session",
                label: "Session",
                choices: choices(
                    &counted(tl.entries.iter().map(|e| e.session_id.as_str())),
                    filter.session.as_deref(),
                    &|v| mask(v),
                ),
            },
            FilterView {
                name: "kind",
                label: "Kind",
                choices: choices(
                    &counted(tl.entries.iter().map(|e| e.kind.as_str())),
                    filter.kind.as_deref(),
                    &|v| v.replace('_', " "),
                ),
            },
        ],
        query: query_of(&[
            ("task", &filter.task),
            ("session", &filter.session),
            ("kind", &filter.kind),
        ]),
        problems: tl.problems,
        words: EVENT_WORDS,
    })
}
