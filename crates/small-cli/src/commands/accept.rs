//! `small accept intent|constraints`: a human accepts a draft into the canonical file.

use super::draft::{check_artifact, draft_rel, open_scoped, render_plain};
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::authoring::progress::{NewEntry, TimestampRule};
use small_core::authoring::txn::Transaction;
use small_core::spec::consts::{ArtifactKind, WORKSPACE_FILE};
use small_core::spec::model::TaskStatus;
use small_core::workspace::Scope;
use std::path::PathBuf;

/// Accept a draft (from `small draft`) into .small/intent.small.yml or constraints.small.yml.
///
/// This is the human's step: it replaces the canonical file with the reviewed draft and
/// records a `meta/accept-intent` / `meta/accept-constraints` progress entry. A draft that is
/// not a valid artifact is refused and nothing changes.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub kind: AcceptKind,
}

#[derive(clap::Subcommand, Debug)]
pub enum AcceptKind {
    /// Accept .small-cache/drafts/intent.small.yml
    Intent(AcceptArgs),
    /// Accept .small-cache/drafts/constraints.small.yml
    Constraints(AcceptArgs),
}

#[derive(clap::Args, Debug)]
pub struct AcceptArgs {
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace kinds to accept: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Show the change as a diff and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was done as JSON: {draft, target, changed, dry_run, diff?, progress_entry?}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let (kind, a) = match args.kind {
        AcceptKind::Intent(a) => (ArtifactKind::Intent, a),
        AcceptKind::Constraints(a) => (ArtifactKind::Constraints, a),
    };
    let root = open_scoped(a.dir.as_deref(), a.workspace)?;
    let draft = draft_rel(kind);
    let target = kind.rel_path();
    let bytes = match small_core::workspace::fsio::read_bounded(
        &root.join(&draft),
        small_core::workspace::fsio::MAX_READ_BYTES,
    ) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::invalid(format!(
                "there is no draft to accept: {draft} does not exist\n  help: write one with `small draft {} --from <file>`",
                kind.name()
            )))
        }
        Err(e) => return Err(CliError::usage(format!("cannot read {draft}: {e}"))),
    };
    let errors: Vec<_> = check_artifact(kind, &bytes, &draft)
        .into_iter()
        .filter(|d| d.is_error())
        .collect();
    if !errors.is_empty() {
        let list: Vec<String> = errors
            .iter()
            .map(|d| format!("  {}", render_plain(d).replace('\n', "\n  ")))
            .collect();
        return Err(CliError::invalid(format!(
            "the draft {draft} is not a valid {}; nothing was changed:\n{}\n  help: fix the draft (or write a new one with `small draft {}`), then accept again",
            kind.file_name(),
            list.join("\n"),
            kind.name()
        )));
    }

    let mut txn = Transaction::begin(&root).map_err(CliError::from)?;
    let old = txn.read(&target).map_err(CliError::from)?;
    if old.as_deref() == Some(bytes.as_slice()) {
        if a.json {
            return g.json(&serde_json::json!({
                "draft": draft, "target": target, "changed": false, "dry_run": a.dry_run,
                "written": [], "appended": [],
            }));
        }
        g.info(format!(
            "{target} already matches {draft}; nothing to accept"
        ));
        return Ok(());
    }
    if a.dry_run {
        drop(txn);
        let old_text = old
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let new_text = String::from_utf8_lossy(&bytes);
        let diff = similar::TextDiff::from_lines(old_text.as_ref(), new_text.as_ref());
        if a.json {
            let text = diff
                .unified_diff()
                .context_radius(3)
                .header(
                    &format!("{target} (current)"),
                    &format!("{target} (accepted)"),
                )
                .to_string();
            return g.json(&serde_json::json!({
                "draft": draft, "target": target, "changed": true, "dry_run": true,
                "diff": text, "written": [], "appended": [],
            }));
        }
        g.info(format!(
            "Dry run: accepting {draft} would change {target} (nothing written):"
        ));
        g.info_raw(
            diff.unified_diff()
                .context_radius(3)
                .header(
                    &format!("{target} (current)"),
                    &format!("{target} (accepted)"),
                )
                .to_string(),
        );
        return Ok(());
    }
    txn.write(target.clone(), bytes.clone());

    // Keep workspace metadata's updated_at current, editing only that value.
    let ws_rel = small_core::spec::consts::small_rel(WORKSPACE_FILE);
    let now = small_core::spec::timestamp::format_utc(small_core::authoring::progress::now());
    if let Ok(src) = txn.read_string(&ws_rel) {
        if let Ok(doc) = small_core::yaml::parse_str(&src, &small_core::yaml::Limits::default()) {
            let edit = small_core::authoring::edit::set_key(
                &src,
                &doc.root,
                "updated_at",
                &small_core::authoring::edit::NewValue::Scalar(small_core::authoring::edit::quote(
                    &now,
                )),
            );
            if let Ok(e) = edit {
                if let Ok(updated) = small_core::authoring::edit::apply(&src, vec![e]) {
                    txn.write(ws_rel, updated.into_bytes());
                }
            }
        }
    }

    let entry = NewEntry::new(
        format!("meta/accept-{}", kind.name()),
        Some(TaskStatus::Completed.as_str()),
    )
    .field(
        "evidence",
        format!("Accepted draft {} from {draft}", kind.name()),
    )
    .field("notes", format!("small accept {}", kind.name()));
    let appended = txn
        .append_progress(&entry, &TimestampRule::Now)
        .map_err(CliError::from)?;
    let report = txn.commit().map_err(CliError::from)?;
    if a.json {
        return g.json(&serde_json::json!({
            "draft": draft, "target": target, "changed": true, "dry_run": false,
            "progress_entry": appended.entry,
            "written": report.written, "appended": report.appended,
        }));
    }

    let lines = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count();
    g.info(match &old {
        Some(o) => format!(
            "Accepted {draft} into {target} (replaced {} lines with {})",
            lines(o),
            lines(&bytes)
        ),
        None => format!(
            "Accepted {draft} into {target} (new file, {} lines)",
            lines(&bytes)
        ),
    });
    g.info(format!(
        "Recorded progress entry meta/accept-{} at {}",
        kind.name(),
        appended.timestamp
    ));
    Ok(())
}
