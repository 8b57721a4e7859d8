//! `small apply`: run a shell command and record what happened.

use super::draft::open_scoped;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use sha2::{Digest, Sha256};
use small_core::authoring::progress::{NewEntry, TimestampRule};
use small_core::authoring::txn::{Transaction, TxnError};
use small_core::spec::consts::{ArtifactKind, CACHE_DIR, SMALL_DIR, WORKSPACE_FILE};
use small_core::spec::model::TaskStatus;
use small_core::spec::model::{HANDOFF_REPLAY_ID_POINTER, RUN_REPLAY_ID_POINTER};
use small_core::workspace::Scope;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// Longest command summary stored in `command_summary`.
pub const SUMMARY_CAP: usize = 200;
/// Most output kept in the evidence of `--auto-progress` / `--auto-checkpoint`.
pub const EVIDENCE_OUTPUT_CAP: usize = 4000;

/// Run a shell command in the workspace root and record its result as progress
///
/// The command runs with `sh -lc`, in the directory that contains `.small/`.
///
/// What is recorded depends on the progress mode (SMALL_PROGRESS_MODE):
///
/// - signal (the default): one entry when the command ends (completed on exit code 0, blocked
///   otherwise), and only when --task names a plan task (`task-N`); dry runs likewise;
/// - audit: also an in_progress entry when the command starts, and entries for every task id
///   (without --task the task id is `apply`).
///
/// Entries carry `command_summary` (whitespace collapsed, at most 200 characters),
/// `command_sha256` (of the full command) and `command_ref`, a file in
/// `.small-cache/logs/<replayId>/commands/` holding the full command; the full output is
/// kept next to it (`.output.log`). The workspace lock is not held while the command runs,
/// so the command may itself run `small`. Exits with the command's exit code.
/// Without --cmd, apply is a dry run.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Shell command to run (with `sh -lc`, in the workspace root)
    #[arg(long, value_name = "COMMAND")]
    pub cmd: Option<String>,
    /// Plan task this run belongs to
    #[arg(long, value_name = "TASK_ID")]
    pub task: Option<String>,
    /// Record the intent to run, without running anything
    #[arg(long)]
    pub dry_run: bool,
    /// Put the exit code and the tail of the output into the entry's evidence; the command's
    /// output is then not shown (it is kept in the evidence and the output log)
    #[arg(long, conflicts_with = "dry_run")]
    pub auto_progress: bool,
    /// Also set the task's plan status from the result (completed or blocked); needs --task
    #[arg(long, conflicts_with = "dry_run", requires = "task")]
    pub auto_checkpoint: bool,
    /// Regenerate the handoff when the command succeeds
    #[arg(long)]
    pub handoff: bool,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace kinds to accept: root or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
}

/// Progress mode (seed 000, invariant 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    Signal,
    Audit,
}

impl ProgressMode {
    /// From `SMALL_PROGRESS_MODE`: `signal` (the default) or `audit`; other values are refused.
    pub fn from_env() -> Result<ProgressMode, CliError> {
        Ok(if crate::settings::progress_mode_is_audit()? {
            ProgressMode::Audit
        } else {
            ProgressMode::Signal
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    DryRun,
    Start,
    End,
}

/// Whether an event is recorded: audit records everything; signal records only the end of a
/// run (and dry runs) of a plan task.
fn should_record(event: Event, task_id: &str, mode: ProgressMode) -> bool {
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

/// The command with runs of whitespace collapsed, cut to `cap` characters (ending in `...`).
pub fn summarize(command: &str, cap: usize) -> String {
    let normalized = command.split_whitespace().collect::<Vec<_>>().join(" ");
    if normalized.chars().count() <= cap {
        return normalized;
    }
    if cap <= 3 {
        return normalized.chars().take(cap).collect();
    }
    let mut s: String = normalized.chars().take(cap - 3).collect();
    s.push_str("...");
    s
}

fn txn_err(e: TxnError) -> CliError {
    match e {
        TxnError::Invalid(m) => CliError::invalid(m),
        other => CliError::usage(other.to_string()),
    }
}

/// The replay id the run's logs are filed under: workspace `run.replay_id`, else the
/// handoff's `replayId.value`; lower case.
fn current_replay_id(root: &Path) -> Option<String> {
    let limits = small_core::yaml::Limits::default();
    let read = |rel: &str, pointer: &str| -> Option<String> {
        let bytes = small_core::workspace::fsio::read_bounded(
            &root.join(SMALL_DIR).join(rel),
            small_core::workspace::fsio::MAX_READ_BYTES,
        )
        .ok()?;
        let doc = small_core::yaml::parse_bytes(&bytes, &limits).ok()?;
        let v = doc
            .root
            .pointer(pointer)?
            .as_str()?
            .trim()
            .to_ascii_lowercase();
        small_core::spec::replayid::is_well_formed(&v).then_some(v)
    };
    read(WORKSPACE_FILE, RUN_REPLAY_ID_POINTER)
        .or_else(|| read(ArtifactKind::Handoff.file_name(), HANDOFF_REPLAY_ID_POINTER))
}

/// The workspace's run replay id only (what run-bound entries carry in `replayId`).
fn workspace_run_replay_id(root: &Path) -> Option<String> {
    let bytes = small_core::workspace::fsio::read_bounded(
        &root.join(SMALL_DIR).join(WORKSPACE_FILE),
        small_core::workspace::fsio::MAX_READ_BYTES,
    )
    .ok()?;
    let doc = small_core::yaml::parse_bytes(&bytes, &small_core::yaml::Limits::default()).ok()?;
    let v = doc
        .root
        .pointer(RUN_REPLAY_ID_POINTER)?
        .as_str()?
        .trim()
        .to_string();
    small_core::spec::replayid::is_well_formed(&v).then_some(v)
}

/// The ids of the plan's tasks, or `None` when the plan cannot be read.
fn plan_task_ids(root: &Path) -> Option<Vec<String>> {
    let bytes = small_core::workspace::fsio::read_bounded(
        &root.join(SMALL_DIR).join(ArtifactKind::Plan.file_name()),
        small_core::workspace::fsio::MAX_READ_BYTES,
    )
    .ok()?;
    let doc = small_core::yaml::parse_bytes(&bytes, &small_core::yaml::Limits::default()).ok()?;
    let tasks = doc.root.get("tasks")?.as_seq()?;
    Some(
        tasks
            .iter()
            .filter_map(|t| t.get("id")?.as_str().map(str::to_string))
            .collect(),
    )
}

/// Files of one run of a command.
struct CommandLog {
    /// Workspace-relative path of the file holding the command (`command_ref`).
    command_ref: String,
    /// Workspace-relative path of the output log.
    output_ref: String,
    sha256: String,
    summary: String,
}

/// Writes the command file (atomically) and returns the log's names. The file name is the
/// run's start time, so a run's command and output sit side by side.
fn write_command_log(
    root: &Path,
    replay: &str,
    stamp: &str,
    command: &str,
) -> Result<CommandLog, CliError> {
    let dir = format!("{CACHE_DIR}/logs/{replay}/commands");
    // 2026-01-02T03:04:05.123456789Z -> 20260102T030405.123456789Z
    let name: String = stamp.chars().filter(|c| *c != '-' && *c != ':').collect();
    let command_ref = format!("{dir}/{name}.txt");
    let output_ref = format!("{dir}/{name}.output.log");
    small_core::authoring::txn::atomic_write(root.join(&command_ref), command.as_bytes())
        .map_err(|e| CliError::usage(format!("cannot write the command log {command_ref}: {e}")))?;
    Ok(CommandLog {
        command_ref,
        output_ref,
        sha256: hex::encode(Sha256::digest(command.as_bytes())),
        summary: summarize(command, SUMMARY_CAP),
    })
}

fn with_command(mut entry: NewEntry, log: &CommandLog) -> NewEntry {
    entry.set("command", log.summary.clone());
    entry.set("command_summary", log.summary.clone());
    entry.set("command_sha256", log.sha256.clone());
    entry.set("command_ref", log.command_ref.clone());
    entry
}

/// Appends entries in one transaction; returns their timestamps.
fn record(root: &Path, entries: &[NewEntry]) -> Result<Vec<String>, CliError> {
    let mut txn = Transaction::begin(root).map_err(txn_err)?;
    let mut stamps = Vec::new();
    for e in entries {
        stamps.push(
            txn.append_progress(e, &TimestampRule::Now)
                .map_err(txn_err)?
                .timestamp,
        );
    }
    txn.commit().map_err(txn_err)?;
    Ok(stamps)
}

/// `exit code N; output …` with the last `EVIDENCE_OUTPUT_CAP` bytes of the output.
fn output_evidence(output: &[u8], exit_code: i32) -> String {
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

/// Runs `sh -lc command` in `root`, copying its output to ours and into a buffer (and the
/// log file, when given). `echo`: whether to show the output as it comes (stdout, stderr).
fn run_shell(
    g: &GlobalArgs,
    root: &Path,
    command: &str,
    echo: (bool, bool),
    log_path: Option<&Path>,
) -> Result<(i32, Vec<u8>), CliError> {
    // Ctrl-C reaches the command (same process group); small itself outlives the first one so
    // that the interrupted run is still recorded. A second Ctrl-C stops small as well.
    shield_from_first_interrupt();
    let mut child = Command::new("sh")
        .arg("-lc")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CliError::usage(format!("cannot start `sh -lc`: {e}")))?;
    let captured = Arc::new(Mutex::new(Vec::<u8>::new()));
    let log_file = log_path.and_then(|p| {
        if let Some(parent) = p.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        // A fresh regular file: never through a link planted at the log's name.
        let _ = small_core::workspace::fsio::regular_metadata(p)
            .map(|m| m.map(|_| std::fs::remove_file(p)));
        match small_core::workspace::fsio::create_new(p, None) {
            Ok(f) => Some(Arc::new(Mutex::new(f))),
            Err(e) => {
                g.warn(format!(
                    "warning: cannot keep the output in {}: {e}",
                    p.display()
                ));
                None
            }
        }
    });
    let mut pumps = Vec::new();
    let streams: Vec<(Box<dyn Read + Send>, bool)> = vec![
        (
            Box::new(child.stdout.take().expect("stdout is piped")),
            false,
        ),
        (
            Box::new(child.stderr.take().expect("stderr is piped")),
            true,
        ),
    ];
    for (mut stream, is_err) in streams {
        let captured = Arc::clone(&captured);
        let log_file = log_file.clone();
        pumps.push(std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                if (is_err && echo.1) || (!is_err && echo.0) {
                    if is_err {
                        let mut e = std::io::stderr().lock();
                        let _ = e.write_all(chunk);
                        let _ = e.flush();
                    } else {
                        let mut o = std::io::stdout().lock();
                        let _ = o.write_all(chunk);
                        let _ = o.flush();
                    }
                }
                if let Ok(mut c) = captured.lock() {
                    // Keep memory bounded: the evidence only needs the tail.
                    c.extend_from_slice(chunk);
                    let cap = EVIDENCE_OUTPUT_CAP * 4;
                    if c.len() > cap * 2 {
                        let cut = c.len() - cap;
                        c.drain(..cut);
                    }
                }
                if let Some(f) = &log_file {
                    if let Ok(mut f) = f.lock() {
                        let _ = f.write_all(chunk);
                    }
                }
            }
        }));
    }
    let status = child
        .wait()
        .map_err(|e| CliError::usage(format!("waiting for the command failed: {e}")))?;
    for p in pumps {
        let _ = p.join();
    }
    if let Some(f) = &log_file {
        if let Ok(f) = f.lock() {
            let _ = f.sync_all();
        }
    }
    let code = match status.code() {
        Some(c) => c,
        None => {
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt;
                128 + status.signal().unwrap_or(0)
            }
            #[cfg(not(unix))]
            {
                1
            }
        }
    };
    let out = captured.lock().map(|c| c.clone()).unwrap_or_default();
    Ok((code, out))
}

/// Keeps the first SIGINT (Ctrl-C) from killing small while a command runs; the second one
/// exits with 130. Best effort: without a signal handler the default behaviour stays.
fn shield_from_first_interrupt() {
    let ready = std::sync::Arc::new(std::sync::Barrier::new(2));
    let ready2 = std::sync::Arc::clone(&ready);
    let spawned = std::thread::Builder::new()
        .name("ctrl-c".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(_) => {
                    ready2.wait();
                    return;
                }
            };
            rt.block_on(async move {
                let mut first = true;
                loop {
                    let signal = tokio::signal::ctrl_c();
                    tokio::pin!(signal);
                    // Register the handler before letting the command start waiting.
                    let registered = futures_poll_once(&mut signal).await;
                    if first {
                        ready2.wait();
                    }
                    if !registered {
                        // Already received while registering: treat as a Ctrl-C.
                    } else if signal.await.is_err() {
                        return;
                    }
                    if !first {
                        crate::output::error_line("\ninterrupted twice; stopping small (exit 130)");
                        std::process::exit(130);
                    }
                    first = false;
                }
            });
        });
    if spawned.is_ok() {
        ready.wait();
    }
}

/// Polls a future once (to run its registration side effects). Returns `true` if it is still
/// pending, `false` if it completed on that first poll.
async fn futures_poll_once<F: std::future::Future + Unpin>(f: &mut F) -> bool {
    use std::pin::Pin;
    use std::task::Poll;
    std::future::poll_fn(|cx| match Pin::new(&mut *f).poll(cx) {
        Poll::Pending => Poll::Ready(true),
        Poll::Ready(_) => Poll::Ready(false),
    })
    .await
}

/// Runs another `small` subcommand of this same executable, passing its output through.
fn run_self(args: &[&str]) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::usage(format!("cannot find the small executable: {e}")))?;
    let status = Command::new(exe)
        .args(args)
        .status()
        .map_err(|e| CliError::usage(format!("cannot run small {}: {e}", args.join(" "))))?;
    if status.success() {
        Ok(())
    } else {
        Err(CliError::silent(
            status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(2),
        ))
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let scope = args.workspace;
    if scope == Scope::Examples {
        return Err(CliError::usage(
            "apply does not run in example workspaces (--workspace examples); use --workspace any to override",
        ));
    }
    let root = open_scoped(args.dir.as_deref(), scope)?;
    if !root
        .join(SMALL_DIR)
        .join(ArtifactKind::Progress.file_name())
        .is_file()
    {
        return Err(CliError::invalid(format!(
            "{SMALL_DIR}/{} is missing; run `small init` (or restore the file) first",
            ArtifactKind::Progress.file_name()
        )));
    }
    if args.auto_checkpoint
        && !root
            .join(SMALL_DIR)
            .join(ArtifactKind::Plan.file_name())
            .is_file()
    {
        return Err(CliError::invalid(format!(
            "--auto-checkpoint needs {SMALL_DIR}/{}, which is missing",
            ArtifactKind::Plan.file_name()
        )));
    }
    let command = args
        .cmd
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    let dry_run = args.dry_run || command.is_none();
    if command.is_none() && (args.auto_progress || args.auto_checkpoint) {
        return Err(CliError::usage(
            "--auto-progress and --auto-checkpoint need a command (--cmd)",
        ));
    }
    let mode = ProgressMode::from_env()?;
    let task_id = args
        .task
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| "apply".to_string());
    // A task named on the command line must exist when something will be recorded for it
    // (an entry for an unknown task would break strict check S2), checked before anything runs.
    if let Some(t) = args
        .task
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        let event = if dry_run { Event::DryRun } else { Event::End };
        let records = should_record(event, t, mode) || args.auto_checkpoint;
        if records && !t.starts_with(small_core::spec::consts::META_TASK_PREFIX) {
            if let Some(ids) = plan_task_ids(&root) {
                if !ids.iter().any(|id| id == t) {
                    return Err(CliError::invalid(format!(
                        "task {t} is not in {SMALL_DIR}/{}; nothing was run\n  help: add it with `small plan --add \"<title>\"`, or use one of: {}",
                        ArtifactKind::Plan.file_name(),
                        if ids.is_empty() { "(no tasks)".to_string() } else { ids.join(", ") }
                    )));
                }
            }
        }
    }
    let run_replay = workspace_run_replay_id(&root);
    let log_replay = current_replay_id(&root).unwrap_or_else(|| "unbound".to_string());
    let bind = |mut e: NewEntry| {
        if let Some(r) = &run_replay {
            e.set("replayId", r.clone());
        }
        e
    };
    let say = |s: String| g.info(s);

    if dry_run {
        say(match &command {
            Some(c) => format!(
                "Dry run: would run `{}` in {}",
                summarize(c, SUMMARY_CAP),
                root.display()
            ),
            None => "Dry run: no command given (--cmd), nothing runs".to_string(),
        });
        if args.task.is_some() {
            say(format!("  task: {task_id}"));
        }
        if args.handoff {
            say("  would regenerate the handoff after a successful run".to_string());
        }
        if !should_record(Event::DryRun, &task_id, mode) {
            say(format!(
                "  nothing recorded ({} mode records dry runs only for plan tasks; SMALL_PROGRESS_MODE=audit records all)",
                if mode == ProgressMode::Signal { "signal" } else { "audit" }
            ));
            return Ok(());
        }
        let mut entry = bind(
            NewEntry::new(task_id.clone(), Some(TaskStatus::Pending.as_str()))
                .field("evidence", "Dry run: no command was executed")
                .field("notes", "apply --dry-run"),
        );
        if let Some(c) = &command {
            let stamp =
                small_core::spec::timestamp::format_utc(small_core::authoring::progress::now());
            let log = write_command_log(&root, &log_replay, &stamp, c)?;
            entry = with_command(entry, &log);
            entry.set("notes", format!("apply --dry-run of `{}`", log.summary));
        }
        let stamps = record(&root, &[entry])?;
        say(format!(
            "Recorded a pending progress entry for {task_id} at {}",
            stamps[0]
        ));
        return Ok(());
    }

    let command = command.unwrap_or_default();
    let start_stamp =
        small_core::spec::timestamp::format_utc(small_core::authoring::progress::now());
    let log = write_command_log(&root, &log_replay, &start_stamp, &command)?;

    if should_record(Event::Start, &task_id, mode) {
        let entry = with_command(
            bind(
                NewEntry::new(task_id.clone(), Some(TaskStatus::InProgress.as_str()))
                    .field("evidence", "Apply started")
                    .field("notes", "apply: execution started"),
            ),
            &log,
        );
        let stamps = record(&root, &[entry])?;
        say(format!(
            "Recorded the start of the run for {task_id} at {}",
            stamps[0]
        ));
    }

    say(format!("Running: {}", log.summary));
    let started = std::time::Instant::now();
    // --quiet hides the command's standard output, not its errors; --auto-progress hides both
    // (they go into the evidence). Everything is in the output log either way.
    let echo = (!args.auto_progress && !g.quiet(), !args.auto_progress);
    let (code, output) = run_shell(g, &root, &command, echo, Some(&root.join(&log.output_ref)))?;
    let secs = started.elapsed().as_secs_f64();
    let ok = code == 0;
    let status = if ok {
        TaskStatus::Completed.as_str()
    } else {
        TaskStatus::Blocked.as_str()
    };
    say(format!(
        "{} (exit code {code}, {secs:.2} s); full output in {}",
        if ok {
            "Command succeeded"
        } else {
            "Command failed"
        },
        log.output_ref
    ));

    if should_record(Event::End, &task_id, mode) {
        let evidence = if args.auto_progress {
            output_evidence(&output, code)
        } else if ok {
            "Command completed successfully (exit code 0)".to_string()
        } else {
            format!("Command failed with exit code {code}")
        };
        let entry = with_command(
            bind(
                NewEntry::new(task_id.clone(), Some(status))
                    .field("evidence", evidence)
                    .field(
                        "notes",
                        format!("apply: exit code {code}; output in {}", log.output_ref),
                    ),
            ),
            &log,
        );
        match record(&root, &[entry]) {
            Ok(stamps) => say(format!(
                "Recorded a {status} progress entry for {task_id} at {}",
                stamps[0]
            )),
            Err(e) => g.warn(format!(
                "warning: the run's result was not recorded: {}",
                e.message
            )),
        }
    } else {
        say(
            "Nothing recorded in progress (signal mode records runs of plan tasks only; pass --task task-N, or set SMALL_PROGRESS_MODE=audit)"
                .to_string(),
        );
    }

    if args.auto_checkpoint {
        let root_s = root.display().to_string();
        let evidence = output_evidence(&output, code);
        let mut cp = vec![
            "checkpoint",
            "--dir",
            root_s.as_str(),
            "--task",
            task_id.as_str(),
            "--status",
            status,
        ];
        cp.extend(["--evidence", evidence.as_str()]);
        if g.quiet() {
            cp.insert(0, "--quiet");
        }
        run_self(&cp)?;
    }

    if args.handoff && ok {
        let root_s = root.display().to_string();
        let mut h = vec!["handoff", "--dir", root_s.as_str()];
        if g.quiet() {
            h.insert(0, "--quiet");
        }
        if let Err(e) = run_self(&h) {
            g.warn(format!(
                "warning: the handoff was not regenerated (exit {})",
                e.exit
            ));
        }
    } else if args.handoff {
        say("Handoff not regenerated: the command failed".to_string());
    }

    if ok {
        Ok(())
    } else {
        Err(CliError::silent(u8::try_from(code).unwrap_or(1).max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_collapses_and_caps() {
        assert_eq!(
            summarize("  cargo   test\n --all ", 200),
            "cargo test --all"
        );
        let long = "x".repeat(300);
        let s = summarize(&long, 200);
        assert_eq!(s.chars().count(), 200);
        assert!(s.ends_with("..."));
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
}
