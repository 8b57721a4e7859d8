//! `small draft intent|constraints`: propose a new human-owned artifact for review.

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::diag::Diagnostic;
use small_core::spec::consts::{ArtifactKind, CACHE_DIR};
use small_core::workspace::Scope;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Propose a new intent.small.yml or constraints.small.yml for a human to review.
///
/// Agents must not edit the human-owned files. Instead they write a draft, which is kept in
/// `.small-cache/drafts/` (outside `.small/`), and a human accepts it with `small accept`.
/// The draft is checked against the artifact's schema; problems are reported (and would
/// stop `small accept`), but the draft is saved so it can be reviewed and fixed.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub kind: DraftKind,
}

#[derive(clap::Subcommand, Debug)]
pub enum DraftKind {
    /// Draft a new intent.small.yml
    Intent(DraftArgs),
    /// Draft a new constraints.small.yml
    Constraints(DraftArgs),
}

#[derive(clap::Args, Debug)]
pub struct DraftArgs {
    /// File with the proposed content, or `-` / `stdin` to read standard input
    #[arg(long, value_name = "PATH|-")]
    pub from: String,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace kinds to accept: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print what was saved as JSON: {draft, target, bytes, replaced, valid, problems}
    #[arg(long)]
    pub json: bool,
}

/// Workspace-relative path of the draft for `kind`.
pub(crate) fn draft_rel(kind: ArtifactKind) -> String {
    format!("{CACHE_DIR}/drafts/{}", kind.file_name())
}

/// Locate the workspace and enforce `--workspace`.
pub(crate) fn open_scoped(dir: Option<&Path>, scope: Scope) -> Result<PathBuf, CliError> {
    use small_core::workspace::{locate, LoadOptions, Workspace};
    let loc = locate(dir).map_err(|e| CliError::usage(render_plain(&e.to_diagnostic())))?;
    let root = loc.root.clone();
    if scope != Scope::Any {
        let ws = Workspace::load(loc, &LoadOptions::only(&[]));
        let mut problems = ws.diagnostics.clone();
        problems.extend(ws.check_scope(scope));
        if let Some(d) = problems.iter().find(|d| d.is_error()) {
            return Err(CliError::invalid(render_plain(d)));
        }
    }
    Ok(root)
}

/// A diagnostic on one or two lines, for error messages.
pub(crate) fn render_plain(d: &Diagnostic) -> String {
    let mut s = String::new();
    if let Some(f) = &d.file {
        s.push_str(f);
        if let Some(sp) = &d.span {
            s.push_str(&format!(":{}:{}", sp.start.line, sp.start.column));
        }
        s.push_str(": ");
    }
    s.push_str(&format!("[{}] {}", d.code, d.message));
    if let Some(h) = &d.help {
        s.push_str(&format!("\n  help: {h}"));
    }
    s
}

/// Parses `bytes` as `kind` and validates it against the embedded schema. `rel` names the
/// file in diagnostics.
pub(crate) fn check_artifact(kind: ArtifactKind, bytes: &[u8], rel: &str) -> Vec<Diagnostic> {
    use small_core::gates::schemas::{SchemaSet, Target};
    let limits = small_core::yaml::Limits::default();
    match small_core::workspace::parse_artifact(bytes, rel, &limits) {
        Err(d) => vec![*d],
        Ok(doc) => small_core::gates::validate::validate_document(
            &SchemaSet::embedded(),
            Target::Artifact(kind),
            rel,
            &doc,
        ),
    }
}

fn read_source(from: &str) -> Result<Vec<u8>, CliError> {
    let v = from.trim();
    if v == "-" || v.eq_ignore_ascii_case("stdin") {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
        if buf.iter().all(u8::is_ascii_whitespace) {
            return Err(CliError::usage(
                "standard input is empty; there is no draft to save",
            ));
        }
        return Ok(buf);
    }
    let bytes = small_core::workspace::fsio::read_user_input(
        std::path::Path::new(v),
        small_core::workspace::fsio::MAX_READ_BYTES,
    )
    .map_err(|e| CliError::usage(format!("cannot read {v}: {e}")))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(CliError::usage(format!(
            "{v} is empty; there is no draft to save"
        )));
    }
    Ok(bytes)
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let (kind, a) = match args.kind {
        DraftKind::Intent(a) => (ArtifactKind::Intent, a),
        DraftKind::Constraints(a) => (ArtifactKind::Constraints, a),
    };
    let root = open_scoped(a.dir.as_deref(), a.workspace)?;
    let bytes = read_source(&a.from)?;
    let rel = draft_rel(kind);
    let problems = check_artifact(kind, &bytes, &rel);
    let path = root.join(&rel);
    let existed = path.exists();
    small_core::authoring::txn::atomic_write(&path, &bytes)
        .map_err(|e| CliError::usage(format!("cannot write {}: {e}", path.display())))?;
    if a.json {
        let errors: Vec<small_core::gates::check::JsonDiagnostic> = problems
            .iter()
            .filter(|d| d.is_error())
            .map(Into::into)
            .collect();
        return g.json(&serde_json::json!({
            "draft": rel,
            "target": kind.rel_path(),
            "bytes": bytes.len(),
            "replaced": existed,
            "valid": errors.is_empty(),
            "problems": errors,
            "written": [rel],
        }));
    }
    g.info(format!(
        "{} draft {rel} ({} bytes) for .small/{}",
        if existed { "Replaced the" } else { "Saved the" },
        bytes.len(),
        kind.file_name()
    ));
    let errors: Vec<&Diagnostic> = problems.iter().filter(|d| d.is_error()).collect();
    if errors.is_empty() {
        g.info(format!(
            "The draft is a valid {}. A human reviews it, then runs: small accept {}",
            kind.file_name(),
            kind.name()
        ));
    } else {
        g.warn(format!(
            "warning: the draft has {} problem(s); `small accept {}` will refuse it until they are fixed:",
            errors.len(),
            kind.name()
        ));
        for d in errors {
            g.warn(format!("  {}", render_plain(d).replace('\n', "\n  ")));
        }
    }
    Ok(())
}
