//! `small fix`: repair known, recoverable drift in a workspace.

use small_core::spec::model::TaskStatus;
use small_core::spec::model::HANDOFF_REPLAY_ID_POINTER;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use small_core::authoring::edit::{self, NewValue};
use small_core::authoring::handoff;
use small_core::authoring::plan;
use small_core::authoring::progress::{self, NewEntry, TimestampRule};
use small_core::authoring::templates;
use small_core::authoring::txn::Transaction;
use small_core::spec::consts::{
    ArtifactKind, ARCHIVE_DIR, KIND_EXAMPLES, KIND_REPO_ROOT, META_TASK_PREFIX, PROTOCOL_VERSION,
    RUNS_DIR, SMALL_DIR, WORKSPACE_FILE,
};
use small_core::yaml::{self, Limits, Node};

use crate::commands::progress::shared;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::workspace::Scope;

/// Repair recoverable drift: version quoting, legacy runtime directories, orphan progress,
/// workspace metadata.
///
/// --versions quotes `small_version` in every .small/ file; --runtime-layout moves legacy
/// .small/archive/ and .small/runs/ to .small-archive/ and .small-runs/; --orphan-progress
/// renames the task ids of current-run progress entries whose task is not in the plan to
/// meta/ names (recording the originals' hashes in a meta/reconcile-plan entry); --all runs
/// --versions, --runtime-layout and `fix workspace`. Each repair that changes something is
/// recorded in progress.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Sub>,
    /// Write small_version as the quoted string "1.0.0" in every file
    #[arg(long)]
    pub versions: bool,
    /// Move legacy .small/archive/ and .small/runs/ to .small-archive/ and .small-runs/
    #[arg(long)]
    pub runtime_layout: bool,
    /// Rename current-run progress task ids that are not in the plan to meta/ names
    #[arg(long)]
    pub orphan_progress: bool,
    /// Run the low-risk repairs: --versions, --runtime-layout and `fix workspace`
    #[arg(long)]
    pub all: bool,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Workspace(WorkspaceArgs),
}

/// Create or repair .small/workspace.small.yml.
///
/// A missing or unreadable file is written fresh (small_version, owner, kind, created_at,
/// updated_at). An existing one keeps its comments and other keys: the version is made
/// "1.0.0", a missing owner, created_at or updated_at is added, an invalid timestamp is
/// replaced. --force also sets updated_at to now and the kind to --kind.
#[derive(clap::Args, Debug)]
pub struct WorkspaceArgs {
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace kind: repo-root or examples
    #[arg(long, value_name = "KIND", default_value = KIND_REPO_ROOT, value_parser = [KIND_REPO_ROOT, KIND_EXAMPLES])]
    pub kind: String,
    /// Also reset updated_at and set the kind
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if let Some(Sub::Workspace(w)) = args.command {
        let root = shared::root(w.dir.as_deref())?;
        let mut txn = shared::begin(&root)?;
        let lines = fix_workspace(&mut txn, &w.kind, w.force)?;
        let report = txn.commit().map_err(shared::txn_err)?;
        for l in lines {
            shared::say(g, l);
        }
        shared::print_changes(g, &report);
        shared::say(g, "Next: small check --strict");
        return Ok(());
    }
    if !(args.versions || args.runtime_layout || args.orphan_progress || args.all) {
        return Err(CliError::usage(
            "choose a repair: --versions, --runtime-layout, --orphan-progress, --all, or `small fix workspace`",
        ));
    }
    let (versions, layout) = (args.versions || args.all, args.runtime_layout || args.all);
    let root = shared::root(args.dir.as_deref())?;
    let mut txn = shared::begin(&root)?;
    shared::check_scope(&txn, args.workspace, "fix", true)?;

    if versions {
        let (changed, canonical) = fix_versions(&mut txn)?;
        shared::say(
            g,
            format!(
                "small_version: {} file(s) rewritten, {} already canonical",
                changed.len(),
                canonical.len()
            ),
        );
        for f in changed {
            shared::say(g, format!("  quoted small_version in {f}"));
        }
    }
    if layout {
        fix_runtime_layout(&mut txn, g)?;
    }
    if args.orphan_progress {
        fix_orphan_progress(&mut txn, g)?;
    }
    if args.all {
        for l in fix_workspace(&mut txn, KIND_REPO_ROOT, false)? {
            shared::say(g, l);
        }
    }
    let report = txn.commit().map_err(shared::txn_err)?;
    shared::print_changes(g, &report);
    shared::say(g, "Next: small check --strict");
    Ok(())
}

/// `small start --fix`: the recoverable repairs (runtime layout, orphan progress). Returns
/// whether anything changed.
pub fn repair_recoverable(txn: &mut Transaction, g: &GlobalArgs) -> Result<bool, CliError> {
    let a = fix_runtime_layout(txn, g)?;
    let b = fix_orphan_progress(txn, g)?;
    Ok(a || b)
}

fn files_with_version() -> Vec<String> {
    let mut v: Vec<String> = ArtifactKind::ALL.iter().map(|k| k.rel_path()).collect();
    v.push(small_core::spec::consts::small_rel(WORKSPACE_FILE));
    v
}

/// Quote the first `small_version:` line's value in each file.
fn fix_versions(txn: &mut Transaction) -> Result<(Vec<String>, Vec<String>), CliError> {
    let (mut changed, mut canonical) = (Vec::new(), Vec::new());
    for rel in files_with_version() {
        let Some(bytes) = txn.read(&rel).map_err(shared::txn_err)? else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let Some(new) = quote_version_line(&text) else {
            continue;
        };
        if new == text {
            canonical.push(rel);
        } else {
            txn.write(rel.clone(), new.into_bytes());
            changed.push(rel);
        }
    }
    Ok((changed, canonical))
}

/// The text with its first `small_version:` line's value double-quoted (None if no line).
pub fn quote_version_line(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 2);
    let mut done = false;
    let mut found = false;
    for line in text.split_inclusive('\n') {
        if done {
            out.push_str(line);
            continue;
        }
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let trimmed = body.trim_start();
        let Some(rest) = trimmed.strip_prefix("small_version:") else {
            out.push_str(line);
            continue;
        };
        found = true;
        done = true;
        let prefix_len = body.len() - rest.len();
        let (value, comment) = match rest.find(" #") {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let v = value.trim();
        let new_value = if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
            v.to_string()
        } else {
            let raw = if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
                &v[1..v.len() - 1]
            } else {
                v
            };
            edit::quote(raw)
        };
        let gap = " ";
        out.push_str(&body[..prefix_len]);
        out.push_str(gap);
        out.push_str(&new_value);
        out.push_str(comment);
        out.push_str(ending);
    }
    found.then_some(out)
}

/// Move a legacy directory's contents into the canonical store (merging, deduplicating
/// identical files, refusing conflicting ones). Returns the moves made and files deduped.
fn merge_tree(
    src: &Path,
    dst: &Path,
    root: &Path,
    moved: &mut Vec<String>,
    deduped: &mut Vec<String>,
) -> Result<(), CliError> {
    let io = |e: std::io::Error, p: &Path| CliError::usage(format!("{}: {e}", p.display()));
    fs::create_dir_all(dst).map_err(|e| io(e, dst))?;
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut entries: Vec<_> = fs::read_dir(src)
        .map_err(|e| io(e, src))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let s = e.path();
        let d = dst.join(e.file_name());
        let is_dir = e.file_type().map_err(|er| io(er, &s))?.is_dir();
        if is_dir {
            if d.exists() {
                if !d.is_dir() {
                    return Err(CliError::invalid(format!(
                        "cannot move {} to {}: the destination exists and is not a directory",
                        rel(&s),
                        rel(&d)
                    )));
                }
                merge_tree(&s, &d, root, moved, deduped)?;
                let _ = fs::remove_dir(&s);
            } else {
                fs::rename(&s, &d).map_err(|er| io(er, &s))?;
                moved.push(format!("{} -> {}", rel(&s), rel(&d)));
            }
            continue;
        }
        if d.exists() {
            let read = |p: &Path| {
                small_core::workspace::fsio::read_bounded(
                    p,
                    small_core::workspace::fsio::MAX_READ_BYTES,
                )
                .ok()
            };
            let same = matches!((read(&s), read(&d)), (Some(a), Some(b)) if a == b);
            if !same {
                return Err(CliError::invalid(format!(
                    "cannot move {} to {}: the destination exists with different content",
                    rel(&s),
                    rel(&d)
                )));
            }
            fs::remove_file(&s).map_err(|er| io(er, &s))?;
            deduped.push(rel(&s));
        } else {
            fs::rename(&s, &d).map_err(|er| io(er, &s))?;
            moved.push(format!("{} -> {}", rel(&s), rel(&d)));
        }
    }
    Ok(())
}

fn fix_runtime_layout(txn: &mut Transaction, g: &GlobalArgs) -> Result<bool, CliError> {
    let root = txn.root().to_path_buf();
    let mut groups = Vec::new();
    let mut deduped = Vec::new();
    for (legacy, store) in [("archive", ARCHIVE_DIR), ("runs", RUNS_DIR)] {
        let src = root.join(SMALL_DIR).join(legacy);
        if !src.exists() {
            continue;
        }
        if !src.is_dir() {
            return Err(CliError::invalid(format!(
                "{SMALL_DIR}/{legacy} is not a directory; move it out of .small/ by hand"
            )));
        }
        let mut moved = Vec::new();
        merge_tree(&src, &root.join(store), &root, &mut moved, &mut deduped)?;
        let _ = fs::remove_dir(&src);
        if !moved.is_empty() {
            groups.push((
                small_core::spec::consts::small_rel(legacy),
                store.to_string(),
                moved,
            ));
        }
    }
    if groups.is_empty() && deduped.is_empty() {
        shared::say(
            g,
            "Runtime layout: no legacy .small/archive/ or .small/runs/ found",
        );
        return Ok(false);
    }
    for (from, to, moved) in &groups {
        shared::say(
            g,
            format!("Moved {from}/ -> {to}/ ({} item(s))", moved.len()),
        );
    }
    if !deduped.is_empty() {
        shared::say(
            g,
            format!(
                "Removed {} legacy file(s) already present in the new location",
                deduped.len()
            ),
        );
    }
    let mut notes: Vec<String> = groups.iter().map(|(f, t, _)| format!("{f}->{t}")).collect();
    if !deduped.is_empty() {
        notes.push(format!("deduped={}", deduped.len()));
    }
    let mut e = NewEntry::new("meta/reconcile-runtime-layout", Some(TaskStatus::Completed.as_str()))
        .field("evidence", format!("Moved the legacy runtime layout to the canonical stores ({} move group(s), {} deduplicated file(s))", groups.len(), deduped.len()))
        .field("notes", notes.join(", "));
    handoff::attach_replay_id(txn, &mut e).map_err(shared::txn_err)?;
    txn.append_progress(&e, &TimestampRule::Now)
        .map_err(shared::txn_err)?;
    Ok(true)
}

/// Where an orphan task id goes: operational ids to meta/<id>, task-N to
/// meta/historical/task-N, anything else to meta/historical/unknown/<id>.
pub fn classify_orphan(id: &str) -> (&'static str, String) {
    match id {
        "reset" | "init" | "apply" => ("operational", format!("meta/{id}")),
        _ if id
            .strip_prefix("task-")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            ("historical", format!("meta/historical/{id}"))
        }
        _ => {
            let safe = id.trim().replace(['/', ' '], "-");
            (
                "unknown",
                format!(
                    "meta/historical/unknown/{}",
                    if safe.is_empty() {
                        "unknown".into()
                    } else {
                        safe
                    }
                ),
            )
        }
    }
}

fn fix_orphan_progress(txn: &mut Transaction, g: &GlobalArgs) -> Result<bool, CliError> {
    let prel = progress::progress_rel();
    let plan_ids: Vec<String> =
        match handoff::parse_file(txn, &plan::plan_rel()).map_err(shared::txn_err)? {
            Some(d) => plan::tasks(&d.root).into_iter().map(|t| t.id).collect(),
            None => return Err(CliError::invalid("plan.small.yml does not exist")),
        };
    let scope = handoff::parse_file(txn, &handoff::handoff_rel())
        .map_err(shared::txn_err)?
        .and_then(|d| {
            d.root
                .pointer(HANDOFF_REPLAY_ID_POINTER)
                .and_then(Node::as_str)
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    let Some(bytes) = txn.read(&prel).map_err(shared::txn_err)? else {
        return Err(CliError::invalid(format!("{prel} does not exist")));
    };
    let doc = yaml::parse_bytes(&bytes, &Limits::default())
        .map_err(|e| CliError::invalid(format!("{prel}: {e}")))?;
    let Some(entries) = doc.root.get("entries").and_then(Node::as_seq) else {
        return Err(CliError::invalid(format!("{prel}: entries must be a list")));
    };
    let mut edits = Vec::new();
    let mut hashes = Vec::new();
    let (mut op, mut hist, mut unk) = (0, 0, 0);
    let label = if scope.is_empty() {
        "unknown".to_string()
    } else {
        scope.clone()
    };
    let mut lines = Vec::new();
    for e in entries {
        let Some(tnode) = e.get("task_id") else {
            continue;
        };
        let Some(id) = tnode.as_str().map(str::trim) else {
            continue;
        };
        if id.is_empty() || id.starts_with(META_TASK_PREFIX) || plan_ids.iter().any(|p| p == id) {
            continue;
        }
        if !scope.is_empty()
            && e.get("replayId").and_then(Node::as_str).map(str::trim) != Some(scope.as_str())
        {
            continue;
        }
        let (cat, new_id) = classify_orphan(id);
        match cat {
            "operational" => op += 1,
            "historical" => hist += 1,
            _ => unk += 1,
        }
        let ts = e
            .get("timestamp")
            .and_then(Node::as_str)
            .unwrap_or("")
            .trim();
        let st = e.get("status").and_then(Node::as_str).unwrap_or("").trim();
        let h = hex::encode(Sha256::digest(format!("{id}|{ts}|{st}").as_bytes()));
        hashes.push(format!("{id}:{h}"));
        lines.push(format!("  {id} -> {new_id} ({cat})"));
        edits.push(
            edit::set_scalar(tnode, &edit::quote(&new_id))
                .map_err(|e| CliError::invalid(e.to_string()))?,
        );
    }
    if edits.is_empty() {
        shared::say(
            g,
            format!("Orphan progress: none in replayId scope {label}"),
        );
        return Ok(false);
    }
    let text = edit::apply(&doc.source, edits).map_err(|e| CliError::invalid(e.to_string()))?;
    txn.write(prel, text.into_bytes());
    shared::say(g, format!("Orphan progress: renamed {} task id(s) in replayId scope {label} (operational={op} historical={hist} unknown={unk})", lines.len()));
    for l in lines {
        shared::say(g, l);
    }
    let mut e = NewEntry::new("meta/reconcile-plan", Some(TaskStatus::Completed.as_str()))
        .field("evidence", format!("Renamed orphan progress task ids for replayId scope {label} (operational={op} historical={hist} unknown={unk})"))
        .field("notes", format!("original hashes: {}", hashes.join(", ")));
    handoff::attach_replay_id(txn, &mut e).map_err(shared::txn_err)?;
    txn.append_progress(&e, &TimestampRule::Now)
        .map_err(shared::txn_err)?;
    Ok(true)
}

fn valid_time(s: &str) -> bool {
    progress::parse_lenient(s).is_some() && s.contains('T')
}

/// Create or repair workspace metadata; returns what it did, for printing.
fn fix_workspace(txn: &mut Transaction, kind: &str, force: bool) -> Result<Vec<String>, CliError> {
    let rel = handoff::workspace_rel();
    let now = handoff::now_text();
    let existing = match txn.read(&rel).map_err(shared::txn_err)? {
        Some(b) => String::from_utf8(b).ok().filter(|s| {
            yaml::parse_str(s, &Limits::default())
                .ok()
                .is_some_and(|d| {
                    d.root.as_map().is_some()
                        && matches!(
                            d.root.get("kind").and_then(Node::as_str),
                            Some(KIND_REPO_ROOT | KIND_EXAMPLES)
                        )
                })
        }),
        None => None,
    };
    let Some(mut text) = existing else {
        txn.write(rel.clone(), templates::workspace(kind, &now).into_bytes());
        return Ok(vec![format!("Created {rel} (kind {kind})")]);
    };
    let doc = yaml::parse_str(&text, &Limits::default())
        .map_err(|e| CliError::invalid(format!("{rel}: {e}")))?;
    let get = |k: &str| doc.root.get(k).and_then(Node::as_str).map(str::to_string);
    let mut fixes: Vec<(&str, String, &str)> = Vec::new();
    if get("small_version").as_deref() != Some(PROTOCOL_VERSION) {
        fixes.push(("small_version", PROTOCOL_VERSION.into(), "version"));
    }
    if get("owner").is_none_or(|o| o.trim().is_empty()) {
        fixes.push(("owner", "agent".into(), "owner"));
    }
    if !get("created_at").is_some_and(|c| valid_time(&c)) {
        fixes.push(("created_at", now.clone(), "created_at"));
    }
    if force || !get("updated_at").is_some_and(|c| valid_time(&c)) {
        fixes.push(("updated_at", now.clone(), "updated_at"));
    }
    if force && get("kind").as_deref() != Some(kind) {
        fixes.push(("kind", kind.into(), "kind"));
    }
    if fixes.is_empty() {
        return Ok(vec![format!("{rel} needs no repair")]);
    }
    let mut names = Vec::new();
    for (key, value, name) in fixes {
        text = handoff::set_path(&text, &[key], &NewValue::Scalar(edit::quote(&value)))
            .map_err(|e| CliError::invalid(format!("cannot repair {rel}: {e}")))?;
        names.push(name);
    }
    txn.write(rel.clone(), text.into_bytes());
    Ok(vec![format!("Repaired {rel}: {}", names.join(", "))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_lines() {
        assert_eq!(
            quote_version_line("a: 1\nsmall_version: 1.0.0 # c\n").unwrap(),
            "a: 1\nsmall_version: \"1.0.0\" # c\n"
        );
        assert_eq!(
            quote_version_line("small_version: '1.0.0'\n").unwrap(),
            "small_version: \"1.0.0\"\n"
        );
        assert_eq!(
            quote_version_line("small_version: \"1.0.0\"\n").unwrap(),
            "small_version: \"1.0.0\"\n"
        );
        assert!(quote_version_line("x: 1\n").is_none());
    }

    #[test]
    fn orphan_classes() {
        assert_eq!(classify_orphan("reset").1, "meta/reset");
        assert_eq!(classify_orphan("task-12").1, "meta/historical/task-12");
        assert_eq!(classify_orphan("a b/c").1, "meta/historical/unknown/a-b-c");
    }
}
