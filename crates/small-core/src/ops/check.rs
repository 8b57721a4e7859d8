//! `check`: validate, lint and verify in order, stopping at the first stage that fails.

use crate::gates::check::{self, CheckReport, StageReport, StageStatus};
use crate::ops::gate::*;
use crate::workspace::Workspace;

/// What `check` found: the staged report, and the workspace for source snippets.
#[derive(Debug)]
pub struct Checked {
    pub report: CheckReport,
    pub workspace: Option<Workspace>,
}

impl Checked {
    pub fn verdict(&self) -> Verdict {
        Verdict::from_code(self.report.exit_code)
    }

    /// The stage that failed (or could not run), and the stages not run after it.
    pub fn failed_stage(&self) -> Option<(&'static str, &StageReport, Vec<&'static str>)> {
        let r = &self.report;
        let stages = [
            ("validate", &r.validate),
            ("lint", &r.lint),
            ("verify", &r.verify),
        ];
        let (name, stage) = stages
            .iter()
            .find(|(_, s)| matches!(s.status, StageStatus::Failed | StageStatus::Error))?;
        let skipped = stages
            .iter()
            .filter(|(_, s)| s.status == StageStatus::Skipped)
            .map(|(n, _)| *n)
            .collect();
        Some((name, stage, skipped))
    }
}

/// `check`: validate, lint and verify in order, stopping at the first stage that fails.
pub fn check(req: &GateRequest) -> Checked {
    let loc = match locate(req.dir.as_deref()) {
        Ok(l) => l,
        Err(d) => {
            return Checked {
                report: check::no_workspace_report(*d),
                workspace: None,
            }
        }
    };
    loc.backend().check(loc, req)
}

/// [`check`] of a 2.0.0 workspace.
pub(super) fn check_v2(loc: crate::workspace::Location) -> Checked {
    let c = crate::v2::check(&loc.root, &loc.small_dir);
    Checked {
        report: v2_check_report(&c.diagnostics),
        workspace: None,
    }
}

/// [`check`] of a v1 workspace.
pub(super) fn check_v1(loc: crate::workspace::Location, req: &GateRequest) -> Checked {
    let schemas = match schemas(req.spec_dir.as_deref()) {
        Ok(s) => s,
        Err(d) => {
            return Checked {
                report: check::no_workspace_report(*d),
                workspace: None,
            }
        }
    };
    let loaded = check::load(loc, Some(&schemas), &req.options);
    let report = check::run_check(&loaded, &schemas, &req.options);
    Checked {
        report,
        workspace: Some(loaded.ws),
    }
}

impl Checked {
    /// The verdict line after the findings: the stage that failed or could not run (and
    /// those not run), else that all passed (`compact`: nothing on success).
    pub fn summary(&self, compact: bool) -> Option<crate::ops::report::Said> {
        use crate::ops::report::{count, Said};
        let r = &self.report;
        let Some((name, stage, skipped)) = self.failed_stage() else {
            let warnings = r.diagnostics.iter().filter(|(_, d)| !d.is_error()).count();
            if r.exit_code != 0 || compact {
                return None;
            }
            return Some(Said::Info(match warnings {
                0 => "Check passed: validate, lint and verify ok".to_string(),
                n => format!(
                    "Check passed: validate, lint and verify ok ({})",
                    count(n, "warning")
                ),
            }));
        };
        let tail = if skipped.is_empty() {
            String::new()
        } else {
            format!("; {} not run", skipped.join(" and "))
        };
        Some(Said::Error(if stage.status == StageStatus::Error {
            format!("check could not run {name}{tail}")
        } else {
            format!(
                "check failed at {name}: {}{tail}",
                count(stage.errors.len(), "error")
            )
        }))
    }
}
