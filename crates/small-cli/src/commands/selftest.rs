//! `small selftest`: run a short workflow in a scratch workspace to prove the CLI works.

use crate::error::{CliError, CmdResult, EXIT_INVALID};
use crate::GlobalArgs;
use small_core::workspace::Scope;
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

struct Step {
    name: String,
    args: Vec<String>,
}

fn step(name: &str, args: &[&str]) -> Step {
    Step {
        name: name.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

/// The steps, each run as `small <args> --dir <ws>`.
fn steps(scope: &str) -> Vec<Step> {
    vec![
        step(
            "init",
            &["init", "--force", "--intent", "SMALL selftest workspace"],
        ),
        step("plan --add", &["plan", "--add", "Selftest task"]),
        step(
            "checkpoint",
            &[
                "checkpoint",
                "--task",
                "task-2",
                "--status",
                "completed",
                "--evidence",
                "selftest: the task was added and recorded",
            ],
        ),
        step(
            "apply --dry-run",
            &["apply", "--dry-run", "--cmd", "echo selftest"],
        ),
        step("handoff", &["handoff", "--summary", "Selftest checkpoint"]),
        step("verify", &["verify", "--workspace", scope]),
        step(
            "check --strict",
            &["check", "--strict", "--workspace", scope],
        ),
    ]
}

/// Prepares the directory: a new temp dir, or `--dir` if it is new or empty.
fn prepare(dir: Option<&Path>) -> Result<PathBuf, CliError> {
    match dir {
        None => {
            let d = tempfile::Builder::new()
                .prefix("small-selftest-")
                .tempdir()
                .map_err(|e| CliError::usage(format!("cannot create a temp directory: {e}")))?;
            Ok(d.keep())
        }
        Some(d) => {
            if d.exists() {
                let mut entries = std::fs::read_dir(d)
                    .map_err(|e| CliError::usage(format!("cannot use {}: {e}", d.display())))?;
                if entries.next().is_some() {
                    return Err(CliError::usage(format!(
                        "{} is not empty; the self-test only runs in a new or empty directory (it deletes it afterwards unless --keep)",
                        d.display()
                    )));
                }
            } else {
                std::fs::create_dir_all(d)
                    .map_err(|e| CliError::usage(format!("cannot create {}: {e}", d.display())))?;
            }
            std::fs::canonicalize(d)
                .map_err(|e| CliError::usage(format!("cannot use {}: {e}", d.display())))
        }
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let scope = args.workspace.as_str();
    let exe = std::env::current_exe()
        .map_err(|e| CliError::usage(format!("cannot find the small executable: {e}")))?;
    let ws = prepare(args.dir.as_deref())?;
    let say = |s: String| g.info(s);
    say(format!("small selftest in {}", ws.display()));

    let all = steps(scope);
    let total = all.len();
    let width = all.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut failure: Option<(String, String)> = None;
    let ws_s = ws.display().to_string();
    for (i, s) in all.iter().enumerate() {
        let out = Command::new(&exe)
            .args(&s.args)
            .args(["--dir", ws_s.as_str()])
            .current_dir(&ws)
            // The self-test checks the default behaviour, whatever the caller's settings.
            .env_remove("SMALL_PROGRESS_MODE")
            .env_remove("SMALL_SPEC_DIR")
            .env("NO_COLOR", "1")
            .output();
        let (ok, detail) = match out {
            Ok(o) => {
                let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&o.stderr));
                let code = o
                    .status
                    .code()
                    .map_or("a signal".to_string(), |c| c.to_string());
                (o.status.success(), format!("exit {code}\n{text}"))
            }
            Err(e) => (false, format!("could not run: {e}")),
        };
        say(format!(
            "  [{}/{total}] {:<width$}  {}",
            i + 1,
            s.name,
            if ok { "ok" } else { "FAILED" }
        ));
        if !ok {
            failure = Some((format!("small {}", s.args.join(" ")), detail));
            break;
        }
    }

    let keep = args.keep || failure.is_some();
    if !keep {
        if let Err(e) = std::fs::remove_dir_all(&ws) {
            g.warn(format!("warning: could not remove {}: {e}", ws.display()));
        }
    }
    match failure {
        None => {
            say(format!("All {total} steps passed."));
            if args.keep {
                say(format!("Workspace kept at {}", ws.display()));
            }
            Ok(())
        }
        Some((cmd, detail)) => {
            g.error(format!("\nselftest failed at `{cmd}`:"));
            for line in detail.lines() {
                g.error(format!("  | {line}"));
            }
            g.error(format!("Workspace kept for inspection at {}", ws.display()));
            Err(CliError::silent(EXIT_INVALID))
        }
    }
}
