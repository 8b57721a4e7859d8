//! The state of a v1 workspace, from its YAML artifacts: each small file parsed once, the
//! progress log read from its end only ([`load`]); or, for the gates, from the documents
//! they parsed and what their one pass over the whole log gathered ([`from_workspace`]).

use std::io;
use std::path::{Path, PathBuf};

use crate::fsio;
use crate::spec::consts::{ArtifactKind, WORKSPACE_FILE};
use crate::spec::facts::ProgressFacts;
use crate::spec::model::ArtifactPresence;
use crate::spec::model::{HANDOFF_REPLAY_ID_POINTER, RUN_REPLAY_ID_POINTER};
use crate::spec::plan::{scalar_text, PlanIndex};
use crate::state::report::{normalized_status, recent_entries, RecentEntry};
use crate::state::{
    Constraint, Handoff, Intent, Link, LoadOptions, ProfileName, ProjectState, Task, TaskSource,
};
use crate::workspace::Docs;
use crate::workspace::Workspace;
use crate::yaml::{self, Limits, Node};

/// Which v1 artifacts exist in `small_dir`.
pub(super) fn presence(small_dir: &Path) -> ArtifactPresence {
    let is_file = |k: ArtifactKind| small_dir.join(k.file_name()).is_file();
    ArtifactPresence {
        intent: is_file(ArtifactKind::Intent),
        constraints: is_file(ArtifactKind::Constraints),
        plan: is_file(ArtifactKind::Plan),
        progress: is_file(ArtifactKind::Progress),
        handoff: is_file(ArtifactKind::Handoff),
    }
}

/// Parse one small YAML file, bounded by the loader's limits; `Ok(None)` when absent.
pub(super) fn parse(path: &Path) -> Result<Option<yaml::Document>, String> {
    let limits = Limits::default();
    match fsio::read_bounded(path, limits.max_bytes as u64) {
        Ok(b) => yaml::parse_bytes(&b, &limits)
            .map(Some)
            .map_err(|e| e.to_string()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// A scalar member as trimmed text ("" when absent or not a scalar).
pub(super) fn text(n: &Node, key: &str) -> String {
    n.get(key)
        .and_then(scalar_text)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A sequence as text items (a non-scalar item as its JSON).
pub(super) fn list(n: Option<&Node>) -> Vec<String> {
    n.and_then(Node::as_seq)
        .map(|s| {
            s.iter()
                .filter_map(|x| scalar_text(x).or_else(|| Some(x.to_json().to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The intent document's fields.
pub(super) fn intent(root: &Node) -> Intent {
    Intent {
        intent: text(root, "intent"),
        scope_include: list(root.pointer("/scope/include")),
        scope_exclude: list(root.pointer("/scope/exclude")),
        success_criteria: list(root.get("success_criteria")),
    }
}

/// The constraints document's items.
pub(super) fn constraints(root: &Node) -> Vec<Constraint> {
    root.get("constraints")
        .and_then(Node::as_seq)
        .map(|items| {
            items
                .iter()
                .map(|c| Constraint {
                    id: text(c, "id"),
                    rule: text(c, "rule"),
                    severity: text(c, "severity"),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The tasks of a parsed plan document, in plan order.
fn tasks(root: &Node) -> Vec<Task> {
    tasks_of(&PlanIndex::from_plan(Some(root)), root)
}

/// The tasks of the plan `root`, whose index is `idx`, in plan order, each with its place.
fn tasks_of(idx: &PlanIndex, root: &Node) -> Vec<Task> {
    let nodes = root.get("tasks").and_then(Node::as_seq);
    idx.tasks
        .iter()
        .map(|t| {
            let node = nodes.and_then(|s| s.get(t.index));
            Task {
                id: t.id.clone(),
                alias: String::new(),
                title: t.title.trim().to_string(),
                description: node.map(|n| text(n, "description")).unwrap_or_default(),
                status: normalized_status(t),
                revision: 0,
                steps: list(node.and_then(|n| n.get("steps"))),
                acceptance: list(node.and_then(|n| n.get("acceptance"))),
                dependencies: t.dependencies.clone(),
                evidence: Vec::new(),
                attestation_count: 0,
                source: Some(TaskSource {
                    index: t.index,
                    span: t.span,
                }),
            }
        })
        .collect()
}

/// The handoff document `h` (`source`: its text as read, for the merge driver's mark).
fn handoff(h: &Node, source: &str) -> Handoff {
    let at = |p: &str| {
        h.pointer(p)
            .and_then(scalar_text)
            .map(|s| s.trim().to_string())
    };
    let current = h.pointer("/resume/current_task_id");
    Handoff {
        summary: text(h, "summary"),
        replay_id: at(HANDOFF_REPLAY_ID_POINTER),
        replay_id_source: at("/replayId/source"),
        current_task_id: at("/resume/current_task_id").filter(|s| !s.is_empty()),
        next_steps: list(h.pointer("/resume/next_steps")),
        links: h
            .get("links")
            .and_then(Node::as_seq)
            .map(|ls| {
                ls.iter()
                    .map(|l| Link {
                        url: text(l, "url"),
                        description: text(l, "description"),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        needs_regeneration: crate::spec::bookkeeping::handoff_needs_regeneration(source),
        current_task_span: current
            .filter(|n| n.as_str().is_some_and(|s| !s.trim().is_empty()))
            .map(|n| n.span),
    }
}

/// The state of a v1 workspace from documents already parsed: the gates' single parse of
/// each file, nothing read again. `plan` is the plan's index the log was checked with and
/// `log` what that pass over the log gathered (`None` without a log). The location, the
/// current run and the handoff's merge mark are the caller's ([`from_workspace`]).
pub fn from_docs(docs: &Docs, plan: &PlanIndex, log: Option<ProgressFacts>) -> ProjectState {
    ProjectState {
        profile: ProfileName::default(),
        root: PathBuf::new(),
        small_dir: PathBuf::new(),
        small_dir_exists: true,
        artifacts: ArtifactPresence::default(),
        intent: docs.intent.map(intent),
        constraints: docs.constraints.map(constraints).unwrap_or_default(),
        tasks: docs.plan.map(|p| tasks_of(plan, p)),
        handoff: docs.handoff.map(|h| handoff(h, "")),
        run_replay_id: None,
        recent: Vec::new(),
        sessions: None,
        problems: Vec::new(),
        record_problems: Vec::new(),
        log,
    }
}

/// [`from_docs`] of the workspace the gates loaded: with its location, which artifacts
/// exist, the current run, the handoff's merge mark, and the files that did not load.
pub fn from_workspace(
    ws: &Workspace,
    plan: &PlanIndex,
    log: Option<ProgressFacts>,
) -> ProjectState {
    let mut docs = Docs::default();
    for kind in ArtifactKind::ALL {
        docs.set(kind, ws.artifact(kind).map(|a| &a.document.root));
    }
    let mut st = from_docs(&docs, plan, log);
    st.root = ws.root.clone();
    st.small_dir = ws.small_dir.clone();
    st.artifacts = presence(&ws.small_dir);
    st.run_replay_id = ws
        .metadata
        .as_ref()
        .and_then(|m| m.run_replay_id())
        .map(str::to_string);
    if let (Some(h), Some(a)) = (st.handoff.as_mut(), ws.handoff.as_ref()) {
        h.needs_regeneration =
            crate::spec::bookkeeping::handoff_needs_regeneration(&a.document.source);
    }
    st.problems = ws
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| match &d.file {
            Some(f) => format!("{f}: {}", d.message),
            None => d.message.clone(),
        })
        .collect();
    st
}

/// Fill `st` from the v1 artifacts.
pub(super) fn load(st: &mut ProjectState, opts: &LoadOptions) {
    let small = st.small_dir.clone();
    let file = |k: ArtifactKind| small.join(k.file_name());
    let problem = |st: &mut ProjectState, name: &str, e: String| {
        st.problems.push(format!("{name}: {e}"));
    };
    match parse(&file(ArtifactKind::Intent)) {
        Ok(Some(d)) => st.intent = Some(intent(&d.root)),
        Ok(None) => {}
        Err(e) => problem(st, ArtifactKind::Intent.file_name(), e),
    }
    match parse(&file(ArtifactKind::Constraints)) {
        Ok(Some(d)) => st.constraints = constraints(&d.root),
        Ok(None) => {}
        Err(e) => problem(st, ArtifactKind::Constraints.file_name(), e),
    }
    match parse(&file(ArtifactKind::Plan)) {
        Ok(Some(d)) => st.tasks = Some(tasks(&d.root)),
        Ok(None) => {}
        Err(e) => problem(st, ArtifactKind::Plan.file_name(), e),
    }
    match parse(&small.join(WORKSPACE_FILE)) {
        Ok(Some(d)) => {
            st.run_replay_id = d
                .root
                .pointer(RUN_REPLAY_ID_POINTER)
                .and_then(Node::as_str)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        }
        Ok(None) => {}
        Err(e) => problem(st, WORKSPACE_FILE, e),
    }
    match parse(&file(ArtifactKind::Handoff)) {
        Ok(Some(d)) => st.handoff = Some(handoff(&d.root, &d.source)),
        Ok(None) => {}
        Err(e) => problem(st, ArtifactKind::Handoff.file_name(), e),
    }
    if st.artifacts.progress && opts.recent > 0 {
        let audit = opts.audit;
        let keep = move |e: &Node| audit || RecentEntry::from_node(e).is_signal();
        match recent_entries(&file(ArtifactKind::Progress), opts.recent, &keep) {
            Ok(entries) => st.recent = entries.iter().map(RecentEntry::from_node).collect(),
            Err(e) => problem(st, ArtifactKind::Progress.file_name(), e.to_string()),
        }
    }
}

/// Why the handoff of a v1 state `st` no longer describes the run, if it does not: it belongs
/// to another run, or progress was recorded after it was written (a v1 handoff is a file the
/// agent rewrites).
pub(crate) fn handoff_staleness(st: &ProjectState, small_dir: &Path) -> Option<String> {
    let h = st.handoff.as_ref()?;
    if let (Some(h), Some(r)) = (&h.replay_id, &st.run_replay_id) {
        if h != r {
            return Some("the handoff belongs to another run".to_string());
        }
    }
    let modified = |k: ArtifactKind| {
        std::fs::metadata(small_dir.join(k.file_name()))
            .and_then(|m| m.modified())
            .ok()
    };
    let handoff_at = modified(ArtifactKind::Handoff)?;
    let progress_at = modified(ArtifactKind::Progress)?;
    progress_at
        .duration_since(handoff_at)
        .is_ok_and(|d| d.as_secs() >= 1)
        .then(|| "progress was recorded after this handoff was written".to_string())
}
