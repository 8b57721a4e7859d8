//! `small validate`: check every canonical artifact (and `workspace.small.yml`, when present)
//! against the SMALL v1.0.0 JSON Schemas.

use std::path::PathBuf;

use serde::Serialize;
use small_core::diag::Diagnostic;
use small_core::gates::invariants::PlanIndex;
use small_core::gates::progress_check::{self, EntryRules, ScanOptions};
use small_core::gates::schemas::{SchemaSet, SchemaSource};
use small_core::gates::validate::validate_workspace;
use small_core::spec::consts::ArtifactKind;
use small_core::workspace::{locate, LoadOptions, Workspace};

use crate::error::{CliError, CmdResult, EXIT_INVALID, EXIT_OK, EXIT_USAGE};
use crate::GlobalArgs;

/// Validate the five canonical artifacts against their JSON Schemas.
///
/// Reads .small/intent, constraints, plan, progress and handoff (.small.yml) and checks each
/// against its schema; also checks .small/workspace.small.yml when it exists. Every problem
/// is reported with its file, line, column and JSON path.
///
/// Schemas: --spec-dir DIR, else $SMALL_SPEC_DIR, else the schemas built into small. DIR may
/// hold the *.schema.json files directly or in spec/small/v1.0.0/schemas/.
///
/// Exit codes: 0 valid; 1 invalid (schema errors, missing files, YAML errors); 2 no
/// workspace, unreadable files or unusable schemas.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Directory with the JSON Schemas to use instead of the built-in ones (falls back to $SMALL_SPEC_DIR)
    #[arg(long, value_name = "DIR")]
    pub spec_dir: Option<PathBuf>,
    /// Do not read or update the cache of earlier checks in .small-cache/ (a full check)
    #[arg(long)]
    pub no_cache: bool,
    /// Print the result as JSON on stdout (see docs/validate.md)
    #[arg(long)]
    pub json: bool,
}

/// `--json` output. Stable; documented in docs/validate.md.
#[derive(Serialize)]
struct JsonReport<'a> {
    ok: bool,
    exit_code: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    root: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schemas: Option<String>,
    files: Vec<&'a str>,
    errors: usize,
    diagnostics: &'a [Diagnostic],
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let loc = match locate(args.dir.as_deref()) {
        Ok(loc) => loc,
        Err(e) => {
            let d = vec![e.to_diagnostic()];
            return fail(&args, g, None, None, &[], d, EXIT_USAGE);
        }
    };
    let root = Some(loc.root.display().to_string());

    let schemas = match SchemaSet::resolve(args.spec_dir.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            let d = Diagnostic::error("schemas", e.to_string())
                .with_help("point --spec-dir (or SMALL_SPEC_DIR) at a directory with all five *.schema.json files, or unset it to use the built-in schemas");
            return fail(&args, g, root, None, &[], vec![d], EXIT_USAGE);
        }
    };
    let source = describe_source(schemas.source());

    // The progress log is streamed (bounded memory, each entry checked as it is parsed)
    // whenever the schemas allow checking entries one by one.
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
            cache_dir: (!args.no_cache).then(|| ws.root.join(progress_check::CACHE_DIR)),
            cache_write: true,
        };
        if let Some(text) = ws.read_progress(&opts.limits) {
            let checked = progress_check::check_log(&text, &opts.limits, &rules, &scan);
            ws.set_progress(text, checked.root);
            entry_diags = checked.results.schema;
        }
        ws
    } else {
        Workspace::load(loc, &LoadOptions::all())
    };

    let mut diags = ws.diagnostics.clone();
    diags.extend(validate_workspace(&schemas, &ws));
    diags.extend(entry_diags);
    small_core::diag::sort(&mut diags);

    let files: Vec<&str> = ws
        .artifacts()
        .map(|a| a.rel_path.as_str())
        .chain(ws.metadata.iter().map(|m| m.rel_path.as_str()))
        .collect();
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let exit = if ws.has_io_errors() {
        EXIT_USAGE
    } else if errors > 0 {
        EXIT_INVALID
    } else {
        EXIT_OK
    };

    if args.json {
        g.json(&JsonReport {
            ok: exit == EXIT_OK,
            exit_code: exit,
            root,
            schemas: Some(source),
            files,
            errors,
            diagnostics: &diags,
        })?;
        return if exit == EXIT_OK {
            Ok(())
        } else {
            Err(CliError::silent(exit))
        };
    }

    g.diagnostics(&diags, |f| ws.source_of(f), false);
    if exit != EXIT_OK {
        let mut failed_files: Vec<&str> = diags
            .iter()
            .filter(|d| d.is_error())
            .filter_map(|d| d.file.as_deref())
            .collect();
        failed_files.dedup();
        g.error(format!(
            "validation failed: {errors} error{} in {} file{}",
            plural(errors),
            failed_files.len(),
            plural(failed_files.len())
        ));
        return Err(CliError::silent(exit));
    }
    let extra = if ws.metadata.is_some() {
        " and workspace metadata"
    } else {
        ""
    };
    g.info(format!(
        "All {} artifacts{extra} are valid ({source}).",
        files.len() - usize::from(ws.metadata.is_some())
    ));
    Ok(())
}

fn describe_source(s: &SchemaSource) -> String {
    s.to_string()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn fail(
    args: &Args,
    g: &GlobalArgs,
    root: Option<String>,
    schemas: Option<String>,
    files: &[&str],
    diags: Vec<Diagnostic>,
    exit: u8,
) -> CmdResult {
    if args.json {
        let errors = diags.iter().filter(|d| d.is_error()).count();
        g.json(&JsonReport {
            ok: false,
            exit_code: exit,
            root,
            schemas,
            files: files.to_vec(),
            errors,
            diagnostics: &diags,
        })?;
    } else {
        g.diagnostics(&diags, |_| None, false);
    }
    Err(CliError::silent(exit))
}
