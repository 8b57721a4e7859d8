//! What the gate operations (`check`, `lint`, `verify`, `validate`, each in its own module)
//! share: the request, the verdict, the outcome of `lint` and `verify`, finding the workspace
//! and the schemas, and the 2.0.0 checks behind all four. A front end only renders an
//! outcome: the CLI prints it and turns [`Verdict::code`] into its exit status; the HTTP and
//! MCP servers answer with it.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::gates::check::{self, CheckReport};
use crate::v2;
use crate::workspace::{self, Location, Workspace};

/// What the front ends print of a gate's findings.
pub use crate::gates::check::{GateOptions, JsonDiagnostic, StageReport, StageStatus};
/// The page and the store list only the canonical files of a workspace.
pub use crate::gates::layout::is_canonical_file_name;
/// The schemas the server publishes and the MCP server validates against.
pub use crate::gates::schemas::{embedded_text, SchemaSet};

/// How a gate ended. Its [`code`](Verdict::code) is the `exit_code` of the JSON reports
/// (docs/json-output.md) and the CLI's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// No error (warnings possible).
    Pass,
    /// The workspace is invalid.
    Invalid,
    /// The gate could not run: no workspace, an unreadable file, unusable schemas, a bad
    /// revision.
    Error,
}

impl Verdict {
    /// The verdict of a finished gate: `Error` if a file could not be read, `Invalid` if any
    /// diagnostic is an error.
    pub fn of(diags: &[Diagnostic]) -> Verdict {
        if check::has_system_error(diags) {
            Verdict::Error
        } else if diags.iter().any(Diagnostic::is_error) {
            Verdict::Invalid
        } else {
            Verdict::Pass
        }
    }

    /// 0 pass, 1 invalid, 2 could not run.
    pub fn code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Invalid => 1,
            Verdict::Error => 2,
        }
    }

    /// The verdict for a report's exit code.
    pub fn from_code(code: u8) -> Verdict {
        match code {
            0 => Verdict::Pass,
            1 => Verdict::Invalid,
            _ => Verdict::Error,
        }
    }
}

pub use crate::gates::check::compact_line;

/// Find the workspace, or the diagnostic saying why there is none.
pub fn locate(dir: Option<&std::path::Path>) -> Result<Location, Box<Diagnostic>> {
    workspace::locate(dir).map_err(|e| Box::new(e.to_diagnostic()))
}

/// Resolve the schemas (`spec_dir`, else `$SMALL_SPEC_DIR`, else the built-in ones), or the
/// diagnostic saying why they cannot be used.
pub fn schemas(spec_dir: Option<&std::path::Path>) -> Result<Arc<SchemaSet>, Box<Diagnostic>> {
    SchemaSet::resolve(spec_dir).map_err(|e| {
        Box::new(Diagnostic::error("schemas", e.to_string()).with_help(
            "point --spec-dir (or SMALL_SPEC_DIR) at a directory with all the *.schema.json files, or unset it to use the built-in schemas",
        ))
    })
}

/// What a gate operation is asked to check.
#[derive(Debug, Clone, Default)]
pub struct GateRequest {
    /// Where the workspace is (`None`: found upward from the current directory).
    pub dir: Option<PathBuf>,
    /// Directory of JSON Schemas to use instead of the built-in ones.
    pub spec_dir: Option<PathBuf>,
    pub options: GateOptions,
}

/// What `lint` or `verify` found.
#[derive(Debug)]
pub struct GateOutcome {
    /// Every problem found, sorted (file, then position).
    pub diagnostics: Vec<Diagnostic>,
    /// The problem that stopped the gate, reported after the others (no workspace, unusable
    /// schemas, a revision git does not know).
    pub fatal: Option<Diagnostic>,
    /// The workspace as loaded (for source snippets); `None` when there is none.
    pub workspace: Option<Workspace>,
    pub verdict: Verdict,
}

/// The `--json` report of `lint` and `verify`: one stage of `check --json` (errors and
/// warnings as lines, `diagnostics` as objects) plus the exit code.
#[derive(Debug, Clone, Serialize)]
pub struct GateJson {
    pub status: StageStatus,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    pub diagnostics: Vec<check::JsonDiagnostic>,
    pub exit_code: u8,
}

impl GateOutcome {
    pub(crate) fn stopped(
        d: Diagnostic,
        diagnostics: Vec<Diagnostic>,
        ws: Option<Workspace>,
    ) -> Self {
        GateOutcome {
            diagnostics,
            fatal: Some(d),
            workspace: ws,
            verdict: Verdict::Error,
        }
    }

    pub(crate) fn finished(diagnostics: Vec<Diagnostic>, ws: Workspace) -> Self {
        GateOutcome {
            verdict: Verdict::of(&diagnostics),
            diagnostics,
            fatal: None,
            workspace: Some(ws),
        }
    }

    /// Errors and warnings among [`diagnostics`](Self::diagnostics).
    pub fn counts(&self) -> (usize, usize) {
        let e = self.diagnostics.iter().filter(|d| d.is_error()).count();
        (e, self.diagnostics.len() - e)
    }

    /// The `--json` report.
    pub fn json(&self) -> GateJson {
        let mut r = StageReport::from_diagnostics(self.diagnostics.iter().chain(&self.fatal));
        if self.verdict == Verdict::Error {
            r.status = StageStatus::Error;
        }
        GateJson {
            status: r.status,
            errors: r.errors,
            warnings: r.warnings,
            diagnostics: r.diagnostics,
            exit_code: self.verdict.code(),
        }
    }
}

pub(crate) fn listing_failed(ws: &Workspace, e: std::io::Error) -> Diagnostic {
    Diagnostic::error("io", format!("cannot list {}: {e}", ws.small_dir.display()))
}

/// `lint` (`upto` Graph) or `verify` (`upto` State) of a 2.0.0 workspace.
pub(crate) fn v2_outcome(c: v2::Checked, upto: v2::Stage) -> GateOutcome {
    let diagnostics: Vec<Diagnostic> = c
        .diagnostics
        .into_iter()
        .filter(|d| v2::stage_of(&d.code) <= upto)
        .collect();
    GateOutcome {
        verdict: Verdict::of(&diagnostics),
        diagnostics,
        fatal: None,
        workspace: None,
    }
}

/// `check`'s staged report of a 2.0.0 workspace: validate = the records, lint = the event
/// graph, verify = the reduced state (conflicts, policy material); the stages after the
/// first that fails are skipped, as for v1.
pub fn v2_check_report(diags: &[Diagnostic]) -> CheckReport {
    use check::Stage as S;
    let stages = [
        (S::Validate, v2::Stage::Records),
        (S::Lint, v2::Stage::Graph),
        (S::Verify, v2::Stage::State),
    ];
    let mut reports: Vec<StageReport> = Vec::new();
    let mut all: Vec<(S, Diagnostic)> = Vec::new();
    let mut stopped: Option<&'static str> = None;
    let mut exit_code = 0;
    for (stage, v2stage) in stages {
        if let Some(name) = stopped {
            reports.push(StageReport::skipped(&format!("{name} failed")));
            continue;
        }
        let mine: Vec<Diagnostic> = diags
            .iter()
            .filter(|d| v2::stage_of(&d.code) == v2stage)
            .cloned()
            .collect();
        let verdict = Verdict::of(&mine);
        let report = if verdict == Verdict::Error {
            StageReport::error(&mine, "a record could not be read")
        } else {
            StageReport::from_diagnostics(&mine)
        };
        if verdict != Verdict::Pass {
            stopped = Some(stage.name());
            exit_code = verdict.code();
        }
        all.extend(mine.into_iter().map(|d| (stage, d)));
        reports.push(report);
    }
    let mut it = reports.into_iter();
    let (Some(validate), Some(lint), Some(verify)) = (it.next(), it.next(), it.next()) else {
        unreachable!("three stages")
    };
    CheckReport {
        validate,
        lint,
        verify,
        exit_code,
        diagnostics: all,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::check::check;
    use crate::ops::lint::lint;
    use crate::ops::validate::{validate, ValidateRequest};
    use crate::ops::verify::verify;
    use std::path::Path;

    fn fresh() -> tempfile::TempDir {
        crate::authoring::init::fresh_workspace("Gate operations", &[])
    }

    fn req(dir: &Path) -> GateRequest {
        GateRequest {
            dir: Some(dir.to_path_buf()),
            spec_dir: None,
            options: GateOptions {
                threads: 1,
                ..Default::default()
            },
        }
    }

    #[test]
    fn verdicts_and_codes() {
        assert_eq!(Verdict::of(&[]), Verdict::Pass);
        assert_eq!(Verdict::of(&[Diagnostic::warning("x", "w")]), Verdict::Pass);
        assert_eq!(
            Verdict::of(&[Diagnostic::error("x", "e")]),
            Verdict::Invalid
        );
        assert_eq!(Verdict::of(&[Diagnostic::error("io", "e")]), Verdict::Error);
        for v in [Verdict::Pass, Verdict::Invalid, Verdict::Error] {
            assert_eq!(Verdict::from_code(v.code()), v);
        }
    }

    #[test]
    fn compact_line_names_file_position_and_code() {
        let d = Diagnostic::error("INV1", "bad").in_file(".small/plan.small.yml");
        assert_eq!(compact_line(&d), ".small/plan.small.yml: error[INV1]: bad");
        assert_eq!(
            compact_line(&Diagnostic::warning("W", "w")),
            "warning[W]: w"
        );
    }

    #[test]
    fn no_workspace_stops_every_gate_with_exit_2() {
        let tmp = tempfile::tempdir().unwrap();
        for out in [lint(&req(tmp.path())), verify(&req(tmp.path()))] {
            assert_eq!(out.verdict, Verdict::Error);
            assert!(out.fatal.is_some());
            let j = out.json();
            assert_eq!(j.exit_code, 2);
            assert_eq!(j.status, StageStatus::Error);
            assert_eq!(j.errors.len(), 1);
            assert!(
                j.errors[0].contains("error[no-workspace]"),
                "{:?}",
                j.errors
            );
            assert_eq!(j.diagnostics.len(), 1);
            assert_eq!(j.diagnostics[0].code, "no-workspace");
        }
        assert_eq!(check(&req(tmp.path())).verdict(), Verdict::Error);
        let v = validate(&ValidateRequest {
            dir: Some(tmp.path().to_path_buf()),
            ..Default::default()
        });
        assert!(v.stopped && !v.ok);
        assert_eq!(v.exit_code, 2);
    }

    #[test]
    fn a_fresh_workspace_passes_every_gate() {
        let tmp = fresh();
        let r = req(tmp.path());
        let l = lint(&r);
        assert_eq!(l.verdict, Verdict::Pass, "{:?}", l.diagnostics);
        assert!(l.workspace.is_some());
        let mut any = r.clone();
        any.options.scope = crate::workspace::Scope::Any;
        assert_eq!(verify(&any).verdict, Verdict::Pass);
        let c = check(&any);
        assert_eq!(c.verdict(), Verdict::Pass);
        assert!(c.failed_stage().is_none());
        let v = validate(&ValidateRequest {
            dir: Some(tmp.path().to_path_buf()),
            ..Default::default()
        });
        assert!(v.ok, "{:?}", v.diagnostics);
        assert_eq!(v.files.len(), 6);
        assert!(v.has_metadata);
    }

    #[test]
    fn an_invalid_artifact_fails_validate_and_check_stops_there() {
        let tmp = fresh();
        std::fs::write(
            tmp.path().join(".small/intent.small.yml"),
            "small_version: \"1.0.0\"\nowner: \"human\"\n",
        )
        .unwrap();
        let v = validate(&ValidateRequest {
            dir: Some(tmp.path().to_path_buf()),
            ..Default::default()
        });
        assert_eq!(v.verdict, Verdict::Invalid);
        assert_eq!(v.failed_files, 1);
        assert!(v.errors > 0);
        let mut r = req(tmp.path());
        r.options.scope = crate::workspace::Scope::Any;
        let c = check(&r);
        assert_eq!(c.verdict(), Verdict::Invalid);
        let (name, _, skipped) = c.failed_stage().unwrap();
        assert_eq!(name, "validate");
        assert_eq!(skipped, vec!["lint", "verify"]);
    }

    /// A log long enough to be validated piece by piece from its file (over 4 MiB) reports a
    /// violation deep in it where it is, as when the log is read whole.
    #[test]
    fn a_violation_deep_in_a_long_log_is_reported_where_it_is() {
        let tmp = fresh();
        let path = tmp.path().join(".small/progress.small.yml");
        let mut log = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
        let bad = 17_000;
        let mut bad_line = 0;
        for i in 0..19_000 {
            if i == bad {
                bad_line = log.lines().count() + 1;
                log.push_str("  - timestamp: 20260101\n");
            } else {
                log.push_str(&format!("  - timestamp: \"2026-01-01T00:00:00.{i:06}Z\"\n"));
            }
            log.push_str(&format!(
                "    task_id: \"task-{}\"\n    status: \"in_progress\"\n    evidence: \"cargo test: {i} passed, 0 failed, and then some more words\"\n    notes: \"step {i} of the long log, written for the streamed validation\"\n",
                i % 50
            ));
        }
        assert!(log.len() > 4 << 20, "{}", log.len());
        std::fs::write(&path, &log).unwrap();
        let v = validate(&ValidateRequest {
            dir: Some(tmp.path().to_path_buf()),
            ..Default::default()
        });
        assert_eq!(v.verdict, Verdict::Invalid);
        let found: Vec<_> = v.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert_eq!(found.len(), 1, "{found:?}");
        let d = found[0];
        assert_eq!(
            d.path.as_deref(),
            Some(format!("/entries/{bad}/timestamp").as_str())
        );
        assert_eq!(
            d.span.map(|s| s.start.line as usize),
            Some(bad_line),
            "{d:?}"
        );
    }

    #[test]
    fn an_unknown_revision_stops_verify() {
        let tmp = fresh();
        let mut r = req(tmp.path());
        r.options.scope = crate::workspace::Scope::Any;
        r.options.since = Some("no-such-revision-anywhere".into());
        let out = verify(&r);
        assert_eq!(out.verdict, Verdict::Error);
        assert_eq!(out.fatal.as_ref().unwrap().code, "since");
        assert_eq!(out.json().exit_code, 2);
    }
}
