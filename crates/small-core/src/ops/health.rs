//! Health of one or many workspaces at a glance: the strict check's verdict, the current run,
//! the digest of the live artifacts, the run snapshots and whether the newest is stale, and the
//! plan summary. Read-only: the gate cache is neither read nor written, nothing is created.
//!
//! Each workspace is inspected on its own; one that is missing or unreadable is reported as
//! such, never failing the others. Workspaces are inspected in parallel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::fsio;
use crate::gates::check::{self, GateOptions};
use crate::gates::schemas::SchemaSet;
use crate::history::runs::{self, digest};
use crate::ops::gate::{self, compact_line};
use crate::ops::Stored;
use crate::spec::consts::SMALL_DIR;
use crate::workspace::Scope;

/// How many next actionable tasks a plan summary lists.
pub const NEXT_ACTIONABLE: usize = 5;

/// The strict verdict of one workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StrictStatus {
    /// `check --strict` passes.
    Ok,
    /// `check --strict` finds the workspace invalid.
    Failed,
    /// There is no `.small/` directory (or no directory at all).
    Missing,
    /// The workspace could not be inspected (not a directory, unreadable, a linked `.small/`).
    Error,
}

impl StrictStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StrictStatus::Ok => "ok",
            StrictStatus::Failed => "failed",
            StrictStatus::Missing => "missing",
            StrictStatus::Error => "error",
        }
    }
}

/// The plan summary of a workspace (the reference's keys).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HealthPlan {
    pub total_tasks: usize,
    pub tasks_by_status: BTreeMap<String, usize>,
    pub next_actionable: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_incomplete: Option<String>,
}

/// The health of one workspace (documented in docs/json-output.md).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct WorkspaceHealth {
    /// The workspace root (a `.small` argument is reported as its parent).
    pub path: String,
    pub small_dir_exists: bool,
    pub strict_status: StrictStatus,
    /// The strict check's errors, one line each (`file:line:col: error[CODE]: message`), or
    /// why the workspace could not be inspected.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub strict_errors: Vec<String>,
    /// The current run: `run.replay_id` of workspace.small.yml, else the handoff's replayId.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_id: Option<String>,
    /// The aggregate digest of the live artifacts, as a snapshot taken now would record it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_digest: Option<String>,
    pub snapshot_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_snapshot_replay_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_snapshot_artifact_digest: Option<String>,
    /// The live artifacts differ from what the newest snapshot recorded.
    pub latest_snapshot_stale: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<HealthPlan>,
}

impl WorkspaceHealth {
    fn new(path: &Path) -> WorkspaceHealth {
        WorkspaceHealth {
            path: path.display().to_string(),
            small_dir_exists: false,
            strict_status: StrictStatus::Error,
            strict_errors: Vec::new(),
            replay_id: None,
            artifact_digest: None,
            snapshot_count: 0,
            latest_snapshot_replay_id: None,
            latest_snapshot_artifact_digest: None,
            latest_snapshot_stale: false,
            plan: None,
        }
    }

    /// Whether the workspace passes (`ok`).
    pub fn healthy(&self) -> bool {
        self.strict_status == StrictStatus::Ok
    }

    /// The task to work on next, for tables: the first actionable, else the first incomplete.
    pub fn next_task(&self) -> Option<&str> {
        let p = self.plan.as_ref()?;
        p.next_actionable
            .first()
            .or(p.first_incomplete.as_ref())
            .map(String::as_str)
    }

    fn problem(&mut self, status: StrictStatus, message: String) {
        if self.strict_status == StrictStatus::Ok {
            self.strict_status = status;
        }
        self.strict_errors.push(message);
    }
}

/// Options of [`inspect`] (by default: every workspace kind, the default store, the built-in
/// schemas, one thread per core).
#[derive(Debug, Clone)]
pub struct HealthOptions {
    /// The run store, relative to each workspace unless absolute (default `.small-runs`).
    pub store: Option<PathBuf>,
    /// Directory of JSON Schemas instead of the built-in ones.
    pub spec_dir: Option<PathBuf>,
    /// Workspace kinds accepted; another kind is reported as `error`.
    pub scope: Scope,
    /// Workspaces inspected at once (0: one per available core).
    pub threads: usize,
}

impl Default for HealthOptions {
    fn default() -> Self {
        HealthOptions {
            store: None,
            spec_dir: None,
            scope: Scope::Any,
            threads: 0,
        }
    }
}

/// The health of several workspaces: the `health --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct HealthReport {
    pub workspaces: Vec<WorkspaceHealth>,
}

impl HealthReport {
    /// Whether every workspace is healthy.
    pub fn all_healthy(&self) -> bool {
        self.workspaces.iter().all(WorkspaceHealth::healthy)
    }
}

/// The health of every directory in `dirs`, as [`inspect`] finds it.
pub fn report(dirs: &[PathBuf], opts: &HealthOptions) -> HealthReport {
    HealthReport {
        workspaces: inspect(dirs, opts),
    }
}

/// The first 8 characters of a digest or ID, `...` marking a cut; `-` for none.
fn short(s: Option<&str>) -> String {
    match s {
        Some(s) if s.chars().count() > 8 => format!("{}...", s.chars().take(8).collect::<String>()),
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "-".to_string(),
    }
}

impl crate::ops::report::Report for HealthReport {
    /// A table, one workspace a row (strict verdict, snapshots, whether the newest is stale,
    /// replay ID, artifact digest, next task, path), then each failing workspace's errors.
    fn text(&self) -> String {
        use crate::ops::report::{outln, pad};
        let header = [
            "strict",
            "snapshots",
            "stale",
            "replayId",
            "artifact_digest",
            "next_task",
            "path",
        ];
        let rows: Vec<[String; 7]> = self
            .workspaces
            .iter()
            .map(|h| {
                [
                    h.strict_status.as_str().to_string(),
                    h.snapshot_count.to_string(),
                    h.latest_snapshot_stale.to_string(),
                    short(h.replay_id.as_deref()),
                    short(h.artifact_digest.as_deref()),
                    h.next_task().unwrap_or("-").to_string(),
                    h.path.clone(),
                ]
            })
            .collect();
        let mut width = header.map(str::len);
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut o = String::new();
        let line = |o: &mut String, cells: &[&str]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i + 1 == cells.len() {
                    s.push_str(c);
                } else {
                    s.push_str(&pad(c, width[i]));
                    s.push_str("  ");
                }
            }
            outln!(o, "{}", s.trim_end());
        };
        line(&mut o, &header);
        for r in &rows {
            let cells: Vec<&str> = r.iter().map(String::as_str).collect();
            line(&mut o, &cells);
        }
        for h in self
            .workspaces
            .iter()
            .filter(|h| !h.strict_errors.is_empty())
        {
            outln!(o);
            outln!(o, "{} ({}):", h.path, h.strict_status.as_str());
            for e in &h.strict_errors {
                outln!(o, "  - {e}");
            }
        }
        o
    }
}

/// Inspect every directory in `dirs` (each a workspace root or its `.small` directory), in
/// parallel; the results are in the order given, duplicates kept.
pub fn inspect(dirs: &[PathBuf], opts: &HealthOptions) -> Vec<WorkspaceHealth> {
    let schemas = SchemaSet::resolve(opts.spec_dir.as_deref()).map_err(|e| e.to_string());
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, dirs.len().max(1));
    if threads == 1 {
        return dirs
            .iter()
            .map(|d| inspect_one(d, &schemas, opts))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<WorkspaceHealth>> = vec![None; dirs.len()];
    std::thread::scope(|scope| {
        let work = || {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(d) = dirs.get(i) else { break };
                done.push((i, inspect_one(d, &schemas, opts)));
            }
            done
        };
        let tasks: Vec<_> = (0..threads)
            .map(|_| crate::par::spawn(scope, work))
            .collect();
        for t in tasks {
            // A worker that panicked leaves its slots empty; they are inspected again below.
            if let Ok(done) = t.join() {
                for (i, h) in done {
                    slots[i] = Some(h);
                }
            }
        }
    });
    slots
        .into_iter()
        .zip(dirs)
        .map(|(h, d)| h.unwrap_or_else(|| inspect_one(d, &schemas, opts)))
        .collect()
}

/// Inspect one workspace.
pub fn inspect_one(
    dir: &Path,
    schemas: &Result<Arc<SchemaSet>, String>,
    opts: &HealthOptions,
) -> WorkspaceHealth {
    let root = crate::workspace::workspace_root(dir);
    let mut h = WorkspaceHealth::new(&root);
    let small = root.join(SMALL_DIR);
    match std::fs::symlink_metadata(&small) {
        Ok(m) if m.is_dir() => {}
        Ok(m) if m.file_type().is_symlink() => {
            h.strict_errors.push(format!(
                "{} is a symbolic link; small works only on a real {SMALL_DIR}/ directory",
                small.display()
            ));
            return h;
        }
        Ok(_) => {
            h.strict_errors
                .push(format!("{} is not a directory", small.display()));
            return h;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            h.strict_status = StrictStatus::Missing;
            h.strict_errors
                .push(format!("{SMALL_DIR}/ directory does not exist"));
            return h;
        }
        Err(e) => {
            h.strict_errors
                .push(format!("cannot inspect {}: {e}", small.display()));
            return h;
        }
    }
    h.small_dir_exists = true;

    h.strict_status = StrictStatus::Ok;
    if let Err(e) = runs::check_scope(&root, opts.scope) {
        h.problem(StrictStatus::Error, e.message);
    }
    crate::ops::Workspace::from_small_dir(small.clone())
        .backend()
        .health(&root, &small, schemas, &mut h);

    let store = runs::store_dir(&root, opts.store.as_deref());
    match runs::list(&store, &Stored) {
        Ok((snaps, warnings)) => {
            // A damaged snapshot is a problem of the workspace's history worth seeing here.
            for w in warnings {
                h.problem(StrictStatus::Error, format!("run store: {w}"));
            }
            h.snapshot_count = snaps.len();
            if let Some(latest) = snaps.first() {
                h.latest_snapshot_replay_id = Some(latest.name.clone());
                let recorded = recorded_aggregate(&latest.meta);
                h.latest_snapshot_stale = match (&recorded, &h.artifact_digest) {
                    (Some(r), Some(live)) => r != live,
                    _ => false,
                };
                h.latest_snapshot_artifact_digest = recorded;
            }
        }
        Err(e) => h.problem(
            StrictStatus::Error,
            format!("cannot read the run store: {}", e.message),
        ),
    }
    h
}

/// The strict verdict, current run, live digest and plan of a v1 workspace.
pub(super) fn v1_state(
    root: &Path,
    small: &Path,
    schemas: &Result<Arc<SchemaSet>, String>,
    h: &mut WorkspaceHealth,
) {
    match schemas {
        Err(e) => h.problem(StrictStatus::Error, format!("schemas: {e}")),
        Ok(schemas) => strict(root, schemas, h),
    }

    // The current run and the plan come from the project state, as status reports them.
    let st = crate::state::load_dir_v1(
        small,
        &crate::state::LoadOptions {
            recent: 0,
            audit: false,
        },
    );
    h.replay_id = st.run_replay_id.clone().or_else(|| {
        st.handoff
            .as_ref()
            .and_then(|ho| ho.replay_id.clone())
            .filter(|r| !r.is_empty())
    });

    match digest::live_digests(root) {
        Ok((aggregate, _)) => h.artifact_digest = Some(aggregate),
        Err(e) => h.problem(StrictStatus::Error, e.message),
    }

    if let Some(p) = crate::state::status::plan_status(&st, NEXT_ACTIONABLE) {
        h.plan = Some(HealthPlan {
            total_tasks: p.total_tasks,
            tasks_by_status: p.tasks_by_status,
            next_actionable: p.next_actionable,
            first_incomplete: p.first_incomplete,
        });
    }
}

/// A 2.0.0 workspace: the verdict of its strict check (every `V2-*` error, conflicts
/// included), the frontier as its current run (when the records and graph are sound), and the digest of its records (SHA-256 over
/// the sorted `path:sha256` lines of the records read).
pub(super) fn v2_strict(root: &Path, small: &Path, h: &mut WorkspaceHealth) {
    use sha2::{Digest, Sha256};
    let (c, files) = crate::v2::check_listed(root, small);
    let errors: Vec<String> = c
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(compact_line)
        .collect();
    // Without profile.json the tree names no project: it cannot be inspected (as the
    // reference says), rather than failed.
    let has_profile = files.iter().any(|f| f == ".small/profile.json");
    if !errors.is_empty() {
        let status = if !has_profile
            || c.diagnostics
                .iter()
                .any(|d| d.code == crate::workspace::CODE_IO)
        {
            StrictStatus::Error
        } else {
            StrictStatus::Failed
        };
        for e in errors {
            h.problem(status, e);
        }
    }
    // The frontier names the run only when the records and the graph are sound.
    let damaged = c
        .diagnostics
        .iter()
        .any(|d| d.is_error() && crate::v2::stage_of(&d.code) != crate::v2::Stage::State);
    if !damaged {
        h.replay_id = Some(c.state.frontier.clone()).filter(|f| !f.is_empty());
    }
    let mut lines: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let bytes = fsio::read_bounded(&root.join(f), crate::v2::MAX_RECORD_BYTES).ok()?;
            Some(format!("{f}:{}", hex::encode(Sha256::digest(&bytes))))
        })
        .collect();
    lines.sort();
    h.artifact_digest = Some(hex::encode(Sha256::digest(lines.join("\n").as_bytes())));
}

/// The aggregate digest a snapshot recorded: `artifact_digest`, else the one its per-file
/// digests give (our older snapshots record only `files`); `None` when it records none.
pub fn recorded_aggregate(meta: &runs::Meta) -> Option<String> {
    let a = meta.artifact_digest.trim();
    if !a.is_empty() {
        return Some(a.to_ascii_lowercase());
    }
    [&meta.artifact_digests, &meta.files]
        .into_iter()
        .find(|m| !m.is_empty())
        .map(digest::aggregate_digest)
}

/// `check --strict --workspace any`, read-only (no cache), one thread.
fn strict(root: &Path, schemas: &Arc<SchemaSet>, h: &mut WorkspaceHealth) {
    let loc = match gate::locate(Some(root)) {
        Ok(l) => l,
        Err(d) => return h.problem(StrictStatus::Error, compact_line(&d)),
    };
    let opts = GateOptions {
        strict: true,
        format_strict: false,
        scope: Scope::Any,
        since: None,
        cache: false,
        threads: 1,
    };
    let loaded = check::load(loc, Some(schemas), &opts);
    let r = check::run_check(&loaded, schemas, &opts);
    let errors: Vec<String> = r
        .diagnostics
        .iter()
        .filter(|(_, d)| d.is_error())
        .map(|(_, d)| compact_line(d))
        .collect();
    // An artifact that cannot be read or parsed cannot be judged: `error`, as the reference
    // says, not `failed`.
    let unreadable = r.diagnostics.iter().any(|(_, d)| {
        d.is_error()
            && matches!(
                d.code.as_str(),
                crate::workspace::CODE_YAML | crate::workspace::CODE_IO
            )
    });
    match r.exit_code {
        0 => {}
        1 if !unreadable => {
            h.strict_status = StrictStatus::Failed;
            h.strict_errors.extend(errors);
        }
        _ => {
            h.strict_status = StrictStatus::Error;
            h.strict_errors.extend(errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_of_missing_and_non_directories() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("file"), "x").unwrap();
        std::fs::create_dir(d.path().join("empty")).unwrap();
        std::fs::create_dir_all(d.path().join("bad/.small")).unwrap();
        let dirs = vec![
            d.path().join("empty"),
            d.path().join("nowhere"),
            d.path().join("file"),
            d.path().join("bad/.small"),
        ];
        let r = inspect(
            &dirs,
            &HealthOptions {
                threads: 2,
                ..Default::default()
            },
        );
        let got: Vec<StrictStatus> = r.iter().map(|h| h.strict_status).collect();
        assert_eq!(
            got,
            vec![
                StrictStatus::Missing,
                StrictStatus::Missing,
                StrictStatus::Error,
                // An empty .small/: the strict check fails (no artifacts).
                StrictStatus::Failed,
            ]
        );
        assert_eq!(r[3].path, d.path().join("bad").display().to_string());
        assert!(r[3].small_dir_exists && !r[3].strict_errors.is_empty());
        assert!(r.iter().all(|h| !h.healthy()));
    }
}
