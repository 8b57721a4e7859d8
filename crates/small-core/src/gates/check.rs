//! The read-only gates as stages over one loaded workspace:
//!
//! - **validate**: every canonical artifact exists, is YAML with a mapping at the top, and
//!   matches its JSON Schema;
//! - **lint**: the protocol invariants (`invariants`), strict layout S4 in strict mode, and
//!   `small_version` formatting drift (`FMT`, an error only with format-strict);
//! - **verify**: the rules in `verify` (workspace metadata and scope, replayId, current task,
//!   evidence gate, append-only since a revision).
//!
//! `small lint` runs lint, `small verify` runs all three and reports everything together,
//! `small check` runs them in order and stops at the first stage that fails, reporting the
//! stages after it as `skipped`. The workspace is read and parsed once for all stages.

use serde::Serialize;
use std::sync::Arc;

use crate::diag::{self, Diagnostic, Severity};
use crate::fsio;
use crate::gates::invariants::{self, Docs, Options, PlanIndex, ProgressLinter};
use crate::gates::layout;
use crate::gates::progress_check::{self, EntryRules, ScanOptions};
use crate::gates::proofs;
use crate::gates::schemas::SchemaSet;
use crate::gates::validate;
use crate::gates::verify::{self, SinceError};
use crate::spec::consts::{ArtifactKind, WORKSPACE_FILE};
use crate::state::{self, ProjectState};
use crate::workspace::carry::{self, LogStat};
use crate::workspace::{LoadOptions, Location, Scope, StagedLog, Workspace, CODE_IO};

/// Flags of the gate commands.
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    pub strict: bool,
    /// Treat `FMT` (unquoted `small_version`) as an error.
    pub format_strict: bool,
    /// `--workspace`: which workspace kinds are accepted (verify stage).
    pub scope: Scope,
    /// `verify --since REV`: prove the progress log append-only since this git revision.
    pub since: Option<String>,
    /// Read and update the cache of progress checks in `.small-cache/` (see
    /// [`crate::gates::progress_check`]). Not used with `since`.
    pub cache: bool,
    /// Threads for checking a large progress log (0: automatic, 1: one).
    pub threads: usize,
}

fn is_metadata_file(d: &Diagnostic) -> bool {
    d.file
        .as_deref()
        .is_some_and(|f| f.ends_with(WORKSPACE_FILE))
}

/// A workspace loaded for the gates. The progress log is streamed when possible: each
/// entry is schema-checked, linted and compared with `--since` as it is parsed, then dropped,
/// so memory stays near the size of the file whatever the number of entries.
pub struct Loaded {
    pub ws: Workspace,
    /// What streaming the progress log produced (`None`: it was loaded whole).
    pub streamed: Option<Streamed>,
    /// The project state, built from `ws` and the pass over the log: what the cross-file
    /// rules read.
    pub state: ProjectState,
}

impl Loaded {
    /// A workspace loaded whole (its log, if loaded, is in memory): its state's log facts
    /// come from one pass over the entries.
    pub fn whole(ws: Workspace) -> Loaded {
        let root = |k: ArtifactKind| ws.artifact(k).map(|a| &a.document.root);
        let plan = PlanIndex::from_plan(root(ArtifactKind::Plan));
        let log = root(ArtifactKind::Progress).map(|p| {
            let scope = invariants::handoff_replay_scope(root(ArtifactKind::Handoff));
            invariants::progress_facts(&plan, &scope, Some(p))
        });
        let state = state::v1::from_workspace(&ws, &plan, log);
        Loaded {
            ws,
            streamed: None,
            state,
        }
    }
}

/// Per-entry results of a streamed progress log.
#[derive(Debug, Default)]
pub struct Streamed {
    /// Schema violations of the entries (empty when no schemas were given).
    pub schema: Vec<Diagnostic>,
    /// Lint diagnostics of the entries (`TS`, `INV2`, `SHAPE`, `INV1`, `LINK`); the facts
    /// gathered with them are the state's (`ProjectState::log`).
    pub lint: Vec<Diagnostic>,
    /// The append-only proof, when `--since` was given.
    pub append: Option<Result<Vec<Diagnostic>, SinceError>>,
    /// How the log was read (`None`: not by [`progress_check::check_log`]).
    pub method: Option<progress_check::Method>,
}

/// Check the progress log of `ws` entry by entry and leave it in `ws` (`given`: a writer's
/// staged change to it). A log on disk, or a file with staged bytes after it, is checked
/// without holding it whole: from the cache when it only grew a little, or read piece by
/// piece when there is no cache to resume from; otherwise (with a cache, or a whole new
/// content given) the whole text is checked, resuming from the cache when it can. `None`
/// when there is no log to check.
pub fn check_progress(
    ws: &mut Workspace,
    limits: &crate::yaml::Limits,
    rules: &EntryRules,
    scan: &ScanOptions,
    given: Option<StagedLog>,
) -> Option<(progress_check::EntryResults, progress_check::Method)> {
    if !matches!(given, Some(StagedLog::Whole(_))) {
        let appended = match &given {
            Some(StagedLog::Appended { disk_len, bytes }) => Some(progress_check::Appended {
                disk_len: *disk_len,
                bytes,
            }),
            _ => None,
        };
        let path = ws.small_dir.join(ArtifactKind::Progress.file_name());
        let unread = progress_check::check_file_resumed(&path, appended, limits, rules, scan)
            .or_else(|| {
                (!progress_check::has_cache(rules, scan)).then(|| {
                    progress_check::check_file_streamed(&path, appended, limits, rules, scan)
                })?
            })
            .and_then(|c| Some((c.root.ok()?, c.results, c.method)));
        if let Some((root, results, method)) = unread {
            let staged = match given {
                Some(StagedLog::Appended { bytes, .. }) => bytes,
                _ => Vec::new(),
            };
            ws.set_progress_unread(root, staged);
            return Some((results, method));
        }
    }
    // A log read as it is on disk records its stat with the cache (see `workspace::carry`).
    let on_disk = given.is_none();
    let path = ws.small_dir.join(ArtifactKind::Progress.file_name());
    let started = std::time::SystemTime::now();
    let before = on_disk.then(|| LogStat::at(&path)).flatten();
    let text = ws.read_progress_from(limits, given)?;
    let read = on_disk
        .then(|| carry::settled(before, LogStat::at(&path), started))
        .flatten();
    let checked = progress_check::check_log_read(&text, limits, rules, scan, read);
    ws.set_progress(text, checked.root);
    Some((checked.results, checked.method))
}

/// Load the workspace at `loc` for the gates. `schemas`: check progress entries against the
/// schemas while streaming (lint passes `None`).
pub fn load(loc: Location, schemas: Option<&SchemaSet>, opts: &GateOptions) -> Loaded {
    load_overlay(loc, schemas, opts, &|_| None, None, &ArtifactKind::ALL)
}

/// [`load`] of the workspace as a writer will leave it: a file's bytes come from `overlay`
/// (by workspace-relative path) when it returns `Some`, and the progress log is as `log`
/// leaves it (when given, `overlay` is not asked for the log). Only the artifacts in `kinds`
/// are loaded (and reported missing).
pub fn load_overlay(
    loc: Location,
    schemas: Option<&SchemaSet>,
    opts: &GateOptions,
    overlay: &dyn Fn(&str) -> Option<Vec<u8>>,
    log: Option<StagedLog>,
    kinds: &[ArtifactKind],
) -> Loaded {
    let rel = ArtifactKind::Progress.rel_path();
    if schemas.is_some_and(|s| !s.progress_splits()) {
        // The log is loaded whole with the rest: its staged change is applied to its bytes.
        let path = loc.small_dir.join(ArtifactKind::Progress.file_name());
        let log = log.map(|l| {
            l.content(|| fsio::read_bounded(&path, fsio::MAX_READ_BYTES))
                .ok()
        });
        let with_log = |r: &str| match &log {
            Some(l) if r == rel => l.clone(),
            _ => overlay(r),
        };
        return Loaded::whole(Workspace::load_overlay(
            loc,
            &LoadOptions::only(kinds),
            &with_log,
        ));
    }
    let with_progress = kinds.contains(&ArtifactKind::Progress);
    let others: Vec<ArtifactKind> = kinds
        .iter()
        .copied()
        .filter(|k| *k != ArtifactKind::Progress)
        .collect();
    let lo = LoadOptions::only(&others);
    let mut ws = Workspace::load_overlay(loc, &lo, overlay);
    let plan = PlanIndex::from_plan(ws.plan.as_ref().map(|a| &a.document.root));
    let scope = invariants::handoff_replay_scope(ws.handoff.as_ref().map(|a| &a.document.root));
    let mut append = match &opts.since {
        None => None,
        Some(rev) => Some(
            verify::progress_at_revision(&ws.root, rev).and_then(|old| match old {
                Some(text) => verify::AppendOnly::new(rev, &text).map(Some),
                None => Ok(None),
            }),
        ),
    };
    let mut schema_diags = Vec::new();
    let mut method = None;
    let mut linter = ProgressLinter::new(&plan, &scope);
    if !with_progress {
    } else if append.is_none() {
        let rules = EntryRules {
            schemas,
            lint: Some(opts.strict),
            plan: &plan,
            scope: &scope,
        };
        let scan = ScanOptions {
            threads: opts.threads,
            cache_dir: opts.cache.then(|| ws.root.join(progress_check::CACHE_DIR)),
            cache_write: true,
        };
        if let Some((results, m)) = check_progress(
            &mut ws,
            &lo.limits,
            &rules,
            &scan,
            log.or_else(|| overlay(&rel).map(StagedLog::Whole)),
        ) {
            method = Some(m);
            schema_diags = results.schema;
            linter.diags = results.lint;
            linter.facts = results.facts;
        }
    } else {
        ws.stream_progress(&lo.limits, &mut |i, node| {
            if let Some(s) = schemas {
                schema_diags.extend(validate::validate_progress_entry_node(s, &rel, i, &node));
            }
            linter.entry_all(i, &node, opts.strict);
            if let Some(Ok(Some(a))) = append.as_mut() {
                a.feed(i, &node);
            }
        });
    }
    let entries_span = ws
        .progress
        .as_ref()
        .and_then(|p| p.document.root.get("entries"))
        .map(|e| e.span);
    let progress_loaded = ws.progress.is_some();
    let append = append.map(|r| {
        r.map(|a| match a {
            Some(a) if progress_loaded => a.finish(entries_span),
            Some(a) => verify::check_append_only_unreadable(a),
            None => Vec::new(),
        })
    });
    let streamed = Streamed {
        schema: schema_diags,
        lint: linter.diags,
        append,
        method,
    };
    let log = progress_loaded.then_some(linter.facts);
    let state = state::v1::from_workspace(&ws, &plan, log);
    Loaded {
        ws,
        streamed: Some(streamed),
        state,
    }
}

/// Views of the loaded artifacts for the invariant rules.
pub fn docs(ws: &Workspace) -> Docs<'_> {
    let mut d = Docs::default();
    for kind in ArtifactKind::ALL {
        d.set(kind, ws.artifact(kind).map(|a| &a.document.root));
    }
    d
}

/// Load problems of the canonical artifacts (missing, YAML), metadata excluded.
pub fn artifact_load_diagnostics(ws: &Workspace) -> Vec<Diagnostic> {
    ws.diagnostics
        .iter()
        .filter(|d| !is_metadata_file(d))
        .cloned()
        .collect()
}

/// True if some file could not be read for a system reason (the CLI exits 2).
pub fn has_system_error(diags: &[Diagnostic]) -> bool {
    diags.iter().any(|d| d.code == CODE_IO)
}

/// Stage 1: load problems of the artifacts and schema violations.
pub fn validate_stage(l: &Loaded, schemas: &SchemaSet) -> Vec<Diagnostic> {
    let mut out = artifact_load_diagnostics(&l.ws);
    for a in l.ws.artifacts() {
        out.extend(validate::validate_artifact(schemas, a));
    }
    if let Some(s) = &l.streamed {
        out.extend(s.schema.iter().cloned());
    }
    diag::sort(&mut out);
    out
}

/// Stage 2: invariants, S4 (strict) and formatting drift. Fails only on an unreadable
/// `.small/` directory listing.
pub fn lint_stage(l: &Loaded, opts: &GateOptions) -> std::io::Result<Vec<Diagnostic>> {
    let ws = &l.ws;
    let mut out = invariants::lint_with(
        &docs(ws),
        Options {
            strict: opts.strict,
        },
        l.streamed.as_ref().map(|s| s.lint.as_slice()),
        &l.state,
    );
    if opts.strict {
        // The claims were gathered with the rest of the log's facts.
        let claims: &[proofs::CommandClaim] = l.state.log.as_ref().map_or(&[], |f| &f.commands);
        if !claims.is_empty() {
            let proofs = proofs::check_claims(&ws.root, claims);
            proofs::drop_proven_display_links(&mut out, &proofs);
            out.extend(proofs.diagnostics);
        }
        for u in layout::unexpected_paths(&ws.root)? {
            let mut help = match u.belongs_in {
                Some(place) => format!("move it to {place}/ (outside .small/)"),
                None => "delete it or move it outside .small/ (extensions belong in .small/ext/)"
                    .to_string(),
            };
            if u.rel_path.ends_with("/runs/") || u.rel_path.ends_with("/archive/") {
                help.push_str("; `small fix --runtime-layout` migrates it");
            }
            out.push(
                Diagnostic::error(
                    "S4",
                    format!(
                        "unexpected {} {} under .small/: only the canonical files and ext/ are allowed",
                        if u.is_dir { "directory" } else { "file" },
                        u.rel_path
                    ),
                )
                .in_file(u.rel_path.clone())
                .with_help(help),
            );
        }
    }
    let mut fmt: Vec<Diagnostic> = ws
        .artifacts()
        .filter_map(|a| invariants::version_format_drift(&a.rel_path, &a.document.root))
        .collect();
    if let Some(m) = &ws.metadata {
        fmt.extend(invariants::version_format_drift(
            &m.rel_path,
            &m.document.root,
        ));
    }
    for mut d in fmt {
        if opts.format_strict {
            d.severity = Severity::Error;
        }
        out.push(d);
    }
    diag::sort(&mut out);
    Ok(out)
}

/// Stage 3: workspace metadata and scope, replayId, current task, evidence gate, and the
/// append-only proof when `opts.since` is set.
pub fn verify_stage(
    l: &Loaded,
    schemas: &SchemaSet,
    opts: &GateOptions,
) -> Result<Vec<Diagnostic>, SinceError> {
    let ws = &l.ws;
    let mut out: Vec<Diagnostic> = ws
        .diagnostics
        .iter()
        .filter(|d| is_metadata_file(d))
        .cloned()
        .map(|mut d| {
            if d.is_error() && d.code != CODE_IO {
                d.help.get_or_insert_with(|| {
                    "fix the YAML, or recreate the file with `small init --force`".into()
                });
            }
            d
        })
        .collect();
    // WS: metadata exists, matches the schema, and the scope allows its kind.
    out.extend(ws.check_scope(opts.scope).into_iter().map(|mut d| {
        d.code = "WS".into();
        d
    }));
    if let Some(meta) = &ws.metadata {
        out.extend(
            validate::validate_metadata(schemas, meta)
                .into_iter()
                .map(|mut d| {
                    d.code = "WS".into();
                    d
                }),
        );
        if opts.strict {
            out.extend(
                validate::unknown_metadata_fields(schemas, meta)
                    .into_iter()
                    .map(|mut d| {
                        d.code = "WS".into();
                        d
                    }),
            );
        }
        verify::check_run_identity(
            &meta.document.root,
            &meta.rel_path,
            ws.handoff.as_ref().map(|h| &h.document.root),
            &mut out,
        );
    }
    for d in out.iter_mut() {
        if d.code == "yaml" {
            d.code = "WS".into();
        }
    }
    let docs = docs(ws);
    if let Some(h) = docs.handoff {
        verify::check_replay_id(h, &mut out);
    }
    if !opts.strict {
        verify::check_plan_links(&l.state, &mut out);
    }
    match l.streamed.as_ref().and_then(|s| s.append.as_ref()) {
        Some(Ok(d)) => out.extend(d.iter().cloned()),
        Some(Err(e)) => return Err(e.clone()),
        None => {
            if let Some(rev) = &opts.since {
                if let Some(old) = verify::progress_at_revision(&ws.root, rev)? {
                    out.extend(verify::check_append_only(rev, &old, docs.progress)?);
                }
            }
        }
    }
    diag::sort(&mut out);
    Ok(out)
}

/// A diagnostic as it appears in `--json` output (see docs/json-output.md).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct JsonDiagnostic {
    pub code: String,
    pub severity: Severity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// For a secret: the format recognised and the secret masked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<crate::diag::SecretNote>,
}

impl From<&Diagnostic> for JsonDiagnostic {
    fn from(d: &Diagnostic) -> Self {
        JsonDiagnostic {
            code: d.code.clone(),
            severity: d.severity,
            file: d.file.clone(),
            line: d.span.map(|s| s.start.line).filter(|&l| l > 0),
            column: d.span.map(|s| s.start.column).filter(|&c| c > 0),
            path: d.path.clone(),
            // A message that quotes a value (a schema error, an insecure link) could quote
            // a credential: mask any found.
            message: crate::secrets::redact(&d.message).into_owned(),
            help: d
                .help
                .as_deref()
                .map(|h| crate::secrets::redact(h).into_owned()),
            secret: d.secret.clone(),
        }
    }
}

/// One diagnostic on one line: `file:line:col: error[CODE]: message` (secrets masked). The
/// form of CI output and of the `failures` list of `emit --check`.
pub fn compact_line(d: &Diagnostic) -> String {
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
        crate::secrets::redact(&d.message)
    )
}

/// Outcome of one stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StageStatus {
    /// Ran and found no error (warnings possible).
    Ok,
    /// Ran and found errors.
    Failed,
    /// Did not run (an earlier stage failed or could not run).
    Skipped,
    /// Could not run: no workspace, an unreadable file, a bad revision.
    Error,
}

/// One stage of `check --json`: the reference's `status` and `errors` (one line per error,
/// as [`compact_line`] writes it), then small's
/// `reason`, `warnings` (lines too) and `diagnostics` (errors and warnings as objects).
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub status: StageStatus,
    /// Why the stage was skipped or could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    /// The errors and warnings, in report order, with their severity.
    pub diagnostics: Vec<JsonDiagnostic>,
}

impl StageReport {
    pub fn skipped(reason: &str) -> Self {
        StageReport {
            status: StageStatus::Skipped,
            reason: Some(reason.to_string()),
            errors: Vec::new(),
            warnings: Vec::new(),
            diagnostics: Vec::new(),
        }
    }

    pub fn error(diags: &[Diagnostic], reason: &str) -> Self {
        let mut r = StageReport::from_diagnostics(diags);
        r.status = StageStatus::Error;
        r.reason = Some(reason.to_string());
        r
    }

    pub fn from_diagnostics<'a>(diags: impl IntoIterator<Item = &'a Diagnostic>) -> Self {
        let mut r = StageReport {
            status: StageStatus::Ok,
            reason: None,
            errors: Vec::new(),
            warnings: Vec::new(),
            diagnostics: Vec::new(),
        };
        for d in diags {
            let line = compact_line(d);
            if d.is_error() {
                r.errors.push(line);
                r.status = StageStatus::Failed;
            } else {
                r.warnings.push(line);
            }
            r.diagnostics.push(d.into());
        }
        r
    }
}

/// The `check` report: each stage, and the exit code (0 ok, 1 invalid, 2 no workspace or a
/// system error).
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub validate: StageReport,
    pub lint: StageReport,
    pub verify: StageReport,
    pub exit_code: u8,
    /// Every diagnostic of the stages that ran, in report order (not serialized).
    #[serde(skip)]
    pub diagnostics: Vec<(Stage, Diagnostic)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Validate,
    Lint,
    Verify,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Validate => "validate",
            Stage::Lint => "lint",
            Stage::Verify => "verify",
        }
    }
}

/// Run validate, lint and verify in order on a loaded workspace, stopping at the first
/// stage with errors.
pub fn run_check(ws: &Loaded, schemas: &Arc<SchemaSet>, opts: &GateOptions) -> CheckReport {
    let mut report = CheckReport {
        validate: StageReport::skipped("not run"),
        lint: StageReport::skipped("validate did not pass"),
        verify: StageReport::skipped("validate did not pass"),
        exit_code: 0,
        diagnostics: Vec::new(),
    };
    let v = validate_stage(ws, schemas);
    if has_system_error(&v) {
        report.validate = StageReport::error(&v, "a file could not be read");
        report.exit_code = 2;
        report
            .diagnostics
            .extend(v.into_iter().map(|d| (Stage::Validate, d)));
        return report;
    }
    report.validate = StageReport::from_diagnostics(&v);
    let failed = report.validate.status == StageStatus::Failed;
    report
        .diagnostics
        .extend(v.into_iter().map(|d| (Stage::Validate, d)));
    if failed {
        report.exit_code = 1;
        return report;
    }
    match lint_stage(ws, opts) {
        Err(e) => {
            let d = Diagnostic::error(CODE_IO, format!("cannot list .small/: {e}"));
            report.lint = StageReport::error(
                std::slice::from_ref(&d),
                "the .small/ directory could not be listed",
            );
            report.verify = StageReport::skipped("lint could not run");
            report.diagnostics.push((Stage::Lint, d));
            report.exit_code = 2;
            return report;
        }
        Ok(l) => {
            report.lint = StageReport::from_diagnostics(&l);
            let failed = report.lint.status == StageStatus::Failed;
            report
                .diagnostics
                .extend(l.into_iter().map(|d| (Stage::Lint, d)));
            if failed {
                report.verify = StageReport::skipped("lint did not pass");
                report.exit_code = 1;
                return report;
            }
        }
    }
    match verify_stage(ws, schemas, opts) {
        Err(e) => {
            let d = Diagnostic::error("since", e.to_string());
            report.verify = StageReport::error(std::slice::from_ref(&d), "verify could not run");
            report.diagnostics.push((Stage::Verify, d));
            report.exit_code = 2;
        }
        Ok(vd) => {
            report.verify = StageReport::from_diagnostics(&vd);
            if report.verify.status == StageStatus::Failed {
                report.exit_code = 1;
            }
            report
                .diagnostics
                .extend(vd.into_iter().map(|d| (Stage::Verify, d)));
        }
    }
    report
}

/// The report for "there is no workspace to check" (exit 2).
pub fn no_workspace_report(d: Diagnostic) -> CheckReport {
    CheckReport {
        validate: StageReport::error(std::slice::from_ref(&d), "no workspace to check"),
        lint: StageReport::skipped("no workspace to check"),
        verify: StageReport::skipped("no workspace to check"),
        exit_code: 2,
        diagnostics: vec![(Stage::Validate, d)],
    }
}
