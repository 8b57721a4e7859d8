//! `small apply`: run a shell command and record what happened.

use std::io::Write;
use std::path::PathBuf;

use small_core::ops::apply::{ApplyRequest, ProgressMode, Step, Watch};
use small_core::ops::report::Report;
use small_core::ops::workspace::Scope;
use small_core::ops::{self, Workspace};

use crate::error::{from_op, CliError, CmdResult};
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
    /// Run even though another agent's live lease (small claim) covers --task; a progress
    /// entry records the override before the command runs
    #[arg(long, requires = "task")]
    pub force: bool,
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
    let terminal = Terminal { g, json: args.json };
    let req = request(&args, &terminal)?;
    let ws = Workspace::find(args.dir.as_deref());
    let out = ops::apply::apply(&ws, &req).map_err(|e| from_op(e, g))?;
    if args.json {
        g.json(&out)?;
    } else if out.exit_code() != 0 {
        // A failed command is an error, said even under --quiet.
        for line in out.text().lines() {
            g.error(line);
        }
    } else {
        g.info_raw(out.text());
    }
    match out.exit_code() {
        0 => Ok(()),
        code => Err(CliError::silent(u8::try_from(code).unwrap_or(1).max(1))),
    }
}

/// The operation's request from the flags and `SMALL_PROGRESS_MODE`.
fn request<'a>(args: &Args, terminal: &'a Terminal<'a>) -> Result<ApplyRequest<'a>, CliError> {
    let mode = if crate::settings::progress_mode_is_audit()? {
        ProgressMode::Audit
    } else {
        ProgressMode::Signal
    };
    Ok(ApplyRequest {
        run: small_core::ops::apply::RunRequest {
            command: args.cmd.clone(),
            task: args.task.clone(),
            dry_run: args.dry_run,
            auto_progress: args.auto_progress,
            auto_checkpoint: args.auto_checkpoint,
            acceptance_evidence: args.acceptance_evidence.clone(),
            handoff: args.handoff,
            mode,
            scope: args.workspace,
            lock_timeout: args.v2.lock()?,
        },
        session: args.v2.session.clone(),
        watch: Some(terminal),
        force: args.force,
    })
}

/// What the terminal shows while the command runs: its standard error always, its standard
/// output unless --json or --quiet (the output log keeps both), and the steps of a v1 run
/// unless --json.
struct Terminal<'g> {
    g: &'g GlobalArgs,
    json: bool,
}

impl Watch for Terminal<'_> {
    fn output(&self, chunk: &[u8], stderr: bool) {
        if stderr {
            let mut e = crate::output::stderr();
            let _ = e.write_all(chunk).and_then(|()| e.flush());
        } else if !self.json && !self.g.quiet() {
            let mut o = crate::output::stdout();
            let _ = o.write_all(chunk).and_then(|()| o.flush());
        }
    }

    fn step(&self, step: Step<'_>) {
        if !self.json {
            say(self.g, step);
        }
    }

    fn warning(&self, message: &str) {
        self.g.warn(format!("warning: {message}"));
    }
}

/// One step of the run: its lines (unless --quiet), or its warning.
fn say(g: &GlobalArgs, step: Step<'_>) {
    g.say(ops::apply::said(&step));
}
