//! `run list`: the snapshots in a run store, newest first, the live run marked.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::history::runs::{self, RunError};
use crate::ops::report::{outln, pad, Report};
use crate::ops::Stored;

/// One snapshot as `run list --json` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RunItem {
    pub created_at: String,
    #[serde(rename = "replayId")]
    pub replay_id: String,
    /// The snapshot's name: `<replayId>` or `<replayId>~N`.
    pub snapshot: String,
    pub generation: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub summary: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub git_sha: String,
    pub git_dirty: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub branch: String,
    /// The run the live handoff names (the newest generation of its replay ID).
    pub current: bool,
}

/// The run history: the `run list --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct RunList {
    pub runs: Vec<RunItem>,
    /// What could not be read in the store (said besides the document).
    #[serde(skip)]
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub store: PathBuf,
}

/// The snapshots in `store` of the workspace at `root`, newest first, at most `limit` (0:
/// all).
pub fn list(root: &Path, store: &Path, limit: usize) -> Result<RunList, RunError> {
    let (mut snaps, warnings) = runs::list(store, &Stored)?;
    let live = runs::live_replay_id(root).unwrap_or_default();
    let current = snaps
        .iter()
        .filter(|s| s.replay_id.eq_ignore_ascii_case(&live))
        .max_by_key(|s| s.generation)
        .map(|s| s.name.clone())
        .unwrap_or_default();
    if limit > 0 {
        snaps.truncate(limit);
    }
    let runs = snaps
        .into_iter()
        .map(|s| RunItem {
            current: !current.is_empty() && s.name == current,
            created_at: s.meta.created_at,
            replay_id: s.replay_id,
            snapshot: s.name,
            generation: s.generation,
            summary: s.summary,
            git_sha: s.meta.git_sha,
            git_dirty: s.meta.git_dirty,
            branch: s.meta.branch,
        })
        .collect();
    Ok(RunList {
        runs,
        warnings,
        store: store.to_path_buf(),
    })
}

impl Report for RunList {
    /// A table: when, which run (`*` the live one), git commit, dirty, summary.
    fn text(&self) -> String {
        let mut o = String::new();
        if self.runs.is_empty() {
            outln!(
                o,
                "No snapshots in {} yet; take one with `small run snapshot`.",
                self.store.display()
            );
            return o;
        }
        let dash = |s: &str| crate::ops::report::or_dash(s).to_string();
        let rows: Vec<[String; 5]> = self
            .runs
            .iter()
            .map(|s| {
                [
                    dash(&s.created_at),
                    format!(
                        "{}{}",
                        if s.current { "*" } else { " " },
                        runs::short_name(&s.snapshot, 12)
                    ),
                    dash(&runs::short_id(&s.git_sha, 8)),
                    if s.git_sha.is_empty() {
                        "-".into()
                    } else {
                        s.git_dirty.to_string()
                    },
                    dash(&s.summary.replace('\n', " ")),
                ]
            })
            .collect();
        let head = ["CREATED", " REPLAY ID", "GIT", "DIRTY", "SUMMARY"];
        let mut widths = head.map(str::len);
        for r in &rows {
            for (w, c) in widths.iter_mut().zip(r.iter()) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut line = |cells: [&str; 5]| {
            let mut out = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i == 4 {
                    out.push_str(c);
                } else {
                    out.push_str(&pad(c, widths[i]));
                    out.push_str("  ");
                }
            }
            outln!(o, "{}", out.trim_end());
        };
        line(head);
        for r in &rows {
            line([&r[0], &r[1], &r[2], &r[3], &r[4]]);
        }
        o
    }
}
