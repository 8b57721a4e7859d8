//! The progress log as a timeline a reader can page through and filter, at any size.
//!
//! A viewer wants the newest entries first, a page at a time, filtered by task, status or run,
//! and wants the answer again each time the log grows. Parsing a 100 000-entry log for every
//! page is too slow, and holding every entry as a tree is too big, so a [`Timeline`] keeps an
//! index instead: per entry its byte range in the file and the three filter keys (interned).
//! A page reads back only its own entries' bytes and parses them. [`Timeline::refresh`] after
//! the file changed parses only what was appended when the bytes indexed so far are unchanged
//! (the log is append-only), and rebuilds the index otherwise.
//!
//! Every string an entry hands out is masked as the gates mask secrets
//! ([`crate::secrets::redact`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::fsio;
use crate::gates::invariants::scalar_text;
use crate::gates::proofs::{self, CommandClaim};
use crate::secrets::redact;
use crate::yaml::{self, Limits, Node};

/// The longest entry read back for a page (a longer one is shown as too large).
pub const MAX_ENTRY_BYTES: u64 = 1 << 20;
/// Bytes compared at the end of the indexed part to tell an append from a rewrite.
const GUARD_BYTES: u64 = 4096;

/// One indexed entry: where it is, and its filter keys.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Byte range of the entry's mapping in the file, and the column it starts at (0-based).
    start: u64,
    end: u64,
    column: u32,
    task: u32,
    status: u32,
    run: u32,
}

/// A filter of the timeline; `None` keeps every value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub task: Option<String>,
    pub status: Option<String>,
    pub run: Option<String>,
}

/// One progress entry as a reader sees it (strings masked).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct TimelineEntry {
    /// Position in the log (0: the oldest entry).
    pub index: usize,
    pub timestamp: String,
    pub task_id: String,
    pub status: String,
    pub replay_id: String,
    pub evidence: Option<String>,
    pub verification: Option<String>,
    pub command: Option<String>,
    pub command_summary: Option<String>,
    pub command_ref: Option<String>,
    pub command_sha256: Option<String>,
    pub test: Option<String>,
    pub link: Option<String>,
    pub commit: Option<String>,
    pub notes: Option<String>,
    /// For an entry that names a command receipt: whether the receipt was found and matches
    /// (`Some(true)`), or not (`Some(false)`); `None` when there is no receipt.
    pub receipt_verified: Option<bool>,
    /// Why the entry could not be read back (it changed on disk, or is too large).
    pub problem: Option<String>,
}

impl TimelineEntry {
    /// The entry of a parsed progress item at `index`.
    pub fn from_node(index: usize, e: &Node) -> TimelineEntry {
        let text = |k: &str| {
            e.get(k)
                .and_then(scalar_text)
                .map(|s| redact(s.trim()).into_owned())
                .unwrap_or_default()
        };
        let field = |k: &str| {
            e.get(k).and_then(|n| {
                let s = match scalar_text(n) {
                    Some(s) => s,
                    None => n.to_json().to_string(),
                };
                (!s.trim().is_empty()).then(|| redact(&s).into_owned())
            })
        };
        TimelineEntry {
            index,
            timestamp: text("timestamp"),
            task_id: text("task_id"),
            status: text("status"),
            replay_id: text("replayId"),
            evidence: field("evidence"),
            verification: field("verification"),
            command: field("command"),
            command_summary: field("command_summary"),
            command_ref: field("command_ref"),
            command_sha256: field("command_sha256"),
            test: field("test"),
            link: field("link"),
            commit: field("commit"),
            notes: field("notes"),
            receipt_verified: None,
            problem: None,
        }
    }
}

/// A page of the timeline, newest first.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Page {
    /// Entries matching the filter, in all.
    pub matching: usize,
    /// Entries in the log.
    pub total: usize,
    /// Matching entries skipped before this page (newest first).
    pub offset: usize,
    pub entries: Vec<TimelineEntry>,
}

/// The distinct values of a filter key with their entry counts, most frequent first.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facets {
    pub tasks: Vec<(String, usize)>,
    pub statuses: Vec<(String, usize)>,
    pub runs: Vec<(String, usize)>,
}

#[derive(Debug, Default)]
struct Interner {
    names: Vec<String>,
    ids: HashMap<String, u32>,
    counts: Vec<usize>,
}

impl Interner {
    fn id(&mut self, s: String) -> u32 {
        if let Some(&i) = self.ids.get(&s) {
            self.counts[i as usize] += 1;
            return i;
        }
        let i = self.names.len() as u32;
        self.ids.insert(s.clone(), i);
        self.names.push(s);
        self.counts.push(1);
        i
    }

    fn find(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    fn facets(&self) -> Vec<(String, usize)> {
        let mut v: Vec<(String, usize)> = self
            .names
            .iter()
            .zip(&self.counts)
            .map(|(n, c)| (n.clone(), *c))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }
}

/// The index of one progress log (see the module docs).
#[derive(Debug)]
pub struct Timeline {
    path: PathBuf,
    /// The workspace root (for command receipts).
    root: PathBuf,
    slots: Vec<Slot>,
    tasks: Interner,
    statuses: Interner,
    runs: Interner,
    /// Bytes of the file indexed, and the last [`GUARD_BYTES`] of them.
    indexed_len: u64,
    guard: Vec<u8>,
    /// Why the log could not be indexed (missing file, YAML error); the index is then empty.
    pub problem: Option<String>,
}

/// How a refresh went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refreshed {
    Unchanged,
    /// Only appended entries were parsed (how many).
    Appended(usize),
    Rebuilt,
}

impl Timeline {
    /// Index the progress log at `path` of the workspace at `root`. A missing or unreadable
    /// log gives an empty timeline with its [`problem`](Timeline::problem).
    pub fn open(root: &Path, path: &Path) -> Timeline {
        let mut t = Timeline {
            path: path.to_path_buf(),
            root: root.to_path_buf(),
            slots: Vec::new(),
            tasks: Interner::default(),
            statuses: Interner::default(),
            runs: Interner::default(),
            indexed_len: 0,
            guard: Vec::new(),
            problem: None,
        };
        t.rebuild();
        t
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.tasks = Interner::default();
        self.statuses = Interner::default();
        self.runs = Interner::default();
        self.indexed_len = 0;
        self.guard.clear();
        self.problem = None;
    }

    fn rebuild(&mut self) {
        self.clear();
        let limits = Limits::default();
        let bytes = match fsio::read_bounded(&self.path, limits.max_bytes as u64) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.problem = Some("there is no progress log yet".into());
                return;
            }
            Err(e) => {
                self.problem = Some(format!("cannot read the progress log: {e}"));
                return;
            }
        };
        let Ok(text) = std::str::from_utf8(&bytes) else {
            self.problem = Some("the progress log is not valid UTF-8".into());
            return;
        };
        // Each entry is indexed as it is parsed, then dropped: the log is never held as a tree.
        let parsed = yaml::parse_streaming(text, &limits, "entries", &mut |_, node| {
            self.push(&node, 0);
        });
        if let Err(e) = parsed {
            self.clear();
            self.problem = Some(format!("the progress log does not parse: {e}"));
            return;
        }
        self.set_indexed(&bytes);
    }

    fn set_indexed(&mut self, bytes: &[u8]) {
        self.indexed_len = bytes.len() as u64;
        let from = bytes.len().saturating_sub(GUARD_BYTES as usize);
        self.guard = bytes[from..].to_vec();
    }

    fn push(&mut self, node: &Node, shift: u64) {
        if node.as_map().is_none() {
            return;
        }
        let key = |k: &str| {
            node.get(k)
                .and_then(scalar_text)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let span = node.span;
        let slot = Slot {
            start: span.start.offset as u64 + shift,
            end: span.end.offset as u64 + shift,
            column: span.start.column.saturating_sub(1),
            task: self.tasks.id(key("task_id")),
            status: self.statuses.id(key("status")),
            run: self.runs.id(key("replayId")),
        };
        self.slots.push(slot);
    }

    /// Bring the index up to date with the file: parse only the appended entries when the
    /// indexed bytes are unchanged, else rebuild.
    pub fn refresh(&mut self) -> Refreshed {
        match self.try_append() {
            Ok(Some(0)) => Refreshed::Unchanged,
            Ok(Some(n)) => Refreshed::Appended(n),
            Ok(None) | Err(_) => {
                self.rebuild();
                Refreshed::Rebuilt
            }
        }
    }

    /// `Some(n)`: `n` appended entries were indexed; `None`: a rebuild is needed.
    fn try_append(&mut self) -> io::Result<Option<usize>> {
        if self.problem.is_some() || self.indexed_len == 0 {
            return Ok(None);
        }
        let mut f = fsio::open_read(&self.path)?;
        let size = f.metadata()?.len();
        if size < self.indexed_len {
            return Ok(None);
        }
        let guard_at = self.indexed_len - self.guard.len() as u64;
        let mut now = vec![0u8; self.guard.len()];
        read_at(&mut f, guard_at, &mut now)?;
        if now != self.guard {
            return Ok(None);
        }
        if size == self.indexed_len {
            return Ok(Some(0));
        }
        if size - self.indexed_len > Limits::default().max_bytes as u64 {
            return Ok(None);
        }
        let mut tail = vec![0u8; (size - self.indexed_len) as usize];
        let got = read_at(&mut f, self.indexed_len, &mut tail)?;
        tail.truncate(got);
        // Only whole lines: a writer may be mid-append.
        let Some(last_nl) = tail.iter().rposition(|&b| b == b'\n') else {
            return Ok(Some(0));
        };
        tail.truncate(last_nl + 1);
        let Ok(text) = std::str::from_utf8(&tail) else {
            return Ok(None);
        };
        // The appended items, parsed as the items of an `entries` list of their own.
        const HEAD: &str = "entries:\n";
        let src = format!("{HEAD}{text}");
        let Ok(doc) = yaml::parse_str(&src, &Limits::default()) else {
            return Ok(None);
        };
        let Some(items) = doc.root.get("entries").and_then(Node::as_seq) else {
            return Ok(None);
        };
        let shift = self.indexed_len as i64 - HEAD.len() as i64;
        if shift < 0 {
            return Ok(None);
        }
        for node in items {
            self.push(node, shift as u64);
        }
        // The guard is the last bytes of what is now indexed.
        let new_len = self.indexed_len + tail.len() as u64;
        let mut joined = std::mem::take(&mut self.guard);
        joined.extend_from_slice(&tail);
        let from = joined.len().saturating_sub(GUARD_BYTES as usize);
        self.guard = joined[from..].to_vec();
        self.indexed_len = new_len;
        Ok(Some(items.len()))
    }

    /// Entries in the log.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The values of the filter keys, with counts.
    pub fn facets(&self) -> Facets {
        Facets {
            tasks: self.tasks.facets(),
            statuses: self.statuses.facets(),
            runs: self.runs.facets(),
        }
    }

    /// Entries of task `id`, in all.
    pub fn count_for_task(&self, id: &str) -> usize {
        self.tasks
            .find(id)
            .map_or(0, |i| self.tasks.counts[i as usize])
    }

    /// The newest entry's timestamp.
    pub fn last_timestamp(&self) -> Option<String> {
        let last = self.slots.len().checked_sub(1)?;
        self.read(last).ok().map(|e| e.timestamp)
    }

    /// Matching entries newest first, skipping `offset`, at most `limit`.
    pub fn page(&self, filter: &Filter, offset: usize, limit: usize) -> Page {
        let want = |v: &Option<String>, names: &Interner| -> Result<Option<u32>, ()> {
            match v.as_deref() {
                None => Ok(None),
                Some(s) => names.find(s).map(Some).ok_or(()),
            }
        };
        let (Ok(task), Ok(status), Ok(run)) = (
            want(&filter.task, &self.tasks),
            want(&filter.status, &self.statuses),
            want(&filter.run, &self.runs),
        ) else {
            return Page {
                matching: 0,
                total: self.slots.len(),
                offset,
                entries: Vec::new(),
            };
        };
        let keep = |s: &Slot| {
            task.is_none_or(|t| s.task == t)
                && status.is_none_or(|t| s.status == t)
                && run.is_none_or(|t| s.run == t)
        };
        let mut matching = 0;
        let mut picked = Vec::new();
        for (i, s) in self.slots.iter().enumerate().rev() {
            if !keep(s) {
                continue;
            }
            if matching >= offset && picked.len() < limit {
                picked.push(i);
            }
            matching += 1;
        }
        let mut file = fsio::open_read(&self.path).ok();
        let entries = picked
            .into_iter()
            .map(|i| match file.as_mut() {
                Some(f) => self.read_with(f, i),
                None => unreadable(i, "the progress log cannot be opened"),
            })
            .collect();
        Page {
            matching,
            total: self.slots.len(),
            offset,
            entries,
        }
    }

    fn read(&self, i: usize) -> io::Result<TimelineEntry> {
        let mut f = fsio::open_read(&self.path)?;
        Ok(self.read_with(&mut f, i))
    }

    /// Read entry `i` back from the file and parse it.
    fn read_with(&self, f: &mut File, i: usize) -> TimelineEntry {
        let Some(s) = self.slots.get(i) else {
            return unreadable(i, "no such entry");
        };
        let len = s.end.saturating_sub(s.start);
        if len > MAX_ENTRY_BYTES {
            return unreadable(i, "the entry is too large to show");
        }
        let mut buf = vec![0u8; len as usize];
        match read_at(f, s.start, &mut buf) {
            Ok(n) if n as u64 == len => {}
            _ => return unreadable(i, "the progress log changed; reload"),
        }
        let Ok(text) = String::from_utf8(buf) else {
            return unreadable(i, "the progress log changed; reload");
        };
        // The mapping's later lines are indented relative to its first column: put it back.
        let src = format!("{}{}", " ".repeat(s.column as usize), text);
        match yaml::parse_str(&src, &Limits::default()) {
            Ok(doc) if doc.root.as_map().is_some() => {
                let mut e = TimelineEntry::from_node(i, &doc.root);
                e.receipt_verified = receipt_verified(&self.root, i, &doc.root);
                e
            }
            _ => unreadable(i, "the entry cannot be read back on its own"),
        }
    }
}

fn unreadable(index: usize, why: &str) -> TimelineEntry {
    TimelineEntry {
        index,
        problem: Some(why.to_string()),
        ..TimelineEntry::default()
    }
}

/// Whether the command receipt an entry names is there and matches (as `verify` checks it).
fn receipt_verified(root: &Path, index: usize, entry: &Node) -> Option<bool> {
    let claim = CommandClaim::of(index, entry)?;
    entry.get("command_ref")?;
    Some(proofs::check_claims(root, &[claim]).diagnostics.is_empty())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize, task: &str, status: &str) -> String {
        format!(
            "  - task_id: \"{task}\"\n    status: \"{status}\"\n    timestamp: \"2026-01-01T00:00:{:02}.{:06}Z\"\n    evidence: |\n      line one of {i}\n      - not an item\n    notes: \"n{i}\"\n",
            (i / 1_000_000) % 60,
            i % 1_000_000
        )
    }

    fn log(n: usize) -> String {
        let mut s = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
        for i in 0..n {
            s.push_str(&entry(
                i,
                &format!("task-{}", i % 3),
                if i % 2 == 0 {
                    "completed"
                } else {
                    "in_progress"
                },
            ));
        }
        s
    }

    fn setup(n: usize) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("progress.small.yml");
        std::fs::write(&p, log(n)).unwrap();
        (dir, p)
    }

    #[test]
    fn pages_are_newest_first_and_read_back_whole_entries() {
        let (d, p) = setup(10);
        let t = Timeline::open(d.path(), &p);
        assert_eq!(t.len(), 10);
        let page = t.page(&Filter::default(), 0, 3);
        assert_eq!(page.matching, 10);
        let idx: Vec<usize> = page.entries.iter().map(|e| e.index).collect();
        assert_eq!(idx, vec![9, 8, 7]);
        assert_eq!(page.entries[0].notes.as_deref(), Some("n9"));
        assert_eq!(
            page.entries[0].evidence.as_deref(),
            Some("line one of 9\n- not an item\n")
        );
        let next = t.page(&Filter::default(), 9, 3);
        assert_eq!(next.entries.len(), 1);
        assert_eq!(next.entries[0].index, 0);
    }

    #[test]
    fn filters_combine_and_unknown_values_match_nothing() {
        let (d, p) = setup(12);
        let t = Timeline::open(d.path(), &p);
        let f = Filter {
            task: Some("task-0".into()),
            status: Some("completed".into()),
            run: None,
        };
        let page = t.page(&f, 0, 100);
        // i % 3 == 0 and i even: 0, 6.
        let idx: Vec<usize> = page.entries.iter().map(|e| e.index).collect();
        assert_eq!(idx, vec![6, 0]);
        let none = Filter {
            task: Some("nope".into()),
            ..Filter::default()
        };
        assert_eq!(t.page(&none, 0, 10).matching, 0);
        assert_eq!(t.count_for_task("task-1"), 4);
    }

    #[test]
    fn an_append_is_indexed_without_a_rebuild_and_a_rewrite_rebuilds() {
        let (d, p) = setup(5);
        let mut t = Timeline::open(d.path(), &p);
        assert_eq!(t.refresh(), Refreshed::Unchanged);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, entry(5, "task-9", "blocked").as_bytes()).unwrap();
        assert_eq!(t.refresh(), Refreshed::Appended(1));
        let page = t.page(&Filter::default(), 0, 1);
        assert_eq!(page.entries[0].task_id, "task-9");
        assert_eq!(page.entries[0].notes.as_deref(), Some("n5"));
        std::fs::write(&p, log(3)).unwrap();
        assert_eq!(t.refresh(), Refreshed::Rebuilt);
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn a_secret_in_an_entry_is_masked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("progress.small.yml");
        std::fs::write(
            &p,
            "entries:\n  - task_id: a\n    status: completed\n    evidence: \"token ghp_abcdefghijklmnopqrstuvwxyz0123456789\"\n",
        )
        .unwrap();
        let t = Timeline::open(dir.path(), &p);
        let e = &t.page(&Filter::default(), 0, 1).entries[0];
        assert!(!e.evidence.as_deref().unwrap().contains("ghp_abcdef"));
    }

    #[test]
    fn a_missing_or_broken_log_is_an_empty_timeline_with_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("progress.small.yml");
        let t = Timeline::open(dir.path(), &p);
        assert!(t.is_empty() && t.problem.is_some());
        std::fs::write(&p, "entries: [\n").unwrap();
        let t = Timeline::open(dir.path(), &p);
        assert!(t.is_empty() && t.problem.is_some());
    }
}
