//! Comparing two runs: unified diffs of intent, constraints, plan and handoff, and a summary
//! of progress (entry counts, tasks newly completed, newest timestamps), with the full
//! progress diff on request. Either side may be a snapshot or the live workspace.

use crate::spec::model::TaskStatus;
use std::path::{Path, PathBuf};

use serde::Serialize;
use similar::{ChangeTag, TextDiff};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::spec::consts::ArtifactKind;
use crate::yaml;

use super::{read_artifact, safe, RunError, Snapshot};

/// One side of a comparison.
#[derive(Debug, Clone)]
pub enum DiffSide {
    Snapshot(Box<Snapshot>),
    /// The live workspace: the `.small/` directory, and whether it holds a 2.0.0 tree (its
    /// profile, as the back end found it).
    Live {
        dir: PathBuf,
        v2: bool,
    },
}

impl DiffSide {
    /// The directory holding this side's `.small/`, the side being a 2.0.0 tree (whose
    /// snapshots keep it under `state/`).
    fn tree_root(&self) -> PathBuf {
        match self {
            DiffSide::Snapshot(s) => s.dir.join(super::v2::STATE_DIR),
            DiffSide::Live { dir, .. } => dir.parent().map(Path::to_path_buf).unwrap_or_default(),
        }
    }
    /// The label used in output: the snapshot's address (`<replayId>` or `<replayId>~N`), or
    /// `live`.
    pub fn label(&self) -> String {
        match self {
            DiffSide::Snapshot(s) => s.name.clone(),
            DiffSide::Live { .. } => "live".to_string(),
        }
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, RunError> {
        match self {
            DiffSide::Snapshot(s) => read_artifact(s, name),
            DiffSide::Live { dir, .. } => safe::read_live_file(&dir.join(name)),
        }
    }

    fn describe(&self, name: &str) -> String {
        match self {
            DiffSide::Snapshot(s) => {
                format!("{name} in snapshot {}", super::short_name(&s.name, 16))
            }
            DiffSide::Live { .. } => crate::spec::consts::small_rel(name),
        }
    }
}

/// The change to one artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    pub name: String,
    pub changed: bool,
    pub added: usize,
    pub removed: usize,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diff: String,
}

/// What changed in progress.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProgressDiff {
    pub entries_before: usize,
    pub entries_after: usize,
    pub entry_delta: i64,
    /// Task ids with a `completed` entry after, and none before (sorted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub completed_delta: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub latest_before: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub latest_after: String,
    /// The unified diff of progress.small.yml (only with `full`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diff: String,
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunDiff {
    pub from: String,
    pub to: String,
    pub files: Vec<FileDiff>,
    pub progress: ProgressDiff,
    /// Whether the complete progress diff was asked for (`--full`).
    #[serde(skip)]
    pub full: bool,
}

impl RunDiff {
    /// Does anything differ between the two sides (progress included)?
    pub fn has_changes(&self) -> bool {
        self.files.iter().any(|f| f.changed)
            || self.progress.entry_delta != 0
            || !self.progress.diff.is_empty()
            || self.progress.latest_before != self.progress.latest_after
    }
}

/// Artifacts compared line by line (progress is summarised instead).
const DIFFED: [ArtifactKind; 4] = [
    ArtifactKind::Intent,
    ArtifactKind::Constraints,
    ArtifactKind::Plan,
    ArtifactKind::Handoff,
];

/// Compare two v1 runs (the caller has found both sides to be v1). With `full`, the
/// progress diff is included too.
pub fn diff_runs(from: &DiffSide, to: &DiffSide, full: bool) -> Result<RunDiff, RunError> {
    let mut files = Vec::new();
    for kind in DIFFED {
        let name = kind.file_name();
        let a = from.read(name)?;
        let b = to.read(name)?;
        if a.is_none() && b.is_none() {
            continue;
        }
        files.push(unified(name, a.as_deref(), b.as_deref()));
    }
    let progress = diff_progress(from, to, full)?;
    Ok(RunDiff {
        from: from.label(),
        to: to.label(),
        files,
        progress,
        full,
    })
}

/// A unified diff of one file; a missing side is `/dev/null`, as in git.
pub fn unified(name: &str, a: Option<&[u8]>, b: Option<&[u8]>) -> FileDiff {
    if a == b {
        return FileDiff {
            name: name.to_string(),
            changed: false,
            added: 0,
            removed: 0,
            diff: String::new(),
        };
    }
    let old = String::from_utf8_lossy(a.unwrap_or_default());
    let new = String::from_utf8_lossy(b.unwrap_or_default());
    let td = TextDiff::from_lines(old.as_ref(), new.as_ref());
    let (mut added, mut removed) = (0, 0);
    for change in td.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let old_label = if a.is_some() {
        format!("a/{name}")
    } else {
        "/dev/null".to_string()
    };
    let new_label = if b.is_some() {
        format!("b/{name}")
    } else {
        "/dev/null".to_string()
    };
    let diff = td
        .unified_diff()
        .context_radius(3)
        .header(&old_label, &new_label)
        .to_string();
    FileDiff {
        name: name.to_string(),
        changed: true,
        added,
        removed,
        diff,
    }
}

struct ProgressFacts {
    entries: usize,
    completed: Vec<String>,
    latest: String,
}

fn progress_facts(side: &DiffSide, bytes: Option<&[u8]>) -> Result<ProgressFacts, RunError> {
    let empty = ProgressFacts {
        entries: 0,
        completed: Vec::new(),
        latest: String::new(),
    };
    let Some(bytes) = bytes else {
        return Ok(empty);
    };
    let label = side.describe(ArtifactKind::Progress.file_name());
    let yaml_error = |e: yaml::YamlError| {
        RunError::invalid(format!(
            "{label}:{}:{}: {}",
            e.pos.line, e.pos.column, e.message
        ))
    };
    let limits = yaml::Limits::default();
    let Ok(text) = std::str::from_utf8(bytes) else {
        // Not UTF-8: the loader says where.
        return match yaml::parse_bytes(bytes, &limits) {
            Err(e) => Err(yaml_error(e)),
            Ok(_) => Err(RunError::invalid(format!("{label} is not valid UTF-8"))),
        };
    };
    let mut entries = 0usize;
    let mut completed = Vec::new();
    let mut latest: Option<(OffsetDateTime, String)> = None;
    let mut first_unparsed = String::new();
    // Streamed entry by entry: a log of any size is summarised in bounded memory.
    yaml::parse_streaming(text, &limits, "entries", &mut |_, item| {
        entries += 1;
        let text = |k: &str| {
            item.get(k)
                .and_then(|n| n.as_str())
                .map(str::trim)
                .unwrap_or("")
        };
        if text("status") == TaskStatus::Completed.as_str() && !text("task_id").is_empty() {
            completed.push(text("task_id").to_string());
        }
        let ts = text("timestamp");
        if ts.is_empty() {
            return;
        }
        match OffsetDateTime::parse(ts, &Rfc3339) {
            Ok(t) => {
                if latest.as_ref().is_none_or(|(l, _)| t > *l) {
                    latest = Some((t, ts.to_string()));
                }
            }
            Err(_) if first_unparsed.is_empty() => first_unparsed = ts.to_string(),
            Err(_) => {}
        }
    })
    .map_err(yaml_error)?;
    completed.sort();
    completed.dedup();
    Ok(ProgressFacts {
        entries,
        completed,
        latest: latest.map(|(_, s)| s).unwrap_or(first_unparsed),
    })
}

fn diff_progress(from: &DiffSide, to: &DiffSide, full: bool) -> Result<ProgressDiff, RunError> {
    let name = ArtifactKind::Progress.file_name();
    let a = from.read(name)?;
    let b = to.read(name)?;
    let before = progress_facts(from, a.as_deref())?;
    let after = progress_facts(to, b.as_deref())?;
    let completed_delta = after
        .completed
        .iter()
        .filter(|t| !before.completed.contains(t))
        .cloned()
        .collect();
    let diff = if full {
        unified(name, a.as_deref(), b.as_deref()).diff
    } else {
        String::new()
    };
    Ok(ProgressDiff {
        entries_before: before.entries,
        entries_after: after.entries,
        entry_delta: after.entries as i64 - before.entries as i64,
        completed_delta,
        latest_before: before.latest,
        latest_after: after.latest,
        diff,
    })
}

/// The live side for a workspace root.
pub fn live_side(root: &Path, v2: bool) -> Result<DiffSide, RunError> {
    Ok(DiffSide::Live {
        dir: super::require_small_dir(root)?,
        v2,
    })
}

/// The comparison of two 2.0.0 trees: both labels (the snapshot addresses, or `live`, as for
/// v1) and what their states say (docs/runs.md).
#[derive(Debug, Clone, Serialize)]
pub struct V2RunDiff {
    pub from: String,
    pub to: String,
    pub profile: &'static str,
    #[serde(flatten)]
    pub state: crate::v2::inspect::StateDiff,
}

/// A comparison of two v1 runs or of two 2.0.0 trees.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum AnyDiff {
    V1(RunDiff),
    V2(Box<V2RunDiff>),
}

/// Compare two 2.0.0 trees (the caller has found both sides to be 2.0.0) by their states.
pub fn diff_trees(from: &DiffSide, to: &DiffSide) -> Result<V2RunDiff, RunError> {
    let a = open_v2(from)?;
    let b = open_v2(to)?;
    Ok(V2RunDiff {
        from: from.label(),
        to: to.label(),
        profile: crate::v2::PROFILE_VERSION,
        state: crate::v2::inspect::diff_states(&a, &b),
    })
}

fn open_v2(side: &DiffSide) -> Result<crate::v2::read::Opened, RunError> {
    let root = side.tree_root();
    let small = root.join(crate::spec::consts::SMALL_DIR);
    crate::v2::read::open(&root, &small).map_err(|problems| {
        let first = problems
            .first()
            .map(|d| format!(" (first: {}: {})", d.code, d.message))
            .unwrap_or_default();
        RunError::invalid(format!(
            "{} has damaged 2.0.0 records: {} problem(s){first}",
            side.label(),
            problems.len()
        ))
        .with_help(match side {
            DiffSide::Live { .. } => "`small check --strict` names every problem",
            DiffSide::Snapshot(_) => "`small run verify` checks the snapshot against its digests",
        })
    })
}
