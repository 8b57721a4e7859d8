//! Drafts of the human-owned artifacts (intent, constraints): an agent proposes one, a human
//! accepts it.
//!
//! Agents must not edit the human-owned files. [`draft`] saves a proposal in
//! `.small-cache/drafts/` (outside `.small/`), checked against the artifact's schema but saved
//! even when it has problems, so that it can be reviewed and fixed. [`accept`] is the human's
//! step: it replaces the canonical file with a valid draft, keeps workspace metadata's
//! `updated_at` current and records a `meta/accept-<kind>` progress entry, in one transaction.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::authoring::edit::{self, NewValue};
use crate::authoring::progress::{self, NewEntry, TimestampRule};
use crate::diag::Diagnostic;
use crate::fsio;
use crate::gates::check::JsonDiagnostic;
use crate::gates::schemas::{SchemaSet, Target};
use crate::spec::consts::{small_rel, ArtifactKind, CACHE_DIR, WORKSPACE_FILE};
use crate::spec::model::TaskStatus;
use crate::workspace::error::{code, Error};
use crate::workspace::txn::{atomic_write, Transaction};
use crate::workspace::{self, LoadOptions, Scope, Workspace};

/// Workspace-relative path of the draft for `kind`.
pub fn draft_rel(kind: ArtifactKind) -> String {
    format!("{CACHE_DIR}/drafts/{}", kind.file_name())
}

/// Parse `bytes` as `kind` and validate it against the built-in schema; `rel` names the file
/// in the diagnostics.
pub fn check_draft(kind: ArtifactKind, bytes: &[u8], rel: &str) -> Vec<Diagnostic> {
    let limits = crate::yaml::Limits::default();
    match workspace::parse_artifact(bytes, rel, &limits) {
        Err(d) => vec![*d],
        Ok(doc) => crate::gates::validate::validate_document(
            &SchemaSet::embedded(),
            Target::Artifact(kind),
            rel,
            &doc,
        ),
    }
}

/// The root of the workspace at `dir`, refused when its kind is outside `scope`. No
/// workspace is a usage error; a workspace of another kind (or unreadable metadata) is
/// invalid.
pub fn open_scoped(dir: Option<&Path>, scope: Scope) -> Result<PathBuf, Error> {
    let loc = workspace::locate(dir).map_err(|e| Error {
        kind: crate::workspace::error::ErrorKind::Usage,
        diagnostic: Box::new(e.to_diagnostic()),
    })?;
    let root = loc.root.clone();
    if scope != Scope::Any {
        let ws = Workspace::load(loc, &LoadOptions::only(&[]));
        let mut problems = ws.diagnostics.clone();
        problems.extend(ws.check_scope(scope));
        if let Some(d) = problems.into_iter().find(Diagnostic::is_error) {
            return Err(Error {
                kind: crate::workspace::error::ErrorKind::Invalid,
                diagnostic: Box::new(d),
            });
        }
    }
    Ok(root)
}

/// A draft to save.
#[derive(Debug, Clone)]
pub struct DraftRequest<'a> {
    /// The workspace root (see [`open_scoped`]).
    pub root: &'a Path,
    pub kind: ArtifactKind,
    /// The proposed content.
    pub content: &'a [u8],
}

/// What [`draft`] saved; serialized, the `draft --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct Drafted {
    /// The draft's workspace-relative path.
    pub draft: String,
    /// The canonical file it proposes to replace.
    pub target: String,
    pub bytes: usize,
    /// Whether an earlier draft was replaced.
    pub replaced: bool,
    /// Whether the draft is a valid artifact (`accept` takes it).
    pub valid: bool,
    /// The errors that would stop `accept`.
    pub problems: Vec<JsonDiagnostic>,
    pub written: Vec<String>,
    /// The same errors, as diagnostics.
    #[serde(skip)]
    pub errors: Vec<Diagnostic>,
    /// The artifact drafted.
    #[serde(skip)]
    pub kind: ArtifactKind,
}

/// Save a draft (even an invalid one) and say whether `accept` would take it.
pub fn draft(req: &DraftRequest) -> Result<Drafted, Error> {
    let rel = draft_rel(req.kind);
    let errors: Vec<Diagnostic> = check_draft(req.kind, req.content, &rel)
        .into_iter()
        .filter(Diagnostic::is_error)
        .collect();
    let path = req.root.join(&rel);
    let replaced = path.exists();
    atomic_write(&path, req.content)
        .map_err(|e| Error::system(code::IO, format!("cannot write {}: {e}", path.display())))?;
    Ok(Drafted {
        target: req.kind.rel_path(),
        bytes: req.content.len(),
        replaced,
        valid: errors.is_empty(),
        problems: errors.iter().map(Into::into).collect(),
        written: vec![rel.clone()],
        draft: rel,
        errors,
        kind: req.kind,
    })
}

/// A draft to accept.
#[derive(Debug, Clone)]
pub struct AcceptRequest<'a> {
    pub root: &'a Path,
    pub kind: ArtifactKind,
    /// Work out the change (a diff) and write nothing.
    pub dry_run: bool,
}

/// What [`accept`] did; serialized, the `accept --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct Accepted {
    pub draft: String,
    pub target: String,
    /// Whether the canonical file differs from the draft (and, unless a dry run, was replaced).
    pub changed: bool,
    pub dry_run: bool,
    /// A dry run's unified diff, current file to draft.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The progress entry recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_entry: Option<Map<String, Value>>,
    pub written: Vec<String>,
    pub appended: Vec<String>,
    /// Lines of the file replaced (`None`: there was none).
    #[serde(skip)]
    pub old_lines: Option<usize>,
    /// Lines of the draft.
    #[serde(skip)]
    pub new_lines: usize,
    /// The timestamp of the progress entry recorded.
    #[serde(skip)]
    pub timestamp: Option<String>,
    /// The artifact accepted.
    #[serde(skip)]
    pub kind: ArtifactKind,
}

/// Why a draft was not accepted.
#[derive(Debug)]
pub enum AcceptError {
    /// There is no draft to accept.
    NoDraft { draft: String },
    /// The draft cannot be read.
    Unreadable { draft: String, error: String },
    /// The draft is not a valid artifact; nothing changed.
    Invalid {
        draft: String,
        errors: Vec<Diagnostic>,
    },
    /// The workspace could not be changed (lock, I/O, the progress log).
    Authoring(Error),
}

impl From<Error> for AcceptError {
    fn from(e: Error) -> Self {
        AcceptError::Authoring(e)
    }
}

impl From<crate::workspace::txn::TxnError> for AcceptError {
    fn from(e: crate::workspace::txn::TxnError) -> Self {
        AcceptError::Authoring(e.into())
    }
}

fn lines(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

/// Accept the draft of `req.kind` into the canonical file.
pub fn accept(req: &AcceptRequest) -> Result<Accepted, AcceptError> {
    let kind = req.kind;
    let draft = draft_rel(kind);
    let target = kind.rel_path();
    let bytes = match fsio::read_bounded(&req.root.join(&draft), fsio::MAX_READ_BYTES) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(AcceptError::NoDraft { draft })
        }
        Err(e) => {
            return Err(AcceptError::Unreadable {
                draft,
                error: e.to_string(),
            })
        }
    };
    let errors: Vec<Diagnostic> = check_draft(kind, &bytes, &draft)
        .into_iter()
        .filter(Diagnostic::is_error)
        .collect();
    if !errors.is_empty() {
        return Err(AcceptError::Invalid { draft, errors });
    }
    let mut txn = Transaction::begin(req.root)?;
    let old = txn.read(&target)?;
    let mut out = Accepted {
        draft: draft.clone(),
        target: target.clone(),
        changed: old.as_deref() != Some(bytes.as_slice()),
        dry_run: req.dry_run,
        diff: None,
        progress_entry: None,
        written: Vec::new(),
        appended: Vec::new(),
        old_lines: old.as_deref().map(lines),
        new_lines: lines(&bytes),
        timestamp: None,
        kind: req.kind,
    };
    if !out.changed {
        return Ok(out);
    }
    if req.dry_run {
        drop(txn);
        let old_text = old
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let new_text = String::from_utf8_lossy(&bytes);
        let diff = similar::TextDiff::from_lines(old_text.as_ref(), new_text.as_ref());
        out.diff = Some(
            diff.unified_diff()
                .context_radius(3)
                .header(
                    &format!("{target} (current)"),
                    &format!("{target} (accepted)"),
                )
                .to_string(),
        );
        return Ok(out);
    }
    txn.write(target, bytes);
    touch_updated_at(&mut txn);
    let entry = NewEntry::new(
        format!("meta/accept-{}", kind.name()),
        Some(TaskStatus::Completed.as_str()),
    )
    .field(
        "evidence",
        format!("Accepted draft {} from {draft}", kind.name()),
    )
    .field("notes", format!("small accept {}", kind.name()));
    let appended = txn.append_progress(&entry, &TimestampRule::Now)?;
    let report = txn.commit()?;
    out.progress_entry = Some(appended.entry);
    out.timestamp = Some(appended.timestamp);
    out.written = report.written;
    out.appended = report.appended;
    Ok(out)
}

/// Keep workspace metadata's `updated_at` current, editing only that value (a file that
/// cannot be edited is left as it is).
fn touch_updated_at(txn: &mut Transaction) {
    let rel = small_rel(WORKSPACE_FILE);
    let now = crate::spec::timestamp::format_utc(progress::now());
    let Ok(src) = txn.read_string(&rel) else {
        return;
    };
    let Ok(doc) = crate::yaml::parse_str(&src, &crate::yaml::Limits::default()) else {
        return;
    };
    let value = NewValue::Scalar(edit::quote(&now));
    if let Ok(e) = edit::set_key(&src, &doc.root, "updated_at", &value) {
        if let Ok(updated) = edit::apply(&src, vec![e]) {
            txn.write(rel, updated.into_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"A new intent\"\nscope:\n  include: []\n  exclude: []\nsuccess_criteria: []\n";

    fn fresh() -> tempfile::TempDir {
        crate::authoring::init::fresh_workspace("Drafts", &[])
    }

    fn save(root: &Path, content: &str) -> Drafted {
        draft(&DraftRequest {
            root,
            kind: ArtifactKind::Intent,
            content: content.as_bytes(),
        })
        .unwrap()
    }

    fn acc(root: &Path, dry_run: bool) -> Result<Accepted, AcceptError> {
        accept(&AcceptRequest {
            root,
            kind: ArtifactKind::Intent,
            dry_run,
        })
    }

    #[test]
    fn an_invalid_draft_is_saved_but_not_accepted() {
        let tmp = fresh();
        let d = save(tmp.path(), "owner: \"agent\"\n");
        assert!(!d.valid && !d.errors.is_empty() && !d.replaced);
        assert!(tmp.path().join(&d.draft).is_file());
        let before = std::fs::read(tmp.path().join(".small/intent.small.yml")).unwrap();
        assert!(matches!(
            acc(tmp.path(), false),
            Err(AcceptError::Invalid { .. })
        ));
        let after = std::fs::read(tmp.path().join(".small/intent.small.yml")).unwrap();
        assert_eq!(before, after);
    }

    #[test]
    fn no_draft_is_refused() {
        let tmp = fresh();
        assert!(matches!(
            acc(tmp.path(), false),
            Err(AcceptError::NoDraft { .. })
        ));
    }

    #[test]
    fn a_valid_draft_is_accepted_and_recorded() {
        let tmp = fresh();
        let d = save(tmp.path(), INTENT);
        assert!(d.valid, "{:?}", d.errors);
        let dry = acc(tmp.path(), true).unwrap();
        assert!(dry.changed && dry.dry_run);
        assert!(dry
            .diff
            .as_deref()
            .unwrap()
            .contains("+intent: \"A new intent\""));
        assert!(dry.written.is_empty());
        let a = acc(tmp.path(), false).unwrap();
        assert!(a.changed && a.timestamp.is_some());
        assert_eq!(
            a.progress_entry.as_ref().unwrap()["task_id"],
            "meta/accept-intent"
        );
        assert!(a.written.contains(&".small/intent.small.yml".to_string()));
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(".small/intent.small.yml")).unwrap(),
            INTENT
        );
        // Accepting the same draft again changes nothing.
        let again = acc(tmp.path(), false).unwrap();
        assert!(!again.changed && again.appended.is_empty());
        assert!(save(tmp.path(), INTENT).replaced);
    }

    #[test]
    fn scope_is_enforced() {
        let tmp = fresh();
        assert!(open_scoped(Some(tmp.path()), Scope::Root).is_ok());
        let e = open_scoped(Some(tmp.path()), Scope::Examples).unwrap_err();
        assert_eq!(e.kind, crate::workspace::error::ErrorKind::Invalid);
        let none = tempfile::tempdir().unwrap();
        let e = open_scoped(Some(none.path()), Scope::Any).unwrap_err();
        assert_eq!(e.kind, crate::workspace::error::ErrorKind::Usage);
    }
}
