//! The self-test: a short workflow run in a scratch workspace, never the user's own.
//!
//! The scenario (which steps, in which order, with which values), the rules for the scratch
//! directory (new or empty only) and the verdict live here; a front end says how to run one
//! step (the CLI runs its own executable, so the self-test proves the installed binary).

use std::path::{Path, PathBuf};

use crate::workspace::Scope;

/// One operation of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOp {
    /// Create the workspace (overwriting a leftover one).
    Init { intent: &'static str },
    /// Add a plan task.
    PlanAdd { title: &'static str },
    /// Close a task with evidence.
    Checkpoint {
        task: &'static str,
        status: &'static str,
        evidence: &'static str,
    },
    /// Plan a command run without running it.
    ApplyDryRun { command: &'static str },
    /// Write the handoff.
    Handoff { summary: &'static str },
    /// The verify gate.
    Verify { scope: Scope },
    /// The check gate, strict.
    CheckStrict { scope: Scope },
}

/// A named step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: &'static str,
    pub op: StepOp,
}

/// The steps, in order; `scope` is the workspace scope of the two gates.
pub fn scenario(scope: Scope) -> Vec<Step> {
    let step = |name, op| Step { name, op };
    vec![
        step(
            "init",
            StepOp::Init {
                intent: "SMALL selftest workspace",
            },
        ),
        step(
            "plan --add",
            StepOp::PlanAdd {
                title: "Selftest task",
            },
        ),
        step(
            "checkpoint",
            StepOp::Checkpoint {
                task: "task-2",
                status: "completed",
                evidence: "selftest: the task was added and recorded",
            },
        ),
        step(
            "apply --dry-run",
            StepOp::ApplyDryRun {
                command: "echo selftest",
            },
        ),
        step(
            "handoff",
            StepOp::Handoff {
                summary: "Selftest checkpoint",
            },
        ),
        step("verify", StepOp::Verify { scope }),
        step("check --strict", StepOp::CheckStrict { scope }),
    ]
}

/// The scratch directory: a new one in the system temp directory, or `dir` if it does not
/// exist yet or is empty (so that the self-test can never touch existing files). Absolute.
pub fn prepare(dir: Option<&Path>) -> Result<PathBuf, String> {
    let Some(d) = dir else {
        let t = tempfile::Builder::new()
            .prefix("small-selftest-")
            .tempdir()
            .map_err(|e| format!("cannot create a temp directory: {e}"))?;
        return Ok(t.keep());
    };
    if d.exists() {
        let mut entries =
            std::fs::read_dir(d).map_err(|e| format!("cannot use {}: {e}", d.display()))?;
        if entries.next().is_some() {
            return Err(format!(
                "{} is not empty; the self-test only runs in a new or empty directory (it deletes it afterwards unless --keep)",
                d.display()
            ));
        }
    } else {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    std::fs::canonicalize(d).map_err(|e| format!("cannot use {}: {e}", d.display()))
}

/// How one step went.
#[derive(Debug, Clone)]
pub struct StepResult {
    pub ok: bool,
    /// What the step printed (kept for the report of a failure).
    pub detail: String,
}

/// How the self-test went.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub dir: PathBuf,
    /// The steps run, with their results (the failing one last).
    pub results: Vec<(Step, StepResult)>,
    /// The scenario's length.
    pub total: usize,
    /// Whether the scratch directory was left in place (asked for, or kept after a failure).
    pub kept: bool,
    /// Why the scratch directory could not be removed.
    pub cleanup_error: Option<String>,
}

impl Outcome {
    /// The failed step and its result.
    pub fn failure(&self) -> Option<&(Step, StepResult)> {
        self.results.last().filter(|(_, r)| !r.ok)
    }
}

/// Run `steps` in `dir` with `exec`, stopping at the first failure; `seen` is told of each
/// result as it comes. The directory is removed afterwards unless `keep` or a step failed.
pub fn run(
    dir: PathBuf,
    steps: Vec<Step>,
    keep: bool,
    exec: &mut dyn FnMut(&Step) -> StepResult,
    seen: &mut dyn FnMut(usize, &Step, &StepResult),
) -> Outcome {
    let total = steps.len();
    let mut results = Vec::new();
    for (i, s) in steps.into_iter().enumerate() {
        let r = exec(&s);
        seen(i, &s, &r);
        let ok = r.ok;
        results.push((s, r));
        if !ok {
            break;
        }
    }
    let failed = results.last().is_some_and(|(_, r)| !r.ok);
    let kept = keep || failed;
    let cleanup_error = if kept {
        None
    } else {
        std::fs::remove_dir_all(&dir).err().map(|e| e.to_string())
    };
    Outcome {
        dir,
        results,
        total,
        kept,
        cleanup_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_checks_with_the_given_scope_last() {
        let s = scenario(Scope::Examples);
        assert_eq!(s.len(), 7);
        assert_eq!(s[0].name, "init");
        assert_eq!(
            s.last().unwrap().op,
            StepOp::CheckStrict {
                scope: Scope::Examples
            }
        );
    }

    #[test]
    fn prepare_refuses_a_directory_with_files() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("mine"), "x").unwrap();
        assert!(prepare(Some(tmp.path())).unwrap_err().contains("not empty"));
        let new = tmp.path().join("new");
        assert_eq!(prepare(Some(&new)).unwrap(), new.canonicalize().unwrap());
        let t = prepare(None).unwrap();
        assert!(t.is_dir());
        std::fs::remove_dir_all(t).unwrap();
    }

    #[test]
    fn run_stops_at_the_first_failure_and_keeps_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ws");
        std::fs::create_dir(&dir).unwrap();
        let mut n = 0;
        let mut exec = |_: &Step| {
            n += 1;
            StepResult {
                ok: n < 3,
                detail: format!("step {n}"),
            }
        };
        let mut seen = 0;
        let out = run(
            dir.clone(),
            scenario(Scope::Any),
            false,
            &mut exec,
            &mut |_, _, _| seen += 1,
        );
        assert_eq!((out.results.len(), seen), (3, 3));
        assert_eq!(out.failure().unwrap().0.name, "checkpoint");
        assert!(out.kept && dir.is_dir());
        let ok = run(
            dir.clone(),
            scenario(Scope::Any),
            false,
            &mut |_| StepResult {
                ok: true,
                detail: String::new(),
            },
            &mut |_, _, _| {},
        );
        assert!(ok.failure().is_none() && !ok.kept && !dir.exists());
    }
}
