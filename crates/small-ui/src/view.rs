//! Every mapping from small-core's types to what the page shows lives here, and only here.
//!
//! The page never reads an artifact itself: it calls the same small-core operations as the
//! commands (the project state `small_core::ops::state`, `gates::report::check`,
//! `gates::timeline`, `history::runs`) and turns their typed results into the plain,
//! serialisable values the templates render. Every string handed to a template is escaped
//! by the template engine; strings that came from artifacts are also masked as the gates mask
//! secrets.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

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
/// Characters of a task title shown inside a graph node.
const NODE_LABEL: usize = 26;

fn mask(s: &str) -> String {
    redact(s).into_owned()
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
    pub next_task: Option<String>,
    pub completed: usize,
    pub total: usize,
    pub by_status: Vec<(StatusView, usize)>,
    pub last_activity: Option<String>,
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
    let (completed, total, by_status) = match &st.plan {
        Some(p) => (
            p.tasks_by_status.get("completed").copied().unwrap_or(0),
            p.total_tasks,
            p.tasks_by_status
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(s, n)| (status_view(s), *n))
                .collect(),
        ),
        None => (0, 0, Vec::new()),
    };
    let handoff_stale = ps.handoff_staleness(&loc.small_dir);
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
                .map(|x| SessionView {
                    id: mask(&x.id),
                    label: mask(&x.label),
                    created_at: mask(&x.created_at),
                    events: x.events,
                    open: !x.closed && !x.superseded,
                    superseded: x.superseded,
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
        profile: ps.profile.version(),
        intent,
        next_task: st.next_task.map(|s| mask(&s)),
        completed,
        total,
        by_status,
        last_activity: timeline
            .last_timestamp()
            .or_else(|| st.recent_progress.first().map(|e| e.timestamp.clone()))
            .filter(|s| !s.is_empty()),
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
    pub label: String,
    pub created_at: String,
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
// The plan: tasks, board, dependency graph

#[derive(Debug, Clone, Serialize)]
pub struct TaskRef {
    pub id: String,
    pub title: String,
    pub status: StatusView,
    pub exists: bool,
    /// The live lease another agent (or this checkout) holds on it, as last seen.
    pub claim: Option<ClaimView>,
}

/// A live lease on a task: who holds it and how long it has left.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimView {
    pub label: String,
    pub ends: String,
    /// The time left, e.g. `12m` (a done record: its outcome).
    pub left: String,
    /// A done record: finished, not yet on the default branch.
    pub done: bool,
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
}

#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub status: StatusView,
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
    pub label: String,
    pub title: String,
    pub status: StatusView,
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
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
    pub graph: Graph,
    pub problem: Option<String>,
}

/// The plan with the live leases this checkout has seen on its tasks (board and graph).
pub fn with_claims(mut plan: PlanView, loc: &Location) -> PlanView {
    let ws = small_core::ops::Workspace::from_small_dir(loc.small_dir.clone());
    let leases = small_core::ops::claims::seen_all(&ws);
    if leases.is_empty() {
        return plan;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut held: HashMap<String, ClaimView> = HashMap::new();
    for l in leases.iter().filter(|l| l.holds()) {
        let ends = small_core::ops::claims::record::parse_time(&l.ends)
            .map_or(now, |t| t.unix_timestamp());
        let left = match &l.done {
            Some(d) => d.outcome.clone(),
            None => time_left(ends - now),
        };
        let view = ClaimView {
            label: mask(&l.label),
            ends: l.ends.clone(),
            left,
            done: l.done.is_some(),
        };
        held.insert(mask(&l.task), view.clone());
        held.insert(mask(&l.task_id), view);
    }
    for t in plan.board.iter_mut().flat_map(|c| c.tasks.iter_mut()) {
        t.claim = held.get(&t.id).cloned();
    }
    for n in &mut plan.graph.nodes {
        n.claim = held.get(&n.id).cloned();
    }
    plan
}

/// `45s`, `12m`, `1h 5m`; `ending` once the end has passed (the skew margin still holds it).
fn time_left(secs: i64) -> String {
    match secs {
        s if s <= 0 => "ending".into(),
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

const NODE_W: u32 = 210;
const NODE_H: u32 = 48;
const GAP_X: u32 = 70;
const GAP_Y: u32 = 18;
const PAD: u32 = 12;

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
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

pub fn plan(ps: &ProjectState, timeline: &Timeline) -> PlanView {
    let Some(all) = ps.tasks.as_deref() else {
        return PlanView {
            problem: Some(
                ps.problems
                    .iter()
                    .find(|p| p.starts_with(ArtifactKind::Plan.file_name()))
                    .map(|p| mask(p))
                    .unwrap_or_else(|| "there is no plan".into()),
            ),
            ..PlanView::default()
        };
    };
    // Tasks are named as people and commands name them (a 2.0.0 task by its alias), and
    // dependencies may use either name.
    let mut pos: HashMap<&str, usize> = HashMap::new();
    for (i, t) in all.iter().enumerate() {
        pos.entry(t.id.as_str()).or_insert(i);
        if !t.alias.is_empty() {
            pos.entry(t.alias.as_str()).or_insert(i);
        }
    }
    let task_ref = |id: &str| match pos.get(id) {
        Some(&i) => TaskRef {
            id: mask(all[i].name()),
            title: mask(&all[i].title),
            status: status_view(&all[i].status),
            exists: true,
            claim: None,
        },
        None => TaskRef {
            id: mask(id),
            title: String::new(),
            status: status_view("unknown"),
            exists: false,
            claim: None,
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
            status: status_view(&t.status),
            description: mask(&t.description),
            steps: t.steps.iter().map(|x| mask(x)).collect(),
            acceptance: t.acceptance.iter().map(|x| mask(x)).collect(),
            dependencies: t.dependencies.iter().map(|d| task_ref(d)).collect(),
            dependents: dependents
                .get(&i)
                .map(|v| v.iter().map(|&j| task_ref(all[j].name())).collect())
                .unwrap_or_default(),
            entries: timeline.count_for_task(t.name()),
        })
        .collect();
    // The board: known statuses in working order, then any other status.
    let mut columns: BTreeMap<usize, Column> = BTreeMap::new();
    let order = [
        "in_progress",
        "pending",
        "blocked",
        "completed",
        "cancelled",
    ];
    for t in all {
        let s = t.status.clone();
        let k = order.iter().position(|o| *o == s).unwrap_or(order.len());
        columns
            .entry(k)
            .or_insert_with(|| Column {
                status: status_view(if k < order.len() { &s } else { "other" }),
                tasks: Vec::new(),
            })
            .tasks
            .push(task_ref(t.name()));
    }
    // The graph: a layer per dependency depth, tasks in plan order within a layer.
    let depth = layers(all, &pos);
    let mut rows: HashMap<usize, u32> = HashMap::new();
    let mut nodes = Vec::with_capacity(all.len());
    let mut at: HashMap<&str, (u32, u32)> = HashMap::new();
    for (i, t) in all.iter().enumerate() {
        let layer = depth[i].min(10_000) as u32;
        let row = rows.entry(depth[i]).or_insert(0);
        let x = PAD + layer * (NODE_W + GAP_X);
        let y = PAD + *row * (NODE_H + GAP_Y);
        *row += 1;
        at.entry(t.name()).or_insert((x, y));
        if !t.alias.is_empty() {
            at.entry(t.id.as_str()).or_insert((x, y));
        }
        nodes.push(GraphNode {
            id: mask(t.name()),
            label: mask(&truncate(&t.title, NODE_LABEL)),
            title: mask(&t.title),
            status: status_view(&t.status),
            x,
            y,
            w: NODE_W,
            h: NODE_H,
            claim: None,
        });
    }
    let mut edges = Vec::new();
    for t in all {
        let Some(&(x2, y2)) = at.get(t.name()) else {
            continue;
        };
        for d in &t.dependencies {
            if let Some(&(x1, y1)) = at.get(d.as_str()) {
                let (sx, sy) = (x1 + NODE_W, y1 + NODE_H / 2);
                let (ex, ey) = (x2, y2 + NODE_H / 2);
                let bend = GAP_X / 2;
                let from = pos.get(d.as_str()).map_or(d.as_str(), |&j| all[j].name());
                edges.push(GraphEdge {
                    from: mask(from),
                    to: mask(t.name()),
                    path: format!(
                        "M{sx} {sy} C{} {sy} {} {ey} {ex} {ey}",
                        sx + bend,
                        ex.saturating_sub(bend)
                    ),
                });
            }
        }
    }
    let width = nodes.iter().map(|n| n.x + n.w).max().unwrap_or(0) + PAD;
    let height = nodes.iter().map(|n| n.y + n.h).max().unwrap_or(0) + PAD;
    PlanView {
        tasks,
        board: columns.into_values().collect(),
        graph: Graph {
            width,
            height,
            nodes,
            edges,
        },
        problem: None,
    }
}

// ---------------------------------------------------------------------------------------
// The timeline

#[derive(Debug, Clone, Serialize)]
pub struct EntryView {
    pub index: usize,
    pub timestamp: String,
    pub task_id: String,
    pub status: StatusView,
    pub run: String,
    pub run_short: String,
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
    pub problem: Option<String>,
}

fn is_web_link(s: &str) -> bool {
    let l = s.trim().to_ascii_lowercase();
    (l.starts_with("https://") || l.starts_with("http://"))
        && !s.chars().any(|c| c.is_whitespace() || c == '"' || c == '<')
}

fn entry_view(e: TimelineEntry) -> EntryView {
    let href = e
        .link
        .as_deref()
        .filter(|l| is_web_link(l))
        .map(str::to_string);
    EntryView {
        index: e.index,
        status: status_view(&e.status),
        run_short: runs::short_id(&e.replay_id, 12),
        run: e.replay_id,
        timestamp: e.timestamp,
        task_id: e.task_id,
        evidence: e.evidence,
        verification: e.verification,
        command: e.command.or(e.command_summary),
        command_ref: e.command_ref,
        receipt: e
            .receipt_verified
            .map(|v| if v { "verified" } else { "not verified" }),
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

#[derive(Debug, Clone, Serialize)]
pub struct TimelineView {
    pub entries: Vec<EntryView>,
    pub matching: usize,
    pub total: usize,
    pub offset: usize,
    pub first_shown: usize,
    pub last_shown: usize,
    pub newer: Option<usize>,
    pub older: Option<usize>,
    pub task: String,
    pub status: String,
    pub run: String,
    pub tasks: Vec<Choice>,
    pub statuses: Vec<Choice>,
    pub runs: Vec<Choice>,
    /// The query string of the filter (no offset), for links and live refreshes.
    pub query: String,
    pub problem: Option<String>,
}

/// Most choices a filter list offers (the most frequent values).
const MAX_CHOICES: usize = 500;

fn choices(
    values: &[(String, usize)],
    selected: &str,
    label: &dyn Fn(&str) -> String,
) -> Vec<Choice> {
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

fn query_of(f: &Filter) -> String {
    let mut parts = Vec::new();
    for (k, v) in [("task", &f.task), ("status", &f.status), ("run", &f.run)] {
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

pub fn timeline(t: &Timeline, filter: &Filter, offset: usize) -> TimelineView {
    let page: Page = t.page(filter, offset, PAGE_SIZE);
    let facets: Facets = t.facets();
    let shown = page.entries.len();
    TimelineView {
        entries: page.entries.into_iter().map(entry_view).collect(),
        matching: page.matching,
        total: page.total,
        offset,
        first_shown: if shown > 0 { offset + 1 } else { 0 },
        last_shown: offset + shown,
        newer: (offset > 0).then(|| offset.saturating_sub(PAGE_SIZE)),
        older: (offset + PAGE_SIZE < page.matching).then_some(offset + PAGE_SIZE),
        task: mask(filter.task.as_deref().unwrap_or("")),
        status: filter.status.clone().unwrap_or_default(),
        run: filter.run.clone().unwrap_or_default(),
        tasks: choices(&facets.tasks, filter.task.as_deref().unwrap_or(""), &|v| {
            mask(v)
        }),
        statuses: choices(
            &facets.statuses,
            filter.status.as_deref().unwrap_or(""),
            &|v| status_label(v),
        ),
        runs: choices(&facets.runs, filter.run.as_deref().unwrap_or(""), &|v| {
            if v.is_empty() {
                "(no run)".into()
            } else {
                runs::short_id(v, 12)
            }
        }),
        query: query_of(filter),
        problem: t.problem.clone(),
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
                Ok(DiffSide::Live(loc.small_dir.clone()))
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

    #[test]
    fn a_query_value_is_percent_encoded() {
        let f = Filter {
            task: Some("a&b=<c>".into()),
            ..Filter::default()
        };
        assert_eq!(query_of(&f), "task=a%26b%3D%3Cc%3E");
    }
}

// ---------------------------------------------------------------------------------------
// The event timeline of a 2.0.0 workspace

/// What a 2.0.0 timeline is filtered by.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub task: Option<String>,
    pub session: Option<String>,
    pub kind: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventView {
    pub position: usize,
    pub event_id: String,
    pub session_id: String,
    pub session_short: String,
    pub sequence: i64,
    pub kind: String,
    pub kind_label: String,
    pub timestamp: String,
    pub task_id: String,
    /// A transition's status (with words and a mark), when the event is one.
    pub status: Option<StatusView>,
    pub evidence: Option<String>,
    pub command: Option<String>,
    pub command_ref: Option<String>,
    pub receipt: Option<&'static str>,
    pub notes: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventsView {
    pub entries: Vec<EventView>,
    pub matching: usize,
    pub total: usize,
    pub offset: usize,
    pub first_shown: usize,
    pub last_shown: usize,
    pub newer: Option<usize>,
    pub older: Option<usize>,
    pub task: String,
    pub session: String,
    pub kind: String,
    pub tasks: Vec<Choice>,
    pub sessions: Vec<Choice>,
    pub kinds: Vec<Choice>,
    pub query: String,
    pub problems: Vec<String>,
}

fn counted<'a>(values: impl Iterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut m: BTreeMap<&str, usize> = BTreeMap::new();
    for v in values {
        *m.entry(v).or_default() += 1;
    }
    let mut v: Vec<(String, usize)> = m.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The events of a 2.0.0 workspace, newest first, `PAGE_SIZE` a page from `offset`, filtered
/// by task (alias or id), session and kind; a command receipt is marked verified or not.
pub fn events(loc: &Location, filter: &EventFilter, offset: usize) -> Option<EventsView> {
    let tl = small_core::ops::timeline::event_timeline(&loc.root, &loc.small_dir)?;
    let total = tl.entries.len();
    let keep = |e: &small_core::ops::timeline::EventEntry| {
        filter.task.as_deref().is_none_or(|t| e.entry.task_id == t)
            && filter.session.as_deref().is_none_or(|s| e.session_id == s)
            && filter.kind.as_deref().is_none_or(|k| e.kind == k)
    };
    let matching: Vec<&small_core::ops::timeline::EventEntry> =
        tl.entries.iter().rev().filter(|e| keep(e)).collect();
    let n = matching.len();
    let entries: Vec<EventView> = matching
        .into_iter()
        .skip(offset)
        .take(PAGE_SIZE)
        .map(|e| {
            let full = tl.full(e);
            let r = &full;
            EventView {
                position: e.position,
                event_id: mask(&e.event_id),
                session_short: mask(&truncate(
                    e.session_id
                        .strip_prefix("session_")
                        .unwrap_or(&e.session_id),
                    13,
                )),
                session_id: mask(&e.session_id),
                sequence: e.sequence,
                kind_label: e.kind.replace('_', " "),
                kind: mask(&e.kind),
                timestamp: mask(&r.timestamp),
                task_id: mask(&r.task_id),
                status: (e.kind == "task_transitioned").then(|| status_view(&r.status)),
                evidence: r.evidence.clone(),
                command: r.command_summary.clone(),
                command_ref: r.command_ref.clone(),
                receipt: e
                    .receipt_verified
                    .map(|v| if v { "verified" } else { "not verified" }),
                notes: r.notes.clone(),
            }
        })
        .collect();
    let shown = entries.len();
    let sel = |o: &Option<String>| o.clone().unwrap_or_default();
    let mut query = Vec::new();
    for (k, v) in [
        ("task", &filter.task),
        ("session", &filter.session),
        ("kind", &filter.kind),
    ] {
        if let Some(v) = v {
            query.push(format!("{k}={}", pct(v)));
        }
    }
    Some(EventsView {
        entries,
        matching: n,
        total,
        offset,
        first_shown: if shown > 0 { offset + 1 } else { 0 },
        last_shown: offset + shown,
        newer: (offset > 0).then(|| offset.saturating_sub(PAGE_SIZE)),
        older: (offset + PAGE_SIZE < n).then_some(offset + PAGE_SIZE),
        task: mask(&sel(&filter.task)),
        session: mask(&sel(&filter.session)),
        kind: mask(&sel(&filter.kind)),
        tasks: choices(
            &counted(
                tl.entries
                    .iter()
                    .map(|e| e.entry.task_id.as_str())
                    .filter(|t| !t.is_empty()),
            ),
            filter.task.as_deref().unwrap_or(""),
            &|v| mask(v),
        ),
        sessions: choices(
            &counted(tl.entries.iter().map(|e| e.session_id.as_str())),
            filter.session.as_deref().unwrap_or(""),
            &|v| mask(v),
        ),
        kinds: choices(
            &counted(tl.entries.iter().map(|e| e.kind.as_str())),
            filter.kind.as_deref().unwrap_or(""),
            &|v| v.replace('_', " "),
        ),
        query: query.join("&"),
        problems: tl.problems,
    })
}
