//! `small check`: validate, lint and verify in one pass over the workspace, stopping at the
//! first stage that fails. Also home of the helpers the gate commands (lint, verify, check)
//! share: loading, schema resolution and report printing.

use std::path::PathBuf;

use small_core::diag::{Diagnostic, Severity};
use small_core::gates::check::{self, CheckReport, GateOptions, StageStatus};
use small_core::gates::schemas::SchemaSet;
use small_core::workspace::{Location, Scope, Workspace};

use crate::error::{CliError, CmdResult, EXIT_INVALID, EXIT_USAGE};
use crate::GlobalArgs;

/// Run validate, lint and verify; stop at the first stage that fails.
///
/// Stages: validate (files present, YAML, JSON Schemas), lint (protocol invariants; with
/// --strict also S1-S4, secrets and insecure links as errors), verify (workspace metadata and
/// --workspace scope, handoff replayId, current task, evidence gate). A stage after a failed
/// one is reported as skipped.
///
/// Exit codes: 0 all stages pass; 1 the workspace is invalid; 2 no workspace, unreadable
/// files or bad flags. With --json, stdout carries only the JSON report (docs/json-output.md).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Strict mode: S1-S4, secrets and insecure links are errors
    #[arg(long)]
    pub strict: bool,
    /// Treat small_version formatting drift (not a double-quoted string) as an error
    #[arg(long)]
    pub format_strict: bool,
    /// CI mode: one line per problem, no source snippets
    #[arg(long)]
    pub ci: bool,
    /// Print the report as JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// Workspace kinds accepted: root (kind repo-root), examples, or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Directory with the JSON Schemas to use instead of the built-in ones (falls back to $SMALL_SPEC_DIR)
    #[arg(long, value_name = "DIR")]
    pub spec_dir: Option<PathBuf>,
    /// Do not read or update the cache of earlier checks in .small-cache/ (a full check)
    #[arg(long)]
    pub no_cache: bool,
}

/// clap value parser for `--workspace`.
/// Find the workspace, or say why there is none.
pub(crate) fn locate(dir: Option<&std::path::Path>) -> Result<Location, Box<Diagnostic>> {
    small_core::workspace::locate(dir).map_err(|e| Box::new(e.to_diagnostic()))
}

/// Resolve the schemas (--spec-dir, $SMALL_SPEC_DIR, embedded).
pub(crate) fn schemas(
    spec_dir: Option<&std::path::Path>,
) -> Result<std::sync::Arc<SchemaSet>, Box<Diagnostic>> {
    SchemaSet::resolve(spec_dir).map_err(|e| {
        Box::new(Diagnostic::error("schemas", e.to_string()).with_help(
            "point --spec-dir (or SMALL_SPEC_DIR) at a directory with all the *.schema.json files, or unset it to use the built-in schemas",
        ))
    })
}

/// How to print a list of diagnostics for humans (through the output helper).
pub(crate) struct Printer<'g> {
    g: &'g GlobalArgs,
    /// One line per problem (`file:line:col: error[CODE]: message`), no snippets.
    pub compact: bool,
}

impl<'g> Printer<'g> {
    pub fn new(g: &'g GlobalArgs, compact: bool) -> Printer<'g> {
        Printer { g, compact }
    }

    /// Print diagnostics to stderr (only the errors under --quiet).
    pub fn print(&self, diags: &[Diagnostic], ws: Option<&Workspace>) {
        self.g
            .diagnostics(diags, |f| ws.and_then(|w| w.source_of(f)), self.compact);
    }
}

/// `file:line:col: error[CODE]: message`.
pub(crate) fn compact_line(d: &Diagnostic) -> String {
    let sev = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let loc = match (&d.file, d.span) {
        (Some(f), Some(s)) if s.start.line > 0 => {
            format!("{f}:{}:{}: ", s.start.line, s.start.column)
        }
        (Some(f), _) => format!("{f}: "),
        _ => String::new(),
    };
    format!(
        "{loc}{sev}[{}]: {}",
        d.code,
        small_core::gates::secrets::redact(&d.message)
    )
}

/// "3 errors", "1 warning".
pub(crate) fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

pub(crate) fn errors_and_warnings(diags: &[Diagnostic]) -> (usize, usize) {
    let e = diags.iter().filter(|d| d.is_error()).count();
    (e, diags.len() - e)
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let opts = GateOptions {
        strict: args.strict,
        format_strict: args.format_strict,
        scope: args.workspace,
        since: None,
        cache: !args.no_cache,
        threads: 0,
    };
    let printer = Printer::new(g, args.ci);
    let (report, loaded) = match locate(args.dir.as_deref()) {
        Err(d) => (check::no_workspace_report(*d), None),
        Ok(loc) => match schemas(args.spec_dir.as_deref()) {
            Err(d) => (check::no_workspace_report(*d), None),
            Ok(schemas) => {
                let l = check::load(loc, Some(&schemas), &opts);
                (check::run_check(&l, &schemas, &opts), Some(l))
            }
        },
    };
    let ws = loaded.as_ref().map(|l| &l.ws);
    if args.json {
        g.json(&report)?;
    } else {
        print_human(&report, ws, &printer, g);
    }
    match report.exit_code {
        0 => Ok(()),
        code => Err(CliError::silent(code)),
    }
}

fn print_human(report: &CheckReport, ws: Option<&Workspace>, printer: &Printer, g: &GlobalArgs) {
    let diags: Vec<Diagnostic> = report.diagnostics.iter().map(|(_, d)| d.clone()).collect();
    printer.print(&diags, ws);
    let stages = [
        ("validate", &report.validate),
        ("lint", &report.lint),
        ("verify", &report.verify),
    ];
    if report.exit_code == 0 {
        let (_, warnings) = errors_and_warnings(&diags);
        if !printer.compact {
            if warnings > 0 {
                g.info(format!(
                    "Check passed: validate, lint and verify ok ({})",
                    count(warnings, "warning")
                ));
            } else {
                g.info("Check passed: validate, lint and verify ok");
            }
        }
        return;
    }
    let Some((name, stage)) = stages
        .iter()
        .find(|(_, s)| matches!(s.status, StageStatus::Failed | StageStatus::Error))
    else {
        return;
    };
    let skipped: Vec<&str> = stages
        .iter()
        .filter(|(_, s)| s.status == StageStatus::Skipped)
        .map(|(n, _)| *n)
        .collect();
    let tail = if skipped.is_empty() {
        String::new()
    } else {
        format!("; {} not run", skipped.join(" and "))
    };
    if stage.status == StageStatus::Error {
        g.error(format!("check could not run {name}{tail}"));
    } else {
        g.error(format!(
            "check failed at {name}: {}{tail}",
            count(stage.errors.len(), "error")
        ));
    }
}

/// A gate's `--json` report (lint, verify): `{status, errors, warnings, exit_code}`, the shape
/// of one stage of `check --json` plus the exit code (docs/json-output.md). Returns the exit.
pub(crate) fn print_gate_json(g: &GlobalArgs, diags: &[Diagnostic]) -> CmdResult {
    let mut r = check::StageReport::from_diagnostics(diags);
    let exit = exit_for(diags);
    let code = match &exit {
        Ok(()) => 0,
        Err(e) => e.exit,
    };
    if code == EXIT_USAGE {
        r.status = StageStatus::Error;
    }
    g.json(&serde_json::json!({
        "status": r.status,
        "errors": r.errors,
        "warnings": r.warnings,
        "exit_code": code,
    }))?;
    exit
}

/// Exit code for a finished gate: 1 if any diagnostic is an error.
pub(crate) fn exit_for(diags: &[Diagnostic]) -> CmdResult {
    if check::has_system_error(diags) {
        Err(CliError::silent(EXIT_USAGE))
    } else if diags.iter().any(Diagnostic::is_error) {
        Err(CliError::silent(EXIT_INVALID))
    } else {
        Ok(())
    }
}
