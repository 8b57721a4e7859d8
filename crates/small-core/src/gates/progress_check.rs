//! Checking the progress log entry by entry, fast at any size.
//!
//! The entries of a progress log are independent apart from one ordering rule (timestamps
//! strictly increase), so the gates check them one at a time as they are parsed, and never
//! hold the log as a tree. Three ways to get the same answer, fastest first:
//!
//! - **resume from the cache**: `.small-cache/progress-*.v1` (beside `.small/`) holds the
//!   results for the entries before the log's last entry, keyed by a BLAKE3 hash of the bytes
//!   they came from and of everything else they depend on (the rules, the plan's task ids, the
//!   run scope, the binary). When those bytes are unchanged, only what follows them is parsed
//!   and checked: a gate after `progress add` costs what the append added. A missing, stale,
//!   damaged or unreadable cache just means a full check; `--no-cache` skips it;
//! - **parallel**: a large log of the common shape is split at entry boundaries and each part
//!   is parsed and checked on its own thread; the timestamp order is checked afterwards over
//!   the recorded timestamps, in log order;
//! - **sequential**: the line-level fast path ([`crate::yaml::stream_fast_part`]), else the
//!   general YAML parser, streaming one entry at a time.
//!
//! All three produce the same diagnostics and facts (see the differential tests).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::diag::{Diagnostic, Pos, SecretNote, Severity, Span};
use crate::gates::invariants::{PlanIndex, ProgressFacts, ProgressLinter};
use crate::gates::proofs::CommandClaim;
use crate::gates::schemas::{SchemaSet, SchemaSource};
use crate::gates::validate;
use crate::spec::consts::ArtifactKind;
use crate::spec::plan::TaskSet;
use crate::spec::timestamp::Instant;
use crate::yaml::{self, Limits, Node, Part, Resume, YamlError};

use crate::workspace::carry;
mod file;
pub use file::{check_file_resumed, check_file_streamed, Appended};

/// Directory of the gates' cache, beside `.small/`.
pub const CACHE_DIR: &str = ".small-cache";
/// The cache file of the progress check with these rules, in [`CACHE_DIR`] (one per set of
/// rules, so that the gates do not evict each other's results).
pub fn cache_file(rules: &EntryRules) -> String {
    format!(
        "progress-{}-{}.v1",
        if rules.schemas.is_some() {
            "schema"
        } else {
            "noschema"
        },
        match rules.lint {
            None => "nolint",
            Some(true) => "strict",
            Some(false) => "lint",
        }
    )
}

/// Logs smaller than this are checked on one thread (threads cost more than they save).
const PARALLEL_MIN_BYTES: usize = 4 << 20;

/// Which rules run on each entry.
#[derive(Clone, Copy)]
pub struct EntryRules<'a> {
    /// Check each entry against the progress schema.
    pub schemas: Option<&'a SchemaSet>,
    /// Lint each entry (TS, INV2, SHAPE, INV1, LINK) and gather the facts; `Some(strict)`.
    pub lint: Option<bool>,
    pub plan: &'a PlanIndex,
    /// The run scope (the handoff's replayId value, empty when none).
    pub scope: &'a str,
}

/// How to run the check.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Threads to use (0: as many as the machine has, at most 4; 1: sequential).
    pub threads: usize,
    /// The cache directory to read (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// Also update the cache in `cache_dir` (false: only read it).
    pub cache_write: bool,
}

/// What checking the entries found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EntryResults {
    /// Schema violations of the entries.
    pub schema: Vec<Diagnostic>,
    /// Lint diagnostics of the entries.
    pub lint: Vec<Diagnostic>,
    pub facts: ProgressFacts,
}

/// How the entries were checked (for tests and benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The general YAML parser (the log is not of the fast path's shape).
    General,
    /// The line-level fast path on one thread.
    Sequential,
    /// The fast path on this many threads.
    Parallel(usize),
    /// From the cache, parsing only from this entry on.
    Resumed(usize),
    /// The fast path over the file read in this many pieces, checked on several threads
    /// (the log is never held whole).
    Streamed(usize),
}

/// The checked log: its document with `entries` empty (see
/// [`crate::yaml::parse_streaming`]), the results, and how they were obtained.
pub struct Checked {
    /// The document, or the YAML error that stopped parsing (the results then cover the
    /// entries before it).
    pub root: Result<Node, YamlError>,
    pub results: EntryResults,
    pub method: Method,
}

/// Check every entry of the log `src` (the text of `.small/progress.small.yml`). A YAML
/// error is reported as the general parser reports it.
#[cfg(test)]
pub fn check_log(src: &str, limits: &Limits, rules: &EntryRules, opts: &ScanOptions) -> Checked {
    check_log_read(src, limits, rules, opts, None)
}

/// [`check_log`] of a log read from its file, which had the stat `read` (see
/// [`carry::settled`]) while it was read: the cache written records it.
pub(crate) fn check_log_read(
    src: &str,
    limits: &Limits,
    rules: &EntryRules,
    opts: &ScanOptions,
    read: Option<carry::LogStat>,
) -> Checked {
    let key = cache_key(rules, opts);
    let file = cache_file(rules);
    if let (Some(dir), Some(key)) = (&opts.cache_dir, &key) {
        if let Some(c) = resume(dir, &file, key, src, limits, rules) {
            if let Some(snap) = &c.1 {
                if snap.resume.offset != c.2 && opts.cache_write {
                    write_cache(dir, &file, key, src, snap, read);
                }
            }
            return c.0;
        }
    }
    let threads = match opts.threads {
        0 => std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4),
        n => n,
    };
    let fast = if threads > 1 && src.len() >= PARALLEL_MIN_BYTES {
        parallel(src, limits, rules, threads).or_else(|| sequential(src, limits, rules))
    } else {
        sequential(src, limits, rules)
    };
    if let Some((checked, snap)) = fast {
        if let (Some(dir), Some(key), Some(snap)) = (&opts.cache_dir, &key, &snap) {
            if opts.cache_write {
                write_cache(dir, &file, key, src, snap, read);
            }
        }
        return checked;
    }
    general(src, limits, rules)
}

/// Whether a cache file for these rules is there to resume from (not whether it is valid).
/// A gate with one reads the log whole when the file's tail is too long to read alone:
/// resuming costs what was appended, and moves the cache up; reading the log in pieces would
/// check it all again.
pub fn has_cache(rules: &EntryRules, opts: &ScanOptions) -> bool {
    match (cache_key(rules, opts), &opts.cache_dir) {
        (Some(_), Some(dir)) => dir.join(cache_file(rules)).is_file(),
        _ => false,
    }
}

/// The key of the cache these rules may use: `None` without a cache directory, and for
/// schemas from a directory (only the embedded ones are known by version; a directory's may
/// change).
fn cache_key(rules: &EntryRules, opts: &ScanOptions) -> Option<String> {
    let cacheable = rules
        .schemas
        .is_none_or(|s| *s.source() == SchemaSource::Embedded);
    opts.cache_dir
        .as_ref()
        .filter(|_| cacheable)
        .map(|_| context_key(rules))
}

// ---------------------------------------------------------------------------------------
// One part of the log on one thread

/// The results of entries, entry by entry, holding back the last one seen so that the state
/// before it can be kept (the cache vouches for the entries before the log's last entry: the
/// last one's span changes when another is appended after it).
struct Runner<'a> {
    rules: EntryRules<'a>,
    rel: String,
    linter: ProgressLinter<'a>,
    schema: Vec<Diagnostic>,
    held: Option<(usize, Node)>,
}

/// The state of a [`Runner`] before the held-back entry.
#[derive(Debug, Clone)]
struct Snapshot {
    schema: Vec<Diagnostic>,
    lint: Vec<Diagnostic>,
    facts: ProgressFacts,
    prev: Option<(Instant, usize)>,
}

impl<'a> Runner<'a> {
    fn new(rules: &EntryRules<'a>) -> Runner<'a> {
        Runner {
            rules: *rules,
            rel: ArtifactKind::Progress.rel_path(),
            linter: ProgressLinter::new(rules.plan, rules.scope),
            schema: Vec::new(),
            held: None,
        }
    }

    fn run(&mut self, i: usize, node: &Node) {
        if let Some(s) = self.rules.schemas {
            self.schema.extend(validate::validate_progress_entry_node(
                s, &self.rel, i, node,
            ));
        }
        match self.rules.lint {
            Some(strict) => self.linter.entry_all(i, node, strict),
            None => self.linter.facts.count += 1,
        }
    }

    fn push(&mut self, i: usize, node: Node) {
        if let Some((j, held)) = self.held.take() {
            self.run(j, &held);
            yaml::recycle(held);
        }
        self.held = Some((i, node));
    }

    /// Check the held-back entry, keeping nothing of the state before it (which costs a copy
    /// of the facts gathered so far: a thousand task ids, in every part of a long log).
    fn finish_unsnapped(&mut self) {
        if let Some((j, held)) = self.held.take() {
            self.run(j, &held);
        }
    }

    /// Check the held-back entry; returns the state before it (if there was one).
    fn finish(&mut self) -> Option<Snapshot> {
        let (j, held) = self.held.take()?;
        let snap = Snapshot {
            schema: self.schema.clone(),
            lint: self.linter.diags.clone(),
            facts: self.linter.facts.clone(),
            prev: self.linter.order_state(),
        };
        self.run(j, &held);
        Some(snap)
    }

    /// [`Runner::finish`], as what the cache keeps: the state before the last entry, which
    /// starts at `last` (none when the log has no entry).
    fn finish_snapshot(&mut self, last: Option<Resume>) -> Option<CacheSnap> {
        let s = self.finish()?;
        Some(CacheSnap {
            resume: last?,
            results: EntryResults {
                schema: s.schema,
                lint: s.lint,
                facts: s.facts,
            },
            prev: s.prev,
        })
    }

    fn results(self) -> EntryResults {
        EntryResults {
            schema: self.schema,
            lint: self.linter.diags,
            facts: self.linter.facts,
        }
    }
}

/// A snapshot to cache: the results of the entries before `resume` (the start of the log's
/// last entry).
#[derive(Debug, Clone)]
struct CacheSnap {
    resume: Resume,
    results: EntryResults,
    prev: Option<(Instant, usize)>,
}

fn sequential(
    src: &str,
    limits: &Limits,
    rules: &EntryRules,
) -> Option<(Checked, Option<CacheSnap>)> {
    let mut r = Runner::new(rules);
    // One pass: on `None` the runner, and all it saw, is dropped.
    let one_pass = Part {
        one_pass: true,
        ..Part::default()
    };
    let walked =
        yaml::stream_fast_part(src, limits, "entries", one_pass, &mut |i, n| r.push(i, n))?;
    let snap = r.finish_snapshot(walked.last_item);
    Some((
        Checked {
            root: Ok(walked.root?),
            results: r.results(),
            method: Method::Sequential,
        },
        snap,
    ))
}

fn general(src: &str, limits: &Limits, rules: &EntryRules) -> Checked {
    let mut r = Runner::new(rules);
    let root = yaml::parse_streaming_general(src, limits, "entries", &mut |i, n| r.run(i, &n));
    Checked {
        root,
        results: r.results(),
        method: Method::General,
    }
}

// ---------------------------------------------------------------------------------------
// Parallel

struct PartResult {
    runner_results: EntryResults,
    /// The part's first valid timestamp, and its latest (see
    /// [`ProgressLinter::first_stamp`]).
    first: Option<(Instant, usize)>,
    latest: Option<(Instant, usize)>,
    snap: Option<Snapshot>,
    walked: yaml::Walked,
}

fn parallel(
    src: &str,
    limits: &Limits,
    rules: &EntryRules,
    threads: usize,
) -> Option<(Checked, Option<CacheSnap>)> {
    let (first, starts) = yaml::split_points(src, limits, "entries", threads)?;
    let bytes = src.as_bytes();
    let ends: Vec<usize> = starts[1..].iter().copied().chain([bytes.len()]).collect();
    // Line and item counts of each part, to number the parts' lines and entries.
    let counts: Vec<(usize, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = starts
            .iter()
            .zip(&ends)
            .map(|(&a, &b)| {
                crate::par::spawn(s, move || {
                    yaml::count_item_lines(bytes, a, b, first.seq_indent)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join())
            .collect::<Result<_, _>>()
    })
    .ok()?;
    let mut resumes = Vec::with_capacity(starts.len());
    let (mut line, mut index) = (first.line, 0);
    for (k, &at) in starts.iter().enumerate() {
        resumes.push(Resume {
            offset: at,
            line,
            index,
            ..first
        });
        line += counts[k].0;
        index += counts[k].1;
    }
    let last = starts.len() - 1;
    let parts: Vec<Option<PartResult>> = std::thread::scope(|s| {
        let handles: Vec<_> = resumes
            .iter()
            .enumerate()
            .map(|(k, &resume)| {
                let stop = (k < last).then(|| ends[k]);
                crate::par::spawn(s, move || {
                    let part = Part {
                        resume: Some(resume),
                        stop,
                        ..Part::default()
                    };
                    check_part(src, limits, rules, part)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    let parts: Vec<PartResult> = parts.into_iter().collect::<Option<_>>()?;
    let starts: Vec<usize> = resumes.iter().map(|r| r.index).collect();
    let n = parts.len();
    merge_parts(parts, &starts, Method::Parallel(n))
}

/// Check one part of the log (see [`Part`]; `one_pass` is implied). Only the last part
/// (without `stop`) keeps its state before its last entry, for the cache.
fn check_part(src: &str, limits: &Limits, rules: &EntryRules, part: Part) -> Option<PartResult> {
    let mut r = Runner::new(rules);
    let part = Part {
        // On `None` the part's runner is dropped with the whole result.
        one_pass: true,
        ..part
    };
    let walked = yaml::stream_fast_part(src, limits, "entries", part, &mut |i, n| r.push(i, n))?;
    let snap = match part.stop {
        None => r.finish(),
        Some(_) => {
            r.finish_unsnapped();
            None
        }
    };
    let (first, latest) = (r.linter.first_stamp(), r.linter.order_state());
    Some(PartResult {
        runner_results: r.results(),
        first,
        latest,
        snap,
        walked,
    })
}

/// The results of parts of the log checked apart, in log order, as one pass over the log
/// reports them (`None` when they cannot be joined: then the log is checked in one pass).
/// `starts`: the index of each part's first entry.
fn merge_parts(
    parts: Vec<PartResult>,
    starts: &[usize],
    method: Method,
) -> Option<(Checked, Option<CacheSnap>)> {
    // Each part must have ended where the next one starts, with the entries counted.
    for (k, p) in parts.iter().enumerate() {
        if let Some(&e) = starts.get(k + 1) {
            if p.walked.count != e {
                return None;
            }
        }
    }
    let mut results = EntryResults::default();
    // The latest timestamp so far. Each part ordered its entries among themselves, which
    // is what one pass reports when its first timestamp is later than this; otherwise the
    // log is checked in one pass.
    let mut prev: Option<(Instant, usize)> = None;
    let mut snap_out = None;
    let n = parts.len();
    for (k, p) in parts.into_iter().enumerate() {
        if let (Some((before, _)), Some((first, _))) = (prev, p.first) {
            if first <= before {
                return None;
            }
        }
        if k + 1 == n {
            // The cache snapshot: everything before the last part, then the last part's
            // state before its held-back entry.
            if let (Some(s), Some(resume)) = (p.snap, p.walked.last_item) {
                let mut snap_results = results.clone();
                snap_results.schema.extend(s.schema);
                snap_results.lint.extend(s.lint);
                merge_facts(&mut snap_results.facts, s.facts);
                snap_out = Some(CacheSnap {
                    resume,
                    results: snap_results,
                    prev: s.prev.or(prev),
                });
            }
        }
        results.schema.extend(p.runner_results.schema);
        results.lint.extend(p.runner_results.lint);
        merge_facts(&mut results.facts, p.runner_results.facts);
        prev = p.latest.or(prev);
        if k + 1 == n {
            return Some((
                Checked {
                    root: Ok(p.walked.root?),
                    results,
                    method,
                },
                snap_out,
            ));
        }
    }
    None
}

fn merge_facts(into: &mut ProgressFacts, from: ProgressFacts) {
    // Destructured so that a new fact cannot be forgotten here.
    let ProgressFacts {
        with_entries,
        with_strict_evidence,
        with_completion,
        with_completion_evidence,
        s2_offenders,
        count,
        commands,
    } = from;
    into.with_entries.extend(with_entries);
    into.with_strict_evidence.extend(with_strict_evidence);
    into.with_completion.extend(with_completion);
    into.with_completion_evidence
        .extend(with_completion_evidence);
    into.s2_offenders.extend(s2_offenders);
    into.count += count;
    into.commands.extend(commands);
}

// ---------------------------------------------------------------------------------------
// The cache

/// Everything the cached results depend on besides the log's bytes.
fn context_key(rules: &EntryRules) -> String {
    let mut key = crate::workspace::cache::ContextKey::new("small progress-check cache v3");
    let mut put = |s: &str| key.put(s);
    put(match rules.schemas {
        None => "no schemas",
        Some(_) => "embedded schemas",
    });
    put(match rules.lint {
        None => "no lint",
        Some(true) => "strict lint",
        Some(false) => "lint",
    });
    put(rules.scope);
    put(if rules.plan.tasks.is_empty() {
        "empty plan"
    } else {
        "plan"
    });
    let mut ids: Vec<&str> = rules.plan.ids().collect();
    ids.sort_unstable();
    for id in ids {
        put(id);
    }
    key.finish()
}

#[derive(Serialize, Deserialize)]
struct CachedPos(u32, u32, u32);

#[derive(Serialize, Deserialize)]
struct CachedSpan(CachedPos, CachedPos);

#[derive(Serialize, Deserialize)]
struct CachedDiag {
    code: String,
    error: bool,
    file: Option<String>,
    span: Option<CachedSpan>,
    path: Option<String>,
    message: String,
    help: Option<String>,
    /// Secret format and masked text (never the secret itself).
    secret: Option<(String, String)>,
}

#[derive(Serialize, Deserialize)]
struct CacheBody {
    context: String,
    prefix_len: usize,
    prefix_hash: String,
    resume: (usize, usize, usize, usize, CachedPos),
    schema: Vec<CachedDiag>,
    lint: Vec<CachedDiag>,
    with_entries: Vec<String>,
    with_strict_evidence: Vec<String>,
    with_completion: Vec<String>,
    with_completion_evidence: Vec<String>,
    s2_offenders: Vec<(usize, String, CachedSpan)>,
    count: usize,
    commands: Vec<CachedClaim>,
    prev: Option<(String, usize)>,
    /// The log's stat when it was read, if it was settled (see [`carry`]).
    #[serde(default)]
    stat: Option<carry::LogStat>,
}

/// A [`CommandClaim`] in the cache.
#[derive(Serialize, Deserialize)]
struct CachedClaim {
    index: usize,
    span: CachedSpan,
    marker: Option<bool>,
    command_ref: Option<String>,
    sha256: Option<String>,
    summary: Option<String>,
    command: Option<String>,
    timestamp: Option<String>,
    replay_id: Option<String>,
    #[serde(default)]
    dry_run_notes: Option<String>,
}

fn claim_out(c: &CommandClaim) -> CachedClaim {
    CachedClaim {
        index: c.index,
        span: span_out(c.span),
        marker: c.marker,
        command_ref: c.command_ref.clone(),
        sha256: c.sha256.clone(),
        summary: c.summary.clone(),
        command: c.command.clone(),
        timestamp: c.timestamp.clone(),
        replay_id: c.replay_id.clone(),
        dry_run_notes: c.dry_run_notes.clone(),
    }
}

fn claim_in(c: CachedClaim) -> CommandClaim {
    CommandClaim {
        index: c.index,
        span: span_in(&c.span),
        marker: c.marker,
        command_ref: c.command_ref,
        sha256: c.sha256,
        summary: c.summary,
        command: c.command,
        timestamp: c.timestamp,
        replay_id: c.replay_id,
        dry_run_notes: c.dry_run_notes,
    }
}

fn pos_out(p: Pos) -> CachedPos {
    CachedPos(p.line, p.column, p.offset)
}
fn pos_in(p: &CachedPos) -> Pos {
    Pos {
        line: p.0,
        column: p.1,
        offset: p.2,
    }
}
fn span_out(s: Span) -> CachedSpan {
    CachedSpan(pos_out(s.start), pos_out(s.end))
}
fn span_in(s: &CachedSpan) -> Span {
    Span {
        start: pos_in(&s.0),
        end: pos_in(&s.1),
    }
}
fn diag_out(d: &Diagnostic) -> CachedDiag {
    CachedDiag {
        code: d.code.clone(),
        error: d.severity == Severity::Error,
        file: d.file.clone(),
        span: d.span.map(span_out),
        path: d.path.clone(),
        message: d.message.clone(),
        help: d.help.clone(),
        secret: d
            .secret
            .as_ref()
            .map(|n| (n.kind.clone(), n.masked.clone())),
    }
}
fn diag_in(d: CachedDiag) -> Diagnostic {
    Diagnostic {
        code: d.code,
        severity: if d.error {
            Severity::Error
        } else {
            Severity::Warning
        },
        file: d.file,
        span: d.span.as_ref().map(span_in),
        path: d.path,
        message: d.message,
        help: d.help,
        secret: d.secret.map(|(kind, masked)| SecretNote { kind, masked }),
    }
}

fn prefix_hash(bytes: &[u8]) -> String {
    // Memory is always readable.
    let hash = hash_parallel(bytes, bytes.len()).unwrap_or_else(|| blake3::hash(bytes));
    hash.to_hex().to_string()
}

/// Inputs at most this long are hashed on one thread.
const HASH_PARALLEL_MIN_BYTES: usize = 1 << 20;

/// Bytes to hash, by range: the log in memory, or a file read piece by piece.
trait Input: Sync {
    /// Feed bytes `offset..offset + len` to `h`; `None` when they cannot be read.
    fn feed(&self, offset: u64, len: usize, h: &mut blake3::Hasher) -> Option<()>;
}

impl Input for [u8] {
    fn feed(&self, offset: u64, len: usize, h: &mut blake3::Hasher) -> Option<()> {
        let at = usize::try_from(offset).ok()?;
        h.update(self.get(at..at.checked_add(len)?)?);
        Some(())
    }
}

/// `blake3::hash` of the first `len` bytes of `input`, computed on several threads for a
/// large input: BLAKE3 is a tree, so its subtrees are hashed apart and joined (see the
/// differential test).
fn hash_parallel<I: Input + ?Sized>(input: &I, len: usize) -> Option<blake3::Hash> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if threads < 2 || len < HASH_PARALLEL_MIN_BYTES {
        return hash_tree(input, len, usize::MAX);
    }
    // Split the tree until each piece is at most about a quarter share of a thread.
    let piece = (len / (threads * 4)).max(HASH_PARALLEL_MIN_BYTES / 4);
    hash_tree(input, len, piece)
}

/// [`hash_parallel`] with pieces of at most about `piece` bytes (for tests).
fn hash_tree<I: Input + ?Sized>(input: &I, len: usize, piece: usize) -> Option<blake3::Hash> {
    use blake3::hazmat::{left_subtree_len, merge_subtrees_root, Mode};
    if len <= blake3::CHUNK_LEN.max(piece) {
        let mut h = blake3::Hasher::new();
        input.feed(0, len, &mut h)?;
        return Some(h.finalize());
    }
    let left = left_subtree_len(len as u64) as usize;
    let (lcv, rcv) = std::thread::scope(|s| {
        let h = crate::par::spawn(s, || subtree_cv(input, 0, left, piece));
        let rcv = subtree_cv(input, left as u64, len - left, piece);
        (h.join(), rcv)
    });
    // A thread cannot panic here; hash its part on this one if it somehow did.
    let lcv = lcv.unwrap_or_else(|_| subtree_cv(input, 0, left, usize::MAX))?;
    Some(merge_subtrees_root(&lcv, &rcv?, Mode::Hash))
}

/// The chaining value of the (valid, non-root) subtree of `len` bytes at input `offset`.
fn subtree_cv<I: Input + ?Sized>(
    input: &I,
    offset: u64,
    len: usize,
    piece: usize,
) -> Option<blake3::hazmat::ChainingValue> {
    use blake3::hazmat::{left_subtree_len, merge_subtrees_non_root, HasherExt, Mode};
    if len <= blake3::CHUNK_LEN.max(piece) {
        let mut h = blake3::Hasher::new();
        h.set_input_offset(offset);
        input.feed(offset, len, &mut h)?;
        return Some(h.finalize_non_root());
    }
    let left = left_subtree_len(len as u64) as usize;
    let (lcv, rcv) = std::thread::scope(|s| {
        let h = crate::par::spawn(s, || subtree_cv(input, offset, left, piece));
        let rcv = subtree_cv(input, offset + left as u64, len - left, piece);
        (h.join(), rcv)
    });
    let lcv = lcv.unwrap_or_else(|_| subtree_cv(input, offset, left, usize::MAX))?;
    Some(merge_subtrees_non_root(&lcv, &rcv?, Mode::Hash))
}

/// The cache file's text: the BLAKE3 hash of the body on the first line, then the body (so a
/// damaged file is recognised and ignored).
fn write_cache(
    dir: &Path,
    file: &str,
    key: &str,
    src: &str,
    snap: &CacheSnap,
    stat: Option<carry::LogStat>,
) {
    let hash = prefix_hash(&src.as_bytes()[..snap.resume.offset]);
    write_cache_hashed(dir, file, key, hash, snap, stat);
}

/// [`write_cache`], the log's bytes before the snapshot's resume point hashed already.
/// `stat`: the log's settled stat while it was read (then appends are carried from it).
fn write_cache_hashed(
    dir: &Path,
    file: &str,
    key: &str,
    prefix_hash: String,
    snap: &CacheSnap,
    stat: Option<carry::LogStat>,
) {
    let r = snap.resume;
    // Destructured so that a new fact cannot be left out of the cache.
    let ProgressFacts {
        with_entries,
        with_strict_evidence,
        with_completion,
        with_completion_evidence,
        s2_offenders,
        count,
        commands,
    } = &snap.results.facts;
    let body = CacheBody {
        context: key.to_string(),
        prefix_len: r.offset,
        prefix_hash,
        resume: (
            r.offset,
            r.line,
            r.index,
            r.seq_indent,
            pos_out(r.seq_start),
        ),
        schema: snap.results.schema.iter().map(diag_out).collect(),
        lint: snap.results.lint.iter().map(diag_out).collect(),
        with_entries: with_entries.iter().map(String::from).collect(),
        with_strict_evidence: with_strict_evidence.iter().map(String::from).collect(),
        with_completion: with_completion.iter().map(String::from).collect(),
        with_completion_evidence: with_completion_evidence.iter().map(String::from).collect(),
        s2_offenders: s2_offenders
            .iter()
            .map(|(i, id, s)| (*i, id.clone(), span_out(*s)))
            .collect(),
        count: *count,
        commands: commands.iter().map(claim_out).collect(),
        prev: snap.prev.map(|(t, i)| (t.unix_nanos().to_string(), i)),
        stat,
    };
    let Ok(json) = serde_json::to_string(&body) else {
        return;
    };
    crate::workspace::cache::write_sealed(dir, file, &json);
    if let Some(stat) = &stat {
        carry::start(dir, stat);
    }
}

/// The largest cache file read (a bigger one is ignored).
const CACHE_MAX_BYTES: u64 = 256 << 20;

fn read_cache(dir: &Path, file: &str, key: &str) -> Option<CacheBody> {
    let json = crate::workspace::cache::read_sealed(dir, file, CACHE_MAX_BYTES)?;
    let body: CacheBody = serde_json::from_str(&json).ok()?;
    (body.context == key).then_some(body)
}

/// A runner holding the cached results, and where they stop.
fn runner_from<'a>(body: CacheBody, rules: &EntryRules<'a>) -> Option<(Runner<'a>, Resume)> {
    let resume = Resume {
        offset: body.resume.0,
        line: body.resume.1,
        index: body.resume.2,
        seq_indent: body.resume.3,
        seq_start: pos_in(&body.resume.4),
    };
    let prev = match body.prev {
        Some((nanos, i)) => Some((Instant::from_unix_nanos(nanos.parse().ok()?), i)),
        None => None,
    };
    let mut r = Runner::new(rules);
    r.schema = body.schema.into_iter().map(diag_in).collect();
    r.linter.diags = body.lint.into_iter().map(diag_in).collect();
    r.linter.facts = ProgressFacts {
        with_entries: TaskSet::from_ids(rules.plan, body.with_entries),
        with_strict_evidence: TaskSet::from_ids(rules.plan, body.with_strict_evidence),
        with_completion: TaskSet::from_ids(rules.plan, body.with_completion),
        with_completion_evidence: TaskSet::from_ids(rules.plan, body.with_completion_evidence),
        s2_offenders: body
            .s2_offenders
            .into_iter()
            .map(|(i, id, s)| (i, id, span_in(&s)))
            .collect(),
        count: body.count,
        commands: body.commands.into_iter().map(claim_in).collect(),
    };
    r.linter.set_order_state(prev);
    Some((r, resume))
}

/// Check from the cache: `None` when it cannot be used (then nothing was checked). Returns
/// the result, a new snapshot to cache, and where the old one resumed.
fn resume(
    dir: &Path,
    file: &str,
    key: &str,
    src: &str,
    limits: &Limits,
    rules: &EntryRules,
) -> Option<(Checked, Option<CacheSnap>, usize)> {
    let body = read_cache(dir, file, key)?;
    let n = body.prefix_len;
    if n > src.len() || !src.is_char_boundary(n) || body.resume.0 != n {
        return None;
    }
    if prefix_hash(&src.as_bytes()[..n]) != body.prefix_hash {
        return None;
    }
    let (mut r, resume) = runner_from(body, rules)?;
    let walked = yaml::stream_fast_part(
        src,
        limits,
        "entries",
        Part {
            resume: Some(resume),
            // On `None` the runner is dropped and the log checked in full.
            one_pass: true,
            ..Part::default()
        },
        &mut |i, node| r.push(i, node),
    )?;
    if walked.last_item.is_none_or(|l| l.index < resume.index) {
        // The entry at the resume point is gone: the one before it now ends the log, and
        // its span with it.
        return None;
    }
    let snap = r.finish_snapshot(walked.last_item);
    Some((
        Checked {
            root: Ok(walked.root?),
            results: r.results(),
            method: Method::Resumed(resume.index),
        },
        snap,
        n,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag;
    use proptest::prelude::*;

    const SCOPE: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    fn plan() -> PlanIndex {
        let text = "tasks:\n  - id: task-1\n  - id: task-2\n  - id: task-3\n";
        let doc = yaml::parse_str(text, &Limits::default()).unwrap();
        PlanIndex::from_plan(Some(&doc.root))
    }

    /// One entry of a generated log; `kind` picks a variant, several of them invalid.
    fn entry(i: usize, kind: u8) -> String {
        let ts = match kind % 11 {
            0 => "    timestamp: \"2026-01-01T00:00:00.000000Z\"\n".to_string(), // out of order
            1 => "    timestamp: \"2026-01-02\"\n".to_string(),                  // malformed
            2 => String::new(),                                                  // missing
            _ => format!(
                "    timestamp: \"2026-02-01T00:{:02}:{:02}.{i:06}Z\"\n",
                i / 60 % 60,
                i % 60
            ),
        };
        let task = match kind % 7 {
            0 => "ghost-task",
            1 => "meta/setup",
            2 => "task-2",
            _ => "task-1",
        };
        let mut e = format!("  - task_id: \"{task}\"\n{ts}");
        if !kind.is_multiple_of(5) {
            e.push_str(&format!("    evidence: \"ran the tests: ok (step {i})\"\n"));
        }
        if kind % 13 == 3 {
            e.push_str("    notes: \"see http://example.com/log for details\"\n");
        }
        if kind % 17 == 4 {
            e.push_str("    verification: \"key AKIAIOSFODNN7EXAMPLE leaked\"\n");
        }
        if kind.is_multiple_of(3) {
            e.push_str(&format!("    replayId: \"{SCOPE}\"\n"));
        }
        if kind % 19 == 5 {
            e.push_str("    status: \"sideways\"\n");
        }
        if kind % 23 == 6 {
            e.push_str("    surprise: 1\n");
        }
        e
    }

    fn log(kinds: &[u8]) -> String {
        let mut s = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
        for (i, k) in kinds.iter().enumerate() {
            s.push_str(&entry(i, *k));
        }
        s
    }

    fn rules<'a>(plan: &'a PlanIndex, schemas: &'a SchemaSet, strict: bool) -> EntryRules<'a> {
        EntryRules {
            schemas: Some(schemas),
            lint: Some(strict),
            plan,
            scope: SCOPE,
        }
    }

    fn normalized(mut r: EntryResults) -> EntryResults {
        diag::sort(&mut r.schema);
        diag::sort(&mut r.lint);
        r
    }

    fn no_cache() -> ScanOptions {
        ScanOptions {
            threads: 1,
            cache_dir: None,
            cache_write: false,
        }
    }

    /// The one-thread fast path (the reference every other path must equal).
    fn reference(src: &str, rules: &EntryRules) -> (Node, EntryResults) {
        let (c, _) = sequential(src, &Limits::default(), rules).expect("fast path applies");
        (c.root.unwrap(), normalized(c.results))
    }

    /// A temporary directory, its cache directory and where its log goes.
    fn log_file() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, path) = (
            tmp.path().join(CACHE_DIR),
            tmp.path().join("progress.small.yml"),
        );
        (tmp, dir, path)
    }

    fn with_cache(dir: &Path) -> ScanOptions {
        ScanOptions {
            threads: 1,
            cache_dir: Some(dir.to_path_buf()),
            cache_write: true,
        }
    }

    fn assert_same(c: Checked, src: &str, rules: &EntryRules) {
        let (root, results) = reference(src, rules);
        assert_eq!(c.root.unwrap(), root);
        assert_eq!(normalized(c.results), results);
    }

    #[test]
    fn fast_path_results_equal_the_general_parser() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let kinds: Vec<u8> = (0..120u8).collect();
        let src = log(&kinds);
        let rules = rules(&plan, &schemas, true);
        let general = general(&src, &Limits::default(), &rules);
        let (_, fast) = reference(&src, &rules);
        let strip_ends = |v: &[Diagnostic]| -> Vec<(String, Option<Pos>, String)> {
            v.iter()
                .map(|d| (d.code.clone(), d.span.map(|s| s.start), d.message.clone()))
                .collect()
        };
        let g = normalized(general.results);
        assert_eq!(strip_ends(&g.lint), strip_ends(&fast.lint));
        assert_eq!(strip_ends(&g.schema), strip_ends(&fast.schema));
        assert_eq!(g.facts, fast.facts);
        assert!(!fast.lint.is_empty() && !fast.schema.is_empty());
        assert_eq!(general.method, Method::General);
    }

    #[test]
    fn parallel_parse_equals_one_thread() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        // Every kind but the out-of-order timestamp, which may start a part (see
        // `a_part_starting_out_of_order_is_checked_in_one_pass`).
        let kinds: Vec<u8> = (0..200u8).chain(0..100).filter(|k| k % 11 != 0).collect();
        let src = log(&kinds);
        for strict in [true, false] {
            let rules = rules(&plan, &schemas, strict);
            for threads in 2..=5 {
                let (c, snap) = parallel(&src, &Limits::default(), &rules, threads).unwrap();
                assert_eq!(c.method, Method::Parallel(threads));
                assert_same(c, &src, &rules);
                // The snapshot for the cache equals one thread's.
                let (_, seq_snap) = sequential(&src, &Limits::default(), &rules).unwrap();
                let (p, s) = (snap.unwrap(), seq_snap.unwrap());
                assert_eq!(p.resume, s.resume);
                assert_eq!(p.prev, s.prev);
                assert_eq!(normalized(p.results), normalized(s.results));
            }
        }
    }

    /// Where the system refuses threads, the parts are checked one after the other on the
    /// calling thread, with the same result; the piece reader, whose checkers cannot run in
    /// its place, declines, and the caller reads the log whole.
    #[test]
    fn refused_threads_check_the_same_on_one() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let kinds: Vec<u8> = (0..120u8).filter(|k| k % 11 != 0).collect();
        let src = log(&kinds);
        let rules = rules(&plan, &schemas, true);
        let (c, _) =
            crate::par::without_threads(|| parallel(&src, &Limits::default(), &rules, 3)).unwrap();
        assert_eq!(c.method, Method::Parallel(3));
        assert_same(c, &src, &rules);
        let (_tmp, _, path) = log_file();
        std::fs::write(&path, &src).unwrap();
        let opts = ScanOptions {
            threads: 2,
            ..no_cache()
        };
        let refused = crate::par::without_threads(|| {
            file::streamed(&path, None, &Limits::default(), &rules, &opts, 700, 0)
        });
        assert!(refused.is_none());
        assert!(file::streamed(&path, None, &Limits::default(), &rules, &opts, 700, 0).is_some());
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let tree = crate::par::without_threads(|| hash_tree(&data[..], data.len(), 4096));
        assert_eq!(tree, Some(blake3::hash(&data)));
    }

    #[test]
    fn a_part_starting_out_of_order_is_checked_in_one_pass() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        // Every timestamp equal: each part's first is not later than the part before it.
        let same = log(&[0u8; 120]);
        // Out-of-order entries here and there: inside a part they are the part's own
        // business; at the start of one, the log is checked in one pass.
        let mixed = log(&(0..250u8).collect::<Vec<_>>());
        for strict in [true, false] {
            let rules = rules(&plan, &schemas, strict);
            assert!(parallel(&same, &Limits::default(), &rules, 2).is_none());
            let mut parallel_runs = 0;
            for threads in 2..=9 {
                // What `check_log` does with a large log.
                if let Some((c, _)) = parallel(&mixed, &Limits::default(), &rules, threads) {
                    parallel_runs += 1;
                    assert_same(c, &mixed, &rules);
                }
            }
            assert!(parallel_runs > 0);
        }
    }

    #[test]
    fn cache_miss_hit_and_append() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(CACHE_DIR);
        let kinds: Vec<u8> = (0..80u8).collect();
        let src = log(&kinds);
        // Miss: a full check, which writes the cache.
        let c = check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
        assert_eq!(c.method, Method::Sequential);
        assert_same(c, &src, &rules);
        assert!(dir.join(cache_file(&rules)).is_file());
        assert!(dir.join(".gitignore").is_file());
        // Hit, nothing appended: only the last entry is checked again.
        let c = check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
        assert_eq!(c.method, Method::Resumed(79));
        assert_same(c, &src, &rules);
        // Hit after appending entries (some invalid).
        let mut longer = src.clone();
        for i in 80..95 {
            longer.push_str(&entry(i, (i * 7 % 29) as u8));
        }
        let c = check_log(&longer, &Limits::default(), &rules, &with_cache(&dir));
        assert_eq!(c.method, Method::Resumed(79));
        assert_same(c, &longer, &rules);
        let c = check_log(&longer, &Limits::default(), &rules, &with_cache(&dir));
        assert_eq!(c.method, Method::Resumed(94));
        assert_same(c, &longer, &rules);
        // --no-cache: a full check.
        let c = check_log(&longer, &Limits::default(), &rules, &no_cache());
        assert_eq!(c.method, Method::Sequential);
    }

    #[test]
    fn the_log_checked_from_the_file_equals_the_whole_log_checked() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let (_tmp, dir, path) = log_file();
        let limits = Limits::default();
        let src = log(&(0..80u8).collect::<Vec<_>>());
        std::fs::write(&path, &src).unwrap();
        // No cache yet: nothing to resume from.
        assert!(check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).is_none());
        check_log(&src, &limits, &rules, &with_cache(&dir));
        // Resumed from the file, nothing appended, then entries appended (some invalid): the
        // same document and results as the whole text checked, positions included.
        let c = check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).unwrap();
        assert_eq!(c.method, Method::Resumed(79));
        assert_same(c, &src, &rules);
        let mut longer = src.clone();
        for i in 80..95 {
            longer.push_str(&entry(i, (i * 7 % 29) as u8));
        }
        std::fs::write(&path, &longer).unwrap();
        let c = check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).unwrap();
        assert_eq!(c.method, Method::Resumed(79));
        assert_same(c, &longer, &rules);
        // It never writes the cache: the whole-text check moves it up.
        let c = check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).unwrap();
        assert_eq!(c.method, Method::Resumed(79));
        // Without a cache directory, or with --no-cache: nothing.
        assert!(check_file_resumed(&path, None, &limits, &rules, &no_cache()).is_none());
        assert!(has_cache(&rules, &with_cache(&dir)));
        assert!(!has_cache(&rules, &no_cache()));
        assert!(!has_cache(&rules, &with_cache(&dir.join("elsewhere"))));
        // A changed byte anywhere in the cached part (same length): never resumed.
        let cached = dir.join(cache_file(&rules));
        let n = read_cache(&dir, &cache_file(&rules), &context_key(&rules))
            .unwrap()
            .prefix_len;
        for at in (0..n).step_by(53) {
            let mut bytes = longer.clone().into_bytes();
            bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
            std::fs::write(&path, &bytes).unwrap();
            assert!(
                check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).is_none(),
                "byte {at}"
            );
        }
        // A byte-order mark, a shorter file, a long tail: the caller reads the log whole.
        std::fs::write(&path, format!("\u{feff}{longer}")).unwrap();
        assert!(check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).is_none());
        std::fs::write(&path, &src[..n - 1]).unwrap();
        assert!(check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).is_none());
        let mut long_tail = longer.clone();
        let mut i = 95;
        while (long_tail.len() - n) as u64 <= file::RESUMED_TAIL_MAX_BYTES {
            long_tail.push_str(&entry(i, 3));
            i += 1;
        }
        std::fs::write(&path, &long_tail).unwrap();
        assert!(check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).is_none());
        // A damaged cache file.
        std::fs::write(&path, &longer).unwrap();
        let mut damaged = std::fs::read(&cached).unwrap();
        let last = damaged.len() - 2;
        damaged[last] ^= 1;
        std::fs::write(&cached, &damaged).unwrap();
        assert!(check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_recorded_stat_spares_the_hash_and_any_other_stat_does_not() {
        use carry::{AppendCarry, LogStat};
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let (_tmp, dir, path) = log_file();
        let limits = Limits::default();
        let src = log(&(0..60u8).collect::<Vec<_>>());
        std::fs::write(&path, &src).unwrap();
        // The check records the stat it read the log at (as settled by the gate).
        let at = LogStat::at(&path);
        check_log_read(&src, &limits, &rules, &with_cache(&dir), at);
        // A cache whose hash no longer matches the log: only a trusted stat resumes from it.
        let file = cache_file(&rules);
        let json = crate::workspace::cache::read_sealed(&dir, &file, CACHE_MAX_BYTES).unwrap();
        let mut body: CacheBody = serde_json::from_str(&json).unwrap();
        assert_eq!(body.stat, at);
        body.prefix_hash = "0".repeat(64);
        let json = serde_json::to_string(&body).unwrap();
        crate::workspace::cache::write_sealed(&dir, &file, &json);
        let resumed = || check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir));
        let c = resumed().expect("the same stat: not hashed");
        assert_eq!(c.method, Method::Resumed(59));
        assert_same(c, &src, &rules);
        // An append `progress add` carries: trusted, and every rule runs on the new entries.
        let carried = AppendCarry::begin(&dir, &path, src.len() as u64).unwrap();
        let added = format!("{}{}", entry(60, 0), entry(61, 4));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, added.as_bytes()).unwrap();
        f.sync_data().unwrap();
        carried.finish(&path, added.len() as u64);
        let longer = format!("{src}{added}");
        let c = resumed().expect("a carried append: not hashed");
        assert_eq!(c.method, Method::Resumed(59));
        assert_same(c, &longer, &rules);
        // Bytes the note does not cover: hashed, and the wrong hash is no cache.
        std::io::Write::write_all(&mut f, entry(62, 5).as_bytes()).unwrap();
        assert!(resumed().is_none());
        // A recorded stat the log no longer has (rewritten, same bytes): hashed too.
        std::fs::write(&path, &longer).unwrap();
        assert!(resumed().is_none());
    }

    #[test]
    fn the_log_read_piece_by_piece_equals_the_whole_log_checked() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let (_tmp, _, path) = log_file();
        let limits = Limits::default();
        // In order (every piece may be joined), with comments and blank lines between
        // entries and a key after the list; then with entries out of order here and there.
        let ordered: Vec<u8> = (0..160u8).filter(|k| k % 11 != 0).collect();
        let mut commented = String::new();
        for (i, line) in log(&ordered).lines().enumerate() {
            commented.push_str(line);
            commented.push('\n');
            if i % 17 == 5 {
                commented.push_str("\n# a comment\n");
            }
        }
        commented.push_str("extra: 1\n");
        let mixed = log(&(0..200u8).collect::<Vec<_>>());
        for strict in [true, false] {
            let rules = rules(&plan, &schemas, strict);
            for (src, always) in [(&commented, true), (&mixed, false)] {
                std::fs::write(&path, src).unwrap();
                let mut joined = 0;
                for piece in [400, 700, 1000, 4096, 1 << 20] {
                    for threads in [1, 2, 3] {
                        let opts = ScanOptions {
                            threads,
                            ..no_cache()
                        };
                        match file::streamed(&path, None, &limits, &rules, &opts, piece, 0) {
                            Some((c, n)) => {
                                joined += 1;
                                assert_eq!(c.method, Method::Streamed(n));
                                assert_same(c, src, &rules);
                            }
                            None => assert!(!always, "piece {piece}, threads {threads}"),
                        }
                    }
                }
                assert!(joined > 0);
            }
        }
        // An entry longer than a piece, a log below the size streamed: read whole instead.
        let rules = rules(&plan, &schemas, true);
        std::fs::write(&path, &commented).unwrap();
        assert!(file::streamed(&path, None, &limits, &rules, &no_cache(), 60, 0).is_none());
        assert!(file::streamed(&path, None, &limits, &rules, &no_cache(), 1000, 1 << 30).is_none());
    }

    /// Near its end the log is read in smaller pieces (so that the checkers finish
    /// together), with the same result.
    #[test]
    fn the_last_pieces_of_a_streamed_log_are_smaller() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let (_tmp, _, path) = log_file();
        let src = log(&(0..240u8).map(|k| 3 + k % 8).collect::<Vec<_>>());
        std::fs::write(&path, &src).unwrap();
        let piece = 4096;
        let opts = ScanOptions {
            threads: 2,
            ..no_cache()
        };
        let (c, n) =
            file::streamed(&path, None, &Limits::default(), &rules, &opts, piece, 0).unwrap();
        assert_same(c, &src, &rules);
        // Pieces of the full size would be at most this many.
        let whole = src.len().div_ceil(piece - 200);
        assert!(n > whole + 2, "{n} pieces, {whole} of the full size");
    }

    /// A writer's staged bytes after the file: the log read piece by piece, or resumed from
    /// the cache, with them equals the whole text checked. Staged after a different length,
    /// they are not read that way.
    #[test]
    fn bytes_staged_after_the_file_are_checked_with_it() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let (_tmp, dir, path) = log_file();
        let limits = Limits::default();
        let kinds: Vec<u8> = (0..120u8).filter(|k| k % 11 != 0).collect();
        let disk = log(&kinds);
        std::fs::write(&path, &disk).unwrap();
        // A malformed timestamp, an unknown task, no evidence: the staged part has findings.
        let staged: String = (0..12u8)
            .map(|k| {
                entry(
                    kinds.len() + k as usize,
                    [3, 1, 4, 7, 13, 5][k as usize % 6],
                )
            })
            .collect();
        let whole = format!("{disk}{staged}");
        let disk_len = disk.len() as u64;
        let appended = Some(Appended {
            disk_len,
            bytes: staged.as_bytes(),
        });
        let (_, on_disk) = reference(&disk, &rules);
        assert_ne!(on_disk, reference(&whole, &rules).1);
        for piece in [400, 700, 1000, 4096] {
            for threads in [1, 2] {
                let opts = ScanOptions {
                    threads,
                    ..no_cache()
                };
                let (c, _) =
                    file::streamed(&path, appended, &limits, &rules, &opts, piece, 0).unwrap();
                assert_same(c, &whole, &rules);
            }
        }
        check_log(&disk, &limits, &rules, &with_cache(&dir));
        let c = check_file_resumed(&path, appended, &limits, &rules, &with_cache(&dir)).unwrap();
        assert_eq!(c.method, Method::Resumed(kinds.len() - 1));
        assert_same(c, &whole, &rules);
        let moved = Some(Appended {
            disk_len: disk_len - 1,
            bytes: staged.as_bytes(),
        });
        let opts = no_cache();
        assert!(file::streamed(&path, moved, &limits, &rules, &opts, 700, 0).is_none());
        assert!(check_file_resumed(&path, moved, &limits, &rules, &with_cache(&dir)).is_none());
    }

    #[test]
    fn a_log_read_piece_by_piece_writes_the_cache_a_later_check_resumes_from() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let (_tmp, dir, path) = log_file();
        let limits = Limits::default();
        let kinds: Vec<u8> = (0..120u8).filter(|k| k % 11 != 0).collect();
        let mut src = log(&kinds);
        std::fs::write(&path, &src).unwrap();
        let (c, n) =
            file::streamed(&path, None, &limits, &rules, &with_cache(&dir), 700, 0).unwrap();
        assert!(n > 3);
        assert_same(c, &src, &rules);
        let last = kinds.len() - 1;
        let c = check_log(&src, &limits, &rules, &with_cache(&dir));
        assert_eq!(c.method, Method::Resumed(last));
        assert_same(c, &src, &rules);
        src.push_str(&entry(500, 4));
        std::fs::write(&path, &src).unwrap();
        let c = check_file_resumed(&path, None, &limits, &rules, &with_cache(&dir)).unwrap();
        assert_eq!(c.method, Method::Resumed(last));
        assert_same(c, &src, &rules);
    }

    #[test]
    fn any_changed_byte_in_the_checked_part_is_noticed() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(CACHE_DIR);
        let kinds: Vec<u8> = (20..60u8).collect();
        let src = log(&kinds);
        check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
        let cache = std::fs::read(dir.join(cache_file(&rules))).unwrap();
        // Change one byte at a time (same length): never resumed, always the full answer.
        for at in (0..src.len() - 200).step_by(97) {
            let mut bytes = src.clone().into_bytes();
            bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
            let Ok(changed) = String::from_utf8(bytes) else {
                continue;
            };
            std::fs::write(dir.join(cache_file(&rules)), &cache).unwrap();
            let c = check_log(&changed, &Limits::default(), &rules, &with_cache(&dir));
            assert!(!matches!(c.method, Method::Resumed(_)), "byte {at}");
            if let Some((root, results)) =
                sequential(&changed, &Limits::default(), &rules).map(|(c, _)| (c.root, c.results))
            {
                assert_eq!(c.root.unwrap(), root.unwrap());
                assert_eq!(normalized(c.results), normalized(results));
            }
        }
    }

    #[test]
    fn damaged_stale_or_foreign_cache_means_a_full_check() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(CACHE_DIR);
        let src = log(&(0..50u8).collect::<Vec<_>>());
        check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
        let path = dir.join(cache_file(&rules));
        let good = std::fs::read_to_string(&path).unwrap();
        // A changed result in the body (the body hash no longer matches).
        let damaged = good.replacen("has no evidence", "has no evidencf", 1);
        assert_ne!(damaged, good);
        for bad in [
            damaged,
            good[..good.len() / 2].to_string(),
            String::new(),
            "x\n{}".into(),
        ] {
            std::fs::write(&path, &bad).unwrap();
            let c = check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
            assert_eq!(c.method, Method::Sequential);
            assert_same(c, &src, &rules);
        }
        // Written again by the full check, and usable.
        let c = check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
        assert!(matches!(c.method, Method::Resumed(_)));
        // Other rules (non-strict) or another plan: not this cache.
        let lax = EntryRules {
            lint: Some(false),
            ..rules
        };
        assert_ne!(cache_file(&lax), cache_file(&rules));
        let other_plan = PlanIndex::default();
        let other = EntryRules {
            plan: &other_plan,
            ..rules
        };
        let c = check_log(&src, &Limits::default(), &other, &with_cache(&dir));
        assert_eq!(c.method, Method::Sequential);
        assert_same(c, &src, &other);
        // The log cut back to before the cached point: a full check.
        let mut lines: Vec<&str> = src.lines().collect();
        lines.truncate(lines.len() - 12);
        let short = lines.join("\n") + "\n";
        check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
        let c = check_log(&short, &Limits::default(), &rules, &with_cache(&dir));
        assert!(!matches!(c.method, Method::Resumed(_)));
        assert_same(c, &short, &rules);
    }

    #[test]
    fn unusual_shapes_after_the_cached_part_fall_back_to_the_parser() {
        let (plan, schemas) = (plan(), SchemaSet::embedded());
        let rules = rules(&plan, &schemas, true);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(CACHE_DIR);
        let src = log(&(3..30u8).collect::<Vec<_>>());
        check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
        let flow = format!(
            "{src}  - {{task_id: task-1, evidence: x, timestamp: \"2027-01-01T00:00:00.1Z\"}}\n"
        );
        let c = check_log(&flow, &Limits::default(), &rules, &with_cache(&dir));
        assert_eq!(c.method, Method::General);
        let mut r = Runner::new(&rules);
        let root =
            yaml::parse_streaming_general(&flow, &Limits::default(), "entries", &mut |i, n| {
                r.run(i, &n)
            });
        assert_eq!(c.root, root);
        let general = normalized(r.results());
        assert_eq!(normalized(c.results), general);
        // The same log without the cache: the fast path gives up after the entries it sent
        // (one pass), and what they produced is dropped with it.
        let c = check_log(&flow, &Limits::default(), &rules, &no_cache());
        assert_eq!(c.method, Method::General);
        assert_eq!(normalized(c.results), general);
        assert!(sequential(&flow, &Limits::default(), &rules).is_none());
        for threads in 2..5 {
            assert!(parallel(&flow, &Limits::default(), &rules, threads).is_none());
        }
        // An unusual shape in the middle, and at the start, of the log.
        let mid = src.replacen(
            "  - task_id: \"task-2\"\n",
            "  - {task_id: task-2}\n  - task_id: \"task-2\"\n",
            1,
        );
        assert_ne!(mid, src);
        let first = src.replacen("entries:\n", "entries:\n  - [1, 2]\n", 1);
        for text in [mid, first] {
            let c = check_log(&text, &Limits::default(), &rules, &no_cache());
            assert_eq!(c.method, Method::General);
            let mut r = Runner::new(&rules);
            let root =
                yaml::parse_streaming_general(&text, &Limits::default(), "entries", &mut |i, n| {
                    r.run(i, &n)
                });
            assert_eq!(c.root, root);
            assert_eq!(normalized(c.results), normalized(r.results()));
        }
    }

    #[test]
    fn the_hash_on_several_threads_is_blake3() {
        let data: Vec<u8> = (0..(3 << 20) + 4321u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let chunk = blake3::CHUNK_LEN;
        for len in [
            0,
            1,
            chunk - 1,
            chunk,
            chunk + 1,
            2 * chunk,
            2 * chunk + 1,
            7 * chunk + 5,
            64 * chunk,
            64 * chunk + 1,
            100_003,
            (1 << 20) - 1,
            1 << 20,
            (1 << 20) + 1,
            data.len(),
        ] {
            let input = &data[..len];
            let want = blake3::hash(input);
            for piece in [1, chunk, 3 * chunk, 10_000, 1 << 18, usize::MAX] {
                assert_eq!(
                    hash_tree(input, len, piece),
                    Some(want),
                    "len {len}, piece {piece}"
                );
            }
            assert_eq!(hash_parallel(input, len), Some(want), "len {len}");
        }
        // Read piece by piece from a file: the same hash, and `None` past its end.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        std::fs::write(&path, &data).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        for len in [0, chunk + 1, 100_003, (1 << 20) + 1, data.len()] {
            let want = blake3::hash(&data[..len]);
            assert_eq!(
                hash_parallel(&file::FileInput(&f), len),
                Some(want),
                "len {len}"
            );
            assert_eq!(hash_tree(&file::FileInput(&f), len, 3 * chunk), Some(want));
        }
        assert_eq!(hash_parallel(&file::FileInput(&f), data.len() + 1), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        #[test]
        fn every_path_agrees(
            kinds in proptest::collection::vec(any::<u8>(), 1..60),
            more in proptest::collection::vec(any::<u8>(), 0..20),
            threads in 2usize..5,
            strict in any::<bool>(),
        ) {
            let (plan, schemas) = (plan(), SchemaSet::embedded());
            let rules = rules(&plan, &schemas, strict);
            let src = log(&kinds);
            if let Some((c, _)) = parallel(&src, &Limits::default(), &rules, threads) {
                assert_same(c, &src, &rules);
            }
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join(CACHE_DIR);
            let c = check_log(&src, &Limits::default(), &rules, &with_cache(&dir));
            assert_same(c, &src, &rules);
            let mut longer = src.clone();
            for (j, k) in more.iter().enumerate() {
                longer.push_str(&entry(kinds.len() + j, *k));
            }
            let c = check_log(&longer, &Limits::default(), &rules, &with_cache(&dir));
            prop_assert!(matches!(c.method, Method::Resumed(_)));
            assert_same(c, &longer, &rules);
        }
    }
}
