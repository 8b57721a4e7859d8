//! The current run's activity in the progress log, fast at any size.
//!
//! A handoff needs what the current run did: the tasks with work recorded since the last
//! `meta/reset` (bound to the run's replayId when entries carry one) and the last evidence.
//! That is a fold over the log in order, and a fold over consecutive parts of the log can be
//! combined ([`Partial::then`]), so the log is read the way the gates read it
//! ([`crate::gates::progress_check`]), fastest first:
//!
//! - **resume from the cache**: `.small-cache/activity.v1` holds the fold of the entries
//!   before the log's last entry, keyed by a BLAKE3 hash of the bytes they came from, the run
//!   and the binary. When those bytes are unchanged only what follows is parsed: a handoff
//!   after `progress add` costs what the append added. A missing, stale or damaged cache just
//!   means a full scan;
//! - **parallel**: a large log of the common shape is split at entry boundaries and each part
//!   is parsed and folded on its own thread (line-level fast path, [`yaml::stream_fast_part`]);
//! - **sequential**: [`yaml::parse_streaming`] (the fast path, else the general parser).
//!
//! All of them give the same [`Activity`] (see the differential tests).

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::diag::Pos;
use crate::gates::invariants::scalar_text;
use crate::spec::bookkeeping::{self, RESET_TASK};
use crate::yaml::{self, Limits, Node, Part, Resume, YamlError};

/// The last piece of evidence recorded in the current run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastEvidence {
    pub task_id: String,
    pub status: String,
    pub evidence: String,
    pub timestamp: String,
}

/// What the current run's progress entries say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Activity {
    /// Task ids with work recorded in this run (not bookkeeping, not `meta/…`), first seen first.
    pub worked: Vec<String>,
    pub last_evidence: Option<LastEvidence>,
}

fn entry_text(e: &Node, key: &str) -> Option<String> {
    e.get(key)
        .and_then(scalar_text)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn evidence_text(e: &Node) -> Option<String> {
    for k in crate::spec::consts::EVIDENCE_FIELDS {
        match e.get(k) {
            Some(n) if n.as_map().is_some() || n.as_seq().is_some() => {
                return Some(format!("{k}: {}", n.to_json()));
            }
            Some(n) => {
                if let Some(s) = scalar_text(n).filter(|s| !s.trim().is_empty()) {
                    return Some(if k == "evidence" {
                        s.trim().to_string()
                    } else {
                        format!("{k}: {}", s.trim())
                    });
                }
            }
            None => {}
        }
    }
    None
}

/// The fold of a run of consecutive entries: what they add to the activity, and whether one
/// of them was a `meta/reset` (which discards everything before it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partial {
    pub reset: bool,
    pub worked: Vec<String>,
    pub last_evidence: Option<LastEvidence>,
}

impl Partial {
    /// This fold followed by `later` (the entries right after these).
    pub fn then(mut self, later: Partial) -> Partial {
        if later.reset {
            return later;
        }
        let seen: HashSet<&String> = self.worked.iter().collect();
        let new: Vec<String> = later
            .worked
            .into_iter()
            .filter(|t| !seen.contains(t))
            .collect();
        self.worked.extend(new);
        if later.last_evidence.is_some() {
            self.last_evidence = later.last_evidence;
        }
        self
    }

    pub fn activity(self) -> Activity {
        Activity {
            worked: self.worked,
            last_evidence: self.last_evidence,
        }
    }
}

/// [`run_activity`] one entry at a time, in log order (for a streamed log).
pub struct ActivityScan {
    run_id: Option<String>,
    out: Partial,
    worked: HashSet<String>,
}

impl ActivityScan {
    pub fn new(run_id: Option<&str>) -> ActivityScan {
        ActivityScan {
            run_id: run_id.map(str::to_string),
            out: Partial::default(),
            worked: Default::default(),
        }
    }

    pub fn feed(&mut self, e: &Node) {
        let Some(task) = entry_text(e, "task_id") else {
            return;
        };
        if task == RESET_TASK {
            self.out = Partial {
                reset: true,
                ..Partial::default()
            };
            self.worked.clear();
            return;
        }
        if let (Some(run), Some(rid)) = (self.run_id.as_deref(), entry_text(e, "replayId")) {
            if !rid.eq_ignore_ascii_case(run) {
                return;
            }
        }
        if bookkeeping::is_meta(&task) {
            return;
        }
        let evidence = entry_text(e, "evidence");
        if bookkeeping::is_bookkeeping(evidence.as_deref(), entry_text(e, "notes").as_deref()) {
            return;
        }
        if self.worked.insert(task.clone()) {
            self.out.worked.push(task.clone());
        }
        if let Some(ev) = evidence_text(e) {
            self.out.last_evidence = Some(LastEvidence {
                task_id: task,
                status: entry_text(e, "status").unwrap_or_default(),
                evidence: ev,
                timestamp: entry_text(e, "timestamp").unwrap_or_default(),
            });
        }
    }

    /// The fold of the entries fed so far.
    pub fn partial(&self) -> Partial {
        self.out.clone()
    }

    pub fn finish(self) -> Activity {
        self.out.activity()
    }

    fn into_partial(self) -> Partial {
        self.out
    }
}

/// The current run's activity in a progress log: entries after the last `meta/reset`, and,
/// when `run_id` is given, only entries bound to it (or not bound to any run).
#[cfg(test)]
pub fn run_activity(progress: &Node, run_id: Option<&str>) -> Activity {
    let mut scan = ActivityScan::new(run_id);
    if let Some(entries) = progress.get("entries").and_then(Node::as_seq) {
        for e in entries {
            scan.feed(e);
        }
    }
    scan.finish()
}

/// How [`scan_log`] read the log (for tests and benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// [`yaml::parse_streaming`] on one thread.
    Sequential,
    /// The fast path on this many threads.
    Parallel(usize),
    /// From the cache, parsing from this entry on.
    Resumed(usize),
}

/// How to scan.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Threads (0: as many as the machine has, at most 4; 1: sequential).
    pub threads: usize,
    /// The gates' cache directory (`.small-cache/`) to resume from and update.
    pub cache_dir: Option<std::path::PathBuf>,
    /// Logs smaller than this are scanned on one thread (`None`: 4 MiB).
    pub parallel_min_bytes: Option<usize>,
}

/// Logs smaller than this are scanned on one thread.
const PARALLEL_MIN_BYTES: usize = 4 << 20;

/// The cache file, in the gates' cache directory.
pub const CACHE_FILE: &str = "activity.v1";

/// The run's activity in the progress log `src` (its text). A YAML error is reported as the
/// general parser reports it.
pub fn scan_log(
    src: &str,
    run_id: Option<&str>,
    limits: &Limits,
    opts: &ScanOptions,
) -> Result<(Activity, Method), YamlError> {
    let key = context_key(run_id);
    if let Some(dir) = &opts.cache_dir {
        if let Some((partial, snap, from)) = resume(dir, &key, src, run_id, limits) {
            if let Some(s) = snap {
                write_cache(dir, &key, src, &s);
            }
            return Ok((partial.activity(), Method::Resumed(from)));
        }
    }
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
        n => n,
    };
    if threads > 1 && src.len() >= opts.parallel_min_bytes.unwrap_or(PARALLEL_MIN_BYTES) {
        if let Some((partial, snap, n)) = parallel(src, run_id, limits, threads) {
            if let (Some(dir), Some(s)) = (&opts.cache_dir, snap) {
                write_cache(dir, &key, src, &s);
            }
            return Ok((partial.activity(), Method::Parallel(n)));
        }
    }
    let mut scan = ActivityScan::new(run_id);
    yaml::parse_streaming(src, limits, "entries", &mut |_, e| scan.feed(&e))?;
    Ok((scan.finish(), Method::Sequential))
}

/// The first chunk [`scan_tail`] reads from the end of the log; each next one is twice as big.
const TAIL_CHUNK: usize = 64 << 10;

/// The activity as far as a handoff needs it, read from the end of the log: which of
/// `wanted` (the plan's tasks that are not closed) have work in this run, and the last
/// evidence. Chunks are read backwards until the answer cannot change any more (a
/// `meta/reset` was met, or every task of `wanted` has work and some evidence was found), so
/// a long log costs what its last runs of entries cost. `None` when that did not happen within
/// the last sixteenth of the log, or a chunk is not of the fast path's shape: then scan it
/// all with [`scan_log`] (the tail read was the only cost).
///
/// The caller vouches that the whole log was read by the line-level fast path (see
/// [`crate::authoring::handoff::Strict::log_tasks`]): only then is every line that opens an
/// item at the sequence's indentation the start of an entry. The `worked` of the result holds
/// every task of `wanted` with work in this run, and maybe others (see the differential
/// tests).
pub fn scan_tail(
    src: &str,
    run_id: Option<&str>,
    limits: &Limits,
    wanted: &HashSet<String>,
) -> Option<Activity> {
    scan_tail_in(src, None, run_id, limits, wanted)
}

/// [`scan_tail`] on a text holding only the log's ends: its head, up to the end of the line of
/// its first entry, then from byte `tail_at` of the text on, the log's last bytes, starting
/// where an entry starts (see [`log_ends`]). `None` when the answer needs what lies between.
pub fn scan_tail_in(
    src: &str,
    tail_at: Option<usize>,
    run_id: Option<&str>,
    limits: &Limits,
    wanted: &HashSet<String>,
) -> Option<Activity> {
    let first = yaml::first_item(src, limits, "entries")?;
    let bytes = src.as_bytes();
    let budget = (bytes.len() - first.offset) / 16;
    // The lowest entry the text holds the rest of the log from.
    let floor = tail_at.unwrap_or(first.offset);
    if floor < first.offset || floor > bytes.len() {
        return None;
    }
    let mut chunk = TAIL_CHUNK;
    let mut end = bytes.len();
    let mut acc = Partial::default();
    loop {
        let target = end.saturating_sub(chunk);
        let start = if target <= floor {
            floor
        } else {
            match yaml::item_line_at_or_after(bytes, target, first.seq_indent) {
                Some(at) if at < end => at,
                // No entry starts in this chunk: take a bigger one.
                _ => {
                    chunk = chunk.saturating_mul(2);
                    continue;
                }
            }
        };
        let stop = (end < bytes.len()).then_some(end);
        let (part, walked, _) = scan_part(
            src,
            limits,
            run_id,
            Part {
                // Line numbers and indexes are not used here (only the entries' values).
                resume: (start > first.offset).then_some(Resume {
                    offset: start,
                    ..first
                }),
                stop,
                first_item_only: false,
                // On `None` the scan is dropped with everything it saw.
                one_pass: true,
                splice: None,
                lists: false,
            },
        )?;
        if stop.is_none() {
            walked.root.as_ref()?;
        }
        // The walk must have read exactly the entries that start in the chunk.
        // (Every walk here starts counting at 0.)
        let (_, items) = yaml::count_item_lines(bytes, start, end, first.seq_indent);
        if walked.count != items {
            return None;
        }
        acc = part.then(acc);
        let settled = acc.reset
            || start == first.offset
            || (acc.last_evidence.is_some() && {
                let worked: HashSet<&String> = acc.worked.iter().collect();
                wanted.iter().all(|t| worked.contains(t))
            });
        if settled {
            return Some(acc.activity());
        }
        // Nothing more to read: the rest of the log is not in the text. A whole log is read
        // from its end only as far as its last sixteenth.
        if start == floor || tail_at.is_none() && bytes.len() - start > budget {
            return None;
        }
        end = start;
        chunk = chunk.saturating_mul(2);
    }
}

/// The text [`scan_tail_in`] reads, from the log's `head` (its first bytes) and `tail` (its
/// last bytes, starting anywhere): the head up to the end of the first entry's line, then the
/// tail from its first entry on, and where that starts in the text. `None` when the two
/// overlap (`tail_offset`: where the tail starts in the log) or either lacks an entry.
pub fn log_ends(
    head: &[u8],
    tail_offset: u64,
    tail: &[u8],
    limits: &Limits,
) -> Option<(String, usize)> {
    let (first, h) = yaml::head_first_item(head, limits, "entries")?;
    if tail_offset < h as u64 {
        return None;
    }
    let line = memchr::memchr(b'\n', tail)? + 1;
    let at = yaml::item_line_at_or_after(tail, line, first.seq_indent)?;
    let mut text = head[..h].to_vec();
    text.extend_from_slice(&tail[at..]);
    Some((String::from_utf8(text).ok()?, h))
}

/// What the cache keeps: the fold of the entries before `resume` (the log's last entry).
struct Snap {
    resume: Resume,
    partial: Partial,
}

/// Scan one part of the log with the fast path: the fold of its entries, the walk, and (for
/// the last part) the fold before its last entry.
fn scan_part(
    src: &str,
    limits: &Limits,
    run_id: Option<&str>,
    part: Part,
) -> Option<(Partial, yaml::Walked, Option<Partial>)> {
    let mut scan = ActivityScan::new(run_id);
    // Each entry is fed when the next one arrives, so that the fold before the last entry
    // (what the cache keeps) can be taken at the end.
    let mut pending: Option<Node> = None;
    let walked = yaml::stream_fast_part(src, limits, "entries", part, &mut |_, e| {
        if let Some(p) = pending.replace(e) {
            scan.feed(&p);
        }
    })?;
    let before_last = pending.as_ref().map(|_| scan.partial());
    if let Some(p) = pending {
        scan.feed(&p);
    }
    Some((scan.into_partial(), walked, before_last))
}

fn parallel(
    src: &str,
    run_id: Option<&str>,
    limits: &Limits,
    threads: usize,
) -> Option<(Partial, Option<Snap>, usize)> {
    let (first, starts) = yaml::split_points(src, limits, "entries", threads)?;
    let bytes = src.as_bytes();
    let ends: Vec<usize> = starts[1..].iter().copied().chain([bytes.len()]).collect();
    let mut resumes = Vec::with_capacity(starts.len());
    let mut expected = Vec::with_capacity(starts.len());
    let (mut line, mut index) = (first.line, 0);
    for (&a, &b) in starts.iter().zip(&ends) {
        resumes.push(Resume {
            offset: a,
            line,
            index,
            ..first
        });
        let (lines, items) = yaml::count_item_lines(bytes, a, b, first.seq_indent);
        line += lines;
        index += items;
        expected.push(index);
    }
    let last = starts.len() - 1;
    let parts: Vec<Option<(Partial, yaml::Walked, Option<Partial>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = resumes
            .iter()
            .enumerate()
            .map(|(k, &resume)| {
                let stop = (k < last).then(|| ends[k]);
                crate::par::spawn(s, move || {
                    scan_part(
                        src,
                        limits,
                        run_id,
                        Part {
                            resume: Some(resume),
                            stop,
                            first_item_only: false,
                            // On `None` the scan is dropped with everything it saw.
                            one_pass: true,
                            splice: None,
                            lists: false,
                        },
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    let parts: Vec<(Partial, yaml::Walked, Option<Partial>)> =
        parts.into_iter().collect::<Option<_>>()?;
    // Each part must have ended where the next one starts, with the entries counted, and
    // the last one must have reached the end of the document.
    for (k, (_, walked, _)) in parts.iter().enumerate() {
        if k < last && walked.count != expected[k] {
            return None;
        }
    }
    parts.last()?.1.root.as_ref()?;
    let n = parts.len();
    let mut acc = Partial::default();
    let mut snap = None;
    for (k, (p, walked, before_last)) in parts.into_iter().enumerate() {
        if k == last {
            if let (Some(b), Some(resume)) = (before_last, walked.last_item) {
                snap = Some(Snap {
                    resume,
                    partial: acc.clone().then(b),
                });
            }
        }
        acc = acc.then(p);
    }
    Some((acc, snap, n))
}

// ---------------------------------------------------------------------------------------
// The cache

/// Everything the cached fold depends on besides the log's bytes.
fn context_key(run_id: Option<&str>) -> String {
    let mut key = crate::workspace::cache::ContextKey::new("small run-activity cache v1");
    match run_id {
        Some(r) => key.put(&format!("run {}", r.to_ascii_lowercase())),
        None => key.put("no run"),
    }
    key.finish()
}

#[derive(Serialize, Deserialize)]
struct CacheBody {
    context: String,
    prefix_hash: String,
    /// offset, line, index, sequence indent, sequence start (line, column, offset).
    resume: (usize, usize, usize, usize, (u32, u32, u32)),
    partial: Partial,
}

fn prefix_hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Best effort: a cache that cannot be written only costs speed. The file starts with the
/// BLAKE3 hash of its body, so a damaged one is recognised and ignored.
fn write_cache(dir: &Path, key: &str, src: &str, snap: &Snap) {
    let r = snap.resume;
    let body = CacheBody {
        context: key.to_string(),
        prefix_hash: prefix_hash(&src.as_bytes()[..r.offset]),
        resume: (
            r.offset,
            r.line,
            r.index,
            r.seq_indent,
            (r.seq_start.line, r.seq_start.column, r.seq_start.offset),
        ),
        partial: snap.partial.clone(),
    };
    let Ok(json) = serde_json::to_string(&body) else {
        return;
    };
    crate::workspace::cache::write_sealed(dir, CACHE_FILE, &json);
}

/// The largest cache file read.
const CACHE_MAX_BYTES: u64 = 64 << 20;

fn read_cache(dir: &Path, key: &str) -> Option<CacheBody> {
    let json = crate::workspace::cache::read_sealed(dir, CACHE_FILE, CACHE_MAX_BYTES)?;
    let body: CacheBody = serde_json::from_str(&json).ok()?;
    (body.context == key).then_some(body)
}

/// Scan from the cache: `None` when it cannot be used. Returns the fold, a new snapshot to
/// cache (when the log grew), and the entry the scan resumed at.
fn resume(
    dir: &Path,
    key: &str,
    src: &str,
    run_id: Option<&str>,
    limits: &Limits,
) -> Option<(Partial, Option<Snap>, usize)> {
    let body = read_cache(dir, key)?;
    let (offset, line, index, seq_indent, (sl, sc, so)) = body.resume;
    if offset > src.len() || !src.is_char_boundary(offset) {
        return None;
    }
    if prefix_hash(&src.as_bytes()[..offset]) != body.prefix_hash {
        return None;
    }
    let resume = Resume {
        offset,
        line,
        index,
        seq_indent,
        seq_start: Pos {
            line: sl,
            column: sc,
            offset: so,
        },
    };
    let (tail, walked, before_last) = scan_part(
        src,
        limits,
        run_id,
        Part {
            resume: Some(resume),
            stop: None,
            first_item_only: false,
            // On `None` the scan is dropped with everything it saw.
            one_pass: true,
            splice: None,
            lists: false,
        },
    )?;
    walked.root.as_ref()?;
    let snap = match (before_last, walked.last_item) {
        (Some(b), Some(r)) if r.offset > offset => Some(Snap {
            resume: r,
            partial: body.partial.clone().then(b),
        }),
        _ => None,
    };
    Some((body.partial.then(tail), snap, index))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize, kind: u8) -> String {
        let task = format!("task-{}", i % 7 + 1);
        match kind % 6 {
            0 => format!("  - task_id: {task}\n    status: in_progress\n    evidence: \"step {i}\"\n    timestamp: \"2026-01-01T00:00:{:02}Z\"\n", i % 60),
            1 => "  - task_id: meta/reset\n    status: completed\n    evidence: reset\n".to_string(),
            2 => format!("  - task_id: {task}\n    status: completed\n    evidence: other run {i}\n    replayId: {}\n", "b".repeat(64)),
            3 => format!("  - task_id: {task}\n    status: pending\n    evidence: Added task {task} via small plan --add\n    notes: bookkeeping\n"),
            4 => format!("  - task_id: {task}\n    status: completed\n    notes: 'done {i}'\n    replayId: {}\n", "A".repeat(64)),
            _ => format!("  - task_id: meta/note\n    status: completed\n    evidence: n{i}\n"),
        }
    }

    fn log(kinds: &[u8]) -> String {
        let mut s = String::from("small_version: \"1.0.0\"\nowner: agent\nentries:\n");
        for (i, k) in kinds.iter().enumerate() {
            s.push_str(&entry(i, *k));
        }
        s
    }

    fn general(src: &str, run: Option<&str>) -> Activity {
        let mut scan = ActivityScan::new(run);
        yaml::parse_streaming_general(src, &Limits::default(), "entries", &mut |_, e| {
            scan.feed(&e)
        })
        .unwrap();
        scan.finish()
    }

    fn opts(threads: usize, cache: Option<&Path>) -> ScanOptions {
        ScanOptions {
            threads,
            cache_dir: cache.map(Path::to_path_buf),
            parallel_min_bytes: Some(0),
        }
    }

    /// A log of 2 000 entries ending with `tail`.
    fn big(tail: &[u8]) -> String {
        let mut kinds: Vec<u8> = (0..2_000u32).map(|i| (i * 7 % 13) as u8).collect();
        kinds.extend_from_slice(tail);
        log(&kinds)
    }

    #[test]
    fn parallel_and_resumed_scans_equal_the_general_parser() {
        let run = "a".repeat(64);
        for tail in [&[0u8, 0, 4][..], &[1, 5], &[2, 3], &[1]] {
            let src = big(tail);
            for r in [None, Some(run.as_str())] {
                let want = general(&src, r);
                for threads in [1, 2, 3, 4] {
                    let (got, method) =
                        scan_log(&src, r, &Limits::default(), &opts(threads, None)).unwrap();
                    assert_eq!(got, want, "threads {threads}, tail {tail:?}");
                    if threads > 1 {
                        assert_eq!(method, Method::Parallel(threads));
                    }
                }
                // Cached: a cold scan, then the same log, then the log with entries appended.
                let dir = tempfile::tempdir().unwrap();
                let o = opts(2, Some(dir.path()));
                let (cold, _) = scan_log(&src, r, &Limits::default(), &o).unwrap();
                assert_eq!(cold, want);
                let (warm, m) = scan_log(&src, r, &Limits::default(), &o).unwrap();
                assert_eq!((warm, matches!(m, Method::Resumed(_))), (want, true));
                // Appends one after the other (the cache moves on with each).
                let mut grown = src.clone();
                for extra in [&[0u8][..], &[1, 0], &[3, 5, 2]] {
                    let n = grown.matches("\n  - ").count() + 1;
                    for (i, k) in extra.iter().enumerate() {
                        grown.push_str(&entry(n + i, *k));
                    }
                    let (got, m) = scan_log(&grown, r, &Limits::default(), &o).unwrap();
                    assert!(matches!(m, Method::Resumed(_)), "{m:?}");
                    assert_eq!(got, general(&grown, r), "appended {extra:?}");
                }
            }
        }
    }

    #[test]
    fn a_changed_byte_before_the_cached_point_means_a_full_scan() {
        let src = big(&[0, 0]);
        let dir = tempfile::tempdir().unwrap();
        let o = opts(2, Some(dir.path()));
        scan_log(&src, None, &Limits::default(), &o).unwrap();
        // Change an early entry into a reset: the activity changes, and the cache must not
        // hide it.
        let changed = src.replacen("task_id: task-1\n", "task_id: meta/reset\n", 1);
        let changed = changed.replacen(
            "task_id: meta/reset\n    status: in_progress",
            "task_id: meta/reset\n    status: completed",
            1,
        );
        let (got, m) = scan_log(&changed, None, &Limits::default(), &o).unwrap();
        assert!(!matches!(m, Method::Resumed(_)));
        assert_eq!(got, general(&changed, None));
        // A damaged cache file is ignored.
        std::fs::write(dir.path().join(CACHE_FILE), "x\n{}").unwrap();
        let (got, m) = scan_log(&src, None, &Limits::default(), &o).unwrap();
        assert!(!matches!(m, Method::Resumed(_)));
        assert_eq!(got, general(&src, None));
    }

    #[test]
    fn unusual_shapes_fall_back_to_the_parser() {
        let mut src = big(&[0]);
        src.push_str("  - task_id: task-2\n    status: in_progress\n    evidence: |\n      multi\n      line\n");
        let want = general(&src, None);
        let (got, m) = scan_log(&src, None, &Limits::default(), &opts(2, None)).unwrap();
        assert_eq!((got, m), (want, Method::Sequential));
    }

    /// What a handoff takes from an activity: the tasks of `wanted` with work (sorted) and
    /// the last evidence.
    fn seen(a: &Activity, wanted: &HashSet<String>) -> (Vec<String>, Option<LastEvidence>) {
        let mut w: Vec<String> = a
            .worked
            .iter()
            .filter(|t| wanted.contains(*t))
            .cloned()
            .collect();
        w.sort();
        (w, a.last_evidence.clone())
    }

    /// Open tasks to ask the scans about: none, one, several.
    fn task_sets() -> Vec<HashSet<String>> {
        vec![
            HashSet::new(),
            ["task-3".to_string()].into(),
            (1..=7).map(|i| format!("task-{i}")).collect(),
        ]
    }

    #[test]
    fn the_tail_scan_equals_the_general_parser_where_it_answers() {
        let run = "a".repeat(64);
        let mut sets = task_sets();
        sets.push(["task-99".to_string()].into());
        let mut answered = 0;
        for tail in [&[0u8, 0, 4][..], &[1, 5], &[2, 3], &[1], &[0, 1, 3, 3]] {
            for (len, resets) in [
                (20usize, true),
                (3_000, true),
                (3_000, false),
                (12_000, false),
            ] {
                let mut kinds: Vec<u8> = (0..len as u32)
                    .map(|i| (i * 7 % 13) as u8)
                    .map(|k| if !resets && k % 6 == 1 { 0 } else { k })
                    .collect();
                kinds.extend_from_slice(tail);
                let src = log(&kinds);
                for r in [None, Some(run.as_str())] {
                    let want = general(&src, r);
                    for wanted in &sets {
                        if let Some(got) = scan_tail(&src, r, &Limits::default(), wanted) {
                            answered += 1;
                            assert_eq!(seen(&got, wanted), seen(&want, wanted), "{tail:?} {len}");
                        }
                    }
                }
            }
        }
        assert!(answered > 20, "the tail scan answered {answered} times");
    }

    #[test]
    fn the_scan_of_the_log_ends_equals_the_general_parser_where_it_answers() {
        let run = "a".repeat(64);
        let sets = task_sets();
        let limits = Limits::default();
        let (mut answered, mut declined) = (0, 0);
        for tail in [&[0u8, 0, 4][..], &[1, 5], &[2, 3], &[0, 1, 3, 3]] {
            for resets in [true, false] {
                let mut kinds: Vec<u8> = (0..3_000u32)
                    .map(|i| (i * 7 % 13) as u8)
                    .map(|k| if !resets && k % 6 == 1 { 0 } else { k })
                    .collect();
                kinds.extend_from_slice(tail);
                let src = log(&kinds);
                let b = src.as_bytes();
                for keep in [300, 5_000, 40_000, b.len() / 3] {
                    let at = b.len() - keep;
                    let (text, tail_at) =
                        log_ends(&b[..4096.min(b.len())], at as u64, &b[at..], &limits).unwrap();
                    for r in [None, Some(run.as_str())] {
                        let want = general(&src, r);
                        for wanted in &sets {
                            match scan_tail_in(&text, Some(tail_at), r, &limits, wanted) {
                                Some(got) => {
                                    answered += 1;
                                    assert_eq!(seen(&got, wanted), seen(&want, wanted));
                                }
                                None => declined += 1,
                            }
                        }
                    }
                }
            }
        }
        assert!(
            answered > 20 && declined > 0,
            "{answered} answered, {declined} declined"
        );
        // Ends that overlap the head, or a head without an entry: no text.
        let src = log(&[2, 3, 4, 5]);
        let b = src.as_bytes();
        assert!(log_ends(b, 10, &b[10..], &limits).is_none());
        assert!(log_ends(&b[..20], 200, &b[200..], &limits).is_none());
    }

    #[test]
    fn the_tail_scan_stops_early_or_gives_up() {
        // No reset; every task worked recently: answered from the last chunk.
        let kinds: Vec<u8> = (0..12_000u32)
            .map(|i| [0u8, 2, 3, 4, 5][i as usize % 5])
            .collect();
        let src = log(&kinds);
        let wanted: HashSet<String> = (1..=7).map(|i| format!("task-{i}")).collect();
        let a = scan_tail(&src, None, &Limits::default(), &wanted).unwrap();
        assert_eq!(seen(&a, &wanted), seen(&general(&src, None), &wanted));
        // A task never worked on: no early answer (the full scan decides).
        let never: HashSet<String> = ["task-404".to_string()].into();
        assert!(scan_tail(&src, None, &Limits::default(), &never).is_none());
        // Another shape at the end: no answer.
        let mut odd = src.clone();
        odd.push_str("  - task_id: task-2\n    evidence: |\n      two\n      lines\n");
        assert!(scan_tail(&odd, None, &Limits::default(), &wanted).is_none());
    }

    #[test]
    fn partials_combine_in_order() {
        let a = Partial {
            reset: false,
            worked: vec!["t1".into(), "t2".into()],
            last_evidence: None,
        };
        let b = Partial {
            reset: false,
            worked: vec!["t2".into(), "t3".into()],
            last_evidence: None,
        };
        assert_eq!(a.clone().then(b).worked, vec!["t1", "t2", "t3"]);
        let r = Partial {
            reset: true,
            worked: vec!["t9".into()],
            last_evidence: None,
        };
        assert_eq!(a.then(r.clone()), r);
    }
}
