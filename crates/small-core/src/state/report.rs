//! Project status: the plan summary, the next actionable tasks, and the most recent progress
//! entries, computed without reading the whole progress log.
//!
//! The progress log only grows, and can reach hundreds of thousands of entries. `status`
//! needs the last few, so [`recent_entries`] reads the file from the end: it finds where the
//! last entries of the `entries` list start (lines beginning with the list's `- ` marker at
//! its indentation), parses only that tail, and widens the window until it has enough. Any
//! layout it does not recognise (flow style, anchors used across entries, a tail that does
//! not parse) falls back to parsing the whole file, so the answer is always right; only the
//! speed depends on the layout. The tail path reads a few kilobytes whatever the log size.

use crate::spec::model::ArtifactPresence;
use crate::spec::model::TaskStatus;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;

use crate::fsio;
use crate::spec::plan::{scalar_text, TaskInfo};
use crate::yaml::{self, Limits, Node};

/// Plan statuses every summary lists (others are counted under their own name).
pub const KNOWN_STATUSES: [&str; 4] = [
    TaskStatus::Pending.as_str(),
    TaskStatus::InProgress.as_str(),
    TaskStatus::Blocked.as_str(),
    TaskStatus::Completed.as_str(),
];

/// A task's status as the queue sees it: trimmed, empty meaning `pending`.
pub fn normalized_status(t: &TaskInfo) -> String {
    let s = t.status.trim();
    if s.is_empty() {
        TaskStatus::Pending.as_str().to_string()
    } else {
        s.to_string()
    }
}

/// Plan summary.
#[derive(Debug, Clone, Serialize)]
pub struct PlanStatus {
    pub total_tasks: usize,
    pub tasks_by_status: BTreeMap<String, usize>,
    pub next_actionable: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_incomplete: Option<String>,
    /// Every task in plan order, with its title and status (absent status: `pending`).
    pub tasks: Vec<PlanTaskLine>,
}

/// One task as status lists it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PlanTaskLine {
    pub id: String,
    pub title: String,
    pub status: String,
}

impl PlanStatus {
    /// The title of task `id`, if the plan has it.
    pub fn title_of(&self, id: &str) -> Option<&str> {
        self.tasks
            .iter()
            .find(|t| t.id == id)
            .map(|t| t.title.as_str())
            .filter(|t| !t.is_empty())
    }
}

/// One recent progress entry, as status shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RecentEntry {
    pub timestamp: String,
    pub task_id: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_sha256: Option<String>,
}

impl RecentEntry {
    pub fn from_node(e: &Node) -> RecentEntry {
        let text = |k: &str| e.get(k).and_then(scalar_text).unwrap_or_default();
        // Shown to whoever runs `status`: a credential pasted into the log is masked.
        let string = |k: &str| {
            e.get(k)
                .and_then(Node::as_str)
                .map(|s| crate::secrets::redact(s).into_owned())
        };
        RecentEntry {
            timestamp: text("timestamp"),
            task_id: text("task_id"),
            status: text("status"),
            // A mapping (apply's `{exit_code, kind, outcome, strength}`) as compact JSON.
            evidence: string("evidence").or_else(|| {
                e.get("evidence")
                    .filter(|n| n.as_map().is_some())
                    .map(|n| crate::secrets::redact(&n.to_json().to_string()).into_owned())
            }),
            notes: string("notes"),
            command_summary: string("command_summary").or_else(|| string("command")),
            command_ref: string("command_ref"),
            command_sha256: string("command_sha256"),
        }
    }

    /// Signal entries are what a human wants to see: not apply bookkeeping.
    pub fn is_signal(&self) -> bool {
        let id = self.task_id.trim();
        if id.is_empty() || id == "apply" || id.starts_with("meta/apply") {
            return false;
        }
        !self
            .notes
            .as_deref()
            .is_some_and(|n| n.trim().eq_ignore_ascii_case("apply: execution started"))
    }
}

/// Files smaller than this are simply parsed whole.
const SMALL_FILE: u64 = 128 * 1024;
const FIRST_WINDOW: u64 = 64 * 1024;

/// The last `n` entries of the progress log at `path` that satisfy `keep`, newest first.
/// Reads only the end of the file when its layout allows (see the module docs).
pub fn recent_entries(
    path: &Path,
    n: usize,
    keep: &dyn Fn(&Node) -> bool,
) -> io::Result<Vec<Node>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut f = fsio::open_read(path)?;
    let size = f.metadata()?.len();
    if size > SMALL_FILE {
        if let Some(found) = tail_entries(&mut f, size, n, keep)? {
            return Ok(found);
        }
    }
    whole_file_entries(path, n, keep)
}

fn whole_file_entries(
    path: &Path,
    n: usize,
    keep: &dyn Fn(&Node) -> bool,
) -> io::Result<Vec<Node>> {
    let bytes = fsio::read_bounded(path, Limits::default().max_bytes as u64)?;
    let doc = yaml::parse_bytes(&bytes, &Limits::default())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let Some(entries) = doc.root.get("entries").and_then(Node::as_seq) else {
        return Ok(Vec::new());
    };
    Ok(entries
        .iter()
        .rev()
        .filter(|e| keep(e))
        .take(n)
        .cloned()
        .collect())
}

/// The indentation of the `entries` list items, from the head of the file: `Some(k)` when
/// `entries:` is a top-level key followed by block items `- ` at column `k`.
fn entries_indent(head: &str) -> Option<usize> {
    let mut lines = head.split('\n');
    for line in lines.by_ref() {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix("entries:") {
            let rest = rest.trim();
            if !(rest.is_empty() || rest.starts_with('#')) {
                return None;
            }
            break;
        }
    }
    for line in lines {
        let line = line.trim_end_matches('\r');
        let t = line.trim_start_matches(' ');
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t == "-" || t.starts_with("- ") {
            return Some(line.len() - t.len());
        }
        return None;
    }
    None
}

fn item_starts(buf: &[u8], indent: usize) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at_line_start = false; // the window may begin mid-line
    for (i, &c) in buf.iter().enumerate() {
        if at_line_start && buf.len() > i + indent && buf[i..i + indent].iter().all(|&b| b == b' ')
        {
            let j = i + indent;
            if buf[j] == b'-' && matches!(buf.get(j + 1), Some(b' ' | b'\n' | b'\r')) {
                starts.push(i);
            }
        }
        at_line_start = c == b'\n';
    }
    starts
}

fn tail_entries(
    f: &mut File,
    size: u64,
    n: usize,
    keep: &dyn Fn(&Node) -> bool,
) -> io::Result<Option<Vec<Node>>> {
    let mut head = vec![0u8; 16 * 1024];
    let got = read_at(f, 0, &mut head)?;
    head.truncate(got);
    let Some(indent) = entries_indent(&String::from_utf8_lossy(&head)) else {
        return Ok(None);
    };
    let mut window = FIRST_WINDOW;
    loop {
        if window * 2 >= size {
            return Ok(None); // the tail would be most of the file: parse it whole
        }
        let start = size - window;
        let mut buf = vec![0u8; window as usize];
        let got = read_at(f, start, &mut buf)?;
        buf.truncate(got);
        let starts = item_starts(&buf, indent);
        // Parse from the first complete item in the window.
        if let Some(&first) = starts.first() {
            let Ok(text) = std::str::from_utf8(&buf[first..]) else {
                return Ok(None);
            };
            let src = format!("entries:\n{text}");
            let Ok(doc) = yaml::parse_str(&src, &Limits::default()) else {
                return Ok(None);
            };
            let Some(entries) = doc.root.get("entries").and_then(Node::as_seq) else {
                return Ok(None);
            };
            if entries.len() != starts.len() || entries.iter().any(|e| e.as_map().is_none()) {
                return Ok(None);
            }
            let found: Vec<Node> = entries
                .iter()
                .rev()
                .filter(|e| keep(e))
                .take(n)
                .cloned()
                .collect();
            if found.len() >= n {
                return Ok(Some(found));
            }
        }
        window *= 4;
    }
}

fn read_at(f: &mut File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    f.seek(SeekFrom::Start(offset))?;
    let mut total = 0;
    while total < buf.len() {
        let k = f.read(&mut buf[total..])?;
        if k == 0 {
            break;
        }
        total += k;
    }
    Ok(total)
}

/// Everything `small status` shows (documented in docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub version: String,
    pub spec_version: String,
    pub progress_mode: String,
    pub small_dir_exists: bool,
    pub artifacts: ArtifactPresence,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_task: Option<String>,
    /// The current run (`workspace.small.yml` `run.replay_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_id: Option<String>,
    /// The handoff's replayId value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_replay_id: Option<String>,
    /// The handoff's `resume.current_task_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_task: Option<String>,
    pub recent_progress: Vec<RecentEntry>,
    /// Problems met while reading (a file that does not parse); status still reports the rest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// Options of `small status`.
#[derive(Debug, Clone, Copy)]
pub struct StatusOptions {
    pub recent: usize,
    pub tasks: usize,
    /// Audit mode shows every entry; signal mode (default) hides apply bookkeeping.
    pub audit: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> String {
        format!(
            "  - task_id: \"t{}\"\n    timestamp: \"2026-01-01T00:00:{:02}.{:06}Z\"\n    status: \"completed\"\n    evidence: |\n      line one of {i}\n      - not an item\n",
            i % 7,
            (i / 1_000_000) % 60,
            i % 1_000_000
        )
    }

    #[test]
    fn an_evidence_mapping_is_shown_as_json_text() {
        let doc = crate::yaml::parse_str(
            "task_id: task-1\nevidence:\n  exit_code: 3\n  outcome: failed\n",
            &crate::yaml::Limits::default(),
        )
        .unwrap();
        let r = RecentEntry::from_node(&doc.root);
        assert_eq!(
            r.evidence.as_deref(),
            Some(r#"{"exit_code":3,"outcome":"failed"}"#)
        );
    }

    fn log(n: usize) -> String {
        let mut s = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
        for i in 0..n {
            s.push_str(&entry(i));
        }
        s
    }

    #[test]
    fn tail_equals_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("progress.small.yml");
        std::fs::write(&p, log(5000)).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() > SMALL_FILE);
        let all = |_: &Node| true;
        let fast = recent_entries(&p, 5, &all).unwrap();
        let slow = whole_file_entries(&p, 5, &all).unwrap();
        let ts = |v: &[Node]| v.iter().map(|e| e.to_json()).collect::<Vec<_>>();
        assert_eq!(ts(&fast), ts(&slow));
        assert_eq!(fast[0].get("task_id").unwrap().as_str(), Some("t1")); // 4999 % 7
                                                                          // A filter that keeps few entries widens the window and still agrees.
        let rare = |e: &Node| e.get("task_id").and_then(Node::as_str) == Some("t3");
        let a = recent_entries(&p, 40, &rare).unwrap();
        let b = whole_file_entries(&p, 40, &rare).unwrap();
        assert_eq!(ts(&a), ts(&b));
    }

    #[test]
    fn indent_detection() {
        assert_eq!(entries_indent("a: 1\nentries:\n  - x: 1\n"), Some(2));
        assert_eq!(entries_indent("entries:\n# c\n- x: 1\n"), Some(0));
        assert_eq!(entries_indent("entries: []\n"), None);
        assert_eq!(entries_indent("entries:\n  [1]\n"), None);
    }
}
