//! `small ui --demo`: a sample workspace written with small-core's own authoring operations
//! (init, plan, checkpoint, handoff), so that a newcomer sees a full page at once.

use std::path::Path;

use small_core::ops::init::{init, InitRequest};
use small_core::ops::lifecycle::{self, RecordRequest};
use small_core::ops::lifecycle::{edit_plan, EditPlanRequest as PlanRequest};
use small_core::ops::lifecycle::{write_handoff, HandoffRequest};
use small_core::ops::txn::Transaction;

fn tx(root: &Path, f: impl FnOnce(&mut Transaction) -> Result<(), String>) -> Result<(), String> {
    let mut t = Transaction::begin(root).map_err(|e| e.to_string())?;
    f(&mut t)?;
    t.commit().map_err(|e| e.to_string())?;
    Ok(())
}

fn depends(root: &Path, task: &str, dep: &str) -> Result<(), String> {
    tx(root, |t| {
        edit_plan(
            t,
            &PlanRequest {
                depends: vec![(task.into(), dep.into())],
                ..PlanRequest::default()
            },
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    })
}

fn record(root: &Path, task: &str, status: &str, evidence: &[(&str, &str)]) -> Result<(), String> {
    tx(root, |t| {
        let req = RecordRequest {
            task: task.into(),
            status: status.into(),
            evidence: evidence
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..RecordRequest::default()
        };
        let r = if status == "completed" || status == "blocked" {
            lifecycle::checkpoint(t, &req)
        } else {
            lifecycle::add_progress(t, &req)
        };
        r.map(|_| ()).map_err(|e| e.to_string())
    })
}

/// Write the sample workspace into `root` (which must exist and hold no workspace).
pub fn generate(root: &Path) -> Result<(), String> {
    let tasks: Vec<String> = [
        "Parse the --dry-run flag",
        "Plan the changes without writing them",
        "Print what would change",
        "Document the flag",
        "Test the dry run end to end",
        "Release notes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    init(&InitRequest {
        root,
        intent: Some("Add a --dry-run flag that shows what a command would change"),
        force: false,
        agents: None,
        tasks: &tasks,
    })
    .map_err(|e| e.to_string())?;
    for (task, dep) in [
        ("task-2", "task-1"),
        ("task-3", "task-2"),
        ("task-4", "task-1"),
        ("task-5", "task-3"),
        ("task-5", "task-4"),
        ("task-6", "task-5"),
    ] {
        depends(root, task, dep)?;
    }
    record(
        root,
        "task-1",
        "completed",
        &[
            (
                "evidence",
                "The flag parses; `--dry-run=false` is accepted too",
            ),
            ("command", "cargo test -p cli flags::dry_run"),
            ("test", "flags::dry_run_is_parsed"),
            ("commit", "3f2a9c1"),
        ],
    )?;
    record(
        root,
        "task-2",
        "completed",
        &[
            (
                "evidence",
                "Every write goes through the plan; nothing touches the disk",
            ),
            ("test", "plan::dry_run_writes_nothing"),
            ("commit", "8b41d07"),
        ],
    )?;
    record(
        root,
        "task-4",
        "completed",
        &[
            (
                "evidence",
                "docs/flags.md describes --dry-run with an example",
            ),
            ("link", "https://example.com/docs/flags#dry-run"),
        ],
    )?;
    record(
        root,
        "task-3",
        "in_progress",
        &[("evidence", "The summary prints; the diff view is next")],
    )?;
    record(
        root,
        "task-6",
        "blocked",
        &[(
            "evidence",
            "Waiting for the release date from the maintainers",
        )],
    )?;
    tx(root, |t| {
        write_handoff(
            t,
            &HandoffRequest {
                summary: Some(
                    "Flag parsing, planning and docs are done; printing the changes is in progress."
                        .into(),
                ),
                ..HandoffRequest::default()
            },
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_demo_passes_the_strict_gates() {
        let dir = tempfile::tempdir().unwrap();
        super::generate(dir.path()).unwrap();
        let loc = small_core::ops::gate::locate(Some(dir.path())).unwrap();
        let c = crate::view::checks(&loc);
        assert_eq!(c.verdict.word, "pass", "{:?}", c.stages);
        let t = small_core::ops::timeline::Timeline::open(
            dir.path(),
            &loc.small_dir.join("progress.small.yml"),
        );
        let plan = crate::view::plan(&loc, &crate::view::state(&loc), &t, &[]);
        assert_eq!(plan.tasks.len(), 6);
        assert_eq!(plan.graph.edges.len(), 6);
    }
}
