//! `small doctor`: a read-only health report with a suggested next step for each finding.

use small_core::spec::model::TaskStatus;
use std::path::PathBuf;

use small_core::diag::Diagnostic;
use small_core::gates::check::{self, GateOptions};
use small_core::gates::invariants::PlanIndex;
use small_core::gates::layout;
use small_core::gates::status::normalized_status;
use small_core::spec::consts::{ArtifactKind, SMALL_DIR};
use small_core::workspace::{LoadOptions, Scope, Workspace};
use small_core::yaml::Node;

use crate::commands::check::{compact_line, schemas};
use crate::error::CmdResult;
use crate::GlobalArgs;

/// Diagnose the workspace and suggest fixes; never changes anything.
///
/// Checks that .small/ and its files exist and parse, schemas, invariants, workspace
/// metadata, leftovers of the old runtime layout (.small/runs/, .small/archive/), and
/// summarises the run state. Always exits 0: it is advice, not a gate (use `small check`).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory to diagnose [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the findings as JSON: {findings: [{level, area, message, fix}], errors, warnings}
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Ok,
    Warn,
    Error,
}

struct Report {
    lines: Vec<(Level, String)>,
    findings: Vec<serde_json::Value>,
    errors: usize,
    warnings: usize,
}

fn finding(level: &str, area: &str, msg: &str, fix: &str) -> serde_json::Value {
    let mut v = serde_json::json!({"level": level, "area": area, "message": msg});
    if !fix.is_empty() {
        v["fix"] = serde_json::json!(fix);
    }
    v
}

impl Report {
    fn ok(&mut self, area: &str, msg: impl AsRef<str>) {
        self.findings.push(finding("ok", area, msg.as_ref(), ""));
        self.lines
            .push((Level::Ok, format!("[ok]    {area}: {}", msg.as_ref())));
    }
    fn warn(&mut self, area: &str, msg: impl AsRef<str>, fix: &str) {
        self.warnings += 1;
        self.findings
            .push(finding("warning", area, msg.as_ref(), fix));
        self.lines
            .push((Level::Warn, format!("[warn]  {area}: {}", msg.as_ref())));
        if !fix.is_empty() {
            self.lines.push((Level::Warn, format!("        -> {fix}")));
        }
    }
    fn error(&mut self, area: &str, msg: impl AsRef<str>, fix: &str) {
        self.errors += 1;
        self.findings
            .push(finding("error", area, msg.as_ref(), fix));
        self.lines
            .push((Level::Error, format!("[error] {area}: {}", msg.as_ref())));
        if !fix.is_empty() {
            self.lines.push((Level::Error, format!("        -> {fix}")));
        }
    }
    fn diags(&mut self, area: &str, diags: &[Diagnostic], fix: &str) {
        for d in diags {
            let help = d.help.clone().unwrap_or_else(|| fix.to_string());
            if d.is_error() {
                self.error(area, compact_line(d), &help);
            } else {
                self.warn(area, compact_line(d), &help);
            }
        }
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let mut r = Report {
        lines: Vec::new(),
        findings: Vec::new(),
        errors: 0,
        warnings: 0,
    };
    diagnose(args.dir.as_deref(), &mut r);
    if args.json {
        return g.json(&serde_json::json!({
            "findings": r.findings,
            "errors": r.errors,
            "warnings": r.warnings,
        }));
    }
    // As the reference does: the report and what passed on stdout, warnings and errors
    // (and a summary that is not all clear) on stderr. --quiet leaves only the errors.
    let say = |level: Level, text: &str| match level {
        Level::Ok => g.info(text),
        Level::Warn => g.warn(text),
        Level::Error => g.error(text),
    };
    g.info("SMALL doctor");
    g.info("");
    for (level, l) in &r.lines {
        say(*level, l);
    }
    g.info("");
    match (r.errors, r.warnings) {
        (0, 0) => g.info("Summary: all checks passed"),
        (0, w) => g.warn(format!(
            "Summary: {w} warning(s); review the suggestions above"
        )),
        (e, w) => g.error(format!(
            "Summary: {e} error(s), {w} warning(s); see the suggestions above, then run `small check`"
        )),
    }
    Ok(())
}

fn diagnose(dir: Option<&std::path::Path>, r: &mut Report) {
    let loc = match small_core::workspace::locate(dir) {
        Ok(loc) => loc,
        Err(e) => {
            r.error(
                "workspace",
                e.to_string(),
                "run `small init` to create a SMALL workspace",
            );
            return;
        }
    };
    let opts = GateOptions {
        scope: Scope::Any,
        ..Default::default()
    };
    // The progress log is streamed and checked entry by entry (never held as a tree).
    let schema_set = schemas(None);
    let loaded = match &schema_set {
        Ok(s) => check::load(loc, Some(s), &opts),
        Err(_) => check::Loaded {
            ws: Workspace::load(loc, &LoadOptions::all()),
            streamed: None,
        },
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
    if let Ok(unexpected) = layout::unexpected_paths(&ws.root) {
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
                format!(
                    "{others} non-canonical path(s) under {SMALL_DIR}/ (strict mode rejects them)"
                ),
                "move them outside .small/ or into .small/ext/",
            );
        }
    }
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
        Err(d) => r.diags("schema", &[*d], ""),
    }
    run_state(ws, loaded.streamed.as_ref().map(|s| s.facts.count), r);
}

/// `streamed_entries`: how many entries the streamed progress log had (its document then
/// holds no entries).
fn run_state(ws: &Workspace, streamed_entries: Option<usize>, r: &mut Report) {
    let root = |k: ArtifactKind| ws.artifact(k).map(|a| &a.document.root);
    let plan = PlanIndex::from_plan(root(ArtifactKind::Plan));
    if !plan.tasks.is_empty() {
        let n = |s: &str| {
            plan.tasks
                .iter()
                .filter(|t| normalized_status(t) == s)
                .count()
        };
        let (pending, active, done, blocked) = (
            n(TaskStatus::Pending.as_str()),
            n(TaskStatus::InProgress.as_str()),
            n(TaskStatus::Completed.as_str()),
            n(TaskStatus::Blocked.as_str()),
        );
        let msg = format!(
            "{} tasks: {done} completed, {active} in progress, {pending} pending, {blocked} blocked",
            plan.tasks.len()
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
        } else if done == plan.tasks.len() {
            r.ok(
                "run",
                format!("{msg} (run complete; `small handoff` records it)"),
            );
        } else {
            r.ok("run", msg);
        }
    }
    if let Some(entries) = root(ArtifactKind::Progress)
        .and_then(|p| p.get("entries"))
        .and_then(Node::as_seq)
    {
        let n = streamed_entries.unwrap_or(entries.len());
        if n == 0 {
            r.ok("progress", "no entries yet (fresh run)");
        } else {
            r.ok("progress", format!("{n} entries recorded"));
        }
    }
    if let Some(steps) = root(ArtifactKind::Handoff)
        .and_then(|h| h.pointer("/resume/next_steps"))
        .and_then(Node::as_seq)
    {
        r.ok(
            "handoff",
            format!("{} next step(s) recorded for the next session", steps.len()),
        );
    }
}
