//! `small apply`: run a shell command and record what happened.

use std::path::PathBuf;

use small_core::authoring::apply::{self, ApplyRequest, ProgressMode, Step};
use small_core::spec::model::TaskStatus;
use small_core::workspace::Scope;

use crate::error::{CliError, CmdResult};
use crate::writes as shared;
use crate::GlobalArgs;

/// Run a shell command in the workspace root and record what it did as progress
///
/// The command runs with `sh -lc`, in the directory that contains `.small/`.
///
/// apply records what was observed, not that the task is done: its entry has status
/// in_progress, evidence {exit_code, kind: cli_execution, outcome: succeeded|failed,
/// strength: cli_captured} and notes "apply: command outcome <outcome>; task acceptance
/// unchanged", and the plan is left alone. Accepting the task is `small checkpoint`'s job, or
/// pass --auto-checkpoint (with --acceptance-evidence for a task with acceptance criteria).
///
/// What is recorded depends on the progress mode (SMALL_PROGRESS_MODE):
///
/// - signal (the default): one entry when the command ends, and only when --task names a
///   plan task (`task-N`); dry runs likewise;
/// - audit: also an in_progress entry when the command starts, and entries for every task id
///   (without --task the task id is `apply`).
///
/// Entries carry the command's display in `command` and `command_summary` (whitespace
/// collapsed, at most 200 bytes; a longer one is cut at 197 bytes plus `...`, before any
/// token holding a URL, and marked `command_summary_version: 2`), `command_sha256` (of the
/// exact command) and `command_ref`, the file holding the exact bytes:
/// `.small-cache/logs/<replayId>/commands/<entry timestamp>.txt`. `check --strict` proves
/// the display against that file (or its reviewed copy under `.small-command-proofs/`). The
/// full output is kept in `.small-cache/logs/<replayId>/commands/<start>.output.log`. The
/// workspace lock is not held while the command runs, so the command may itself run
/// `small`. Exits with the command's exit code. Without --cmd, apply is a dry run.
///
/// In a SMALL 2.0.0 workspace the run is recorded in the session (--session, or the active
/// one) as a cli_captured evidence receipt (exit code, bounded output) and a
/// command_recorded event; --auto-checkpoint then checkpoints the task, --handoff records a
/// handoff after a successful run.
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
    /// Also put the tail of the output into the entry's evidence (`bounded_output`); the
    /// command's output is then not shown (it is kept in the evidence and the output log)
    #[arg(long, conflicts_with = "dry_run")]
    pub auto_progress: bool,
    /// Also accept the result: a checkpoint entry and the task's plan status (completed on
    /// exit code 0, blocked otherwise); needs --task
    #[arg(long, conflicts_with = "dry_run", requires = "task")]
    pub auto_checkpoint: bool,
    /// The evidence of --auto-checkpoint's acceptance (needed when the task has acceptance
    /// criteria; default: the observed exit code)
    #[arg(long, value_name = "TEXT", requires = "auto_checkpoint")]
    pub acceptance_evidence: Option<String>,
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
    /// written, appended, child_executed, child_exit_code, child_outcome, evidence_recorded,
    /// checkpointed}; the command's standard output goes only to its output log
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub v2: crate::v2writes::SessionFlags,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if let Some(root) = crate::v2writes::v2_root(args.dir.as_deref()) {
        return run_v2(&root, args, g);
    }
    args.v2.refuse_on_v1()?;
    let mode = if crate::settings::progress_mode_is_audit()? {
        ProgressMode::Audit
    } else {
        ProgressMode::Signal
    };
    let root = shared::root(args.dir.as_deref())?;
    let req = ApplyRequest {
        command: args.cmd.clone(),
        task: args.task.clone(),
        dry_run: args.dry_run,
        auto_progress: args.auto_progress,
        auto_checkpoint: args.auto_checkpoint,
        acceptance_evidence: args.acceptance_evidence.clone(),
        handoff: args.handoff,
        mode,
        scope: args.workspace,
    };
    // --json: the human lines and the command's standard output are silenced (the output
    // log keeps it); the report is what the run recorded.
    let quiet = GlobalArgs {
        quiet: true,
        ..g.clone()
    };
    let g = if args.json { &quiet } else { g };
    // --quiet hides the command's standard output, not its errors; --auto-progress hides both
    // (they go into the evidence). Everything is in the output log either way.
    let echo = (!args.auto_progress && !g.quiet(), !args.auto_progress);
    let out = apply::apply(
        &root,
        &req,
        |spec| crate::process::run_shell(g, spec, echo),
        &mut |step| say(g, step),
    )?;
    if args.json {
        crate::output::json(&out)?;
    }
    match out.exit_code {
        0 => Ok(()),
        code => Err(CliError::silent(u8::try_from(code).unwrap_or(1).max(1))),
    }
}

/// The human line(s) of one step of the run.
fn say(g: &GlobalArgs, step: Step<'_>) {
    match step {
        Step::DryRun {
            summary,
            root,
            task,
            handoff,
        } => {
            g.info(match summary {
                Some(c) => format!("Dry run: would run `{c}` in {}", root.display()),
                None => "Dry run: no command given (--cmd), nothing runs".to_string(),
            });
            if let Some(t) = task {
                g.info(format!("  task: {t}"));
            }
            if handoff {
                g.info("  would regenerate the handoff after a successful run");
            }
        }
        Step::NotRecorded { mode, dry_run: true } => g.info(format!(
            "  nothing recorded ({} mode records dry runs only for plan tasks; SMALL_PROGRESS_MODE=audit records all)",
            mode.as_str()
        )),
        Step::NotRecorded { .. } => g.info("Nothing recorded in progress (signal mode records runs of plan tasks only; pass --task task-N, or set SMALL_PROGRESS_MODE=audit)"),
        Step::Recorded { task, timestamp, start: true, .. } => {
            g.info(format!("Recorded the start of the run for {task} at {timestamp}"))
        }
        Step::Recorded { task, status: TaskStatus::Pending, timestamp, .. } => g.info(format!(
            "Recorded a pending progress entry for {task} at {timestamp}"
        )),
        Step::Recorded { task, timestamp, .. } => g.info(format!(
            "Recorded the outcome of the run for {task} at {timestamp} (task acceptance unchanged: `small checkpoint` accepts it)"
        )),
        Step::Running { summary } => g.info(format!("Running: {summary}")),
        Step::Finished { code, elapsed, output_ref } => g.info(format!(
            "{} (exit code {code}, {:.2} s); full output in {output_ref}",
            if code == 0 { "Command succeeded" } else { "Command failed" },
            elapsed.as_secs_f64(),
        )),
        Step::EndNotRecorded { error } => g.warn(format!(
            "warning: the run's result was not recorded: {}",
            error.message()
        )),
        Step::Checkpointed { outcome, report } => {
            g.info(format!(
                "checkpoint: {} -> {} at {}",
                outcome.task_id, outcome.status, outcome.timestamp
            ));
            shared::print_changes(g, report);
        }
        Step::HandoffWritten { outcome, report } => {
            shared::print_handoff(g, outcome, "Wrote handoff");
            shared::print_open(g, outcome);
            shared::print_changes(g, report);
        }
        Step::HandoffFailed { error } => g.warn(format!(
            "warning: the handoff was not regenerated: {}",
            error.message()
        )),
        Step::HandoffSkipped => g.info("Handoff not regenerated: the command failed"),
    }
}

fn run_v2(root: &std::path::Path, args: Args, g: &GlobalArgs) -> CmdResult {
    use crate::v2writes as v2w;
    use small_core::v2::gojson::GoValue;
    use small_core::v2::write;
    let given = args.cmd.clone().filter(|c| !c.trim().is_empty());
    let Some(command) = given.clone().filter(|_| !args.dry_run) else {
        return dry_run_v2(root, &args, given.as_deref(), g);
    };
    let session = args.v2.session(root)?;
    let req = write::ApplyRequest {
        session: &session,
        task: args.task.as_deref(),
        auto_checkpoint: args.auto_checkpoint,
        acceptance_evidence: args.acceptance_evidence.as_deref(),
        handoff: args.handoff,
    };
    // Refuse before running anything; the lock is not held while the command runs.
    write::apply_precheck(&mut args.v2.open(root)?, &req)?;
    let cache = root.join(".small-cache").join("commands");
    std::fs::create_dir_all(&cache)?;
    let spec = small_core::authoring::apply::RunSpec {
        root: root.to_path_buf(),
        command: command.clone(),
        output_log: cache.join(format!(
            "{}.output.log",
            small_core::v2::record::new_id("run")
        )),
    };
    let echo = (!args.json && !g.quiet(), true);
    let (code, output) = crate::process::run_shell(g, &spec, echo)?;
    let run = write::CommandRun {
        command: command.clone(),
        exit_code: i64::from(code),
        output,
    };
    let mut w = args.v2.open(root)?;
    let out = write::apply_record(&mut w, &req, &run)?;
    let (e, receipt, checkpointed) = (out.event, out.receipt, out.checkpointed);
    let task_id = e.draft.task_id.clone();
    if args.json {
        v2w::print(&GoValue::map(vec![
            ("checkpointed".into(), GoValue::Bool(checkpointed)),
            ("child_executed".into(), GoValue::Bool(true)),
            ("child_exit_code".into(), GoValue::Int(i64::from(code))),
            (
                "child_outcome".into(),
                v2w::s(if code == 0 { "succeeded" } else { "failed" }),
            ),
            ("command".into(), v2w::s(&command)),
            ("event".into(), v2w::s(&e.draft.event_id)),
            ("evidence_recorded".into(), GoValue::Bool(true)),
            ("profile".into(), v2w::s("2.0.0")),
            ("receipt".into(), v2w::s(&receipt.digest)),
            ("task_id".into(), v2w::s(&task_id)),
        ]))?;
    }
    if code != 0 {
        if !args.json {
            g.error(format!(
                "child command failed with exit code {code} after evidence was recorded"
            ));
        }
        return Err(CliError::silent(u8::try_from(code).unwrap_or(1).max(1)));
    }
    if args.json {
        return Ok(());
    }
    g.info(format!(
        "Command completed successfully (exit code: 0); evidence {}",
        receipt.digest
    ));
    Ok(())
}

/// A dry run in a 2.0.0 workspace: nothing runs and nothing is recorded. The task named is
/// looked up (an unknown one is refused); --json prints the reference's keys, its `task_id`
/// the task's id (empty without --task).
fn dry_run_v2(
    root: &std::path::Path,
    args: &Args,
    command: Option<&str>,
    g: &GlobalArgs,
) -> CmdResult {
    use crate::v2writes as v2w;
    use small_core::v2::gojson::GoValue;
    let task_id = match args
        .task
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        Some(t) => args.v2.open(root)?.task(t)?.task.id,
        None => String::new(),
    };
    if !args.json {
        g.info(match command {
            Some(c) => format!("Dry run: would run `{c}` in {}", root.display()),
            None => "Dry run: no command given (--cmd), nothing runs".to_string(),
        });
        return Ok(());
    }
    let mut doc = vec![
        ("checkpointed".into(), GoValue::Bool(false)),
        ("child_executed".into(), GoValue::Bool(false)),
        ("child_exit_code".into(), GoValue::Int(0)),
        (
            "child_outcome".into(),
            v2w::s(small_core::authoring::apply::NOT_EXECUTED),
        ),
        ("dry_run".into(), GoValue::Bool(true)),
        ("evidence_recorded".into(), GoValue::Bool(false)),
        ("task_id".into(), v2w::s(&task_id)),
    ];
    if let Some(c) = command {
        doc.push(("command".into(), v2w::s(c)));
    }
    v2w::print(&GoValue::map(doc))
}
