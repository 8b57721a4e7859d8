//! Repairs of known, recoverable drift (`small fix`, `small start --fix`): quoting
//! `small_version`, moving the legacy runtime layout out of `.small/`, renaming the task ids
//! of orphan progress entries, and creating or repairing workspace metadata. Each repair
//! stages its edits in the caller's transaction, records itself in progress when it changed
//! something, and reports what it did as a typed value.
//!
//! The legacy-layout repair stages its moves (out of `.small/` to `.small-archive/` and
//! `.small-runs/`) in the transaction like every other change: they happen at commit,
//! through the redo journal, together with the progress entry that records them, so a crash
//! mid-move is finished by the next command and a refused repair moves nothing.

use std::fs;

use sha2::{Digest, Sha256};

use crate::authoring::edit::{self, NewValue};
use crate::authoring::handoff;
use crate::authoring::plan;
use crate::authoring::progress::{self, NewEntry, TimestampRule};
use crate::authoring::templates;
use crate::spec::consts::{
    small_rel, ArtifactKind, ARCHIVE_DIR, META_TASK_PREFIX, PROTOCOL_VERSION, RUNS_DIR, SMALL_DIR,
    WORKSPACE_FILE,
};
use crate::spec::model::{TaskStatus, WorkspaceKind, HANDOFF_REPLAY_ID_POINTER};
use crate::workspace::error::{code, Error};
use crate::workspace::txn::Transaction;
use crate::yaml::{self, Limits, Node};
use std::str::FromStr;

/// What `--versions` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionsReport {
    /// Files whose `small_version` was rewritten.
    pub changed: Vec<String>,
    /// Files already written canonically.
    pub canonical: Vec<String>,
}

/// Quote the first `small_version:` line's value in each file.
pub fn fix_versions(txn: &mut Transaction) -> Result<VersionsReport, Error> {
    let mut report = VersionsReport::default();
    let files = ArtifactKind::ALL
        .iter()
        .map(|k| k.rel_path())
        .chain([small_rel(WORKSPACE_FILE)]);
    for rel in files {
        let Some(bytes) = txn.read(&rel)? else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let Some(new) = quote_version_line(&text) else {
            continue;
        };
        if new == text {
            report.canonical.push(rel);
        } else {
            txn.write(rel.clone(), new.into_bytes());
            report.changed.push(rel);
        }
    }
    Ok(report)
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

/// Plan moving a legacy directory's contents into the canonical store (merging into
/// directories that exist, deduplicating identical files, refusing conflicting ones): each
/// move is staged in `txn` (nothing moves before the commit). Records the moves and the
/// files deduplicated.
fn stage_merge(
    txn: &mut Transaction,
    src: &str,
    dst: &str,
    moved: &mut Vec<String>,
    deduped: &mut Vec<String>,
) -> Result<(), Error> {
    let root = txn.root().to_path_buf();
    let io = |e: std::io::Error, p: &str| Error::system(code::IO, format!("{p}: {e}"));
    let mut entries: Vec<_> = fs::read_dir(root.join(src))
        .map_err(|e| io(e, src))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let (s, d) = (format!("{src}/{name}"), format!("{dst}/{name}"));
        let is_dir = e.file_type().map_err(|er| io(er, &s))?.is_dir();
        let dest = fs::symlink_metadata(root.join(&d)).ok();
        match dest {
            Some(m) if is_dir && m.is_dir() => {
                stage_merge(txn, &s, &d, moved, deduped)?;
                txn.stage_remove_empty_dir(&s)?;
                continue;
            }
            Some(_) if is_dir => {
                return Err(Error::invalid(
                    code::REFUSED,
                    format!(
                        "cannot move {s} to {d}: the destination exists and is not a directory"
                    ),
                )
                .in_file(s.clone())
                .with_help(format!("move or remove {d}, then run the repair again")));
            }
            Some(_) => {
                let read = |p: &str| {
                    crate::fsio::read_bounded(&root.join(p), crate::fsio::MAX_READ_BYTES).ok()
                };
                if !matches!((read(&s), read(&d)), (Some(a), Some(b)) if a == b) {
                    return Err(Error::invalid(
                        code::REFUSED,
                        format!(
                            "cannot move {s} to {d}: the destination exists with different content"
                        ),
                    )
                    .in_file(s.clone())
                    .with_help(
                        "keep one of the two files (compare them), then run the repair again",
                    ));
                }
                // The same bytes: the rename replaces the copy, and the legacy one is gone.
                txn.stage_move(&s, &d)?;
                deduped.push(s);
            }
            None => {
                txn.stage_move(&s, &d)?;
                moved.push(format!("{s} -> {d}"));
            }
        }
    }
    Ok(())
}

/// Legacy files moved from one directory to its canonical store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveGroup {
    /// `.small/archive`
    pub from: String,
    /// `.small-archive`
    pub to: String,
    /// `from -> to` per moved item.
    pub moved: Vec<String>,
}

/// What the runtime-layout repair did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayoutReport {
    pub groups: Vec<MoveGroup>,
    /// Legacy files removed because the same file already was in the new place.
    pub deduped: Vec<String>,
}

impl LayoutReport {
    pub fn changed(&self) -> bool {
        !self.groups.is_empty() || !self.deduped.is_empty()
    }

    /// What the repair did, one line each (the same words for every front end).
    pub fn describe(&self) -> Vec<String> {
        if !self.changed() {
            return vec!["Runtime layout: no legacy .small/archive/ or .small/runs/ found".into()];
        }
        let mut out: Vec<String> = self
            .groups
            .iter()
            .map(|m| format!("Moved {}/ -> {}/ ({} item(s))", m.from, m.to, m.moved.len()))
            .collect();
        if !self.deduped.is_empty() {
            out.push(format!(
                "Removed {} legacy file(s) already present in the new location",
                self.deduped.len()
            ));
        }
        out
    }
}

/// Move legacy `.small/archive/` and `.small/runs/` to `.small-archive/` and `.small-runs/`.
pub fn fix_runtime_layout(txn: &mut Transaction) -> Result<LayoutReport, Error> {
    let root = txn.root().to_path_buf();
    let mut report = LayoutReport::default();
    for (legacy, store) in [("archive", ARCHIVE_DIR), ("runs", RUNS_DIR)] {
        let src = small_rel(legacy);
        let Ok(meta) = fs::symlink_metadata(root.join(&src)) else {
            continue;
        };
        if !meta.is_dir() {
            return Err(Error::invalid(
                code::REFUSED,
                format!("{SMALL_DIR}/{legacy} is not a directory"),
            )
            .with_help("move it out of .small/ by hand"));
        }
        if let Ok(m) = fs::symlink_metadata(root.join(store)) {
            if !m.is_dir() {
                return Err(Error::invalid(
                    code::REFUSED,
                    format!("cannot move {src} to {store}: the destination exists and is not a directory"),
                )
                .with_help(format!("move or remove {store}, then run the repair again")));
            }
        }
        let mut moved = Vec::new();
        stage_merge(txn, &src, store, &mut moved, &mut report.deduped)?;
        txn.stage_remove_empty_dir(&src)?;
        if !moved.is_empty() {
            report.groups.push(MoveGroup {
                from: small_rel(legacy),
                to: store.to_string(),
                moved,
            });
        }
    }
    if !report.changed() {
        return Ok(report);
    }
    let mut notes: Vec<String> = report
        .groups
        .iter()
        .map(|g| format!("{}->{}", g.from, g.to))
        .collect();
    if !report.deduped.is_empty() {
        notes.push(format!("deduped={}", report.deduped.len()));
    }
    let mut e = NewEntry::new(
        "meta/reconcile-runtime-layout",
        Some(TaskStatus::Completed.as_str()),
    )
    .field(
        "evidence",
        format!(
            "Moved the legacy runtime layout to the canonical stores ({} move group(s), {} deduplicated file(s))",
            report.groups.len(),
            report.deduped.len()
        ),
    )
    .field("notes", notes.join(", "));
    handoff::attach_replay_id(txn, &mut e)?;
    txn.append_progress(&e, &TimestampRule::Now)?;
    Ok(report)
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

/// One renamed orphan entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    pub from: String,
    pub to: String,
    /// `operational`, `historical` or `unknown` (see [`classify_orphan`]).
    pub category: &'static str,
}

/// What the orphan-progress repair did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanReport {
    /// The replayId scope the repair looked at (`unknown` when the handoff has none).
    pub scope: String,
    pub renamed: Vec<Renamed>,
}

impl OrphanReport {
    /// What the repair did, one line each (the same words for every front end).
    pub fn describe(&self) -> Vec<String> {
        if self.renamed.is_empty() {
            return vec![format!(
                "Orphan progress: none in replayId scope {}",
                self.scope
            )];
        }
        let (op, hist, unk) = self.counts();
        let mut out = vec![format!(
            "Orphan progress: renamed {} task id(s) in replayId scope {} (operational={op} historical={hist} unknown={unk})",
            self.renamed.len(),
            self.scope
        )];
        out.extend(
            self.renamed
                .iter()
                .map(|x| format!("  {} -> {} ({})", x.from, x.to, x.category)),
        );
        out
    }

    /// (operational, historical, unknown)
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |c: &str| self.renamed.iter().filter(|r| r.category == c).count();
        (n("operational"), n("historical"), n("unknown"))
    }
}

/// Rename the task ids of current-run progress entries whose task is not in the plan to
/// `meta/` names, recording the originals' hashes in a `meta/reconcile-plan` entry.
pub fn fix_orphan_progress(txn: &mut Transaction) -> Result<OrphanReport, Error> {
    let prel = progress::progress_rel();
    let plan_ids: Vec<String> = match handoff::parse_file(txn, &plan::plan_rel())? {
        Some(d) => plan::tasks(&d.root).into_iter().map(|t| t.id).collect(),
        None => {
            return Err(
                Error::invalid(code::MISSING, "plan.small.yml does not exist")
                    .in_file(plan::plan_rel()),
            )
        }
    };
    let scope = handoff::parse_file(txn, &handoff::handoff_rel())?
        .and_then(|d| {
            d.root
                .pointer(HANDOFF_REPLAY_ID_POINTER)
                .and_then(Node::as_str)
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    let Some(bytes) = txn.read(&prel)? else {
        return Err(Error::invalid(code::MISSING, format!("{prel} does not exist")).in_file(prel));
    };
    let doc = yaml::parse_bytes(&bytes, &Limits::default())
        .map_err(|e| Error::invalid(code::UNEDITABLE, format!("{prel}: {e}")).in_file(&prel))?;
    let Some(entries) = doc.root.get("entries").and_then(Node::as_seq) else {
        return Err(
            Error::invalid(code::UNEDITABLE, format!("{prel}: entries must be a list"))
                .in_file(prel),
        );
    };
    let mut report = OrphanReport {
        scope: if scope.is_empty() {
            "unknown".to_string()
        } else {
            scope.clone()
        },
        renamed: Vec::new(),
    };
    let mut edits = Vec::new();
    let mut hashes = Vec::new();
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
        let (category, new_id) = classify_orphan(id);
        let ts = e
            .get("timestamp")
            .and_then(Node::as_str)
            .unwrap_or("")
            .trim();
        let st = e.get("status").and_then(Node::as_str).unwrap_or("").trim();
        let h = hex::encode(Sha256::digest(format!("{id}|{ts}|{st}").as_bytes()));
        hashes.push(format!("{id}:{h}"));
        edits.push(edit::set_scalar(tnode, &edit::quote(&new_id)).map_err(uneditable)?);
        report.renamed.push(Renamed {
            from: id.to_string(),
            to: new_id,
            category,
        });
    }
    if edits.is_empty() {
        return Ok(report);
    }
    let text = edit::apply(&doc.source, edits).map_err(uneditable)?;
    txn.write(prel, text.into_bytes());
    let (op, hist, unk) = report.counts();
    let mut e = NewEntry::new("meta/reconcile-plan", Some(TaskStatus::Completed.as_str()))
        .field(
            "evidence",
            format!(
                "Renamed orphan progress task ids for replayId scope {} (operational={op} historical={hist} unknown={unk})",
                report.scope
            ),
        )
        .field("notes", format!("original hashes: {}", hashes.join(", ")));
    handoff::attach_replay_id(txn, &mut e)?;
    txn.append_progress(&e, &TimestampRule::Now)?;
    Ok(report)
}

fn uneditable(e: impl std::fmt::Display) -> Error {
    Error::invalid(code::UNEDITABLE, e.to_string())
}

/// What `small fix` is asked to repair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FixRequest {
    /// Quote `small_version` in every file.
    pub versions: bool,
    /// Move the legacy runtime layout out of `.small/`.
    pub runtime_layout: bool,
    /// Rename the task ids of orphan progress entries.
    pub orphan_progress: bool,
    /// The low-risk repairs: versions, runtime layout and workspace metadata.
    pub all: bool,
}

/// One repair made by [`fix`]: its name (`versions`, `runtime-layout`, `orphan-progress`,
/// `workspace`) and what it did, one line each.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Repair {
    pub repair: &'static str,
    pub lines: Vec<String>,
}

/// `small fix`: stage the requested repairs, in a fixed order (versions, runtime layout,
/// orphan progress, workspace metadata); each records itself in progress when it changed
/// something. Asking for none is a `usage` error.
pub fn fix(txn: &mut Transaction, req: &FixRequest) -> Result<Vec<Repair>, Error> {
    if !(req.versions || req.runtime_layout || req.orphan_progress || req.all) {
        return Err(Error::usage(code::USAGE, "choose a repair").with_help(
            "pass --versions, --runtime-layout, --orphan-progress or --all, or run `small fix workspace`",
        ));
    }
    let mut out = Vec::new();
    if req.versions || req.all {
        let r = fix_versions(txn)?;
        let mut lines = vec![format!(
            "small_version: {} file(s) rewritten, {} already canonical",
            r.changed.len(),
            r.canonical.len()
        )];
        lines.extend(
            r.changed
                .iter()
                .map(|f| format!("  quoted small_version in {f}")),
        );
        out.push(Repair {
            repair: "versions",
            lines,
        });
    }
    if req.runtime_layout || req.all {
        out.push(Repair {
            repair: "runtime-layout",
            lines: fix_runtime_layout(txn)?.describe(),
        });
    }
    if req.orphan_progress {
        out.push(Repair {
            repair: "orphan-progress",
            lines: fix_orphan_progress(txn)?.describe(),
        });
    }
    if req.all {
        let r = fix_workspace(txn, WorkspaceKind::RepoRoot, false)?;
        out.push(Repair {
            repair: "workspace",
            lines: vec![r.describe()],
        });
    }
    Ok(out)
}

/// The recoverable repairs `small start --fix` runs: runtime layout, then orphan progress.
pub fn repair_recoverable(txn: &mut Transaction) -> Result<(LayoutReport, OrphanReport), Error> {
    let layout = fix_runtime_layout(txn)?;
    let orphans = fix_orphan_progress(txn)?;
    Ok((layout, orphans))
}

fn valid_time(s: &str) -> bool {
    progress::parse_lenient(s).is_some() && s.contains('T')
}

/// What the workspace-metadata repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceRepair {
    /// The file was missing or unreadable and was written fresh.
    Created {
        rel: String,
        kind: WorkspaceKind,
    },
    /// Fields repaired: `version`, `owner`, `created_at`, `updated_at`, `kind`.
    Repaired {
        rel: String,
        fields: Vec<&'static str>,
    },
    Unchanged {
        rel: String,
    },
}

impl WorkspaceRepair {
    /// What the repair did, in one line.
    pub fn describe(&self) -> String {
        match self {
            WorkspaceRepair::Created { rel, kind } => format!("Created {rel} (kind {kind})"),
            WorkspaceRepair::Repaired { rel, fields } => {
                format!("Repaired {rel}: {}", fields.join(", "))
            }
            WorkspaceRepair::Unchanged { rel } => format!("{rel} needs no repair"),
        }
    }
}

/// Create or repair workspace metadata. `force` also sets `updated_at` and the kind.
pub fn fix_workspace(
    txn: &mut Transaction,
    kind: WorkspaceKind,
    force: bool,
) -> Result<WorkspaceRepair, Error> {
    let rel = handoff::workspace_rel();
    let now = handoff::now_text();
    let existing = match txn.read(&rel)? {
        Some(b) => String::from_utf8(b).ok().filter(|s| {
            yaml::parse_str(s, &Limits::default())
                .ok()
                .is_some_and(|d| {
                    d.root.as_map().is_some()
                        && d.root
                            .get("kind")
                            .and_then(Node::as_str)
                            .is_some_and(|k| WorkspaceKind::from_str(k).is_ok())
                })
        }),
        None => None,
    };
    let Some(mut text) = existing else {
        txn.write(
            rel.clone(),
            templates::workspace(kind.as_str(), &now).into_bytes(),
        );
        return Ok(WorkspaceRepair::Created { rel, kind });
    };
    let doc = yaml::parse_str(&text, &Limits::default())
        .map_err(|e| Error::invalid(code::UNEDITABLE, format!("{rel}: {e}")).in_file(&rel))?;
    let get = |k: &str| doc.root.get(k).and_then(Node::as_str).map(str::to_string);
    let mut fixes: Vec<(&str, String, &'static str)> = Vec::new();
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
    if force && get("kind").as_deref() != Some(kind.as_str()) {
        fixes.push(("kind", kind.as_str().into(), "kind"));
    }
    if fixes.is_empty() {
        return Ok(WorkspaceRepair::Unchanged { rel });
    }
    let mut fields = Vec::new();
    for (key, value, name) in fixes {
        text = handoff::set_path(&text, &[key], &NewValue::Scalar(edit::quote(&value))).map_err(
            |e| Error::invalid(code::UNEDITABLE, format!("cannot repair {rel}: {e}")).in_file(&rel),
        )?;
        fields.push(name);
    }
    txn.write(rel.clone(), text.into_bytes());
    Ok(WorkspaceRepair::Repaired { rel, fields })
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

    fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let small = tmp.path().join(".small");
        std::fs::create_dir(&small).unwrap();
        for f in templates::base_artifacts(Some("Test repairs")) {
            std::fs::write(small.join(f.name), f.content).unwrap();
        }
        for (name, text) in files {
            let p = tmp.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        tmp
    }

    #[test]
    fn versions_are_quoted_and_canonical_files_left_alone() {
        let tmp = workspace(&[]);
        let plan = tmp.path().join(".small/plan.small.yml");
        let text = std::fs::read_to_string(&plan).unwrap();
        std::fs::write(&plan, text.replace("\"1.0.0\"", "1.0.0")).unwrap();
        let mut txn = Transaction::begin(tmp.path()).unwrap();
        let r = fix_versions(&mut txn).unwrap();
        assert_eq!(r.changed, vec![".small/plan.small.yml"]);
        assert_eq!(r.canonical.len(), 3);
        txn.commit().unwrap();
        assert!(std::fs::read_to_string(&plan)
            .unwrap()
            .contains("small_version: \"1.0.0\""));
    }

    #[test]
    fn legacy_runtime_directories_move_out_of_small() {
        let tmp = workspace(&[(".small/runs/a/x.txt", "x"), (".small-runs/a/y.txt", "y")]);
        let mut txn = Transaction::begin(tmp.path()).unwrap();
        let r = fix_runtime_layout(&mut txn).unwrap();
        txn.commit().unwrap();
        assert!(r.changed());
        assert_eq!(r.groups[0].from, ".small/runs");
        assert!(tmp.path().join(".small-runs/a/x.txt").exists());
        assert!(tmp.path().join(".small-runs/a/y.txt").exists());
        assert!(!tmp.path().join(".small/runs").exists());
        let progress =
            std::fs::read_to_string(tmp.path().join(".small/progress.small.yml")).unwrap();
        assert!(progress.contains("meta/reconcile-runtime-layout"));

        let mut txn = Transaction::begin(tmp.path()).unwrap();
        assert!(!fix_runtime_layout(&mut txn).unwrap().changed());
    }

    #[test]
    fn orphan_entries_are_renamed_and_recorded() {
        let tmp = workspace(&[]);
        let mut txn = Transaction::begin(tmp.path()).unwrap();
        txn.append_progress(
            &NewEntry::new("task-7", Some("completed")).field("evidence", "old run"),
            &TimestampRule::Now,
        )
        .unwrap();
        txn.commit().unwrap();
        let mut txn = Transaction::begin(tmp.path()).unwrap();
        let r = fix_orphan_progress(&mut txn).unwrap();
        txn.commit().unwrap();
        assert_eq!(
            r.renamed,
            vec![Renamed {
                from: "task-7".into(),
                to: "meta/historical/task-7".into(),
                category: "historical"
            }]
        );
        assert_eq!(r.counts(), (0, 1, 0));
        let progress =
            std::fs::read_to_string(tmp.path().join(".small/progress.small.yml")).unwrap();
        assert!(progress.contains("meta/historical/task-7"));
        assert!(progress.contains("meta/reconcile-plan"));
    }

    #[test]
    fn workspace_metadata_is_created_then_repaired_then_left_alone() {
        let tmp = workspace(&[]);
        let mut txn = Transaction::begin(tmp.path()).unwrap();
        let r = fix_workspace(&mut txn, WorkspaceKind::RepoRoot, false).unwrap();
        assert!(matches!(r, WorkspaceRepair::Created { .. }));
        txn.commit().unwrap();
        let mut txn = Transaction::begin(tmp.path()).unwrap();
        assert!(matches!(
            fix_workspace(&mut txn, WorkspaceKind::RepoRoot, false).unwrap(),
            WorkspaceRepair::Unchanged { .. }
        ));
        let r = fix_workspace(&mut txn, WorkspaceKind::Examples, true).unwrap();
        match r {
            WorkspaceRepair::Repaired { fields, .. } => {
                assert_eq!(fields, vec!["updated_at", "kind"])
            }
            other => panic!("{other:?}"),
        }
    }
}
