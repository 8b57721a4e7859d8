//! `validate`: the artifacts against the JSON Schemas (2.0.0: the record rules).

use std::path::PathBuf;

use serde::Serialize;

use crate::diag::{self, Diagnostic};
use crate::gates::check::{self};
use crate::gates::invariants::PlanIndex;
use crate::gates::progress_check::{self, EntryRules, ScanOptions};
use crate::gates::schemas::SchemaSet;
use crate::gates::validate::validate_workspace;
use crate::ops::gate::*;
use crate::spec::consts::ArtifactKind;
use crate::v2;
use crate::workspace::{LoadOptions, Workspace};

/// What `validate` is asked to check.
#[derive(Debug, Clone, Default)]
pub struct ValidateRequest {
    pub dir: Option<PathBuf>,
    pub spec_dir: Option<PathBuf>,
    /// Read and update the cache of progress checks in `.small-cache/`.
    pub cache: bool,
}

/// What `validate` found; serialized, it is the `validate --json` document (docs/validate.md).
#[derive(Debug, Serialize)]
pub struct Validated {
    pub ok: bool,
    pub exit_code: u8,
    /// The workspace root, when one was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Where the schemas came from, when they could be loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schemas: Option<String>,
    /// The files checked (workspace-relative), metadata last.
    pub files: Vec<String>,
    pub errors: usize,
    pub diagnostics: Vec<Diagnostic>,
    #[serde(skip)]
    pub verdict: Verdict,
    /// Whether the gate could not run at all (no workspace, unusable schemas).
    #[serde(skip)]
    pub stopped: bool,
    /// How many files have an error.
    #[serde(skip)]
    pub failed_files: usize,
    /// Whether `workspace.small.yml` was checked too.
    #[serde(skip)]
    pub has_metadata: bool,
    #[serde(skip)]
    pub workspace: Option<Workspace>,
}

impl Validated {
    fn stopped(root: Option<String>, d: Diagnostic) -> Validated {
        Validated {
            ok: false,
            exit_code: 2,
            root,
            schemas: None,
            files: Vec::new(),
            errors: usize::from(d.is_error()),
            diagnostics: vec![d],
            verdict: Verdict::Error,
            stopped: true,
            failed_files: 0,
            has_metadata: false,
            workspace: None,
        }
    }
}

/// `validate`: every canonical artifact (and `workspace.small.yml`, when present) against the
/// JSON Schemas. The progress log is streamed (bounded memory) whenever the schemas allow
/// checking its entries one by one.
pub fn validate(req: &ValidateRequest) -> Validated {
    let loc = match locate(req.dir.as_deref()) {
        Ok(l) => l,
        Err(d) => return Validated::stopped(None, *d),
    };
    loc.backend().validate(loc, req)
}

/// [`validate`] of a 2.0.0 workspace.
pub(super) fn validate_v2(loc: crate::workspace::Location) -> Validated {
    let root = Some(loc.root.display().to_string());
    let (c, files) = v2::check_listed(&loc.root, &loc.small_dir);
    v2_validated(root, c, files)
}

/// [`validate`] of a v1 workspace.
pub(super) fn validate_v1(loc: crate::workspace::Location, req: &ValidateRequest) -> Validated {
    let root = Some(loc.root.display().to_string());
    let schemas = match SchemaSet::resolve(req.spec_dir.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            let d = Diagnostic::error("schemas", e.to_string())
                .with_help("point --spec-dir (or SMALL_SPEC_DIR) at a directory with all five *.schema.json files, or unset it to use the built-in schemas");
            return Validated::stopped(root, d);
        }
    };
    let mut entry_diags = Vec::new();
    let ws = if schemas.progress_splits() {
        let kinds: Vec<ArtifactKind> = ArtifactKind::ALL
            .into_iter()
            .filter(|k| *k != ArtifactKind::Progress)
            .collect();
        let opts = LoadOptions::only(&kinds);
        let mut ws = Workspace::load(loc, &opts);
        let plan = PlanIndex::default();
        let rules = EntryRules {
            schemas: Some(&schemas),
            lint: None,
            plan: &plan,
            scope: "",
        };
        let scan = ScanOptions {
            threads: 0,
            cache_dir: req.cache.then(|| ws.root.join(progress_check::CACHE_DIR)),
            cache_write: true,
        };
        if let Some((results, _)) =
            check::check_progress(&mut ws, &opts.limits, &rules, &scan, None)
        {
            entry_diags = results.schema;
        }
        ws
    } else {
        Workspace::load(loc, &LoadOptions::all())
    };

    let mut diags = ws.diagnostics.clone();
    diags.extend(validate_workspace(&schemas, &ws));
    diags.extend(entry_diags);
    diag::sort(&mut diags);

    let files: Vec<String> = ws
        .artifacts()
        .map(|a| a.rel_path.clone())
        .chain(ws.metadata.iter().map(|m| m.rel_path.clone()))
        .collect();
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let verdict = if ws.has_io_errors() {
        Verdict::Error
    } else if errors > 0 {
        Verdict::Invalid
    } else {
        Verdict::Pass
    };
    let mut failed: Vec<&str> = diags
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| d.file.as_deref())
        .collect();
    failed.dedup();
    let failed_files = failed.len();
    Validated {
        ok: verdict == Verdict::Pass,
        exit_code: verdict.code(),
        root,
        schemas: Some(schemas.source().to_string()),
        files,
        errors,
        diagnostics: diags,
        verdict,
        stopped: false,
        failed_files,
        has_metadata: ws.metadata.is_some(),
        workspace: Some(ws),
    }
}

/// `validate` of a 2.0.0 workspace: the record rules (files, JSON, members, digests,
/// identities).
fn v2_validated(root: Option<String>, c: v2::Checked, files: Vec<String>) -> Validated {
    let diags: Vec<Diagnostic> = c
        .diagnostics
        .into_iter()
        .filter(|d| v2::stage_of(&d.code) == v2::Stage::Records)
        .collect();
    let verdict = Verdict::of(&diags);
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let mut failed: Vec<&str> = diags
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| d.file.as_deref())
        .collect();
    failed.sort_unstable();
    failed.dedup();
    let failed_files = failed.len();
    Validated {
        ok: verdict == Verdict::Pass,
        exit_code: verdict.code(),
        root,
        schemas: None,
        files,
        errors,
        diagnostics: diags,
        verdict,
        stopped: false,
        failed_files,
        has_metadata: false,
        workspace: None,
    }
}

impl Validated {
    /// The verdict line after the findings (`None` when a fatal problem stopped it).
    pub fn summary(&self) -> Option<crate::ops::report::Said> {
        use crate::ops::report::{count, Said};
        if self.stopped {
            return None;
        }
        if !self.ok {
            return Some(Said::Error(format!(
                "validation failed: {} in {}",
                count(self.errors, "error"),
                count(self.failed_files, "file")
            )));
        }
        let extra = if self.has_metadata {
            " and workspace metadata"
        } else {
            ""
        };
        Some(Said::Info(format!(
            "All {} artifacts{extra} are valid ({}).",
            self.files.len() - usize::from(self.has_metadata),
            self.schemas.as_deref().unwrap_or_default()
        )))
    }
}
