//! Snapshots of a 2.0.0 workspace: the whole `.small/` tree, filed under its frontier.
//!
//! A 2.0.0 snapshot is `<store>/<frontier>/` (a later, different tree with the same frontier
//! — a receipt saved since, say — is its next generation `~N`) holding `meta.json` and
//! `state/.small/`, a copy of every file of `.small/`. `meta.json` records, as the reference
//! does, `artifact_digests` (the SHA-256 of every file, keyed by its path inside `.small/`),
//! `artifact_digest` (the SHA-256 of the sorted `path<TAB>sha256` lines) and
//! `workspace_kind: v2-session-profile`.
//!
//! Taking one needs a tree that passes the strict check (no damage, no unresolved conflict).
//! Restoring one swaps the whole `.small/` for a verified copy of the snapshot: it refuses a
//! snapshot that does not match its digests, and refuses to drop a live file (an event, a
//! receipt, a policy edit) that no snapshot of the store holds, unless forced. Nothing is
//! followed: a link or special file in the live tree or the snapshot is refused, and every
//! path comes from walking a directory, never from a record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{
    digest, git_info, index, now_rfc3339, parse_snapshot_name, safe, short_id, Meta, RunError,
    Snapshot, SnapshotResult, META_FILE,
};
use crate::spec::consts::{CACHE_DIR, SMALL_DIR, TOOL_VERSION};

/// The `workspace_kind` of a 2.0.0 snapshot (the reference's value).
pub const WORKSPACE_KIND: &str = "v2-session-profile";
/// Where a 2.0.0 snapshot keeps its copy: `state/.small/`.
pub const STATE_DIR: &str = "state";

/// The most files a tree may hold (a bound on a hostile tree, far above any real one).
const MAX_FILES: usize = 4_000_000;
/// The deepest directory nesting walked (`.small/events/<session>/<event>.json` is 2).
const MAX_DEPTH: usize = 16;

/// Every regular file under `dir` as (path relative to `dir` with `/`, absolute path),
/// sorted. A link, a special file, a name that is not UTF-8, a tree too deep or too large
/// is refused: nothing is followed.
pub fn walk(dir: &Path) -> Result<Vec<(String, PathBuf)>, RunError> {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, String, usize)> = vec![(dir.to_path_buf(), String::new(), 0)];
    while let Some((d, prefix, depth)) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| RunError::io("cannot read", &d, &e))?;
        for entry in rd {
            let entry = entry.map_err(|e| RunError::io("cannot read", &d, &e))?;
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                return Err(RunError::invalid(format!(
                    "{} has a name that is not UTF-8; refusing to copy it",
                    path.display()
                )));
            };
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            match safe::entry_type(&path)? {
                safe::Entry::Dir if depth < MAX_DEPTH => stack.push((path, rel, depth + 1)),
                safe::Entry::Dir => {
                    return Err(RunError::invalid(format!(
                        "{} is nested deeper than {MAX_DEPTH} directories; refusing it",
                        path.display()
                    )))
                }
                safe::Entry::File => out.push((rel, path)),
                safe::Entry::Symlink => {
                    return Err(RunError::invalid(format!(
                        "{} is a symbolic link; a 2.0.0 tree holds regular files only, so it is not followed",
                        path.display()
                    ))
                    .with_help("remove the link (`small check --strict` names every one)"))
                }
                safe::Entry::Other | safe::Entry::Missing => {
                    return Err(RunError::invalid(format!(
                        "{} is not a regular file or directory; refusing it",
                        path.display()
                    )))
                }
            }
            if out.len() > MAX_FILES {
                return Err(RunError::invalid(format!(
                    "{} holds more than {MAX_FILES} files; refusing it",
                    dir.display()
                )));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The SHA-256 of every file under `dir` (keyed by relative path) and the aggregate: the
/// SHA-256 of the sorted `path<TAB>sha256` lines joined by newlines.
pub fn tree_digests(dir: &Path) -> Result<(String, BTreeMap<String, String>), RunError> {
    let mut per = BTreeMap::new();
    for (rel, path) in walk(dir)? {
        let (sha, _) = safe::hash_stored_file(&path)?.ok_or_else(|| {
            RunError::usage(format!("{} disappeared while it was read", path.display()))
        })?;
        per.insert(rel, sha);
    }
    Ok((aggregate(&per), per))
}

/// The aggregate digest of per-path digests.
pub fn aggregate(per: &BTreeMap<String, String>) -> String {
    let mut lines: Vec<String> = per.iter().map(|(p, d)| format!("{p}\t{d}")).collect();
    lines.sort();
    safe::sha256_hex(lines.join("\n").as_bytes())
}

pub(crate) fn lock(root: &Path) -> Result<crate::workspace::txn::Transaction, RunError> {
    crate::workspace::txn::Transaction::begin(root).map_err(super::txn_error)
}

/// The strict state of the live tree: its frontier and latest handoff, or the refusal
/// (`what` names what needs it: "a 2.0.0 snapshot").
pub(crate) fn strict_state(root: &Path, what: &str) -> Result<crate::v2::State, RunError> {
    let checked = crate::v2::check(root, &root.join(SMALL_DIR));
    let errors: Vec<&crate::diag::Diagnostic> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    if let Some(first) = errors.first() {
        let conflicts = errors.iter().all(|d| d.code == "V2-CONFLICT");
        let why = if conflicts {
            "it has unresolved conflicts"
        } else {
            "its records are damaged"
        };
        let help = if conflicts {
            "resolve them first: `small reconcile --preview` lists them and what resolving each takes"
        } else {
            "`small check --strict` names every problem and how to fix it"
        };
        return Err(RunError::invalid(format!(
            "{what} needs a tree that passes the strict check; {why} ({} problem(s), first: {}: {})",
            errors.len(),
            first.code,
            first.message
        ))
        .with_help(help));
    }
    Ok(checked.state)
}

/// Take a snapshot of the 2.0.0 tree at `root/.small` into `store`, under its frontier.
pub fn snapshot(root: &Path, store: &Path, force: bool) -> Result<SnapshotResult, RunError> {
    super::require_small_dir(root)?;
    super::check_store_location(root, store)?;
    // Under the workspace lock: no writer appends while the tree is checked and copied.
    let held = lock(root)?;
    let state = strict_state(root, "a 2.0.0 snapshot")?;
    let frontier = state.frontier.to_ascii_lowercase();
    let small = root.join(SMALL_DIR);
    let files = walk(&small)?;
    let staged = safe::StagedDir::new(store, ".tmp-snapshot-")?;
    let copy_root = staged.path().join(STATE_DIR).join(SMALL_DIR);
    let mut per = BTreeMap::new();
    for (rel, path) in &files {
        let bytes = safe::read_stored_file(path)?.ok_or_else(|| {
            RunError::usage(format!(
                "{} disappeared while it was copied",
                path.display()
            ))
        })?;
        let dest = copy_root.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| RunError::io("cannot create", parent, &e))?;
        }
        safe::write_new_file(&dest, &bytes)?;
        safe::make_read_only(&dest);
        per.insert(rel.clone(), safe::sha256_hex(&bytes));
    }
    drop(held);
    let artifact_digest = aggregate(&per);

    let gens = super::generations(store, &frontier)?;
    if !force {
        for (_, name) in gens.iter().rev() {
            let dir = store.join(name);
            // A generation of either format is this tree only when its copy hashes to it (a
            // v1 snapshot has no `state/.small/` to hash).
            if safe::entry_type(&dir)? != safe::Entry::Dir {
                continue;
            }
            let same = tree_digests(&dir.join(STATE_DIR).join(SMALL_DIR))
                .map(|(agg, _)| agg == artifact_digest)
                .unwrap_or(false);
            if same {
                return Ok(SnapshotResult {
                    snapshot: load(store, name, false)?,
                    replaced: false,
                    unchanged: true,
                    warnings: Vec::new(),
                });
            }
        }
    }
    let (generation, name, dest, existing) = super::destination(store, &frontier, &gens, force)?;
    let git = git_info(root, &[store]);
    let meta = Meta {
        replay_id: frontier.clone(),
        artifact_digest,
        artifact_digests: per,
        created_at: now_rfc3339(),
        git_sha: git.sha,
        git_dirty: git.dirty,
        branch: git.branch,
        cli_version: TOOL_VERSION.to_string(),
        workspace_kind: WORKSPACE_KIND.to_string(),
        source_dir: root.display().to_string(),
        files: BTreeMap::new(),
        generation: (generation > 1).then_some(generation),
    };
    let mut text = serde_json::to_string_pretty(&meta)
        .map_err(|e| RunError::usage(format!("cannot encode {META_FILE}: {e}")))?;
    text.push('\n');
    staged.add_file(META_FILE, text.as_bytes())?;
    staged.publish(&dest, force).map_err(|e| {
        if !force && safe::entry_type(&dest).ok() == Some(safe::Entry::Dir) {
            super::exists_error(&frontier, &dest)
        } else {
            e
        }
    })?;
    let summary = state.handoff.clone().unwrap_or_default();
    let mut warnings = Vec::new();
    let entry = index::IndexEntry {
        replay_id: frontier.clone(),
        timestamp: meta.created_at.clone(),
        git_sha: meta.git_sha.clone(),
        summary: summary.clone(),
        previous_replay_id: String::new(),
        reason: "snapshot".into(),
    };
    if let Err(e) = index::append(store, entry) {
        warnings.push(format!("the run index was not updated: {}", e.message));
    }
    let artifacts = artifact_names(&meta);
    Ok(SnapshotResult {
        snapshot: Snapshot {
            replay_id: frontier,
            generation,
            name,
            dir: dest,
            meta,
            artifacts,
            summary,
            next_steps: Vec::new(),
            problems: Vec::new(),
        },
        replaced: existing == safe::Entry::Dir,
        unchanged: false,
        warnings,
    })
}

/// The files a 2.0.0 snapshot holds, as paths inside the snapshot directory.
fn artifact_names(meta: &Meta) -> Vec<String> {
    meta.artifact_digests
        .keys()
        .map(|p| format!("{STATE_DIR}/{SMALL_DIR}/{p}"))
        .collect()
}

/// Load the 2.0.0 snapshot `<store>/<name>` (its `meta.json` already read by the caller
/// when given). With `verify`, every file is hashed and compared with its recorded digest;
/// the summary is the latest handoff of the copied tree.
pub fn load(store: &Path, name: &str, verify: bool) -> Result<Snapshot, RunError> {
    let dir = store.join(name);
    let (id, generation) = parse_snapshot_name(name).ok_or_else(|| {
        RunError::usage(format!("`{}` is not a snapshot name", name.escape_debug()))
    })?;
    let meta_path = dir.join(META_FILE);
    let mut problems = Vec::new();
    let meta = match safe::read_stored_file(&meta_path)? {
        None => {
            problems.push(format!("{META_FILE} is missing"));
            Meta::default()
        }
        Some(bytes) => serde_json::from_slice::<Meta>(&bytes).map_err(|e| {
            RunError::invalid(format!(
                "snapshot {} is damaged: {}:{}:{}: {e}",
                short_id(name, 16),
                meta_path.display(),
                e.line(),
                e.column()
            ))
        })?,
    };
    let mut meta = meta;
    if meta.replay_id.is_empty() {
        meta.replay_id = id.to_string();
    }
    let state = dir.join(STATE_DIR);
    if verify {
        let v = compare(id, name, &meta, &state.join(SMALL_DIR))?;
        problems.extend(
            v.mismatches
                .iter()
                .map(|m| format!("{SMALL_DIR}/{}: {}", m.filename, m.reason.as_str())),
        );
        if v.status == digest::VerifyStatus::Mismatch && v.mismatches.is_empty() {
            problems.push("the aggregate digest differs".into());
        }
        if v.status == digest::VerifyStatus::Unverifiable {
            problems.push("meta.json records no digests".into());
        }
    }
    let checked = crate::v2::check(&state, &state.join(SMALL_DIR));
    Ok(Snapshot {
        replay_id: id.to_ascii_lowercase(),
        generation,
        name: name.to_string(),
        dir,
        artifacts: artifact_names(&meta),
        meta,
        summary: checked.state.handoff.unwrap_or_default(),
        next_steps: Vec::new(),
        problems,
    })
}

/// Verify an opened 2.0.0 snapshot: its copied tree against the digests `meta.json`
/// recorded.
pub fn verify(o: &digest::Opened) -> Result<digest::SnapshotVerification, RunError> {
    compare(
        &o.id,
        &o.name,
        &o.meta,
        &o.dir.join(STATE_DIR).join(SMALL_DIR),
    )
}

/// Compare the copy under `copy` with the digests `meta` recorded.
pub fn compare(
    replay_id: &str,
    name: &str,
    meta: &Meta,
    copy: &Path,
) -> Result<digest::SnapshotVerification, RunError> {
    let (agg, per) = tree_digests(copy)?;
    let mut v = digest::compare(replay_id, name, meta, per);
    // The aggregate is the tree's (every path), not the v1 artifact list's.
    v.computed_digest = agg.clone();
    if let Some(r) = &v.recorded_digest {
        let ok = *r == agg && v.mismatches.is_empty();
        v.status = if ok {
            digest::VerifyStatus::Ok
        } else {
            digest::VerifyStatus::Mismatch
        };
        v.matches = ok;
    }
    Ok(v)
}

/// What a 2.0.0 checkout did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckoutReport {
    #[serde(rename = "replayId")]
    pub replay_id: String,
    pub snapshot: String,
    pub profile: &'static str,
    /// Paths (inside `.small/`) written or changed by the restore.
    pub restored: Vec<String>,
    /// Live paths the snapshot does not hold: removed with the old tree.
    pub removed: Vec<String>,
    /// Live files no snapshot of the store holds that were dropped (only with `force`).
    pub discarded: Vec<String>,
    /// Where the replaced tree was kept (only when something was discarded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// The `.small/` directory restored into (for the human report).
    #[serde(skip)]
    pub small_dir: String,
}

/// (path under `.small/`, sha256) of every file a readable snapshot of the store recorded in
/// its `meta.json` (a v1 snapshot's artifacts sit at the top of `.small/`, as they would in
/// a tree).
fn stored_hashes(store: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok((names, _)) = super::scan_store(store) else {
        return out;
    };
    for name in names {
        let dir = store.join(&name);
        if safe::entry_type(&dir).ok() != Some(safe::Entry::Dir) {
            continue;
        }
        if let Ok(Some(bytes)) = safe::read_stored_file(&dir.join(META_FILE)) {
            if let Ok(m) = serde_json::from_slice::<Meta>(&bytes) {
                out.extend(m.artifact_digests);
            }
        }
    }
    out
}

/// Replace the live 2.0.0 tree of `root` with the 2.0.0 snapshot `<store>/<name>` (the
/// caller found both to be 2.0.0). The snapshot must match its digests (always: a damaged
/// snapshot is never restored); a live file that no snapshot of the store holds is dropped
/// only with `force` (the replaced tree is then kept under `.small-cache/checkout/`). The new
/// tree is staged in `.small-cache/`, checked against the snapshot's digests, and swapped in
/// with one rename.
pub fn restore(
    root: &Path,
    store: &Path,
    name: &str,
    force: bool,
) -> Result<CheckoutReport, RunError> {
    let snap = load(store, name, true)?;
    if !snap.problems.is_empty() {
        return Err(RunError::invalid(format!(
            "snapshot {} does not match the digests recorded when it was taken ({}); refusing to restore it",
            super::short_name(name, 16),
            snap.problems.join("; ")
        ))
        .with_help("`small run verify` shows the differences; take a new snapshot instead"));
    }
    let small = super::require_small_dir(root)?;
    let cache = root.join(CACHE_DIR);
    match safe::entry_type(&cache)? {
        safe::Entry::Missing | safe::Entry::Dir => {}
        _ => {
            return Err(RunError::invalid(format!(
                "{} is not a directory (a link?); refusing to stage a checkout there",
                cache.display()
            )))
        }
    }
    let held = lock(root)?;
    let (live_agg, live) = tree_digests(&small)?;
    let mut report = CheckoutReport {
        replay_id: snap.replay_id.clone(),
        snapshot: snap.name.clone(),
        profile: "2.0.0",
        small_dir: root.join(SMALL_DIR).display().to_string(),
        ..Default::default()
    };
    if live_agg == snap.meta.artifact_digest {
        return Ok(report);
    }
    let wanted = &snap.meta.artifact_digests;
    let mut saved: Option<Vec<(String, String)>> = None;
    for (path, sha) in &live {
        match wanted.get(path) {
            Some(w) if w == sha => continue,
            Some(_) => {}
            None => report.removed.push(path.clone()),
        }
        let held_somewhere = saved
            .get_or_insert_with(|| stored_hashes(store))
            .iter()
            .any(|(p, h)| p == path && h == sha);
        if !held_somewhere {
            report.discarded.push(path.clone());
        }
    }
    for (path, sha) in wanted {
        if live.get(path) != Some(sha) {
            report.restored.push(path.clone());
        }
    }
    if !report.discarded.is_empty() && !force {
        let shown: Vec<String> = report
            .discarded
            .iter()
            .take(10)
            .map(|p| format!("{SMALL_DIR}/{p}"))
            .collect();
        let more = report.discarded.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        return Err(RunError::invalid(format!(
            "checkout would drop files of .small/ that no snapshot holds: {}{more}",
            shown.join(", ")
        ))
        .with_help("save them with `small run snapshot` first, or pass --force to drop them (the replaced tree is kept in .small-cache/checkout/)"));
    }
    // Stage the copy inside the workspace (same file system: the swap is a rename).
    let parent = cache.join("checkout");
    std::fs::create_dir_all(&parent).map_err(|e| RunError::io("cannot create", &parent, &e))?;
    if safe::entry_type(&parent)? != safe::Entry::Dir {
        return Err(RunError::invalid(format!(
            "{} is not a directory; refusing to stage a checkout there",
            parent.display()
        )));
    }
    let staging = tempfile::Builder::new()
        .prefix("checkout-")
        .tempdir_in(&parent)
        .map_err(|e| RunError::io("cannot create a temporary directory in", &parent, &e))?;
    let prepared = staging.path().join("new.small");
    let source = snap.dir.join(STATE_DIR).join(SMALL_DIR);
    for (rel, path) in walk(&source)? {
        let bytes = safe::read_stored_file(&path)?.ok_or_else(|| {
            RunError::usage(format!("{} disappeared while it was read", path.display()))
        })?;
        let dest = prepared.join(&rel);
        if let Some(p) = dest.parent() {
            std::fs::create_dir_all(p).map_err(|e| RunError::io("cannot create", p, &e))?;
        }
        safe::write_new_file(&dest, &bytes)?;
    }
    let (agg, _) = tree_digests(&prepared)?;
    if agg != snap.meta.artifact_digest {
        return Err(RunError::invalid(
            "the staged copy of the snapshot does not match its recorded digest (the store changed while it was read); nothing was restored",
        ));
    }
    safe::sync_dir(&prepared);
    let old = staging.path().join("old.small");
    swap_in(&prepared, &small, &old)?;
    safe::sync_dir(root);
    drop(held);
    if report.discarded.is_empty() {
        drop(staging);
    } else {
        let kept = staging.keep();
        report.backup = Some(kept.join("old.small").display().to_string());
    }
    Ok(report)
}

/// Put the directory `new` in place of `live`, leaving the old tree at `old`: one atomic
/// exchange where the system has it (Linux `renameat2(RENAME_EXCHANGE)`: `.small/` is never
/// missing), else two renames (the old tree is put back if the second fails).
fn swap_in(new: &Path, live: &Path, old: &Path) -> Result<(), RunError> {
    if exchange(new, live).is_ok() {
        return std::fs::rename(new, old).map_err(|e| RunError::io("cannot move aside", new, &e));
    }
    std::fs::rename(live, old).map_err(|e| RunError::io("cannot move aside", live, &e))?;
    if let Err(e) = std::fs::rename(new, live) {
        let _ = std::fs::rename(old, live);
        return Err(RunError::io("cannot move the restored tree to", live, &e));
    }
    Ok(())
}

/// Swap two paths in one step (`renameat2` with `RENAME_EXCHANGE`, as a system call: musl
/// has no wrapper for it).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}
