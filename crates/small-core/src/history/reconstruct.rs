//! Reconstruct a task's or the run's evidence from the workspace state alone: the progress
//! entries (optionally of one task, from a point in time on, the newest N), the task as the
//! plan describes it, and the handoff. Nothing is inferred from anywhere else; nothing is
//! written.
//!
//! The JSON keys are those of the reference implementation's `reconstruct`. Evidence and notes
//! that are YAML mappings or lists are kept as structured values (the reference prints them as
//! Go map strings). Every string is masked for secrets, as `status` masks them.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fsio;
#[cfg(test)]
use crate::history::runs::ErrorKind;
use crate::history::runs::RunError;
use crate::spec::consts::{ArtifactKind, SMALL_DIR};
use crate::spec::model::HANDOFF_REPLAY_ID_POINTER;
use crate::spec::timestamp::{self, Instant};
use crate::yaml::{self, Limits, Node};

/// What to reconstruct.
#[derive(Debug, Clone, Default)]
pub struct ReconstructOptions {
    /// Only the entries of this task (and the task's block from the plan).
    pub task: Option<String>,
    /// Only entries at or after this progress timestamp (RFC 3339 with fractional seconds).
    pub since: Option<String>,
    /// At most this many entries, the newest (0: all).
    pub limit: usize,
}

/// A task as the plan describes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TaskBlock {
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
}

/// What the handoff says.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HandoffBlock {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_task_id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_steps: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub replay_id: String,
}

/// One progress entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EvidenceEntry {
    /// Position in the progress log (0 = first entry).
    pub index: usize,
    pub timestamp: String,
    pub task_id: String,
    pub status: String,
    /// The evidence as text (the reference's string); a mapping (such as apply's outcome) as
    /// compact JSON, and as written under `evidence_data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Evidence written as a mapping or list, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes_data: Option<Value>,
    /// `command_summary`, else `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_sha256: Option<String>,
    /// The entry's `replayId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_id: Option<String>,
}

/// The reconstruction (documented in docs/json-output.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Reconstruction {
    /// The workspace root.
    pub workspace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskBlock>,
    pub handoff: HandoffBlock,
    /// Entries that passed the filters, before `limit`.
    pub matched_entries: usize,
    pub returned_entries: usize,
    /// Older matching entries were left out by `limit`.
    pub truncated: bool,
    pub entries: Vec<EvidenceEntry>,
}

fn read_doc(path: &Path) -> Result<Option<yaml::Document>, RunError> {
    let limits = Limits::default();
    let bytes = match fsio::read_bounded(path, limits.max_bytes as u64) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RunError::io("cannot read", path, &e)),
    };
    yaml::parse_bytes(&bytes, &limits).map(Some).map_err(|e| {
        RunError::invalid(format!(
            "{}:{}:{}: {}",
            path.display(),
            e.pos.line,
            e.pos.column,
            e.message
        ))
    })
}

fn text(n: Option<&Node>) -> String {
    n.and_then(crate::gates::invariants::scalar_text)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn opt_text(n: Option<&Node>) -> Option<String> {
    Some(text(n)).filter(|s| !s.is_empty())
}

fn strings(n: Option<&Node>) -> Vec<String> {
    n.and_then(Node::as_seq)
        .map(|items| {
            items
                .iter()
                .map(|i| text(Some(i)))
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// A free-text field: a trimmed string, or the structured value; `None` when empty.
fn value(n: Option<&Node>) -> Option<Value> {
    let n = n?;
    if n.as_map().is_some() || n.as_seq().is_some() {
        return Some(n.to_json());
    }
    opt_text(Some(n)).map(Value::String)
}

/// Parse a `--since` value: a progress timestamp (fractional seconds required).
pub fn parse_since(since: &str) -> Result<Instant, RunError> {
    timestamp::parse(since).map_err(|e| {
        RunError::invalid(format!("invalid --since timestamp `{}`: {e}", since.trim()))
            .with_help("write RFC 3339 with fractional seconds, e.g. 2026-03-02T14:30:00.000000Z")
    })
}

/// Reconstruct the evidence of the workspace at `root` (the directory holding `.small/`).
pub fn reconstruct(root: &Path, opts: &ReconstructOptions) -> Result<Reconstruction, RunError> {
    let since = opts.since.as_deref().map(parse_since).transpose()?;
    let small = crate::history::runs::require_small_dir(root)?;
    let task_filter = opts
        .task
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());

    let task = match (
        task_filter,
        read_doc(&small.join(ArtifactKind::Plan.file_name())),
    ) {
        (Some(id), Ok(Some(plan))) => plan
            .root
            .get("tasks")
            .and_then(Node::as_seq)
            .and_then(|tasks| tasks.iter().find(|t| text(t.get("id")) == id))
            .map(|t| TaskBlock {
                id: id.to_string(),
                title: text(t.get("title")),
                status: text(t.get("status")),
                steps: strings(t.get("steps")),
                acceptance: strings(t.get("acceptance")),
                dependencies: strings(t.get("dependencies")),
            }),
        // The task block is context; an unreadable plan does not hide the evidence.
        _ => None,
    };

    let handoff = match read_doc(&small.join(ArtifactKind::Handoff.file_name())) {
        Ok(Some(doc)) => HandoffBlock {
            summary: text(doc.root.get("summary")),
            current_task_id: text(doc.root.pointer("/resume/current_task_id")),
            next_steps: strings(doc.root.pointer("/resume/next_steps")),
            replay_id: text(doc.root.pointer(HANDOFF_REPLAY_ID_POINTER)),
        },
        _ => HandoffBlock::default(),
    };

    let progress_path = small.join(ArtifactKind::Progress.file_name());
    let progress = read_doc(&progress_path)?.ok_or_else(|| {
        RunError::invalid(format!(
            "{SMALL_DIR}/{} does not exist",
            ArtifactKind::Progress.file_name()
        ))
        .with_help("run `small init` to create the canonical artifacts")
    })?;
    let mut entries = Vec::new();
    let items = progress
        .root
        .get("entries")
        .and_then(Node::as_seq)
        .unwrap_or_default();
    for (index, e) in items.iter().enumerate() {
        let task_id = text(e.get("task_id"));
        if task_filter.is_some_and(|t| t != task_id) {
            continue;
        }
        let ts = text(e.get("timestamp"));
        if let Some(since) = since {
            // An entry whose time cannot be read cannot be shown to be after `since`.
            match timestamp::parse(&ts) {
                Ok(t) if t >= since => {}
                _ => continue,
            }
        }
        entries.push(EvidenceEntry {
            index,
            timestamp: ts,
            task_id,
            status: text(e.get("status")),
            evidence: value(e.get("evidence")).as_ref().map(display_value),
            evidence_data: value(e.get("evidence")).filter(|v| !v.is_string()),
            notes: value(e.get("notes")).as_ref().map(display_value),
            notes_data: value(e.get("notes")).filter(|v| !v.is_string()),
            command_summary: opt_text(e.get("command_summary"))
                .or_else(|| opt_text(e.get("command"))),
            command_ref: opt_text(e.get("command_ref")),
            command_sha256: opt_text(e.get("command_sha256")),
            replay_id: opt_text(e.get("replayId")),
        });
    }
    let matched = entries.len();
    if opts.limit > 0 && entries.len() > opts.limit {
        entries.drain(..entries.len() - opts.limit);
    }
    let mut out = Reconstruction {
        workspace: root.display().to_string(),
        task,
        handoff,
        matched_entries: matched,
        returned_entries: entries.len(),
        truncated: entries.len() < matched,
        entries,
    };
    mask(&mut out)?;
    Ok(out)
}

/// Mask secrets in every string of the reconstruction (the same masking as every front end).
fn mask(r: &mut Reconstruction) -> Result<(), RunError> {
    let encode =
        |e: serde_json::Error| RunError::usage(format!("cannot encode the reconstruction: {e}"));
    let mut v = serde_json::to_value(&*r).map_err(encode)?;
    crate::secrets::redact_json(&mut v);
    *r = serde_json::from_value(v).map_err(encode)?;
    Ok(())
}

/// A free-text value for one line of human output: a string as it is, a structured value as
/// compact JSON.
pub fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HANDOFF: &str = "small_version: \"1.0.0\"\nowner: agent\nsummary: \"Next: b\"\nresume:\n  current_task_id: b\n  next_steps:\n    - Continue with b\nlinks: []\nreplayId:\n  value: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n  source: auto\n";
    const PLAN: &str = "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: a\n    title: Task A\n    status: completed\n  - id: b\n    title: Task B\n    steps: [one, two]\n    acceptance: [done]\n    dependencies: [a]\n";

    fn workspace(progress: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().join(".small");
        std::fs::create_dir(&s).unwrap();
        std::fs::write(s.join("handoff.small.yml"), HANDOFF).unwrap();
        std::fs::write(s.join("plan.small.yml"), PLAN).unwrap();
        std::fs::write(s.join("progress.small.yml"), progress).unwrap();
        d
    }

    fn progress() -> String {
        let mut p = String::from("small_version: \"1.0.0\"\nowner: agent\nentries:\n");
        for (i, task) in ["a", "b", "a", "b", "b"].iter().enumerate() {
            p.push_str(&format!(
                "  - task_id: {task}\n    timestamp: \"2026-01-01T00:00:0{i}.500000Z\"\n    status: in_progress\n    evidence: step {i}\n"
            ));
        }
        p.push_str("  - task_id: b\n    timestamp: \"2026-01-01T00:00:09.000001Z\"\n    status: in_progress\n    command: echo ok\n    evidence:\n      exit_code: 0\n      outcome: succeeded\n    notes: \"token ghp_abcdefghijklmnopqrstuvwxyz0123456789 used\"\n");
        p
    }

    #[test]
    fn filters_limit_and_since() {
        let d = workspace(&progress());
        let all = reconstruct(d.path(), &ReconstructOptions::default()).unwrap();
        assert_eq!((all.matched_entries, all.returned_entries), (6, 6));
        assert!(!all.truncated && all.task.is_none());
        assert_eq!(all.handoff.current_task_id, "b");
        assert_eq!(all.handoff.next_steps, vec!["Continue with b"]);

        let b = reconstruct(
            d.path(),
            &ReconstructOptions {
                task: Some("b".into()),
                limit: 2,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!((b.matched_entries, b.returned_entries), (4, 2));
        assert!(b.truncated);
        let idx: Vec<usize> = b.entries.iter().map(|e| e.index).collect();
        assert_eq!(idx, vec![4, 5], "the newest two, oldest first");
        let t = b.task.unwrap();
        assert_eq!(t.steps, vec!["one", "two"]);
        assert_eq!(t.dependencies, vec!["a"]);
        assert_eq!(t.status, "");

        // Inclusive: an entry exactly at --since is kept.
        let since = reconstruct(
            d.path(),
            &ReconstructOptions {
                since: Some("2026-01-01T00:00:03.5Z".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(since.entries.first().map(|e| e.index), Some(3));
        assert_eq!(since.matched_entries, 3);

        let bad = reconstruct(
            d.path(),
            &ReconstructOptions {
                since: Some("2026-01-01T00:00:03Z".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(bad.kind, ErrorKind::Invalid);

        let unknown = reconstruct(
            d.path(),
            &ReconstructOptions {
                task: Some("zzz".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(unknown.task.is_none() && unknown.entries.is_empty());
    }

    #[test]
    fn structured_evidence_is_kept_and_secrets_masked() {
        let d = workspace(&progress());
        let r = reconstruct(d.path(), &ReconstructOptions::default()).unwrap();
        let last = r.entries.last().unwrap();
        // Text under the reference's key, the mapping as written beside it.
        assert_eq!(
            last.evidence.as_deref(),
            Some(r#"{"exit_code":0,"outcome":"succeeded"}"#)
        );
        assert_eq!(
            last.evidence_data,
            Some(serde_json::json!({"exit_code": 0, "outcome": "succeeded"}))
        );
        assert_eq!(last.command_summary.as_deref(), Some("echo ok"));
        let notes = last.notes.clone().unwrap();
        assert!(last.notes_data.is_none());
        assert!(!notes.contains("abcdefghijklmnop"), "{notes}");
        assert!(notes.contains("ghp_"), "{notes}");
    }
}
