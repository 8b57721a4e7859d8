//! `small apply`: run a shell command and record what happened.

use super::draft::open_scoped;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::authoring::apply::{
    self, output_evidence, should_record, summarize, Context, Event, ProgressMode, SUMMARY_CAP,
};
use small_core::spec::consts::{ArtifactKind, SMALL_DIR};
use small_core::spec::model::TaskStatus;
use small_core::workspace::Scope;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

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
    /// Print what the run did as JSON: {task_id, dry_run, command, exit_code, entries,
    /// written, appended}; the command's standard output goes only to its output log
    #[arg(long)]
    pub json: bool,
}

/// From `SMALL_PROGRESS_MODE`: `signal` (the default) or `audit`; other values are refused.
fn progress_mode() -> Result<ProgressMode, CliError> {
    Ok(if crate::settings::progress_mode_is_audit()? {
        ProgressMode::Audit
    } else {
        ProgressMode::Signal
    })
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
                    let cap = apply::EVIDENCE_OUTPUT_CAP * 4;
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

/// The progress entries of the log (empty when it cannot be read).
fn progress_entries(root: &Path) -> Vec<serde_json::Value> {
    let path = root.join(ArtifactKind::Progress.rel_path());
    std::fs::read(&path)
        .ok()
        .and_then(|b| small_core::yaml::parse_bytes(&b, &small_core::yaml::Limits::default()).ok())
        .and_then(|d| d.root.get("entries").map(|e| e.to_json()))
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if !args.json {
        return run_apply(args, g);
    }
    // --json: the human lines and the command's standard output are silenced (the output
    // log keeps it); the report is what the run recorded.
    let quiet = GlobalArgs {
        quiet: true,
        ..g.clone()
    };
    let root = open_workspace(&args)?;
    let before = progress_entries(&root).len();
    let (task, dry_run, command) = (
        args.task.clone().unwrap_or_else(|| "apply".into()),
        args.dry_run || args.cmd.as_deref().map(str::trim).unwrap_or("").is_empty(),
        args.cmd.clone(),
    );
    let result = run_apply(args, &quiet);
    let code = match &result {
        Ok(()) => 0,
        Err(e) if e.message.is_empty() => i32::from(e.exit),
        Err(_) => return result,
    };
    let entries: Vec<serde_json::Value> =
        progress_entries(&root).into_iter().skip(before).collect();
    g.json(&serde_json::json!({
        "task_id": task,
        "dry_run": dry_run,
        "command": command,
        "exit_code": code,
        "entries": entries,
        "written": [],
        "appended": if entries.is_empty() { vec![] } else { vec![ArtifactKind::Progress.rel_path()] },
    }))?;
    result
}

fn run_apply(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = open_workspace(&args)?;
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
    let mode = progress_mode()?;
    let named = args
        .task
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let task_id = named.unwrap_or("apply").to_string();
    let ctx = apply::context(&root)?;
    if let Some(t) = named {
        let event = if dry_run { Event::DryRun } else { Event::End };
        ctx.check_task(t, should_record(event, t, mode) || args.auto_checkpoint)?;
    }
    let Some(command) = command.filter(|_| !dry_run) else {
        return dry_run_report(&args, g, &root, &ctx, mode, &task_id);
    };
    let stamp = small_core::spec::timestamp::format_utc(small_core::spec::timestamp::now());
    let log = apply::write_command_log(&root, &ctx.log_replay, &stamp, &command)?;
    if should_record(Event::Start, &task_id, mode) {
        let entry = ctx.entry(
            &task_id,
            TaskStatus::InProgress,
            "Apply started",
            "apply: execution started",
            Some(&log),
        );
        let stamps = apply::record(&root, &[entry])?;
        g.info(format!(
            "Recorded the start of the run for {task_id} at {}",
            stamps[0]
        ));
    }
    g.info(format!("Running: {}", log.summary));
    let started = std::time::Instant::now();
    // --quiet hides the command's standard output, not its errors; --auto-progress hides both
    // (they go into the evidence). Everything is in the output log either way.
    let echo = (!args.auto_progress && !g.quiet(), !args.auto_progress);
    let (code, output) = run_shell(g, &root, &command, echo, Some(&root.join(&log.output_ref)))?;
    let ok = code == 0;
    let status = if ok {
        TaskStatus::Completed
    } else {
        TaskStatus::Blocked
    };
    g.info(format!(
        "{} (exit code {code}, {:.2} s); full output in {}",
        if ok {
            "Command succeeded"
        } else {
            "Command failed"
        },
        started.elapsed().as_secs_f64(),
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
        let notes = format!("apply: exit code {code}; output in {}", log.output_ref);
        let entry = ctx.entry(&task_id, status, evidence, notes, Some(&log));
        match apply::record(&root, &[entry]) {
            Ok(stamps) => g.info(format!(
                "Recorded a {status} progress entry for {task_id} at {}",
                stamps[0]
            )),
            Err(e) => g.warn(format!(
                "warning: the run's result was not recorded: {}",
                e.message()
            )),
        }
    } else {
        g.info("Nothing recorded in progress (signal mode records runs of plan tasks only; pass --task task-N, or set SMALL_PROGRESS_MODE=audit)");
    }
    follow_up(&args, g, &root, &task_id, status, &output, code)?;
    if ok {
        Ok(())
    } else {
        Err(CliError::silent(u8::try_from(code).unwrap_or(1).max(1)))
    }
}

/// The workspace of `--dir`, checked for what apply needs.
fn open_workspace(args: &Args) -> Result<PathBuf, CliError> {
    if args.workspace == Scope::Examples {
        return Err(CliError::usage(
            "apply does not run in example workspaces (--workspace examples); use --workspace any to override",
        ));
    }
    let root = open_scoped(args.dir.as_deref(), args.workspace)?;
    let has = |k: ArtifactKind| root.join(SMALL_DIR).join(k.file_name()).is_file();
    if !has(ArtifactKind::Progress) {
        return Err(CliError::invalid(format!(
            "{} is missing; run `small init` (or restore the file) first",
            ArtifactKind::Progress.rel_path()
        )));
    }
    if args.auto_checkpoint && !has(ArtifactKind::Plan) {
        return Err(CliError::invalid(format!(
            "--auto-checkpoint needs {}, which is missing",
            ArtifactKind::Plan.rel_path()
        )));
    }
    Ok(root)
}

/// `--dry-run` (or no --cmd): say what would run, and record it when the mode says so.
fn dry_run_report(
    args: &Args,
    g: &GlobalArgs,
    root: &Path,
    ctx: &Context,
    mode: ProgressMode,
    task_id: &str,
) -> CmdResult {
    let command = args.cmd.as_deref().map(str::trim).filter(|c| !c.is_empty());
    g.info(match command {
        Some(c) => format!(
            "Dry run: would run `{}` in {}",
            summarize(c, SUMMARY_CAP),
            root.display()
        ),
        None => "Dry run: no command given (--cmd), nothing runs".to_string(),
    });
    if args.task.is_some() {
        g.info(format!("  task: {task_id}"));
    }
    if args.handoff {
        g.info("  would regenerate the handoff after a successful run");
    }
    if !should_record(Event::DryRun, task_id, mode) {
        g.info(format!(
            "  nothing recorded ({} mode records dry runs only for plan tasks; SMALL_PROGRESS_MODE=audit records all)",
            mode.as_str()
        ));
        return Ok(());
    }
    let (log, notes) = match command {
        Some(c) => {
            let stamp = small_core::spec::timestamp::format_utc(small_core::spec::timestamp::now());
            let log = apply::write_command_log(root, &ctx.log_replay, &stamp, c)?;
            let notes = format!("apply --dry-run of `{}`", log.summary);
            (Some(log), notes)
        }
        None => (None, "apply --dry-run".to_string()),
    };
    let entry = ctx.entry(
        task_id,
        TaskStatus::Pending,
        "Dry run: no command was executed",
        notes,
        log.as_ref(),
    );
    let stamps = apply::record(root, &[entry])?;
    g.info(format!(
        "Recorded a pending progress entry for {task_id} at {}",
        stamps[0]
    ));
    Ok(())
}

/// `--auto-checkpoint` and `--handoff` after the run.
fn follow_up(
    args: &Args,
    g: &GlobalArgs,
    root: &Path,
    task_id: &str,
    status: TaskStatus,
    output: &[u8],
    code: i32,
) -> CmdResult {
    let root_s = root.display().to_string();
    if args.auto_checkpoint {
        let evidence = output_evidence(output, code);
        let mut cp = vec![
            "checkpoint",
            "--dir",
            root_s.as_str(),
            "--task",
            task_id,
            "--status",
            status.as_str(),
        ];
        cp.extend(["--evidence", evidence.as_str()]);
        if g.quiet() {
            cp.insert(0, "--quiet");
        }
        run_self(&cp)?;
    }
    if args.handoff && code == 0 {
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
        g.info("Handoff not regenerated: the command failed");
    }
    Ok(())
}
