//! `run show`: one snapshot, its metadata, files and integrity.

use std::path::Path;

use serde::Serialize;

use crate::history::runs::{self, Meta, RunError};
use crate::ops::report::{or_dash, outln, Report};
use crate::ops::Stored;

/// A snapshot shown: the `run show --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct RunShown {
    #[serde(rename = "replayId")]
    pub replay_id: String,
    pub artifact_digest: String,
    pub snapshot: String,
    pub generation: u32,
    pub meta: Meta,
    /// The paths of its metadata file and its files.
    pub artifacts: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub summary: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub next_steps: Vec<String>,
    pub dir: String,
    pub intact: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The stored file names (the report lists them).
    #[serde(skip)]
    files: Vec<String>,
}

/// The snapshot `query` names in `store`.
pub fn show(store: &Path, query: &str) -> Result<RunShown, RunError> {
    let s = runs::find(store, query, &Stored)?;
    let mut artifacts = vec![s.dir.join(runs::META_FILE).display().to_string()];
    artifacts.extend(
        s.artifacts
            .iter()
            .map(|a| s.dir.join(a).display().to_string()),
    );
    Ok(RunShown {
        replay_id: s.replay_id,
        artifact_digest: s.meta.artifact_digest.clone(),
        snapshot: s.name,
        generation: s.generation,
        meta: s.meta,
        artifacts,
        summary: s.summary,
        next_steps: s.next_steps,
        dir: s.dir.display().to_string(),
        intact: s.problems.is_empty(),
        problems: s.problems,
        files: s.artifacts,
    })
}

impl RunShown {
    /// The refusal a damaged snapshot carries (the command exits 1 after showing it).
    pub fn refusal(&self) -> Option<RunError> {
        (!self.problems.is_empty()).then(|| {
            RunError::invalid(format!(
                "snapshot {} is damaged: {}",
                runs::short_name(&self.snapshot, 16),
                self.problems.join("; ")
            ))
        })
    }
}

impl Report for RunShown {
    /// The snapshot's replay ID, when and where it was taken, its files, whether they are
    /// intact, and the handoff's summary and next steps.
    fn text(&self) -> String {
        let mut o = String::new();
        let m = &self.meta;
        outln!(o, "replayId:       {}", self.replay_id);
        if self.generation > 1 {
            outln!(
                o,
                "generation:     {} (address {})",
                self.generation,
                self.snapshot
            );
        }
        outln!(o, "created at:     {}", or_dash(&m.created_at));
        outln!(o, "snapshot dir:   {}", self.dir);
        outln!(o, "tool version:   {}", or_dash(&m.cli_version));
        outln!(o, "workspace kind: {}", or_dash(&m.workspace_kind));
        if !m.source_dir.is_empty() {
            outln!(o, "source dir:     {}", m.source_dir);
        }
        if m.git_sha.is_empty() && m.branch.is_empty() {
            outln!(o, "git:            -");
        } else {
            let dirty = if m.git_dirty {
                ", uncommitted changes"
            } else {
                ", clean"
            };
            let branch = if m.branch.is_empty() {
                String::new()
            } else {
                format!(" on {}", m.branch)
            };
            outln!(
                o,
                "git:            {}{branch}{dirty}",
                or_dash(&runs::short_id(&m.git_sha, 12))
            );
        }
        outln!(o, "files:");
        for a in &self.files {
            outln!(o, "  - {a}");
        }
        if !self.problems.is_empty() {
            outln!(o, "integrity:      DAMAGED");
            for p in &self.problems {
                outln!(o, "  - {p}");
            }
        } else if m.files.is_empty() {
            outln!(
                o,
                "integrity:      not recorded (snapshot has no file hashes)"
            );
        } else {
            outln!(
                o,
                "integrity:      intact (all {} files match their recorded hashes)",
                m.files.len()
            );
        }
        outln!(o, "summary:        {}", or_dash(&self.summary));
        if self.next_steps.is_empty() {
            outln!(o, "next steps:     none");
        } else {
            outln!(o, "next steps:");
            for step in &self.next_steps {
                outln!(o, "  - {step}");
            }
        }
        o
    }
}
