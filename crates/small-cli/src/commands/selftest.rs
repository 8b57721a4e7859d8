//! `small selftest`: run a short workflow in a scratch workspace to prove the CLI works.

use crate::error::{CliError, CmdResult, EXIT_INVALID};
use crate::GlobalArgs;
use small_core::ops::selftest::{self, Step, StepOp, StepResult};
use small_core::ops::workspace::Scope;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Run a built-in self-test in a scratch workspace (never your own)
///
/// Runs this executable through a short workflow and checks each step succeeds:
///
///   1. init --force --intent "SMALL selftest workspace"
///   2. plan --add "Selftest task"
///   3. checkpoint --task task-2 --status completed --evidence "..."
///   4. apply --dry-run --cmd "echo selftest"
///   5. handoff --summary "Selftest checkpoint"
///   6. verify --workspace <scope>
///   7. check --strict --workspace <scope>
///
/// By default the workspace is a new directory in the system temp directory, removed
/// afterwards. With --dir, that directory is used; it must be new or empty, so that the
/// self-test can never touch existing files. Exit 1 if a step fails.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Keep the scratch workspace for inspection
    #[arg(long)]
    pub keep: bool,
    /// Run in this directory (must not exist yet, or be empty) instead of a temp directory
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope for the verify and check steps: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "any", value_parser = Scope::parse)]
    pub workspace: Scope,
}

/// The command line of a step (run as `small <args> --dir <ws>`).
fn argv(op: &StepOp) -> Vec<String> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect();
    match op {
        StepOp::Init { intent } => v(&["init", "--force", "--intent", intent]),
        StepOp::PlanAdd { title } => v(&["plan", "--add", title]),
        StepOp::Checkpoint {
            task,
            status,
            evidence,
        } => v(&[
            "checkpoint",
            "--task",
            task,
            "--status",
            status,
            "--evidence",
            evidence,
        ]),
        StepOp::ApplyDryRun { command } => v(&["apply", "--dry-run", "--cmd", command]),
        StepOp::Handoff { summary } => v(&["handoff", "--summary", summary]),
        StepOp::Verify { scope } => v(&["verify", "--workspace", scope.as_str()]),
        StepOp::CheckStrict { scope } => v(&["check", "--strict", "--workspace", scope.as_str()]),
    }
}

/// Run one step with this executable, in the scratch workspace.
fn exec(exe: &Path, ws: &Path, step: &Step) -> StepResult {
    let out = Command::new(exe)
        .args(argv(&step.op))
        .arg("--dir")
        .arg(ws)
        .current_dir(ws)
        // The self-test checks the default behaviour, whatever the caller's settings.
        .env_remove("SMALL_PROGRESS_MODE")
        .env_remove("SMALL_SPEC_DIR")
        .env("NO_COLOR", "1")
        .output();
    match out {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            let code = o
                .status
                .code()
                .map_or("a signal".to_string(), |c| c.to_string());
            StepResult {
                ok: o.status.success(),
                detail: format!("exit {code}\n{text}"),
            }
        }
        Err(e) => StepResult {
            ok: false,
            detail: format!("could not run: {e}"),
        },
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::usage(format!("cannot find the small executable: {e}")))?;
    let ws = selftest::prepare(args.dir.as_deref()).map_err(CliError::usage)?;
    g.info(format!("small selftest in {}", ws.display()));
    let steps = selftest::scenario(args.workspace);
    let (total, width) = (
        steps.len(),
        steps.iter().map(|s| s.name.len()).max().unwrap_or(0),
    );
    let out = selftest::run(
        ws.clone(),
        steps,
        args.keep,
        &mut |s| exec(&exe, &ws, s),
        &mut |i, s, r| {
            let verdict = if r.ok { "ok" } else { "FAILED" };
            g.info(format!(
                "  [{}/{total}] {:<width$}  {verdict}",
                i + 1,
                s.name
            ));
        },
    );
    if let Some(e) = &out.cleanup_error {
        g.warn(format!("warning: could not remove {}: {e}", ws.display()));
    }
    let Some((step, result)) = out.failure() else {
        g.info(format!("All {total} steps passed."));
        if args.keep {
            g.info(format!("Workspace kept at {}", ws.display()));
        }
        return Ok(());
    };
    g.error(format!(
        "\nselftest failed at `small {}`:",
        argv(&step.op).join(" ")
    ));
    for line in result.detail.lines() {
        g.error(format!("  | {line}"));
    }
    g.error(format!("Workspace kept for inspection at {}", ws.display()));
    Err(CliError::silent(EXIT_INVALID))
}
