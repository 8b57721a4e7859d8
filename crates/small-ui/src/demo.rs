//! `small ui --demo`: a sample workspace written with the same operations the commands use
//! (init, plan, progress add, checkpoint, handoff), so that a newcomer sees a full page at once.

use std::path::Path;

use small_core::ops::handoff::{self, HandoffRequest};
use small_core::ops::init::{init, InitRequest};
use small_core::ops::plan::{self, PlanRequest};
use small_core::ops::record::{self, RecordRequest};
use small_core::ops::{OpError, Workspace};

/// An operation's refusal, in words.
fn words(e: OpError) -> String {
    e.diagnostic.message
}

/// Record work on `task` in `ws`: a checkpoint for a completed or blocked task, else a
/// progress entry.
fn work(ws: &Workspace, task: &str, status: &str, evidence: &[(&str, &str)]) -> Result<(), String> {
    let req = RecordRequest {
        task: task.into(),
        status: status.into(),
        evidence: evidence
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..RecordRequest::default()
    };
    if status == "completed" || status == "blocked" {
        record::checkpoint(ws, &req).map(|_| ()).map_err(words)
    } else {
        record::progress_add(ws, &req).map(|_| ()).map_err(words)
    }
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
    let ws = Workspace::at(root.to_path_buf());
    let depends = [
        "task-2:task-1",
        "task-3:task-2",
        "task-4:task-1",
        "task-5:task-3",
        "task-5:task-4",
        "task-6:task-5",
    ];
    plan::plan(
        &ws,
        &PlanRequest {
            depends: depends.iter().map(|d| d.to_string()).collect(),
            ..PlanRequest::default()
        },
    )
    .map_err(words)?;
    work(
        &ws,
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
    work(
        &ws,
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
    work(
        &ws,
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
    work(
        &ws,
        "task-3",
        "in_progress",
        &[("evidence", "The summary prints; the diff view is next")],
    )?;
    work(
        &ws,
        "task-6",
        "blocked",
        &[(
            "evidence",
            "Waiting for the release date from the maintainers",
        )],
    )?;
    handoff::handoff(
        &ws,
        &HandoffRequest {
            summary: Some(
                "Flag parsing, planning and docs are done; printing the changes is in progress."
                    .into(),
            ),
            ..HandoffRequest::default()
        },
    )
    .map_err(words)?;
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
