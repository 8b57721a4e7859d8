//! `apply`: run a shell command in the workspace and record what it did, for either profile.
//! v1 records progress entries as the progress mode asks (and, when asked, checkpoints the
//! task and regenerates the handoff); 2.0.0 records a `cli_captured` receipt and a
//! `command_recorded` event in the session. The child shell runs here ([`shell`]); what a
//! front end shows while it runs (the child's output, the steps of a v1 run) goes through
//! the request's [`Watch`].

mod shell;

use std::path::PathBuf;

use serde::Serialize;

use crate::authoring::apply::{self as v1, ApplyOutcome, RunSpec};
use crate::ops::claims::fence;
use crate::ops::{OpError, OpResult, Workspace};
use crate::v2::write as v2w;

pub use crate::authoring::apply::{ApplyRequest as RunRequest, ProgressMode, Step, NOT_EXECUTED};

/// What a front end sees of a run as it happens. Every method does nothing by default; the
/// child's output arrives from two threads at once, hence `Sync`.
pub trait Watch: Sync {
    /// A chunk of the child's output, as it comes (`stderr`: from its standard error).
    fn output(&self, chunk: &[u8], stderr: bool) {
        let _ = (chunk, stderr);
    }

    /// A step of a v1 run, when it happens.
    fn step(&self, step: Step<'_>) {
        let _ = step;
    }

    /// A problem that does not stop the run (the output log cannot be kept).
    fn warning(&self, message: &str) {
        let _ = message;
    }
}

/// What to run, and what to record of it: the run as v1's apply takes it (its `mode`,
/// `scope` and `auto_progress` are v1's; 2.0.0 takes the rest), the session, and who watches.
#[derive(Clone, Default)]
pub struct ApplyRequest<'a> {
    pub run: v1::ApplyRequest,
    /// 2.0.0: the session to record in (default: the active one).
    pub session: Option<String>,
    /// Who watches the run (its output, its steps); nobody when `None`.
    pub watch: Option<&'a dyn Watch>,
    /// Run even though another agent's live lease covers the task; the override is recorded
    /// as a progress entry before the command runs.
    pub force: bool,
}

/// A 2.0.0 run: the reference's keys (sorted, as its map prints them).
#[derive(Debug, Clone, Serialize)]
pub struct V2Applied {
    pub checkpointed: bool,
    pub child_executed: bool,
    pub child_exit_code: i32,
    pub child_outcome: &'static str,
    pub command: String,
    /// The `command_recorded` event.
    pub event: String,
    pub evidence_recorded: bool,
    pub profile: &'static str,
    /// The receipt's digest.
    pub receipt: String,
    pub task_id: String,
}

/// A 2.0.0 dry run: nothing runs and nothing is recorded (the reference's keys, sorted).
#[derive(Debug, Clone, Serialize)]
pub struct V2DryRun {
    pub checkpointed: bool,
    pub child_executed: bool,
    pub child_exit_code: i32,
    pub child_outcome: &'static str,
    /// The command as given, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub dry_run: bool,
    pub evidence_recorded: bool,
    /// The task's id (empty without a task).
    pub task_id: String,
    /// Where the command would run (for the human line).
    #[serde(skip)]
    pub root: PathBuf,
}

/// A run of either profile.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Applied {
    V1(Box<ApplyOutcome>),
    V2(Box<V2Applied>),
    V2DryRun(Box<V2DryRun>),
}

/// Run the command and record it (or, for a dry run, say what would run). Refusals come
/// before anything runs; the workspace lock is never held while the command runs, so the
/// command may itself run `small`.
pub fn apply(ws: &Workspace, req: &ApplyRequest) -> OpResult<Applied> {
    // A run on a task another live holder has is refused before anything runs.
    let task = req
        .run
        .task
        .as_deref()
        .filter(|t| !t.trim().is_empty() && !req.run.dry_run);
    let seen = task.map(|_| fence::Seen::read(ws)).unwrap_or_default();
    if let Some(task) = task {
        if let Some(note) = fence::before_write(ws, &seen, task, req.force)? {
            record_override(ws, &seen, req, task, note)?;
        }
    }
    let out = ws.backend().apply(ws, req)?;
    // --auto-checkpoint completed the task (its lease becomes a done record) or blocked it
    // (its lease is given back).
    if let Some(task) = task.filter(|_| req.run.auto_checkpoint) {
        let status = if out.exit_code() == 0 {
            "completed"
        } else {
            "blocked"
        };
        fence::after_checkpoint(ws, &seen, task, status, &Default::default());
    }
    Ok(out)
}

/// `--force` over another agent's lease: a progress entry says so before anything runs.
fn record_override(
    ws: &Workspace,
    seen: &fence::Seen,
    req: &ApplyRequest,
    task: &str,
    note: String,
) -> OpResult<()> {
    let entry = crate::ops::record::RecordRequest {
        task: task.to_string(),
        status: "in_progress".into(),
        evidence: vec![("evidence".into(), format!("apply --force: {note}"))],
        notes: Some(note),
        session: req.session.clone(),
        lock_timeout: req.run.lock_timeout,
        ..Default::default()
    };
    crate::ops::record::progress_add_unfenced(ws, seen, &entry).map(|_| ())
}

pub(super) fn apply_v1(ws: &Workspace, req: &ApplyRequest) -> OpResult<Applied> {
    if req.session.is_some() {
        return Err(OpError::usage(
            "usage",
            "--session applies to SMALL 2.0.0 workspaces; this one is v1",
        ));
    }
    let root = ws.v1_root()?;
    // The shield goes up when the command starts and stays up while its result is recorded.
    let mut shield = None;
    // --auto-progress: the output goes into the evidence, not to the watcher.
    let out = v1::apply(
        &root,
        &req.run,
        |spec| {
            shield = Some(shell::Shield::raise());
            shell::run(spec, req.watch, !req.run.auto_progress)
        },
        &mut |step| {
            if let Some(w) = req.watch {
                w.step(step);
            }
        },
    )?;
    drop(shield);
    Ok(Applied::V1(Box::new(out)))
}

pub(super) fn apply_v2(ws: &Workspace, req: &ApplyRequest) -> OpResult<Applied> {
    let given = req.run.command.clone().filter(|c| !c.trim().is_empty());
    let Some(command) = given.clone().filter(|_| !req.run.dry_run) else {
        return dry_run_v2(ws, req, given);
    };
    let session = v2w::resolve_session(&ws.root, req.session.as_deref())?;
    let core = v2w::ApplyRequest {
        session: &session,
        task: req.run.task.as_deref(),
        auto_checkpoint: req.run.auto_checkpoint,
        acceptance_evidence: req.run.acceptance_evidence.as_deref(),
        handoff: req.run.handoff,
    };
    // Refuse before running anything; the lock is released before the command runs.
    v2w::apply_precheck(&mut ws.writer(req.run.lock_timeout)?, &core)?;
    let _shield = shell::Shield::raise();
    let (code, output) = run_v2(ws, req, &command)?;
    let run = v2w::CommandRun {
        command: command.clone(),
        exit_code: i64::from(code),
        output,
    };
    let out = v2w::apply_record(&mut ws.writer(req.run.lock_timeout)?, &core, &run)?;
    Ok(Applied::V2(Box::new(V2Applied {
        checkpointed: out.checkpointed,
        child_executed: true,
        child_exit_code: code,
        child_outcome: v1::outcome(code),
        command,
        event: out.event.draft.event_id.clone(),
        evidence_recorded: true,
        profile: crate::v2::PROFILE_VERSION,
        receipt: out.receipt.digest.clone(),
        task_id: out.event.draft.task_id.clone(),
    })))
}

/// Run a 2.0.0 workspace's command, its output logged under `.small-cache/commands/`: its
/// exit code and the tail of its output.
fn run_v2(ws: &Workspace, req: &ApplyRequest, command: &str) -> OpResult<(i32, Vec<u8>)> {
    let cache = ws.root.join(".small-cache").join("commands");
    std::fs::create_dir_all(&cache).map_err(io_error)?;
    let spec = RunSpec {
        root: ws.root.clone(),
        command: command.to_string(),
        output_log: cache.join(format!("{}.output.log", crate::v2::record::new_id("run"))),
    };
    shell::run(&spec, req.watch, true).map_err(io_error)
}

/// A dry run in a 2.0.0 workspace: nothing runs and nothing is recorded; the task named is
/// looked up (an unknown one is refused).
fn dry_run_v2(ws: &Workspace, req: &ApplyRequest, command: Option<String>) -> OpResult<Applied> {
    let task_id = match req
        .run
        .task
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        Some(t) => ws.writer(req.run.lock_timeout)?.task(t)?.task.id,
        None => String::new(),
    };
    Ok(Applied::V2DryRun(Box::new(V2DryRun {
        checkpointed: false,
        child_executed: false,
        child_exit_code: 0,
        child_outcome: NOT_EXECUTED,
        command,
        dry_run: true,
        evidence_recorded: false,
        task_id,
        root: ws.root.clone(),
    })))
}

fn io_error(e: std::io::Error) -> OpError {
    crate::workspace::error::Error::system(crate::workspace::error::code::IO, e.to_string()).into()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What a watcher saw: the output (`err:` or `out:` and the text) and the steps.
    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl Watch for Seen {
        fn output(&self, chunk: &[u8], stderr: bool) {
            let text = String::from_utf8_lossy(chunk);
            let stream = if stderr { "err" } else { "out" };
            self.0
                .lock()
                .unwrap()
                .push(format!("{stream}:{}", text.trim()));
        }

        fn step(&self, step: Step<'_>) {
            let name = match step {
                Step::Running { .. } => "running",
                Step::Finished { .. } => "finished",
                Step::Recorded { .. } => "recorded",
                _ => "other",
            };
            self.0.lock().unwrap().push(name.to_string());
        }
    }

    fn v1_workspace() -> tempfile::TempDir {
        use crate::authoring::templates;
        let tmp = tempfile::tempdir().unwrap();
        let small = tmp.path().join(".small");
        std::fs::create_dir(&small).unwrap();
        for f in templates::base_artifacts(Some("Apply")) {
            std::fs::write(small.join(f.name), f.content).unwrap();
        }
        std::fs::write(
            small.join("workspace.small.yml"),
            templates::workspace("repo-root", "2026-01-01T00:00:00.000000000Z"),
        )
        .unwrap();
        tmp
    }

    fn run(ws: &Workspace, auto_progress: bool) -> (Applied, Vec<String>) {
        let seen = Seen::default();
        let req = ApplyRequest {
            run: v1::ApplyRequest {
                command: Some("echo out; echo err >&2; exit 3".into()),
                task: Some("task-1".into()),
                auto_progress,
                ..Default::default()
            },
            watch: Some(&seen),
            ..Default::default()
        };
        let out = apply(ws, &req).unwrap();
        (out, seen.0.into_inner().unwrap())
    }

    #[test]
    fn a_v1_run_shows_its_steps_and_output_unless_the_evidence_keeps_it() {
        let tmp = v1_workspace();
        let ws = Workspace::at(tmp.path().to_path_buf());
        let (out, seen) = run(&ws, false);
        assert_eq!(out.exit_code(), 3);
        assert_eq!(seen.first().map(String::as_str), Some("running"));
        assert_eq!(&seen[seen.len() - 2..], ["finished", "recorded"]);
        assert!(seen.contains(&"out:out".to_string()), "{seen:?}");
        assert!(seen.contains(&"err:err".to_string()), "{seen:?}");
        let (_, seen) = run(&ws, true);
        assert_eq!(seen, ["running", "finished", "recorded"]);
        let doc = serde_json::to_value(&out).unwrap();
        assert_eq!(doc["child_outcome"], "failed");
        assert_eq!(doc["entries"][0]["evidence"]["exit_code"], 3);
    }

    #[test]
    fn a_session_is_refused_on_v1_before_anything_runs() {
        let tmp = v1_workspace();
        let ws = Workspace::at(tmp.path().to_path_buf());
        let req = ApplyRequest {
            run: v1::ApplyRequest {
                command: Some("touch ran".into()),
                ..Default::default()
            },
            session: Some("s".into()),
            ..Default::default()
        };
        let e = apply(&ws, &req).unwrap_err();
        assert_eq!(e.kind, crate::workspace::error::ErrorKind::Usage);
        assert!(!tmp.path().join("ran").exists());
    }
}

/// The words of one step of a run, as every front end says them.
pub fn said(step: &Step<'_>) -> crate::ops::report::Said {
    use crate::ops::report::Said;
    use crate::ops::report::{files, open_tasks, outln, HandoffLines};
    use crate::spec::model::TaskStatus;
    let mut o = String::new();
    match step {
        Step::DryRun {
            summary,
            root,
            task,
            handoff,
        } => {
            match summary {
                Some(c) => outln!(o, "Dry run: would run `{c}` in {}", root.display()),
                None => outln!(o, "Dry run: no command given (--cmd), nothing runs"),
            }
            if let Some(t) = task {
                outln!(o, "  task: {t}");
            }
            if *handoff {
                outln!(o, "  would regenerate the handoff after a successful run");
            }
        }
        Step::NotRecorded {
            mode,
            dry_run: true,
        } => outln!(
            o,
            "  nothing recorded ({} mode records dry runs only for plan tasks; SMALL_PROGRESS_MODE=audit records all)",
            mode.as_str()
        ),
        Step::NotRecorded { .. } => outln!(
            o,
            "Nothing recorded in progress (signal mode records runs of plan tasks only; pass --task task-N, or set SMALL_PROGRESS_MODE=audit)"
        ),
        Step::Recorded {
            task,
            timestamp,
            start: true,
            ..
        } => outln!(o, "Recorded the start of the run for {task} at {timestamp}"),
        Step::Recorded {
            task,
            status: TaskStatus::Pending,
            timestamp,
            ..
        } => outln!(o, "Recorded a pending progress entry for {task} at {timestamp}"),
        Step::Recorded {
            task, timestamp, ..
        } => outln!(
            o,
            "Recorded the outcome of the run for {task} at {timestamp} (task acceptance unchanged: `small checkpoint` accepts it)"
        ),
        Step::Running { summary } => outln!(o, "Running: {summary}"),
        Step::Finished {
            code,
            elapsed,
            output_ref,
        } => outln!(
            o,
            "{} (exit code {code}, {:.2} s); full output in {output_ref}",
            if *code == 0 {
                "Command succeeded"
            } else {
                "Command failed"
            },
            elapsed.as_secs_f64(),
        ),
        Step::EndNotRecorded { error } => {
            return Said::Warning(format!(
                "warning: the run's result was not recorded: {}",
                error.message()
            ))
        }
        Step::Checkpointed { outcome, report } => {
            outln!(
                o,
                "checkpoint: {} -> {} at {}",
                outcome.task_id,
                outcome.status,
                outcome.timestamp
            );
            o.push_str(&files(&report.written, &report.appended));
        }
        Step::HandoffWritten { outcome, report } => {
            let lines = HandoffLines {
                summary: &outcome.summary,
                current_task_id: outcome.run.current_task_id.as_deref(),
                next_steps: outcome.run.next_steps.len(),
                source: outcome.summary_source,
                replaced: outcome.replaced_summary.as_deref(),
                replay: &outcome.replay_id,
            };
            o.push_str(&lines.text("Wrote handoff"));
            o.push_str(&open_tasks(&outcome.open));
            o.push_str(&files(&report.written, &report.appended));
        }
        Step::HandoffFailed { error } => {
            return Said::Warning(format!(
                "warning: the handoff was not regenerated: {}",
                error.message()
            ))
        }
        Step::HandoffSkipped => outln!(o, "Handoff not regenerated: the command failed"),
    }
    // Every step says at least one line; the front end ends the last.
    o.pop();
    Said::Info(o)
}
