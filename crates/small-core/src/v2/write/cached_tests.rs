//! A writer on the cached state gives what a writer that reads every record gives: the same
//! verdict, the same records written, and a cache whose answer is a full read's.
//!
//! Random histories are written step by step. Before each step the tree is copied; the
//! step runs on the original through the cache (as commands run) and on the copy with the
//! cache removed (every record read), with the same identities and times; the verdicts and
//! the resulting trees must be equal, byte for byte. Some steps are appends another program
//! made (the cache is put back as it was before them), which the next writer folds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::v2::record::fixed;
use crate::v2::snapshot::snapshot;
use crate::v2::tests::valid;

/// The files of the state cache (`.small-cache/`).
const CACHE: [&str; 2] = ["v2-state.v1", "v2-frontier.v1"];

#[derive(Debug, Clone)]
enum Step {
    Start,
    Progress(usize, usize),
    Checkpoint(usize, bool),
    Handoff,
    Close,
    PlanAdd,
    PlanStatus(usize, usize),
    Depends(usize, usize),
    Mode(bool),
    /// An append another program made: the cache does not carry it.
    Foreign(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => Just(Step::Start),
        4 => (0..8usize, 0..5usize).prop_map(|(t, s)| Step::Progress(t, s)),
        2 => (0..8usize, any::<bool>()).prop_map(|(t, c)| Step::Checkpoint(t, c)),
        1 => Just(Step::Handoff),
        1 => Just(Step::Close),
        2 => Just(Step::PlanAdd),
        1 => (0..8usize, 0..5usize).prop_map(|(t, s)| Step::PlanStatus(t, s)),
        1 => (0..8usize, 0..8usize).prop_map(|(a, b)| Step::Depends(a, b)),
        1 => any::<bool>().prop_map(Step::Mode),
        2 => (0..8usize).prop_map(Step::Foreign),
    ]
}

/// The id of task `i`: for `i` below 6 one of the tasks small defined (their transitions
/// name the policy they were defined under), else any (the first tasks of the tree name no
/// policy revision, so a transition on them is stale: a conflict, read in full).
fn task_of(w: &Writer, i: usize) -> String {
    let ours: Vec<&Task> = w
        .state
        .tasks
        .iter()
        .filter(|t| !t.policy_revision.is_empty())
        .collect();
    let all: Vec<&Task> = w.state.tasks.iter().collect();
    let pool = if i < 6 && !ours.is_empty() { ours } else { all };
    pool.get(i % pool.len().max(1))
        .map_or_else(|| "task_none".to_string(), |t| t.id.clone())
}

/// Run `s` on the workspace at `root`: its verdict (`Ok` and the frontier, or the refusal's
/// code and message), whether the writer started from the cached state, and whether it was
/// still on it at the end (its appends folded in).
fn run(root: &Path, s: &Step) -> (String, bool, bool) {
    let mut w = match Writer::open(root, Duration::from_secs(10)) {
        Ok(w) => w,
        Err(e) => {
            return (
                format!("open: {} {}", e.diagnostic.code, e.diagnostic.message),
                false,
                false,
            )
        }
    };
    let cached = w.on_cached_state();
    let session = resolve_session(root, None).unwrap_or_default();
    let statuses = [
        "pending",
        "in_progress",
        "completed",
        "blocked",
        "cancelled",
    ];
    let r: Result<()> = match s {
        Step::Start => start_session(
            &mut w,
            &StartRequest {
                label: Some("step".into()),
                ..StartRequest::default()
            },
        )
        .map(drop),
        Step::Progress(t, st) => {
            let t = task_of(&w, *t);
            progress(&mut w, &session, &t, statuses[st % 5], "ev", "", None).map(drop)
        }
        Step::Foreign(t) => {
            let t = task_of(&w, *t);
            progress(&mut w, &session, &t, "in_progress", "theirs", "", None).map(drop)
        }
        Step::Checkpoint(t, completed) => {
            let t = task_of(&w, *t);
            let status = if *completed { "completed" } else { "blocked" };
            checkpoint(&mut w, &session, &t, status, "checked", "").map(drop)
        }
        Step::Handoff => handoff(&mut w, &session, "handing over").map(drop),
        Step::Close => close_session(&mut w, &session, "closing").map(drop),
        Step::PlanAdd => plan(
            &mut w,
            &session,
            &PlanChange::Add {
                title: "another task".into(),
            },
        )
        .map(drop),
        Step::PlanStatus(t, st) => {
            let task = task_of(&w, *t);
            let change = PlanChange::Status {
                task,
                status: statuses[st % 5].into(),
            };
            plan(&mut w, &session, &change).map(drop)
        }
        Step::Depends(a, b) => {
            let (task, on) = (task_of(&w, *a), task_of(&w, *b));
            plan(&mut w, &session, &PlanChange::Depends { task, on }).map(drop)
        }
        Step::Mode(multi) => {
            let mode = if *multi { "multi" } else { "solo" };
            set_mode(&mut w, &session, mode, "step", "test", "").map(drop)
        }
    };
    // The frontier after the step (computed from the marks a handoff left, on the cached
    // state) is part of the answer.
    let verdict = match r.and_then(|()| w.frontier()) {
        Ok(frontier) => format!("ok {frontier}"),
        Err(e) => format!("{} {}", e.diagnostic.code, e.diagnostic.message),
    };
    let stayed = cached && w.on_cached_state();
    (verdict, cached, stayed)
}

/// Every file under `dir` (relative path, bytes), sorted.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A copy of the workspace at `from` (records and the local session selection) without
/// the state cache.
fn copy_without_cache(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for (rel, bytes) in files(from) {
        if CACHE.iter().any(|c| rel.ends_with(c)) || rel.ends_with("lock") {
            continue;
        }
        let p = to.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    to
}

/// Run `s` as another program would: the state cache is as it was before.
fn foreign(root: &Path, s: &Step) {
    let saved: Vec<Option<Vec<u8>>> = CACHE
        .iter()
        .map(|c| std::fs::read(root.join(".small-cache").join(c)).ok())
        .collect();
    run(root, s);
    for (c, bytes) in CACHE.iter().zip(saved) {
        let p = root.join(".small-cache").join(c);
        match bytes {
            Some(b) => std::fs::write(p, b).unwrap(),
            None => drop(std::fs::remove_file(p)),
        }
    }
}

/// The snapshot's answer, whatever path gave it.
fn answer(mut s: crate::v2::snapshot::Snapshot) -> crate::v2::snapshot::Snapshot {
    s.from_cache = false;
    s.folded = 0;
    s
}

/// Write `steps` through both paths (see the module documentation); how many writers
/// started from the cache, and how many of them stayed on it to the end.
fn both_paths(steps: &[Step]) -> Result<(usize, usize), TestCaseError> {
    let d = valid();
    let root = d.path();
    let small = root.join(".small");
    // The first read leaves the cache writers start from (once the tree is not racy).
    std::thread::sleep(crate::v2::snapshot::RACY_MARGIN + Duration::from_millis(50));
    snapshot(root, &small, true);
    let mut from_cache = (0usize, 0usize);
    // Tasks small defines, so that most steps keep the state free of conflicts.
    for k in 0..3u64 {
        fixed::set(Some((100 + 10 * k, 1_790_000_000 + 10 * k as i64)));
        let step = if k == 0 { Step::Start } else { Step::PlanAdd };
        run(root, &step);
    }
    fixed::set(None);
    for (k, s) in steps.iter().enumerate() {
        let start = Some((1000 * (k as u64 + 1), 1_800_000_000 + 1000 * k as i64));
        if matches!(s, Step::Foreign(_)) {
            fixed::set(start);
            foreign(root, s);
            fixed::set(None);
            continue;
        }
        // What `status` would read now: through the cache, the writer must start there.
        let seen = snapshot(root, &small, true);
        let expect_cached =
            seen.from_cache && seen.diagnostics.is_empty() && seen.state.conflicts.is_empty();
        let copy = copy_without_cache(root);
        fixed::set(start);
        let (ours, cached, stayed) = run(root, s);
        fixed::set(start);
        let (full, on_cache, _) = run(copy.path(), s);
        fixed::set(None);
        prop_assert!(!on_cache, "the copy has no cache");
        prop_assert_eq!(&ours, &full, "step {} {:?}: verdicts", k, s);
        prop_assert_eq!(
            files(&small),
            files(&copy.path().join(".small")),
            "step {} {:?}: trees",
            k,
            s
        );
        prop_assert!(
            cached || !expect_cached,
            "step {} {:?}: the writer read every record",
            k,
            s
        );
        from_cache.0 += usize::from(cached);
        from_cache.1 += usize::from(stayed);
        // The cache left behind answers as a full read does.
        let through_cache = snapshot(root, &small, true);
        prop_assert_eq!(
            answer(through_cache),
            answer(snapshot(root, &small, false)),
            "step {} {:?}: state",
            k,
            s
        );
    }
    Ok(from_cache)
}

#[test]
fn a_write_on_the_cached_state_is_the_write_on_every_record() {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 24,
        ..ProptestConfig::default()
    });
    let from_cache = std::cell::Cell::new((0usize, 0usize));
    runner
        .run(&proptest::collection::vec(step(), 1..14), |steps| {
            let (started, stayed) = both_paths(&steps)?;
            let (a, b) = from_cache.get();
            from_cache.set((a + started, b + stayed));
            Ok(())
        })
        .unwrap();
    // The cached path was taken (most steps keep the state free of conflicts), and nearly
    // every writer folded its own appends in instead of reading every record again (a step
    // that raises a conflict is read in full).
    let (started, stayed) = from_cache.get();
    assert!(started > 24, "{started} writers started from the cache");
    assert!(
        stayed * 10 >= started * 9,
        "{stayed} of {started} writers stayed on the cached state"
    );
}

/// A writer that never needs the frontier leaves it uncomputed in the cache; the next reader
/// computes it (the full read's) and caches it so; a writer that needs it when the lines file
/// is gone reads every record and still gets the full read's.
#[test]
fn a_frontier_left_uncomputed_is_computed_when_asked_for() {
    use crate::v2::snapshot::{frontier_left_stale, RACY_MARGIN};
    let d = valid();
    let root = d.path();
    let small = root.join(".small");
    let settle = || std::thread::sleep(RACY_MARGIN + Duration::from_millis(50));
    settle();
    snapshot(root, &small, true);
    // A task small defines: a transition on it raises no conflict.
    for step in [Step::Start, Step::PlanAdd] {
        assert_eq!(run(root, &step).0.split(' ').next(), Some("ok"));
    }
    let session = resolve_session(root, None).unwrap();
    let progress_on_cache = |evidence: &str| {
        let mut w = Writer::open(root, Duration::from_secs(10)).unwrap();
        assert!(w.on_cached_state(), "the writer starts from the cache");
        let t = task_of(&w, 0);
        progress(&mut w, &session, &t, "in_progress", evidence, "", None).unwrap();
    };
    settle();
    snapshot(root, &small, true);
    progress_on_cache("first");
    assert_eq!(frontier_left_stale(root), Some(true), "left uncomputed");
    let cold = snapshot(root, &small, false);
    assert!(!cold.state.frontier.is_empty());
    settle();
    let read = snapshot(root, &small, true);
    assert_eq!(answer(read), answer(cold.clone()), "the reader computes it");
    assert_eq!(frontier_left_stale(root), Some(false), "and caches it so");
    let again = snapshot(root, &small, true);
    assert!(again.from_cache);
    assert_eq!(again.state.frontier, cold.state.frontier);
    // Left uncomputed again, and the lines file gone: a writer asking reads every record.
    progress_on_cache("second");
    std::fs::remove_file(root.join(".small-cache/v2-frontier.v1")).unwrap();
    let mut w = Writer::open(root, Duration::from_secs(10)).unwrap();
    let frontier = w.frontier().unwrap();
    assert!(!w.on_cached_state(), "read in full");
    drop(w);
    assert_eq!(frontier, snapshot(root, &small, false).state.frontier);
}
