//! `doctor`: a read-only health report of a workspace, with a suggested next step for each
//! finding.
//!
//! The report covers: `.small/` and its files exist and parse, the schemas, the protocol
//! invariants, the workspace metadata (verify), leftovers of the old runtime layout
//! (`.small/runs/`, `.small/archive/`), and a summary of the run state. It is advice, not a
//! gate: the findings are typed ([`Finding`]) and front ends only render them.
//!
//! The workspace is loaded once for every stage, and the progress log is streamed entry by
//! entry (never held as a tree), resuming from the gates' cache in `.small-cache/` when the
//! bytes checked before are unchanged, as the other gates do (see
//! [`crate::gates::progress_check`]).

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::gates::check::{self, GateOptions};
use crate::gates::layout;
use crate::gates::schemas::SchemaSet;
use crate::ops::gate::compact_line;
use crate::spec::consts::SMALL_DIR;
use crate::spec::model::TaskStatus;
use crate::state::ProjectState;
use crate::workspace::{LoadOptions, Scope, Workspace};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warning,
    Error,
}

/// One line of the report: what was checked (`area`), what was found, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub level: Level,
    pub area: String,
    pub message: String,
    /// The suggested next step (empty: none).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fix: String,
}

/// The whole report, in the order the checks ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DoctorReport {
    pub findings: Vec<Finding>,
    pub errors: usize,
    pub warnings: usize,
}

impl DoctorReport {
    /// The report as lines, each with the level that says where it goes (as the reference
    /// prints it: the report and what passed on stdout, warnings and errors on stderr): a
    /// heading, one line a finding and one its fix, and a summary.
    pub fn lines(&self) -> Vec<crate::ops::report::Said> {
        use crate::ops::report::Said;
        let said = |level: Level, text: String| match level {
            Level::Ok => Said::Info(text),
            Level::Warning => Said::Warning(text),
            Level::Error => Said::Error(text),
        };
        let mut out = vec![
            Said::Info("SMALL doctor".to_string()),
            Said::Info(String::new()),
        ];
        for f in &self.findings {
            let tag = match f.level {
                Level::Ok => "[ok]   ",
                Level::Warning => "[warn] ",
                Level::Error => "[error]",
            };
            out.push(said(f.level, format!("{tag} {}: {}", f.area, f.message)));
            if !f.fix.is_empty() {
                out.push(said(f.level, format!("        -> {}", f.fix)));
            }
        }
        out.push(Said::Info(String::new()));
        out.push(match (self.errors, self.warnings) {
            (0, 0) => Said::Info("Summary: all checks passed".to_string()),
            (0, w) => Said::Warning(format!(
                "Summary: {w} warning(s); review the suggestions above"
            )),
            (e, w) => Said::Error(format!(
                "Summary: {e} error(s), {w} warning(s); see the suggestions above, then run `small check`"
            )),
        });
        out
    }

    fn push(&mut self, level: Level, area: &str, message: impl Into<String>, fix: &str) {
        match level {
            Level::Ok => {}
            Level::Warning => self.warnings += 1,
            Level::Error => self.errors += 1,
        }
        self.findings.push(Finding {
            level,
            area: area.to_string(),
            message: message.into(),
            fix: fix.to_string(),
        });
    }
    fn ok(&mut self, area: &str, msg: impl Into<String>) {
        self.push(Level::Ok, area, msg, "");
    }
    fn warn(&mut self, area: &str, msg: impl Into<String>, fix: &str) {
        self.push(Level::Warning, area, msg, fix);
    }
    fn error(&mut self, area: &str, msg: impl Into<String>, fix: &str) {
        self.push(Level::Error, area, msg, fix);
    }
    /// One finding per diagnostic; its own help wins over `fix`.
    fn diags(&mut self, area: &str, diags: &[Diagnostic], fix: &str) {
        for d in diags {
            let help = d.help.clone().unwrap_or_else(|| fix.to_string());
            let level = if d.is_error() {
                Level::Error
            } else {
                Level::Warning
            };
            self.push(level, area, compact_line(d), &help);
        }
    }
}

/// Diagnose the workspace found from `dir` (upward from the current directory when `None`)
/// with `schemas` (or the reason they could not be loaded, reported as a finding). Never
/// changes the workspace; with `cache`, the progress check resumes from the gates' cache in
/// `.small-cache/` and refreshes it, as the other gates do.
pub fn diagnose(
    dir: Option<&Path>,
    schemas: Result<Arc<SchemaSet>, Diagnostic>,
    cache: bool,
) -> DoctorReport {
    let mut r = DoctorReport::default();
    let loc = match crate::workspace::locate(dir) {
        Ok(loc) => loc,
        Err(e) => {
            r.error(
                "workspace",
                e.to_string(),
                "run `small init` to create a SMALL workspace",
            );
            return r;
        }
    };
    loc.backend().doctor(loc, schemas, cache, &mut r);
    r
}

/// [`diagnose`] of a v1 workspace.
pub(super) fn diagnose_v1(
    loc: crate::workspace::Location,
    schemas: Result<Arc<SchemaSet>, Diagnostic>,
    cache: bool,
    r: &mut DoctorReport,
) {
    let opts = GateOptions {
        scope: Scope::Any,
        cache,
        ..Default::default()
    };
    let schema_set = schemas;
    let loaded = match &schema_set {
        Ok(s) => check::load(loc, Some(s), &opts),
        Err(_) => check::Loaded::whole(Workspace::load(loc, &LoadOptions::all())),
    };
    let ws = &loaded.ws;
    r.ok("workspace", format!("{} exists", ws.small_dir.display()));
    let load = check::artifact_load_diagnostics(ws);
    if load.is_empty() {
        r.ok(
            "files",
            "all five canonical files present and readable YAML",
        );
    } else {
        r.diags(
            "files",
            &load,
            "`small init --force` recreates missing files and keeps existing ones",
        );
    }
    layout_findings(&ws.root, r);
    match schema_set {
        Ok(s) => {
            let v: Vec<Diagnostic> = check::validate_stage(&loaded, &s)
                .into_iter()
                .filter(|d| !load.contains(d))
                .collect();
            if v.is_empty() {
                r.ok("schema", "all artifacts match their schemas");
            } else {
                r.diags("schema", &v, "fix the value, then run `small validate`");
            }
            match check::lint_stage(&loaded, &opts) {
                Ok(l) if l.is_empty() => r.ok("invariants", "all protocol invariants hold"),
                Ok(l) => r.diags("invariants", &l, "see docs/rules.md"),
                Err(e) => r.error("invariants", format!("cannot list .small/: {e}"), ""),
            }
            match check::verify_stage(&loaded, &s, &opts) {
                Ok(v) if v.is_empty() => r.ok(
                    "verify",
                    "workspace metadata, replayId and evidence gate ok",
                ),
                Ok(v) => r.diags("verify", &v, "see docs/rules.md"),
                Err(e) => r.error("verify", e.to_string(), ""),
            }
        }
        Err(d) => r.diags("schema", &[d], ""),
    }
    run_state(&loaded.state, r);
}

/// Leftovers of the old runtime layout, and other paths strict mode rejects.
fn layout_findings(root: &Path, r: &mut DoctorReport) {
    let Ok(unexpected) = layout::unexpected_paths(root) else {
        return;
    };
    let legacy: Vec<&str> = unexpected
        .iter()
        .filter(|u| u.rel_path.ends_with("/runs/") || u.rel_path.ends_with("/archive/"))
        .map(|u| u.rel_path.as_str())
        .collect();
    if !legacy.is_empty() {
        r.warn(
            "layout",
            format!("old runtime layout: {}", legacy.join(", ")),
            "small fix --runtime-layout",
        );
    }
    let others = unexpected.len() - legacy.len();
    if others > 0 {
        r.warn(
            "layout",
            format!("{others} non-canonical path(s) under {SMALL_DIR}/ (strict mode rejects them)"),
            "move them outside .small/ or into .small/ext/",
        );
    }
}

/// The run state, from the project state the gates built: the plan's tasks by status, the
/// log's entries, the handoff's next steps.
fn run_state(st: &ProjectState, r: &mut DoctorReport) {
    let tasks = st.task_list();
    if !tasks.is_empty() {
        let n = |s: TaskStatus| tasks.iter().filter(|t| t.status == s.as_str()).count();
        let (pending, active, done, blocked) = (
            n(TaskStatus::Pending),
            n(TaskStatus::InProgress),
            n(TaskStatus::Completed),
            n(TaskStatus::Blocked),
        );
        let msg = format!(
            "{} tasks: {done} completed, {active} in progress, {pending} pending, {blocked} blocked",
            tasks.len()
        );
        if active > 1 {
            r.warn(
                "run",
                msg,
                "several tasks are in progress; finish one at a time",
            );
        } else if blocked > 0 && active == 0 && pending == 0 {
            r.warn(
                "run",
                msg,
                "every remaining task is blocked; review the blockers",
            );
        } else if done == tasks.len() {
            r.ok(
                "run",
                format!("{msg} (run complete; `small handoff` records it)"),
            );
        } else {
            r.ok("run", msg);
        }
    }
    if let Some(log) = &st.log {
        if log.count == 0 {
            r.ok("progress", "no entries yet (fresh run)");
        } else {
            r.ok("progress", format!("{} entries recorded", log.count));
        }
    }
    if let Some(h) = &st.handoff {
        r.ok(
            "handoff",
            format!(
                "{} next step(s) recorded for the next session",
                h.next_steps.len()
            ),
        );
    }
}

/// A 2.0.0 workspace, from its project state: the records and event graph, conflicts,
/// open sessions, and the plan.
pub(super) fn diagnose_v2(loc: &crate::workspace::Location, r: &mut DoctorReport) {
    let st = crate::state::load_v2(
        loc,
        &crate::state::LoadOptions {
            recent: 0,
            audit: false,
        },
        false,
    );
    r.ok(
        "workspace",
        format!("{} holds SMALL profile 2.0.0", loc.small_dir.display()),
    );
    if st.record_problems.is_empty() {
        r.ok(
            "records",
            "every record reads, its digest matches, and the event graph is sound",
        );
    } else {
        r.diags(
            "records",
            &st.record_problems,
            "run `small check --strict` for the details of each record",
        );
    }
    for p in &st.problems {
        r.error(
            "policy",
            p.clone(),
            "restore the policy file from version control",
        );
    }
    let Some(s) = &st.sessions else { return };
    if s.conflicts.is_empty() {
        r.ok("conflicts", "no unresolved conflict");
    }
    for c in &s.conflicts {
        r.error(
            "conflicts",
            format!("{} conflict: {} ({})", c.kind, c.message, c.id),
            "resolve it: `small reconcile --preview` shows the conflicts and what resolving them takes",
        );
    }
    let open: Vec<&str> = s
        .sessions
        .iter()
        .filter(|x| x.is_active())
        .map(|x| x.id.as_str())
        .collect();
    match open.len() {
        0 => r.ok(
            "sessions",
            format!("{} session(s), none open", s.sessions.len()),
        ),
        1 => r.ok("sessions", format!("session {} is open", open[0])),
        n if s.mode == "solo" => r.warn(
            "sessions",
            format!("{n} sessions are open in solo mode: {}", open.join(", ")),
            "close the ones that are done with `small session close`",
        ),
        n => r.ok("sessions", format!("{n} sessions open ({} mode)", s.mode)),
    }
    let done = st.task_list().iter().filter(|t| t.is_completed()).count();
    r.ok(
        "run",
        format!(
            "{done} of {} task(s) completed; frontier {}",
            st.task_list().len(),
            s.frontier
        ),
    );
}
