//! `run snapshot`: save the live run into the run store, as a new generation when its state
//! differs from the newest snapshot of its replay ID.

use std::path::Path;

use serde::Serialize;

use crate::history::runs::{self, Meta, RunError};
use crate::ops::report::{outln, Report};

/// A snapshot taken: the `run snapshot --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshotted {
    #[serde(rename = "replayId")]
    pub replay_id: String,
    pub snapshot: String,
    pub generation: u32,
    pub dir: String,
    pub replaced: bool,
    pub unchanged: bool,
    pub artifacts: Vec<String>,
    pub meta: Meta,
    /// What went wrong besides (said besides the document).
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// The snapshot's directory as the report names it (relative to the workspace).
    #[serde(skip)]
    shown_dir: String,
}

/// A path for display: relative to the workspace root when it is inside it.
pub(crate) fn shown(root: &Path, p: &Path) -> String {
    match p.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => p.display().to_string(),
    }
}

/// Snapshot the workspace at `root` into `store` (`force`: replace the newest generation).
pub fn take(root: &Path, store: &Path, force: bool) -> Result<Snapshotted, RunError> {
    let res = super::snapshot(root, store, force)?;
    let s = res.snapshot;
    Ok(Snapshotted {
        shown_dir: shown(root, &s.dir),
        replay_id: s.replay_id,
        snapshot: s.name,
        generation: s.generation,
        dir: s.dir.display().to_string(),
        replaced: res.replaced,
        unchanged: res.unchanged,
        artifacts: s.artifacts,
        meta: s.meta,
        warnings: res.warnings,
    })
}

impl Report for Snapshotted {
    /// What was saved (or that nothing was), where, and the run's git commit.
    fn text(&self) -> String {
        let mut o = String::new();
        let short = runs::short_name(&self.snapshot, 16);
        if self.unchanged {
            outln!(
                o,
                "Snapshot {short} already holds this state of the run; nothing written"
            );
            outln!(o, "snapshot: {}", self.snapshot);
            return o;
        }
        let verb = if self.replaced {
            "Replaced snapshot"
        } else {
            "Saved snapshot"
        };
        outln!(o, "{verb} of run {short} in {}", self.shown_dir);
        if self.generation > 1 {
            outln!(
                o,
                "generation {} of this replay ID (runs with the same intent, plan and constraints share it); address it as {short}",
                self.generation
            );
        }
        outln!(o, "replayId: {}", self.replay_id);
        outln!(o, "snapshot: {}", self.snapshot);
        if self.meta.workspace_kind == runs::v2::WORKSPACE_KIND {
            outln!(
                o,
                "files:    {} (the whole .small/ tree, in {}/.small/)",
                self.artifacts.len(),
                runs::v2::STATE_DIR
            );
        } else {
            outln!(o, "files:    {}", self.artifacts.join(", "));
        }
        if !self.meta.git_sha.is_empty() {
            let dirty = if self.meta.git_dirty {
                " (uncommitted changes)"
            } else {
                ""
            };
            outln!(
                o,
                "git:      {}{dirty}",
                runs::short_id(&self.meta.git_sha, 12)
            );
        }
        o
    }
}
