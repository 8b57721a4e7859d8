//! What `apply` records (seed 000, invariant 7: progress modes). Running the command is the
//! caller's business (the `apply` operation runs a shell); what a run means for the workspace
//! is decided here: which events are recorded in which mode, which task ids may be recorded,
//! the command log a run leaves in `.small-cache/logs/`, the progress entries and their
//! evidence, and the replay IDs they are filed under, read inside a transaction.

use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

use crate::authoring::progress::{FieldValue, NewEntry, TimestampRule};
use crate::spec::consts::{ArtifactKind, CACHE_DIR, META_TASK_PREFIX, WORKSPACE_FILE};
use crate::spec::model::{TaskStatus, HANDOFF_REPLAY_ID_POINTER, RUN_REPLAY_ID_POINTER};
use crate::spec::timestamp::Instant;
use crate::workspace::error::{code, Error};
use crate::workspace::txn::{atomic_write, CommitReport, Transaction};
use crate::yaml::{self, Limits};

/// Most output kept in the evidence of `--auto-progress` / `--auto-checkpoint`.
pub const EVIDENCE_OUTPUT_CAP: usize = 4000;

/// Progress mode (seed 000, invariant 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// Record only the end of a run of a plan task (and dry runs of one).
    #[default]
    Signal,
    /// Record everything: starts, ends, dry runs, any task id.
    Audit,
}

impl ProgressMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ProgressMode::Signal => "signal",
            ProgressMode::Audit => "audit",
        }
    }
}

/// The moments of a run that may be recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    DryRun,
    Start,
    End,
}

/// Whether an event is recorded: audit records everything; signal records only the end of a
/// run (and dry runs) of a plan task.
pub fn should_record(event: Event, task_id: &str, mode: ProgressMode) -> bool {
    match mode {
        ProgressMode::Audit => true,
        ProgressMode::Signal => match event {
            Event::Start => false,
            Event::DryRun | Event::End => is_plan_task_id(task_id),
        },
    }
}

fn is_plan_task_id(id: &str) -> bool {
    let id = id.trim();
    id.strip_prefix("task-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The display of a command as entries record it (see [`crate::spec::command`]).
#[cfg(test)]
pub fn summarize(command: &str) -> String {
    crate::spec::command::summarize(command.as_bytes())
}

/// `exit code N; output …` with the last [`EVIDENCE_OUTPUT_CAP`] bytes of the output.
#[cfg(test)]
pub fn output_evidence(output: &[u8], exit_code: i32) -> String {
    let text = String::from_utf8_lossy(output);
    let trimmed = text.trim_end_matches(['\n', '\r']);
    if trimmed.trim().is_empty() {
        return format!("exit code {exit_code}; no output");
    }
    if trimmed.len() <= EVIDENCE_OUTPUT_CAP {
        return format!("exit code {exit_code}; output: {trimmed}");
    }
    let mut start = trimmed.len() - EVIDENCE_OUTPUT_CAP;
    while !trimmed.is_char_boundary(start) {
        start += 1;
    }
    format!(
        "exit code {exit_code}; output (last {} of {} bytes): {}",
        trimmed.len() - start,
        trimmed.len(),
        &trimmed[start..]
    )
}

/// The outcome of a command that did not run (a dry run).
pub const NOT_EXECUTED: &str = "not_executed";

/// `succeeded` or `failed`.
pub fn outcome(code: i32) -> &'static str {
    if code == 0 {
        "succeeded"
    } else {
        "failed"
    }
}

/// The evidence of a finished run: what the tool observed, not an acceptance of the task
/// (`{exit_code, kind: cli_execution, outcome, strength: cli_captured}`), with the tail of
/// the output as `bounded_output` when `output` is given.
pub fn execution_evidence(code: i32, output: Option<&[u8]>) -> FieldValue {
    let mut items = vec![
        ("exit_code".to_string(), FieldValue::Int(i64::from(code))),
        ("kind".to_string(), FieldValue::Str("cli_execution".into())),
        ("outcome".to_string(), FieldValue::Str(outcome(code).into())),
        (
            "strength".to_string(),
            FieldValue::Str("cli_captured".into()),
        ),
    ];
    if let Some(output) = output {
        let text = String::from_utf8_lossy(output);
        let trimmed = text.trim_end_matches(['\n', '\r']);
        if trimmed.len() > EVIDENCE_OUTPUT_CAP {
            let mut start = trimmed.len() - EVIDENCE_OUTPUT_CAP;
            while !trimmed.is_char_boundary(start) {
                start += 1;
            }
            items.push((
                "bounded_output".into(),
                FieldValue::Str(trimmed[start..].to_string()),
            ));
            items.push(("output_truncated".into(), FieldValue::Bool(true)));
            items.push((
                "output_limit_bytes".into(),
                FieldValue::Int(EVIDENCE_OUTPUT_CAP as i64),
            ));
        } else if !trimmed.trim().is_empty() {
            items.push((
                "bounded_output".into(),
                FieldValue::Str(trimmed.to_string()),
            ));
        }
    }
    FieldValue::Map(items)
}

/// What a run needs to know about the workspace, read in one transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The workspace's run replay ID (what run-bound entries carry in `replayId`).
    pub run_replay: Option<String>,
    /// The replay ID the run's logs are filed under: the run's, else the handoff's (lower
    /// case), else `unbound`.
    pub log_replay: String,
    /// The plan's task ids, `None` when the plan cannot be read.
    pub plan_ids: Option<Vec<String>>,
    /// The plan tasks with acceptance criteria (`acceptance` not empty).
    pub with_acceptance: Vec<String>,
    /// How long each of the run's transactions waits for the workspace lock (`None`: the
    /// default, [`crate::workspace::txn::lock_timeout_from_env`]).
    pub lock_timeout: Option<Duration>,
}

/// Read the [`Context`] of a run inside a transaction (released before the command runs,
/// so that the command may itself run `small`), waiting `lock_timeout` for the lock.
pub fn context(root: &Path, lock_timeout: Option<Duration>) -> Result<Context, Error> {
    let txn = begin(root, lock_timeout)?;
    let read = |rel: &str| -> Option<yaml::Document> {
        let bytes = txn.read(rel).ok()??;
        yaml::parse_bytes(&bytes, &Limits::default()).ok()
    };
    let well_formed = |doc: &Option<yaml::Document>, pointer: &str| -> Option<String> {
        let v = doc.as_ref()?.root.pointer(pointer)?.as_str()?.trim();
        crate::spec::replayid::is_well_formed(&v.to_ascii_lowercase()).then(|| v.to_string())
    };
    let meta = read(&crate::spec::consts::small_rel(WORKSPACE_FILE));
    let handoff = read(&ArtifactKind::Handoff.rel_path());
    let run_replay = well_formed(&meta, RUN_REPLAY_ID_POINTER);
    let log_replay = run_replay
        .clone()
        .or_else(|| well_formed(&handoff, HANDOFF_REPLAY_ID_POINTER))
        .map(|v| v.to_ascii_lowercase())
        .unwrap_or_else(|| "unbound".to_string());
    let plan = read(&ArtifactKind::Plan.rel_path());
    let tasks = plan
        .as_ref()
        .and_then(|doc| doc.root.get("tasks")?.as_seq());
    let plan_ids = tasks.map(|tasks| {
        tasks
            .iter()
            .filter_map(|t| t.get("id")?.as_str().map(str::to_string))
            .collect()
    });
    let with_acceptance = tasks
        .map(|tasks| {
            tasks
                .iter()
                .filter(|t| {
                    t.get("acceptance")
                        .and_then(|a| a.as_seq())
                        .is_some_and(|a| !a.is_empty())
                })
                .filter_map(|t| t.get("id")?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Ok(Context {
        run_replay: run_replay.filter(|v| crate::spec::replayid::is_well_formed(v)),
        log_replay,
        plan_ids,
        with_acceptance,
        lock_timeout,
    })
}

/// Lock the workspace, waiting `timeout` (`None`: the default).
fn begin(root: &Path, timeout: Option<Duration>) -> Result<Transaction, Error> {
    Ok(match timeout {
        Some(t) => Transaction::begin_with_timeout(root, t)?,
        None => Transaction::begin(root)?,
    })
}

impl Context {
    /// Refuse a task that is not in the plan before anything runs, when something would be
    /// recorded for it (an entry for an unknown task would break strict check S2). `meta/`
    /// ids and unreadable plans pass.
    pub fn check_task(&self, task: &str, records: bool) -> Result<(), Error> {
        if !records || task.starts_with(META_TASK_PREFIX) {
            return Ok(());
        }
        match &self.plan_ids {
            Some(ids) if !ids.iter().any(|id| id == task) => {
                let mut e = Error::unknown_task(task, ids);
                e.diagnostic.message.push_str("; nothing was run");
                Err(e)
            }
            _ => Ok(()),
        }
    }

    /// A progress entry of this run, bound to the run's replay ID when there is one.
    pub fn entry(
        &self,
        task: &str,
        status: TaskStatus,
        evidence: impl Into<FieldValue>,
        notes: impl Into<String>,
    ) -> NewEntry {
        let mut e = NewEntry::new(task, Some(status.as_str()))
            .field("evidence", evidence.into())
            .field("notes", notes.into());
        if let Some(r) = &self.run_replay {
            e.set("replayId", r.clone());
        }
        e
    }

    /// Where the command captured at `t` is kept: `.small-cache/logs/<replayId>/commands/
    /// <t>.txt`, or, without a replay ID to file it under, the content-addressed
    /// `.small-cache/commands/<sha256>.txt`.
    pub fn command_ref(&self, t: Instant, sha256: &str) -> String {
        if crate::spec::command::is_hex64(&self.log_replay) {
            crate::spec::command::command_ref(&self.log_replay, t)
        } else {
            format!("{CACHE_DIR}/commands/{sha256}.txt")
        }
    }

    /// Where the output of a run started at `stamp` goes.
    pub fn output_ref(&self, stamp: Instant) -> String {
        let name = crate::spec::command::proof_file_name(stamp);
        let name = name.strip_suffix(".txt").unwrap_or(&name);
        format!(
            "{CACHE_DIR}/logs/{}/commands/{name}.output.log",
            self.log_replay
        )
    }
}

/// A command as entries record it: its exact bytes (kept in a file beside the workspace),
/// their SHA-256, and the bounded display (marked when cut).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    pub command: String,
    pub sha256: String,
    pub summary: String,
    /// The display is cut: the entry carries `command_summary_version`.
    pub marked: bool,
}

impl Captured {
    pub fn new(command: &str) -> Captured {
        let bytes = command.as_bytes();
        Captured {
            command: command.to_string(),
            sha256: hex::encode(Sha256::digest(bytes)),
            summary: crate::spec::command::summarize(bytes),
            marked: crate::spec::command::needs_marker(bytes),
        }
    }
}

/// Append `entry` in its own transaction. With `captured`, the entry's timestamp is chosen
/// first (inside the transaction, so nothing else appends in between), the command's bytes
/// are written to the file named for that instant, and the entry carries the display, the
/// digest, the reference (and the marker when the display is cut). Returns the timestamp.
pub fn record_captured(
    root: &Path,
    ctx: &Context,
    mut entry: NewEntry,
    captured: Option<&Captured>,
    out: &mut ApplyOutcome,
) -> Result<String, Error> {
    let mut txn = begin(root, ctx.lock_timeout)?;
    let mut rule = TimestampRule::Now;
    if let Some(c) = captured {
        let last = txn
            .last_progress_timestamp()?
            .and_then(|t| crate::spec::timestamp::parse(&t).ok());
        let t = crate::authoring::progress::resolve_timestamp(
            last,
            &TimestampRule::Now,
            crate::spec::timestamp::now(),
        )
        .map_err(|m| Error::invalid(code::ENTRY, m))?;
        let command_ref = ctx.command_ref(t, &c.sha256);
        atomic_write(root.join(&command_ref), c.command.as_bytes()).map_err(|e| {
            Error::system(
                code::IO,
                format!("cannot write the command log {command_ref}: {e}"),
            )
        })?;
        entry.set("command", c.summary.clone());
        entry.set("command_summary", c.summary.clone());
        entry.set("command_sha256", c.sha256.clone());
        entry.set("command_ref", command_ref);
        if c.marked {
            entry.set(
                crate::spec::command::SUMMARY_VERSION_KEY,
                FieldValue::Int(crate::spec::command::SUMMARY_VERSION),
            );
        }
        rule = TimestampRule::At(crate::spec::timestamp::format_utc(t));
    }
    let appended = txn.append_progress(&entry, &rule)?;
    let report = txn.commit()?;
    out.add(&report);
    out.entries.push(appended.entry);
    Ok(appended.timestamp)
}

/// What `small apply` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct ApplyRequest {
    /// The shell command; `None` or blank makes the run a dry run.
    pub command: Option<String>,
    /// The plan task the run belongs to (blank: none; the entries then say `apply`).
    pub task: Option<String>,
    /// Record the intent only; nothing runs.
    pub dry_run: bool,
    /// The entry's evidence also holds the tail of the output (`bounded_output`).
    pub auto_progress: bool,
    /// Also accept the result (a checkpoint: completed on success, blocked otherwise); needs
    /// a task. Without it apply never changes the plan.
    pub auto_checkpoint: bool,
    /// The checkpoint's evidence (`--acceptance-evidence`); needed for a task with
    /// acceptance criteria.
    pub acceptance_evidence: Option<String>,
    /// Regenerate the handoff after a successful run.
    pub handoff: bool,
    pub mode: ProgressMode,
    /// The workspace kinds the run accepts (`examples` is refused: apply runs in a real
    /// workspace only, or anywhere with `any`).
    pub scope: crate::spec::model::Scope,
    /// How long each of the run's transactions waits for the workspace lock (`None`: the
    /// default).
    pub lock_timeout: Option<Duration>,
}

/// The command the caller is asked to run, and where its output is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    /// The workspace root: the command's working directory.
    pub root: std::path::PathBuf,
    pub command: String,
    /// Where the full output goes (absolute; the caller creates it).
    pub output_log: std::path::PathBuf,
}

/// What a finished command reports back: its exit code (128 + signal when killed) and the
/// tail of its output (at least [`EVIDENCE_OUTPUT_CAP`] bytes of it).
pub type RunResult = std::io::Result<(i32, Vec<u8>)>;

/// What an apply run reports as it goes, for a front end to show (in this order).
#[derive(Debug)]
pub enum Step<'a> {
    /// A dry run: what would run (the command's summary), for which task.
    DryRun {
        summary: Option<&'a str>,
        root: &'a Path,
        task: Option<&'a str>,
        handoff: bool,
    },
    /// An entry was recorded: the start of the run (`start`), a dry run (pending), or its end.
    Recorded {
        task: &'a str,
        status: TaskStatus,
        timestamp: &'a str,
        start: bool,
    },
    /// Nothing is recorded for this run in this mode (`dry_run`: of a dry run).
    NotRecorded { mode: ProgressMode, dry_run: bool },
    /// The command is about to run.
    Running { summary: &'a str },
    /// The command ended.
    Finished {
        code: i32,
        elapsed: std::time::Duration,
        output_ref: &'a str,
    },
    /// The end of the run could not be recorded (the run still counts).
    EndNotRecorded { error: &'a Error },
    /// `auto_checkpoint`: the plan status and its entry were committed.
    Checkpointed {
        outcome: &'a crate::authoring::record::RecordOutcome,
        report: &'a CommitReport,
    },
    /// `handoff`: the handoff was regenerated.
    HandoffWritten {
        outcome: &'a crate::authoring::session::HandoffOutcome,
        report: &'a CommitReport,
    },
    /// `handoff`: regenerating it failed (the run still counts).
    HandoffFailed { error: &'a Error },
    /// `handoff`: not regenerated because the command failed.
    HandoffSkipped,
}

/// What an apply run did (`small apply --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApplyOutcome {
    pub task_id: String,
    pub dry_run: bool,
    /// The command as given.
    pub command: Option<String>,
    /// The command's exit code (0 for a dry run).
    pub exit_code: i32,
    /// The progress entries this run appended, in order.
    pub entries: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Files the run's commits replaced (the plan after a checkpoint, the handoff).
    pub written: Vec<String>,
    /// Files the run's commits appended to.
    pub appended: Vec<String>,
    /// The log of the command's output (workspace-relative; none for a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_ref: Option<String>,
    /// The reference's keys: whether the command ran, its exit code (0 when it did not run)
    /// and outcome (`succeeded`, `failed` or `not_executed`).
    pub child_executed: bool,
    pub child_exit_code: i32,
    pub child_outcome: &'static str,
    /// Whether the run's outcome (or the dry run) was recorded in progress.
    pub evidence_recorded: bool,
    /// Whether `auto_checkpoint` checkpointed the task.
    pub checkpointed: bool,
}

impl ApplyOutcome {
    /// Nothing done yet: no command run, nothing recorded.
    pub fn new(task_id: &str, dry_run: bool, command: Option<String>) -> ApplyOutcome {
        ApplyOutcome {
            task_id: task_id.to_string(),
            dry_run,
            command,
            exit_code: 0,
            entries: Vec::new(),
            written: Vec::new(),
            appended: Vec::new(),
            output_ref: None,
            child_executed: false,
            child_exit_code: 0,
            child_outcome: NOT_EXECUTED,
            evidence_recorded: false,
            checkpointed: false,
        }
    }

    fn add(&mut self, report: &CommitReport) {
        for (from, to) in [
            (&report.written, &mut self.written),
            (&report.appended, &mut self.appended),
        ] {
            for f in from {
                if !to.contains(f) {
                    to.push(f.clone());
                }
            }
        }
    }
}

/// `small apply`: check the request against the workspace, record what the progress mode
/// asks for, have `run` execute the command (the caller's business: the `apply` operation
/// runs a shell), record its result, then checkpoint the task and regenerate the handoff when
/// asked. `report` sees each step as it happens. The workspace lock is held only while
/// recording, never while the command runs, so the command may itself run `small`.
pub fn apply(
    root: &Path,
    req: &ApplyRequest,
    run: impl FnOnce(&RunSpec) -> RunResult,
    report: &mut dyn FnMut(Step<'_>),
) -> Result<ApplyOutcome, Error> {
    // The command exactly as given (its bytes are what the proof holds); blank is none.
    let command = req.command.as_deref().filter(|c| !c.trim().is_empty());
    let dry_run = req.dry_run || command.is_none();
    let named = req.task.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let task_id = named.unwrap_or("apply").to_string();
    check_request(root, req, command.is_some())?;
    let ctx = context(root, req.lock_timeout)?;
    if let Some(t) = named {
        let event = if dry_run { Event::DryRun } else { Event::End };
        ctx.check_task(t, should_record(event, t, req.mode) || req.auto_checkpoint)?;
        let no_evidence = req
            .acceptance_evidence
            .as_deref()
            .is_none_or(|e| e.trim().is_empty());
        if req.auto_checkpoint && no_evidence && ctx.with_acceptance.iter().any(|id| id == t) {
            return Err(Error::usage(
                code::USAGE,
                format!("--auto-checkpoint cannot accept task {t}: it has acceptance criteria; nothing was run"),
            )
            .with_help(format!("say how they are met with --acceptance-evidence \"...\", or run the command and then `small checkpoint --task {t} --status completed --evidence \"...\"`")));
        }
    }
    let mut out = ApplyOutcome::new(&task_id, dry_run, req.command.clone());
    let Some(command) = command.filter(|_| !dry_run) else {
        record_dry_run(root, req, &ctx, command, &mut out, report)?;
        return Ok(out);
    };
    let captured = Captured::new(command);
    let output_ref = ctx.output_ref(crate::spec::timestamp::now());
    out.output_ref = Some(output_ref.clone());
    if should_record(Event::Start, &task_id, req.mode) {
        let entry = ctx.entry(
            &task_id,
            TaskStatus::InProgress,
            "Apply started",
            "apply: execution started",
        );
        let ts = record_captured(root, &ctx, entry, Some(&captured), &mut out)?;
        report(Step::Recorded {
            task: &task_id,
            status: TaskStatus::InProgress,
            timestamp: &ts,
            start: true,
        });
    }
    report(Step::Running {
        summary: &captured.summary,
    });
    let started = std::time::Instant::now();
    let spec = RunSpec {
        root: root.to_path_buf(),
        command: command.to_string(),
        output_log: root.join(&output_ref),
    };
    let (code, output) = run(&spec).map_err(|e| Error::system(code::IO, e.to_string()))?;
    out.exit_code = code;
    out.child_executed = true;
    out.child_exit_code = code;
    out.child_outcome = outcome(code);
    report(Step::Finished {
        code,
        elapsed: started.elapsed(),
        output_ref: &output_ref,
    });
    if should_record(Event::End, &task_id, req.mode) {
        let entry = ctx.entry(
            &task_id,
            TaskStatus::InProgress,
            execution_evidence(code, req.auto_progress.then_some(&output[..])),
            format!(
                "apply: command outcome {}; task acceptance unchanged",
                outcome(code)
            ),
        );
        match record_captured(root, &ctx, entry, Some(&captured), &mut out) {
            Ok(ts) => {
                out.evidence_recorded = true;
                report(Step::Recorded {
                    task: &task_id,
                    status: TaskStatus::InProgress,
                    timestamp: &ts,
                    start: false,
                })
            }
            Err(error) => report(Step::EndNotRecorded { error: &error }),
        }
    } else {
        report(Step::NotRecorded {
            mode: req.mode,
            dry_run: false,
        });
    }
    let status = if code == 0 {
        TaskStatus::Completed
    } else {
        TaskStatus::Blocked
    };
    follow_up(root, req, &task_id, status, code, &mut out, report)?;
    Ok(out)
}

/// The request's flags against each other and the workspace's files.
fn check_request(root: &Path, req: &ApplyRequest, has_command: bool) -> Result<(), Error> {
    use crate::spec::model::Scope;
    if req.scope == Scope::Examples {
        return Err(Error::usage(
            code::USAGE,
            "apply does not run in example workspaces (--workspace examples)",
        )
        .with_help("use --workspace any to override"));
    }
    if !has_command && (req.auto_progress || req.auto_checkpoint) {
        return Err(Error::usage(
            code::USAGE,
            "--auto-progress and --auto-checkpoint need a command (--cmd)",
        )
        .with_help("pass the command to run with --cmd, or drop the flag"));
    }
    if req.auto_checkpoint && req.task.as_deref().is_none_or(|t| t.trim().is_empty()) {
        return Err(
            Error::usage(code::USAGE, "--auto-checkpoint needs a plan task")
                .with_help("name the task with --task task-N"),
        );
    }
    if req.scope != Scope::Any {
        let loc = crate::workspace::Location {
            root: root.to_path_buf(),
            small_dir: root.join(crate::spec::consts::SMALL_DIR),
        };
        let ws = crate::workspace::Workspace::load(loc, &crate::workspace::LoadOptions::only(&[]));
        let mut problems = ws.diagnostics.clone();
        problems.extend(ws.check_scope(req.scope));
        if let Some(d) = problems.into_iter().find(|d| d.is_error()) {
            return Err(Error {
                kind: crate::workspace::error::ErrorKind::Invalid,
                diagnostic: Box::new(d),
            });
        }
    }
    let has = |k: ArtifactKind| root.join(k.rel_path()).is_file();
    let missing = |k: ArtifactKind, help: &str| {
        Error::invalid(code::MISSING, format!("{} is missing", k.rel_path()))
            .in_file(k.rel_path())
            .with_help(help.to_string())
    };
    if !has(ArtifactKind::Progress) {
        return Err(missing(
            ArtifactKind::Progress,
            "run `small init` (or restore the file) first",
        ));
    }
    if req.auto_checkpoint && !has(ArtifactKind::Plan) {
        return Err(missing(
            ArtifactKind::Plan,
            "--auto-checkpoint sets the task's plan status: create a plan with `small plan --add`, or drop --auto-checkpoint",
        ));
    }
    Ok(())
}

/// A dry run: say what would run, and record it when the mode says so.
fn record_dry_run(
    root: &Path,
    req: &ApplyRequest,
    ctx: &Context,
    command: Option<&str>,
    out: &mut ApplyOutcome,
    report: &mut dyn FnMut(Step<'_>),
) -> Result<(), Error> {
    let captured = command.map(Captured::new);
    let named = req.task.as_deref().map(|_| out.task_id.as_str());
    report(Step::DryRun {
        summary: captured.as_ref().map(|c| c.summary.as_str()),
        root,
        task: named,
        handoff: req.handoff,
    });
    let task_id = out.task_id.clone();
    if !should_record(Event::DryRun, &task_id, req.mode) {
        report(Step::NotRecorded {
            mode: req.mode,
            dry_run: true,
        });
        return Ok(());
    }
    let notes = match &captured {
        Some(c) => format!("apply --dry-run (cmd: {})", quote_display(&c.summary)),
        None => "apply --dry-run".to_string(),
    };
    let entry = ctx.entry(
        &task_id,
        TaskStatus::Pending,
        "Dry-run: no command executed",
        notes,
    );
    let ts = record_captured(root, ctx, entry, captured.as_ref(), out)?;
    out.evidence_recorded = true;
    report(Step::Recorded {
        task: &task_id,
        status: TaskStatus::Pending,
        timestamp: &ts,
        start: false,
    });
    Ok(())
}

/// A double-quoted string with `"` and `\` escaped and control characters written as
/// escapes (the quoting of the dry run's notes).
fn quote_display(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The checkpoint's evidence: `--acceptance-evidence`, else what was observed.
fn acceptance_evidence(req: &ApplyRequest, code: i32) -> String {
    match req.acceptance_evidence.as_deref().map(str::trim) {
        Some(e) if !e.is_empty() => e.to_string(),
        _ => format!("Explicit auto-checkpoint of captured command outcome: exit_code={code}"),
    }
}

/// After the run: the checkpoint (`auto_checkpoint`, its refusal ends the run) and the
/// handoff (`handoff`, after a success; its failure is reported, not fatal).
#[allow(clippy::too_many_arguments)]
fn follow_up(
    root: &Path,
    req: &ApplyRequest,
    task_id: &str,
    status: TaskStatus,
    code: i32,
    out: &mut ApplyOutcome,
    report: &mut dyn FnMut(Step<'_>),
) -> Result<(), Error> {
    use crate::authoring::{handoff, record, session};
    if req.auto_checkpoint {
        let mut txn = begin(root, req.lock_timeout)?;
        handoff::check_scope(&txn, req.scope)?;
        let cp = record::RecordRequest {
            task: task_id.to_string(),
            status: status.as_str().to_string(),
            evidence: vec![("evidence".into(), acceptance_evidence(req, code))],
            notes: Some("apply --auto-checkpoint".into()),
            ..Default::default()
        };
        let outcome = record::checkpoint(&mut txn, &cp)?;
        let commit = txn.commit()?;
        out.add(&commit);
        out.entries.push(outcome.entry.clone());
        out.checkpointed = true;
        report(Step::Checkpointed {
            outcome: &outcome,
            report: &commit,
        });
    }
    if !req.handoff {
        return Ok(());
    }
    if code != 0 {
        report(Step::HandoffSkipped);
        return Ok(());
    }
    let written = (|| -> Result<_, Error> {
        let mut txn = begin(root, req.lock_timeout)?;
        handoff::check_scope(&txn, req.scope)?;
        let outcome = session::write_handoff(&mut txn, &session::HandoffRequest::default())?;
        Ok((outcome, txn.commit()?))
    })();
    match written {
        Ok((outcome, commit)) => {
            out.add(&commit);
            report(Step::HandoffWritten {
                outcome: &outcome,
                report: &commit,
            });
        }
        Err(error) => report(Step::HandoffFailed { error: &error }),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authoring::templates;

    #[test]
    fn summary_collapses_and_caps_in_bytes() {
        assert_eq!(summarize("  cargo   test\n --all "), "cargo test --all");
        let long = "é".repeat(150);
        let s = summarize(&long);
        assert!(
            s.len() <= crate::spec::command::SUMMARY_CAP && s.ends_with("..."),
            "{s}"
        );
    }

    #[test]
    fn signal_mode_records_plan_task_ends_only() {
        use ProgressMode::*;
        assert!(!should_record(Event::Start, "task-1", Signal));
        assert!(should_record(Event::End, "task-12", Signal));
        assert!(!should_record(Event::End, "apply", Signal));
        assert!(!should_record(Event::DryRun, "task-x", Signal));
        assert!(should_record(Event::Start, "apply", Audit));
    }

    #[test]
    fn evidence_keeps_the_tail_on_char_boundaries() {
        let out = "é".repeat(3000);
        let e = output_evidence(out.as_bytes(), 0);
        assert!(e.starts_with("exit code 0; output (last"));
        assert_eq!(output_evidence(b"\n", 3), "exit code 3; no output");
    }

    fn workspace() -> tempfile::TempDir {
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

    #[test]
    fn context_reads_the_plan_and_refuses_unknown_tasks() {
        let tmp = workspace();
        let ctx = context(tmp.path(), None).unwrap();
        assert_eq!(ctx.log_replay, "unbound");
        assert_eq!(ctx.plan_ids, Some(vec!["task-1".to_string()]));
        ctx.check_task("task-1", true).unwrap();
        ctx.check_task("task-9", false).unwrap();
        ctx.check_task("meta/x", true).unwrap();
        let e = ctx.check_task("task-9", true).unwrap_err();
        assert_eq!(e.code(), code::UNKNOWN_TASK);
        assert!(
            e.message().ends_with("; nothing was run"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn a_captured_entry_names_its_command_file_for_its_own_instant() {
        let tmp = workspace();
        let mut ctx = context(tmp.path(), None).unwrap();
        let long = format!("echo {} http://127.0.0.1:8787/x/y", "a".repeat(200));
        let mut out = ApplyOutcome::new("task-1", false, None);
        // Without a replay ID the command is filed by its digest.
        let c = Captured::new(&long);
        assert!(c.marked);
        let e = ctx.entry("task-1", TaskStatus::InProgress, "ok", "n");
        record_captured(tmp.path(), &ctx, e, Some(&c), &mut out).unwrap();
        let first = &out.entries[0];
        assert_eq!(
            first["command_ref"],
            format!(".small-cache/commands/{}.txt", c.sha256)
        );
        assert_eq!(first["command_summary_version"], 2);
        // With one, by the entry's timestamp.
        ctx.log_replay = "ab".repeat(32);
        let short = Captured::new("cargo   test");
        assert!(!short.marked);
        let e = ctx.entry("task-1", TaskStatus::InProgress, "ok", "n");
        let ts = record_captured(tmp.path(), &ctx, e, Some(&short), &mut out).unwrap();
        let second = &out.entries[1];
        let t = crate::spec::timestamp::parse(&ts).unwrap();
        assert_eq!(
            second["command_ref"],
            crate::spec::command::command_ref(&ctx.log_replay, t)
        );
        assert!(second.get("command_summary_version").is_none());
        assert_eq!(second["command_summary"], "cargo test");
        let r = second["command_ref"].as_str().unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(r)).unwrap(),
            "cargo   test"
        );
    }

    #[test]
    fn the_evidence_of_a_run_is_what_was_observed() {
        let e = execution_evidence(3, None).to_json();
        assert_eq!(
            e,
            serde_json::json!({"exit_code": 3, "kind": "cli_execution", "outcome": "failed", "strength": "cli_captured"})
        );
        let big = "x".repeat(EVIDENCE_OUTPUT_CAP + 10);
        let e = execution_evidence(0, Some(big.as_bytes())).to_json();
        assert_eq!(e["outcome"], "succeeded");
        assert_eq!(e["output_truncated"], true);
        assert_eq!(
            e["bounded_output"].as_str().unwrap().len(),
            EVIDENCE_OUTPUT_CAP
        );
        assert_eq!(quote_display("a \"b\" \\"), "\"a \\\"b\\\" \\\\\"");
    }

    fn steps_of(
        root: &Path,
        req: &ApplyRequest,
        result: RunResult,
    ) -> (Result<ApplyOutcome, Error>, Vec<String>, bool) {
        let mut steps = Vec::new();
        let mut ran = false;
        let out = apply(
            root,
            req,
            |spec| {
                ran = true;
                assert_eq!(spec.root, root);
                assert!(spec.output_log.starts_with(root.join(".small-cache/logs")));
                result
            },
            &mut |s| {
                steps.push(match s {
                    Step::DryRun { .. } => "dry-run".to_string(),
                    Step::Recorded { status, start, .. } => format!("recorded {status} {start}"),
                    Step::NotRecorded { .. } => "not-recorded".into(),
                    Step::Running { summary } => format!("running {summary}"),
                    Step::Finished { code, .. } => format!("finished {code}"),
                    Step::EndNotRecorded { error } => format!("end-not-recorded {}", error.code()),
                    Step::Checkpointed { outcome, .. } => format!("checkpoint {}", outcome.status),
                    Step::HandoffWritten { .. } => "handoff".into(),
                    Step::HandoffFailed { error } => format!("handoff-failed {}", error.code()),
                    Step::HandoffSkipped => "handoff-skipped".into(),
                })
            },
        );
        (out, steps, ran)
    }

    fn request(cmd: Option<&str>, task: Option<&str>) -> ApplyRequest {
        ApplyRequest {
            command: cmd.map(str::to_string),
            task: task.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn a_run_never_accepts_the_task_but_auto_checkpoint_does() {
        let tmp = workspace();
        let (out, steps, _) = steps_of(
            tmp.path(),
            &request(Some("cargo   test"), Some("task-1")),
            Ok((0, b"ok\n".to_vec())),
        );
        let out = out.unwrap();
        assert_eq!(
            steps,
            [
                "running cargo test",
                "finished 0",
                "recorded in_progress false"
            ]
        );
        assert_eq!(out.entries[0]["status"], "in_progress");
        assert_eq!(out.entries[0]["evidence"]["outcome"], "succeeded");
        assert!(out.child_executed && out.evidence_recorded && !out.checkpointed);
        assert_eq!((out.child_exit_code, out.child_outcome), (0, "succeeded"));
        assert_eq!(
            out.entries[0]["notes"],
            "apply: command outcome succeeded; task acceptance unchanged"
        );
        assert!(
            !out.written.contains(&".small/plan.small.yml".to_string()),
            "the plan is not touched"
        );
        let plan = std::fs::read_to_string(tmp.path().join(".small/plan.small.yml")).unwrap();
        assert!(!plan.contains("completed"), "{plan}");
        let req = ApplyRequest {
            auto_checkpoint: true,
            handoff: true,
            acceptance_evidence: Some("suite green".into()),
            ..request(Some("cargo   test"), Some("task-1"))
        };
        let (out, steps, ran) = steps_of(tmp.path(), &req, Ok((0, b"ok\n".to_vec())));
        let out = out.unwrap();
        assert!(ran);
        assert_eq!(
            steps,
            [
                "running cargo test",
                "finished 0",
                "recorded in_progress false",
                "checkpoint completed",
                "handoff"
            ]
        );
        assert_eq!(out.exit_code, 0);
        assert!(out.checkpointed);
        assert_eq!(out.entries.len(), 2, "the run's end and the checkpoint");
        assert_eq!(out.entries[0]["command_summary"], "cargo test");
        assert_eq!(out.entries[1]["evidence"], "suite green");
        assert_eq!(out.entries[1]["notes"], "apply --auto-checkpoint");
        assert!(out.written.contains(&".small/plan.small.yml".to_string()));
        assert!(out
            .written
            .contains(&".small/handoff.small.yml".to_string()));
        let plan = std::fs::read_to_string(tmp.path().join(".small/plan.small.yml")).unwrap();
        assert!(plan.contains("completed"), "{plan}");
    }

    #[test]
    fn a_failed_run_is_blocked_and_skips_the_handoff() {
        let tmp = workspace();
        let req = ApplyRequest {
            handoff: true,
            ..request(Some("false"), Some("task-1"))
        };
        let (out, steps, _) = steps_of(tmp.path(), &req, Ok((3, Vec::new())));
        let out = out.unwrap();
        assert_eq!(out.exit_code, 3);
        assert_eq!((out.child_exit_code, out.child_outcome), (3, "failed"));
        assert_eq!(
            steps,
            [
                "running false",
                "finished 3",
                "recorded in_progress false",
                "handoff-skipped"
            ]
        );
    }

    #[test]
    fn signal_mode_records_nothing_for_runs_outside_the_plan_and_audit_records_all() {
        let tmp = workspace();
        let (out, steps, _) = steps_of(tmp.path(), &request(Some("true"), None), Ok((0, vec![])));
        let out = out.unwrap();
        assert!(out.entries.is_empty());
        assert!(out.child_executed && !out.evidence_recorded);
        assert_eq!(steps, ["running true", "finished 0", "not-recorded"]);
        let req = ApplyRequest {
            mode: ProgressMode::Audit,
            ..request(Some("true"), None)
        };
        let (out, steps, _) = steps_of(tmp.path(), &req, Ok((0, vec![])));
        let out = out.unwrap();
        assert_eq!(out.task_id, "apply");
        assert_eq!(out.entries.len(), 2);
        assert!(out.evidence_recorded);
        assert_eq!(steps[0], "recorded in_progress true");
    }

    #[test]
    fn a_dry_run_runs_nothing_and_records_the_intent() {
        let tmp = workspace();
        let (out, steps, ran) =
            steps_of(tmp.path(), &request(None, Some("task-1")), Ok((9, vec![])));
        let out = out.unwrap();
        assert!(!ran && out.dry_run);
        assert_eq!(steps, ["dry-run", "recorded pending false"]);
        assert_eq!(out.entries[0]["status"], "pending");
        assert!(!out.child_executed && out.evidence_recorded && !out.checkpointed);
        assert_eq!((out.child_exit_code, out.child_outcome), (0, NOT_EXECUTED));
    }

    #[test]
    fn refusals_come_before_anything_runs() {
        let tmp = workspace();
        let refuse = |req: ApplyRequest| {
            let (out, steps, ran) = steps_of(tmp.path(), &req, Ok((0, vec![])));
            assert!(!ran && steps.is_empty());
            out.unwrap_err()
        };
        let e = refuse(ApplyRequest {
            auto_progress: true,
            ..request(None, Some("task-1"))
        });
        assert_eq!(
            (e.code(), e.kind),
            (code::USAGE, crate::workspace::error::ErrorKind::Usage)
        );
        let e = refuse(ApplyRequest {
            scope: crate::spec::model::Scope::Examples,
            ..request(Some("true"), None)
        });
        assert!(e
            .diagnostic
            .help
            .as_deref()
            .unwrap()
            .contains("--workspace any"));
        let e = refuse(request(Some("true"), Some("task-7")));
        assert_eq!(e.code(), code::UNKNOWN_TASK);
        assert!(e.message().ends_with("; nothing was run"));
        std::fs::remove_file(tmp.path().join(".small/progress.small.yml")).unwrap();
        let e = refuse(request(Some("true"), Some("task-1")));
        assert_eq!(e.code(), code::MISSING);
        assert!(e.diagnostic.help.as_deref().unwrap().contains("small init"));
    }

    #[test]
    fn a_runner_that_cannot_start_is_an_io_error() {
        let tmp = workspace();
        let (out, _, _) = steps_of(
            tmp.path(),
            &request(Some("true"), None),
            Err(std::io::Error::other("cannot start `sh -lc`: no sh")),
        );
        let e = out.unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (code::IO, "cannot start `sh -lc`: no sh")
        );
    }
}
