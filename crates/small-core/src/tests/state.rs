//! The state of a workspace, from each profile; the same project gives the same tasks,
//! intent, constraints and handoff whether it is read as v1 files or as the 2.0.0 events its
//! migration wrote.

use std::path::Path;

use crate::ops::state::load;
use crate::state::*;
use crate::workspace::Location;

const INTENT: &str = "small_version: \"1.0.0\"\nowner: human\nintent: Ship the dry-run flag\nscope:\n  include: [src/]\n  exclude: [docs/]\nsuccess_criteria:\n  - the flag exists\n  - it is documented\n";
const CONSTRAINTS: &str = "small_version: \"1.0.0\"\nowner: human\nconstraints:\n  - id: no-network\n    rule: Tests never reach the network\n    severity: error\n";
const PLAN: &str = "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: flag\n    title: Add the flag\n    status: completed\n  - id: docs\n    title: Document it\n    status: pending\n    dependencies: [flag]\n    acceptance: [the README names it]\n    steps: [write, review]\n  - id: later\n    title: Later work\n    status: blocked\n";
const PROGRESS: &str = "small_version: \"1.0.0\"\nowner: agent\nentries:\n  - task_id: flag\n    timestamp: \"2026-01-02T03:04:05.000000001Z\"\n    status: completed\n    evidence: \"cargo test: 3 passed\"\n";
const HANDOFF: &str = "small_version: \"1.0.0\"\nowner: agent\nsummary: Flag done; docs next\nresume:\n  current_task_id: docs\n  next_steps: [write the README section]\nlinks: []\nreplayId:\n  value: \"0000000000000000000000000000000000000000000000000000000000000001\"\n  source: manual\n";
const WORKSPACE: &str = "small_version: \"1.0.0\"\nkind: repo-root\n";

fn v1_workspace(root: &Path) {
    let small = root.join(".small");
    std::fs::create_dir_all(&small).unwrap();
    for (name, text) in [
        ("intent.small.yml", INTENT),
        ("constraints.small.yml", CONSTRAINTS),
        ("plan.small.yml", PLAN),
        ("progress.small.yml", PROGRESS),
        ("handoff.small.yml", HANDOFF),
        ("workspace.small.yml", WORKSPACE),
    ] {
        std::fs::write(small.join(name), text).unwrap();
    }
}

fn loc(root: &Path) -> Location {
    Location {
        root: root.to_path_buf(),
        small_dir: root.join(".small"),
    }
}

fn names(st: &ProjectState) -> Vec<(String, String, String)> {
    st.task_list()
        .iter()
        .map(|t| (t.name().to_string(), t.title.clone(), t.status.clone()))
        .collect()
}

#[test]
fn a_v1_workspace_is_read_once_into_the_state() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    let st = load(&loc(dir.path()), &LoadOptions::default());
    assert_eq!(st.profile, ProfileName::V1);
    assert!(st.problems.is_empty(), "{:?}", st.problems);
    let intent = st.intent.as_ref().unwrap();
    assert_eq!(intent.intent, "Ship the dry-run flag");
    assert_eq!(intent.scope_include, ["src/"]);
    assert_eq!(intent.success_criteria.len(), 2);
    assert_eq!(st.constraints[0].id, "no-network");
    let docs = st.task("docs").unwrap();
    assert_eq!(docs.steps, ["write", "review"]);
    assert_eq!(docs.acceptance, ["the README names it"]);
    assert_eq!(docs.dependencies, ["flag"]);
    assert_eq!(st.preferred_task().unwrap().id, "docs");
    assert_eq!(st.next_actionable(0).len(), 1);
    let h = st.handoff.as_ref().unwrap();
    assert_eq!(h.current_task_id.as_deref(), Some("docs"));
    assert_eq!(h.next_steps, ["write the README section"]);
    assert_eq!(st.recent.len(), 1);
    assert_eq!(
        st.recent[0].evidence.as_deref(),
        Some("cargo test: 3 passed")
    );
    assert!(st.sessions.is_none());
}

#[test]
fn a_damaged_file_is_a_problem_and_the_rest_is_still_read() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    std::fs::write(
        dir.path().join(".small/plan.small.yml"),
        "tasks: [unclosed\n",
    )
    .unwrap();
    let st = load(&loc(dir.path()), &LoadOptions::default());
    assert!(st.tasks.is_none());
    assert_eq!(st.problems.len(), 1);
    assert!(st.problems[0].starts_with("plan.small.yml: "));
    assert!(st.intent.is_some() && st.handoff.is_some());
}

#[test]
fn no_recent_entries_asked_reads_no_log() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    // A log that does not parse is not read when no entry is asked for.
    std::fs::write(
        dir.path().join(".small/progress.small.yml"),
        "entries: [x\n",
    )
    .unwrap();
    let st = load(
        &loc(dir.path()),
        &LoadOptions {
            recent: 0,
            audit: false,
        },
    );
    assert!(st.problems.is_empty(), "{:?}", st.problems);
}

#[test]
fn a_missing_workspace_is_an_empty_state() {
    let dir = tempfile::tempdir().unwrap();
    let st = load(&loc(dir.path()), &LoadOptions::default());
    assert!(!st.small_dir_exists);
    assert!(st.tasks.is_none() && st.problems.is_empty());
}

#[test]
fn the_migrated_workspace_has_the_same_state_as_its_v1_original() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    let before = load(&loc(dir.path()), &LoadOptions::default());
    let plan = crate::migrate::preview(dir.path(), "test/state").unwrap();
    crate::migrate::apply(dir.path(), &plan, &plan.expected_input_digest).unwrap();
    let after = load(&loc(dir.path()), &LoadOptions::default());
    assert_eq!(after.profile, ProfileName::V2);
    assert!(after.is_sound(), "{:?}", after.record_problems);
    assert!(after.problems.is_empty(), "{:?}", after.problems);
    // The migration also records a task for the legacy bookkeeping it imports; the plan's
    // tasks come first, in plan order, with the same titles and statuses.
    assert_eq!(names(&after)[..3], names(&before)[..]);
    assert_eq!(after.intent, before.intent);
    assert_eq!(after.constraints, before.constraints);
    assert_eq!(
        after.handoff.as_ref().map(|h| h.summary.as_str()),
        Some("Flag done; docs next")
    );
    let docs = after.task("docs").unwrap();
    assert_eq!(docs.dependencies, ["flag"]);
    assert_eq!(docs.acceptance, ["the README names it"]);
    assert_eq!(
        after.preferred_task().map(Task::name),
        before.preferred_task().map(Task::name)
    );
    let s = after.sessions.as_ref().unwrap();
    assert_eq!(s.frontier.len(), 64);
    assert!(s.conflicts.is_empty());
    // The imported progress entry is shown as it was written (the migration adds a
    // transition of its own for each plan status the log does not end on: `later`).
    let e = after.recent.iter().find(|e| e.task_id == "flag").unwrap();
    assert_eq!(e.status, "completed");
    assert!(after
        .recent
        .iter()
        .any(|e| (e.task_id.as_str(), e.status.as_str()) == ("later", "blocked")));
    assert_eq!(e.evidence.as_deref(), Some("cargo test: 3 passed"));
    assert_eq!(e.timestamp, "2026-01-02T03:04:05.000000001Z");
}

#[test]
fn a_damaged_event_store_is_reported_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    let plan = crate::migrate::preview(dir.path(), "test/state").unwrap();
    crate::migrate::apply(dir.path(), &plan, &plan.expected_input_digest).unwrap();
    let events = dir.path().join(".small/events");
    let session = std::fs::read_dir(&events).unwrap().next().unwrap().unwrap();
    let first = std::fs::read_dir(session.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    std::fs::write(first.path(), "{\"truncated\":").unwrap();
    let st = load(&loc(dir.path()), &LoadOptions::default());
    assert!(!st.is_sound());
    assert!(st.record_problems.iter().all(|d| d.code.starts_with("V2-")));
}

#[test]
fn the_event_timeline_lists_every_event_in_order_with_its_session() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    let plan = crate::migrate::preview(dir.path(), "test/state").unwrap();
    crate::migrate::apply(dir.path(), &plan, &plan.expected_input_digest).unwrap();
    let st = load(
        &loc(dir.path()),
        &LoadOptions {
            recent: usize::MAX,
            audit: true,
        },
    );
    let tl = crate::ops::timeline::event_timeline(dir.path(), &dir.path().join(".small"))
        .expect("a 2.0.0 workspace");
    assert!(tl.problems.is_empty(), "{:?}", tl.problems);
    assert_eq!(tl.entries.len(), st.sessions.as_ref().unwrap().events);
    let positions: Vec<usize> = tl.entries.iter().map(|e| e.position).collect();
    assert_eq!(positions, (1..=tl.entries.len()).collect::<Vec<_>>());
    // The same entries as the state's recent list (newest first there), once completed
    // from their records.
    let mut recent = st.recent.clone();
    recent.reverse();
    let ours: Vec<_> = tl.entries.iter().map(|e| tl.full(e)).collect();
    assert_eq!(ours, recent);
    // Without completing, an imported entry lacks its original fields (only the members
    // the reducer reads are held for every event).
    let held: Vec<_> = tl.entries.iter().map(|e| e.entry.clone()).collect();
    assert_ne!(held, recent);
    let sessions: std::collections::BTreeSet<&str> =
        tl.entries.iter().map(|e| e.session_id.as_str()).collect();
    assert!(sessions.iter().all(|s| s.starts_with("session_")));
    assert!(tl.entries.iter().any(|e| e.kind == "task_created"));
    // Tasks named by alias, as everywhere else.
    assert!(tl.entries.iter().any(|e| e.entry.task_id == "flag"));
}

/// The gates' state of the workspace at `root` (the streamed load `check` uses).
fn gate_state(root: &Path) -> ProjectState {
    let schemas = crate::gates::schemas::SchemaSet::embedded();
    let opts = crate::gates::check::GateOptions {
        strict: true,
        scope: crate::workspace::Scope::Any,
        ..Default::default()
    };
    crate::gates::check::load(loc(root), Some(&schemas), &opts).state
}

#[test]
fn the_gates_build_the_same_state_with_the_places_and_the_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    let read = load(&loc(dir.path()), &LoadOptions::default());
    let gates = gate_state(dir.path());
    // The same project, whichever way it was read ...
    assert_eq!(gates.intent, read.intent);
    assert_eq!(gates.constraints, read.constraints);
    assert_eq!(gates.tasks, read.tasks);
    assert_eq!(gates.handoff, read.handoff);
    assert_eq!(gates.run_replay_id, read.run_replay_id);
    assert_eq!(gates.artifacts, read.artifacts);
    assert_eq!(gates.root, read.root);
    // ... with each task's place in the plan (the rules cite it) ...
    let places: Vec<(usize, u32)> = gates
        .task_list()
        .iter()
        .map(|t| {
            let s = t.source.unwrap();
            (s.index, s.span.start.line)
        })
        .collect();
    assert_eq!(places, [(0, 4), (1, 7), (2, 13)]);
    let span = gates.handoff.as_ref().unwrap().current_task_span.unwrap();
    assert_eq!((span.start.line, span.start.column), (5, 20));
    // ... and what every entry of the log says, which only the gates read.
    let log = gates.log.as_ref().unwrap();
    assert_eq!(log.count, 1);
    assert!(log.with_completion_evidence.contains("flag"));
    assert!(!log.with_entries.contains("docs"));
    assert!(read.log.is_none());
}

#[test]
fn a_current_task_written_as_a_number_has_no_place_for_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    std::fs::write(
        dir.path().join(".small/handoff.small.yml"),
        HANDOFF.replace("current_task_id: docs", "current_task_id: 42"),
    )
    .unwrap();
    let st = gate_state(dir.path());
    let h = st.handoff.as_ref().unwrap();
    // Shown as text, as everywhere; S3 leaves a non-string to the schema.
    assert_eq!(h.current_task_id.as_deref(), Some("42"));
    assert!(h.current_task_span.is_none());
}

#[test]
fn a_workspace_without_a_log_has_no_log_facts() {
    let dir = tempfile::tempdir().unwrap();
    v1_workspace(dir.path());
    std::fs::remove_file(dir.path().join(".small/progress.small.yml")).unwrap();
    let st = gate_state(dir.path());
    assert!(st.log.is_none());
    assert!(st.tasks.is_some());
    assert!(st
        .problems
        .iter()
        .any(|p| p.starts_with(".small/progress.small.yml")));
}
