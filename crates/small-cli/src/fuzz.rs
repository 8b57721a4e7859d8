//! The fuzz suite: damaged workspaces through every command, in this process.
//!
//! Inputs are real workspaces (the conformance corpus beside the checkout, and workspaces
//! written by small itself) with one file damaged the way truncated writes, hand edits and
//! hostile agents damage files: bytes cut, YAML punctuation inserted, a line ended after its
//! colon, lines duplicated, dropped, swapped or re-indented, lines of another file spliced
//! in, stray bytes (invalid UTF-8, NUL, a byte-order mark, a carriage return), huge or deeply
//! nested values, the file truncated. [`proptest`] draws the damage and, when a run fails,
//! shrinks it to the smallest damage that still fails.
//!
//! Each input goes through every read command (validate, lint, verify, check, status, emit,
//! resume, doctor; human and JSON output) and one writing command, run as `small` runs them
//! (the same argument parsing, the same printing; output muted), and through the fast YAML
//! path held against the general parser. A run fails on:
//! - a panic (an exit that is not 0, 1 or 2);
//! - a command that takes longer than [`COMMAND_LIMIT`] (a watchdog stops the process);
//! - a writing command that fails but changed a file of `.small/`;
//! - a fast-path tree that differs from the parser's.
//!
//! `fuzz_damaged_workspaces` is the long run (ignored by default; CI runs it in a release
//! build with a time budget, see docs/reliability.md). Inputs that once failed are kept in
//! `tests/fuzz_regressions/` and replayed by the test suite on every run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

/// Longest a single command may take on one input.
const COMMAND_LIMIT: Duration = Duration::from_secs(10);

/// Largest file of a seed workspace that is read.
const MAX_SEED_FILE: u64 = 1 << 20;

/// One file of a workspace.
#[derive(Debug, Clone)]
enum Content {
    File(Vec<u8>),
    Link(PathBuf),
}

/// A workspace to damage: its files by path relative to the root.
#[derive(Debug, Clone)]
struct Seed {
    /// Where it came from (`v1/<case>`, `v1.1/<case>`, `v2/<case>`, `built-in/<name>`).
    name: String,
    files: BTreeMap<String, Content>,
}

impl Seed {
    /// The files that may be damaged: regular files of `.small/` and of its cache.
    fn targets(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|(p, c)| {
                matches!(c, Content::File(_))
                    && (p.starts_with(".small/") || p.starts_with(".small-cache/"))
            })
            .map(|(p, _)| p.as_str())
            .collect()
    }

    /// Write the workspace under `root` (emptied first).
    fn materialize(&self, root: &Path) -> std::io::Result<()> {
        if root.exists() {
            std::fs::remove_dir_all(root)?;
        }
        std::fs::create_dir_all(root)?;
        for (rel, content) in &self.files {
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match content {
                Content::File(bytes) => std::fs::write(&path, bytes)?,
                Content::Link(target) => std::os::unix::fs::symlink(target, &path)?,
            }
        }
        Ok(())
    }
}

/// Read a workspace tree (regular files and symlinks; `expected.json` and oversized files
/// left out).
fn read_tree(root: &Path, name: String) -> Seed {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            let rel = rel.to_string_lossy().into_owned();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                if let Ok(target) = std::fs::read_link(&path) {
                    files.insert(rel, Content::Link(target));
                }
            } else if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() && meta.len() <= MAX_SEED_FILE && rel != "expected.json" {
                if let Ok(bytes) = std::fs::read(&path) {
                    files.insert(rel, Content::File(bytes));
                }
            }
        }
    }
    Seed { name, files }
}

/// Run `small` with `args` in this process, output muted: its exit code, or the panic
/// message.
fn run_small(args: &[&str]) -> Result<u8, String> {
    crate::output::muted::set(true);
    let argv = std::iter::once("small")
        .chain(args.iter().copied())
        .map(std::ffi::OsString::from);
    let outcome = std::panic::catch_unwind(|| crate::run(argv));
    crate::output::muted::set(false);
    outcome.map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

/// Workspaces small writes itself: a fresh one, and one with a run's worth of history.
fn built_in_seeds(scratch: &Path) -> Vec<Seed> {
    let mut seeds = Vec::new();
    let fresh = scratch.join("fresh");
    let busy = scratch.join("busy");
    for dir in [&fresh, &busy] {
        let _ = std::fs::create_dir_all(dir);
    }
    let d = |p: &Path| p.to_string_lossy().into_owned();
    let (f, b) = (d(&fresh), d(&busy));
    let steps: Vec<Vec<&str>> = vec![
        vec!["init", "--dir", &f, "--intent", "Ship it", "--task", "One"],
        vec![
            "init",
            "--dir",
            &b,
            "--intent",
            "Add a flag",
            "--task",
            "Implement",
            "--task",
            "Document",
            "--task",
            "Release",
        ],
        vec![
            "progress",
            "add",
            "--dir",
            &b,
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            "started: cargo test -p x",
        ],
        vec![
            "checkpoint",
            "--dir",
            &b,
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "cargo test: 12 passed",
            "--link",
            "https://example.com/pr/1",
        ],
        vec!["plan", "--dir", &b, "--add", "Announce it"],
        vec!["handoff", "--dir", &b],
    ];
    for s in &steps {
        let code = run_small(s);
        assert_eq!(code, Ok(0), "setting up a built-in seed: small {s:?}");
    }
    for (name, dir) in [("fresh", &fresh), ("busy", &busy)] {
        let mut seed = read_tree(dir, format!("built-in/{name}"));
        seed.files.retain(|p, _| !p.starts_with(".small-cache/"));
        seeds.push(seed);
    }
    seeds
}

/// The conformance workspaces beside the checkout, if the corpus is there.
fn corpus_seeds() -> Vec<Seed> {
    let base = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/conformance");
    let Some(base) = small_testkit::conformance_path(base) else {
        return Vec::new();
    };
    let mut seeds = Vec::new();
    for (family, sub) in [("v1", "cases"), ("v1.1", "v1.1/cases"), ("v2", "v2/cases")] {
        let Ok(cases) = std::fs::read_dir(base.join(sub)) else {
            continue;
        };
        let mut names: Vec<PathBuf> = cases.flatten().map(|e| e.path()).collect();
        names.sort();
        for case in names.into_iter().filter(|p| p.is_dir()) {
            let name = format!(
                "{family}/{}",
                case.file_name().unwrap_or_default().to_string_lossy()
            );
            let seed = read_tree(&case, name);
            if !seed.targets().is_empty() {
                seeds.push(seed);
            }
        }
    }
    seeds
}

/// Text put into a file by [`Damage::Insert`]: YAML's punctuation and what editors and
/// broken writers leave behind.
const INSERTS: &[&[u8]] = &[
    b": ",
    b":",
    b"- ",
    b"-",
    b"[",
    b"]",
    b"{",
    b"}",
    b"#",
    b"&a ",
    b"*a",
    b"!",
    b"!!str ",
    b"|",
    b">-",
    b"'",
    b"\"",
    b"%",
    b"@",
    b"`",
    b",",
    b"?",
    b"? ",
    b"\n",
    b"\t",
    b" ",
    b"  ",
    b"\r",
    b"\r\n",
    b"\xef\xbb\xbf",
    b"\0",
    b"\\",
    b"<<: ",
    b"<<: *a\n",
    b"---\n",
    b"...\n",
    b"~",
    b"null",
    b"1e999",
    b"0x",
    b"-.inf",
    b"\"\\u",
    b"\"\\x",
    b"\xc3\xa9",
    b"\xff",
    b"\xc3",
    b"\xf0\x9f",
    b"\xe2\x80\xa8",
    b"\x1b[31m",
    b"task-1",
    b"status: ",
    b"completed",
    b"entries:",
    b"tasks:",
    b"- id: ",
    b"small_version: ",
    b"2026-13-45T99:99:99Z",
    b"http://",
    b"password: hunter2x",
    b"ghp_0123456789abcdefghijABCDEFGHIJ012345",
];

/// One way to damage a file.
#[derive(Debug, Clone)]
enum Damage {
    /// Remove up to `len` bytes at a position.
    Cut {
        at: Index,
        len: u8,
    },
    /// Cut the file at a position (a torn write).
    Truncate {
        at: Index,
    },
    /// Insert one of [`INSERTS`] at a position.
    Insert {
        at: Index,
        what: Index,
    },
    /// End a line right after its first colon (and a space, sometimes).
    EndAfterColon {
        line: Index,
        space: bool,
    },
    DuplicateLine {
        line: Index,
    },
    DeleteLine {
        line: Index,
    },
    SwapLines {
        a: Index,
        b: Index,
    },
    /// Change a line's indentation.
    Indent {
        line: Index,
        by: i8,
    },
    /// Insert raw bytes.
    Bytes {
        at: Index,
        bytes: Vec<u8>,
    },
    /// Replace a line by a line of another file of the same workspace.
    Splice {
        line: Index,
        file: Index,
        from: Index,
    },
    /// Something large: a long value, deep nesting, many items.
    Huge {
        at: Index,
        kind: u8,
    },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => (any::<Index>(), 1u8..40).prop_map(|(at, len)| Damage::Cut { at, len }),
        3 => any::<Index>().prop_map(|at| Damage::Truncate { at }),
        6 => (any::<Index>(), any::<Index>()).prop_map(|(at, what)| Damage::Insert { at, what }),
        3 => (any::<Index>(), any::<bool>())
            .prop_map(|(line, space)| Damage::EndAfterColon { line, space }),
        2 => any::<Index>().prop_map(|line| Damage::DuplicateLine { line }),
        2 => any::<Index>().prop_map(|line| Damage::DeleteLine { line }),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Damage::SwapLines { a, b }),
        2 => (any::<Index>(), -4i8..6).prop_map(|(line, by)| Damage::Indent { line, by }),
        2 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Damage::Bytes { at, bytes }),
        2 => (any::<Index>(), any::<Index>(), any::<Index>())
            .prop_map(|(line, file, from)| Damage::Splice { line, file, from }),
        1 => (any::<Index>(), 0u8..6).prop_map(|(at, kind)| Damage::Huge { at, kind }),
    ]
}

/// Byte ranges of the lines of `bytes` (line breaks included).
fn lines(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push(start..bytes.len());
    }
    out
}

fn apply(d: &Damage, bytes: &mut Vec<u8>, others: &[&[u8]]) {
    let at = |i: &Index, len: usize| i.index(len + 1);
    let ls = lines(bytes);
    let line = |i: &Index| (!ls.is_empty()).then(|| ls[i.index(ls.len())].clone());
    match d {
        Damage::Cut { at: i, len } => {
            let from = at(i, bytes.len()).min(bytes.len());
            let to = (from + usize::from(*len)).min(bytes.len());
            bytes.drain(from..to);
        }
        Damage::Truncate { at: i } => bytes.truncate(at(i, bytes.len())),
        Damage::Insert { at: i, what } => {
            let p = at(i, bytes.len());
            let text = INSERTS[what.index(INSERTS.len())];
            bytes.splice(p..p, text.iter().copied());
        }
        Damage::EndAfterColon { line: i, space } => {
            if let Some(r) = line(i) {
                if let Some(c) = bytes[r.clone()].iter().position(|&b| b == b':') {
                    let end = r.start + c + 1;
                    let keep_newline = bytes[r.clone()].last() == Some(&b'\n');
                    let mut tail: Vec<u8> = Vec::new();
                    if *space {
                        tail.push(b' ');
                    }
                    if keep_newline && i.index(2) == 0 {
                        tail.push(b'\n');
                    }
                    bytes.splice(end..r.end, tail);
                }
            }
        }
        Damage::DuplicateLine { line: i } => {
            if let Some(r) = line(i) {
                let copy = bytes[r.clone()].to_vec();
                bytes.splice(r.end..r.end, copy);
            }
        }
        Damage::DeleteLine { line: i } => {
            if let Some(r) = line(i) {
                bytes.drain(r);
            }
        }
        Damage::SwapLines { a, b } => {
            if let (Some(x), Some(y)) = (line(a), line(b)) {
                if x.end <= y.start {
                    let (xa, ya) = (bytes[x.clone()].to_vec(), bytes[y.clone()].to_vec());
                    bytes.splice(y, xa);
                    bytes.splice(x, ya);
                }
            }
        }
        Damage::Indent { line: i, by } => {
            if let Some(r) = line(i) {
                if *by >= 0 {
                    let pad = vec![b' '; usize::from(by.unsigned_abs())];
                    bytes.splice(r.start..r.start, pad);
                } else {
                    let spaces = bytes[r.clone()].iter().take_while(|&&b| b == b' ').count();
                    let n = spaces.min(usize::from(by.unsigned_abs()));
                    bytes.drain(r.start..r.start + n);
                }
            }
        }
        Damage::Bytes { at: i, bytes: raw } => {
            let p = at(i, bytes.len());
            bytes.splice(p..p, raw.iter().copied());
        }
        Damage::Splice {
            line: i,
            file,
            from,
        } => {
            if others.is_empty() {
                return;
            }
            let other = others[file.index(others.len())];
            let ols = lines(other);
            if let (Some(r), false) = (line(i), ols.is_empty()) {
                let src = other[ols[from.index(ols.len())].clone()].to_vec();
                bytes.splice(r, src);
            }
        }
        Damage::Huge { at: i, kind } => {
            let p = at(i, bytes.len());
            let text: Vec<u8> = match kind {
                0 => "[".repeat(3000).into_bytes(),
                1 => format!("\"{}\"", "a".repeat(300_000)).into_bytes(),
                2 => "- ".repeat(2000).into_bytes(),
                3 => (0..2000)
                    .map(|i| format!("k{i}: {i}\n"))
                    .collect::<String>()
                    .into_bytes(),
                4 => "a: &x [*x, *x]\n".repeat(50).into_bytes(),
                _ => (0..40)
                    .map(|i| format!("{}- x{i}:\n", " ".repeat(i * 2)))
                    .collect::<String>()
                    .into_bytes(),
            };
            bytes.splice(p..p, text);
        }
    }
}

/// How often each family of seeds is drawn, in percent: small's own workspaces and the v1
/// corpus most, the v1.1 corpus (command proofs, run snapshots), and the v2 corpus (which the
/// v1 commands read as a workspace without its v1 files).
const FAMILY_WEIGHTS: &[(&str, usize)] = &[("built-in", 25), ("v1", 45), ("v1.1", 20), ("v2", 10)];

/// The seed for `family` and `seed`: a family by [`FAMILY_WEIGHTS`] (among those present),
/// then a seed of it.
fn pick_seed(seeds: &[Seed], family: &Index, seed: &Index) -> usize {
    let of = |f: &str| -> Vec<usize> {
        (0..seeds.len())
            .filter(|&i| seeds[i].name.split('/').next() == Some(f))
            .collect()
    };
    let present: Vec<(Vec<usize>, usize)> = FAMILY_WEIGHTS
        .iter()
        .map(|(f, w)| (of(f), *w))
        .filter(|(members, _)| !members.is_empty())
        .collect();
    let total: usize = present.iter().map(|(_, w)| w).sum();
    if total == 0 {
        return seed.index(seeds.len());
    }
    let mut at = family.index(total);
    for (members, w) in &present {
        if at < *w {
            return members[seed.index(members.len())];
        }
        at -= w;
    }
    seed.index(seeds.len())
}

/// One input: which seed, which of its files, what damage, which writing command.
#[derive(Debug, Clone)]
struct Input {
    family: Index,
    seed: Index,
    file: Index,
    damage: Vec<Damage>,
    write: Index,
}

fn input() -> impl Strategy<Value = Input> {
    (
        any::<Index>(),
        any::<Index>(),
        any::<Index>(),
        proptest::collection::vec(damage(), 1..4),
        any::<Index>(),
    )
        .prop_map(|(family, seed, file, damage, write)| Input {
            family,
            seed,
            file,
            damage,
            write,
        })
}

/// The read commands every input goes through.
fn read_commands(dir: &str) -> Vec<Vec<String>> {
    let cmds: &[&[&str]] = &[
        &["validate"],
        &["lint", "--strict", "--no-cache"],
        &["verify", "--strict", "--workspace", "any"],
        &["check", "--strict", "--workspace", "any"],
        &[
            "check",
            "--strict",
            "--json",
            "--workspace",
            "any",
            "--no-cache",
        ],
        &["status"],
        &["status", "--json"],
        &["emit", "--workspace", "any"],
        &["resume"],
        &["resume", "--json"],
        &["doctor"],
        &["reconstruct", "--json"],
        &["reconstruct", "--task", "task-1", "--limit", "2"],
        &["run", "list", "--json"],
    ];
    let mut all: Vec<Vec<String>> = cmds
        .iter()
        .map(|c| {
            let mut v: Vec<String> = c.iter().map(|s| s.to_string()).collect();
            v.extend(["--dir".to_string(), dir.to_string()]);
            v
        })
        .collect();
    // `health` takes the workspace as an argument.
    all.push(vec!["health".into(), "--json".into(), dir.to_string()]);
    all
}

/// The writing commands; one runs per input. A failed write must leave `.small/` as it was.
fn write_commands(dir: &str) -> Vec<Vec<String>> {
    let cmds: &[&[&str]] = &[
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            "fuzz: ran it",
        ],
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "fuzz: cargo test passed",
        ],
        &["plan", "--add", "Fuzz task"],
        &["plan", "--cancel", "task-2"],
        &["handoff"],
        &["run", "snapshot"],
        &["reset", "--yes"],
    ];
    cmds.iter()
        .map(|c| {
            let mut v: Vec<String> = c.iter().map(|s| s.to_string()).collect();
            v.extend([
                "--workspace".into(),
                "any".into(),
                "--dir".into(),
                dir.into(),
            ]);
            v
        })
        .collect()
}

/// The bytes of every regular file of `.small/`.
fn small_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(root.join(".small")) {
        for e in entries.flatten() {
            let p = e.path();
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
                if let Ok(b) = std::fs::read(&p) {
                    out.insert(e.file_name().to_string_lossy().into_owned(), b);
                }
            }
        }
    }
    out
}

/// What the watchdog sees: the command running on each worker and since when.
#[derive(Default)]
struct Watch {
    running: Mutex<Vec<Option<(Instant, String)>>>,
}

/// Counts for the closing report.
#[derive(Default)]
struct Stats {
    inputs: AtomicUsize,
    commands: AtomicUsize,
    exits: [AtomicUsize; 3],
    declined_or_agreed: AtomicUsize,
    slowest_ms: AtomicU64,
    families: Mutex<BTreeMap<String, usize>>,
    targets: Mutex<BTreeMap<String, usize>>,
}

/// Everything one worker needs to run inputs.
struct Worker<'a> {
    id: usize,
    seeds: &'a [Seed],
    root: PathBuf,
    watch: &'a Watch,
    stats: &'a Stats,
    deadline: Option<Instant>,
}

/// An [`Input`] resolved against the seeds: exactly what runs.
#[derive(Debug, Clone)]
struct Case {
    seed: usize,
    target: String,
    damage: Vec<Damage>,
    write: usize,
}

impl Worker<'_> {
    fn resolve(&self, input: &Input) -> Case {
        let seed = pick_seed(self.seeds, &input.family, &input.seed);
        let targets = self.seeds[seed].targets();
        Case {
            seed,
            target: targets[input.file.index(targets.len())].to_string(),
            damage: input.damage.clone(),
            write: input.write.index(write_commands("").len()),
        }
    }

    /// The damaged workspace for `case`, and the damaged file's bytes.
    fn build(&self, case: &Case) -> (Seed, Vec<u8>) {
        let seed = &self.seeds[case.seed];
        let others: Vec<&[u8]> = seed
            .files
            .iter()
            .filter(|(p, _)| **p != case.target)
            .filter_map(|(_, c)| match c {
                Content::File(b) => Some(b.as_slice()),
                Content::Link(_) => None,
            })
            .collect();
        let mut bytes = match seed.files.get(&case.target) {
            Some(Content::File(b)) => b.clone(),
            _ => Vec::new(),
        };
        for d in &case.damage {
            apply(d, &mut bytes, &others);
        }
        let mut damaged = seed.clone();
        damaged
            .files
            .insert(case.target.clone(), Content::File(bytes.clone()));
        (damaged, bytes)
    }

    fn command(&self, args: &[String]) -> Result<u8, String> {
        let shown = args.join(" ");
        if let Ok(mut r) = self.watch.running.lock() {
            r[self.id] = Some((Instant::now(), shown.clone()));
        }
        let started = Instant::now();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let code = run_small(&argv);
        let ms = started.elapsed().as_millis() as u64;
        self.stats.slowest_ms.fetch_max(ms, Ordering::Relaxed);
        if let Ok(mut r) = self.watch.running.lock() {
            r[self.id] = None;
        }
        self.stats.commands.fetch_add(1, Ordering::Relaxed);
        match code {
            Ok(c @ 0..=2) => {
                self.stats.exits[usize::from(c)].fetch_add(1, Ordering::Relaxed);
                Ok(c)
            }
            Ok(c) => Err(format!("`small {shown}` exited {c}")),
            Err(panic) => Err(format!("`small {shown}` panicked: {panic}")),
        }
    }

    /// Keep this worker's current input where a developer finds it after an abort that no
    /// unwinding reports (a stack overflow, the watchdog): `last-w<N>.case` says what it is,
    /// `last-w<N>.bytes` holds the damaged file. Overwritten by the next input.
    fn keep_last(&self, damaged: &Seed, case: &Case, bytes: &[u8]) {
        let dir = std::env::temp_dir().join("small-fuzz-failures");
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        let about = format!(
            "seed: {}\ndamaged file: {}\ndamage: {:?}\nwrite command: {:?}\n",
            damaged.name,
            case.target,
            case.damage,
            write_commands("").get(case.write).map(|a| a.join(" "))
        );
        let _ = std::fs::write(dir.join(format!("last-w{}.case", self.id)), about);
        let _ = std::fs::write(dir.join(format!("last-w{}.bytes", self.id)), bytes);
    }

    /// Run one case; `Err` describes what went wrong.
    fn run(&self, case: &Case) -> Result<(), String> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(());
        }
        let (damaged, bytes) = self.build(case);
        let target = &case.target;
        self.keep_last(&damaged, case, &bytes);
        self.stats.inputs.fetch_add(1, Ordering::Relaxed);
        let family = damaged.name.split('/').next().unwrap_or("").to_string();
        if let Ok(mut f) = self.stats.families.lock() {
            *f.entry(family).or_default() += 1;
        }
        let name = target.rsplit('/').next().unwrap_or("");
        let kind = if name.ends_with(".small.yml") {
            name.to_string()
        } else if target.starts_with(".small-cache/") {
            ".small-cache file".to_string()
        } else if name.ends_with(".json") {
            "v2 record (.json)".to_string()
        } else {
            "other".to_string()
        };
        if let Ok(mut t) = self.stats.targets.lock() {
            *t.entry(kind).or_default() += 1;
        }
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let differential = std::panic::catch_unwind(|| {
                small_core::ops::formats::yaml::fast_path_differential(text)
            });
            match differential {
                Ok(Ok(())) => {
                    self.stats
                        .declined_or_agreed
                        .fetch_add(1, Ordering::Relaxed);
                }
                Ok(Err(e)) => return Err(format!("fast YAML path differs on {target}: {e}")),
                Err(_) => return Err(format!("the YAML loader panicked on {target}")),
            }
        }
        damaged
            .materialize(&self.root)
            .map_err(|e| format!("cannot write the workspace: {e}"))?;
        let dir = self.root.to_string_lossy().into_owned();
        for args in read_commands(&dir) {
            self.command(&args)?;
        }
        let writes = write_commands(&dir);
        let args = &writes[case.write % writes.len()];
        let before = small_files(&self.root);
        let code = self.command(args)?;
        if code != 0 && small_files(&self.root) != before {
            return Err(format!(
                "`small {}` failed (exit {code}) but changed .small/",
                args.join(" ")
            ));
        }
        Ok(())
    }
}

/// Describe a failing input for the report, and keep its damaged file where a developer can
/// add it to the regression corpus.
fn report_failure(worker: &Worker<'_>, input: &Input, why: &str) -> String {
    let case = worker.resolve(input);
    let (damaged, bytes) = worker.build(&case);
    let target = &case.target;
    let dir = std::env::temp_dir().join("small-fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let slot = target
        .rsplit('/')
        .next()
        .unwrap_or("file")
        .replace(".small.yml", "");
    let file = dir.join(format!("{slot}--{}.yml", blake3_hex(&bytes)));
    let _ = std::fs::write(&file, &bytes);
    format!(
        "{why}\n  seed: {}\n  damaged file: {target}\n  damage: {:?}\n  its bytes are in {} (copy it into crates/small-cli/tests/fuzz_regressions/ as <slot>--<what>.yml)",
        damaged.name,
        case.damage,
        file.display()
    )
}

fn blake3_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(&sha2::Sha256::digest(bytes)[..8])
}

/// A number from the environment, or `default`.
fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The long run. `SMALL_FUZZ_INPUTS` (default 2000) inputs over two workers,
/// `SMALL_FUZZ_SECONDS` (default 240) at the most, from `SMALL_FUZZ_SEED` (default: the
/// clock, printed).
#[test]
#[ignore = "the long fuzz run: cargo test --release -p small-cli --bin small fuzz -- --ignored"]
fn fuzz_damaged_workspaces() {
    let inputs = env_number("SMALL_FUZZ_INPUTS", 2000);
    let seconds = env_number("SMALL_FUZZ_SECONDS", 240);
    let seed = env_number(
        "SMALL_FUZZ_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs()),
    );
    let scratch = tempfile::tempdir_in(scratch_base()).expect("scratch directory");
    let mut seeds = built_in_seeds(scratch.path());
    seeds.extend(corpus_seeds());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let watch = Arc::new(Watch::default());
    let stats = Stats::default();
    const WORKERS: usize = 2;
    if let Ok(mut r) = watch.running.lock() {
        r.resize(WORKERS, None);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let dog = {
        let (watch, stop) = (Arc::clone(&watch), Arc::clone(&stop));
        std::thread::spawn(move || watchdog(&watch, &stop))
    };
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|id| {
                let worker = Worker {
                    id,
                    seeds: &seeds,
                    root: scratch.path().join(format!("w{id}")),
                    watch: &watch,
                    stats: &stats,
                    deadline: Some(deadline),
                };
                s.spawn(move || {
                    let config = Config {
                        cases: u32::try_from(inputs / WORKERS as u64).unwrap_or(u32::MAX),
                        failure_persistence: None,
                        max_shrink_iters: 400,
                        max_shrink_time: 120_000,
                        ..Config::default()
                    };
                    let mut key = [0u8; 32];
                    key[..8].copy_from_slice(&seed.to_le_bytes());
                    key[8] = id as u8;
                    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &key);
                    let mut runner = TestRunner::new_with_rng(config, rng);
                    let outcome = runner.run(&input(), |i| {
                        worker.run(&worker.resolve(&i)).map_err(TestCaseError::fail)
                    });
                    match outcome {
                        Ok(()) => None,
                        Err(TestError::Fail(why, minimal)) => {
                            Some(report_failure(&worker, &minimal, &why.to_string()))
                        }
                        Err(e) => Some(e.to_string()),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap_or_else(|_| Some("a worker died".into())))
            .collect()
    });
    stop.store(true, Ordering::SeqCst);
    let _ = dog.join();
    let n = |a: &AtomicUsize| a.load(Ordering::Relaxed);
    eprintln!(
        "fuzz: seed {seed}; {} damaged workspaces from {} seeds ({:?}), files damaged {:?}; {} command runs (exit 0: {}, 1: {}, 2: {}), slowest {} ms; {} files through the YAML differential; {:.1} s",
        n(&stats.inputs),
        seeds.len(),
        stats.families.lock().map(|f| f.clone()).unwrap_or_default(),
        stats.targets.lock().map(|t| t.clone()).unwrap_or_default(),
        n(&stats.commands),
        n(&stats.exits[0]),
        n(&stats.exits[1]),
        n(&stats.exits[2]),
        stats.slowest_ms.load(Ordering::Relaxed),
        n(&stats.declined_or_agreed),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "fuzzing found:\n{}",
        failures.join("\n\n")
    );
}

/// Where scratch workspaces go: memory when the machine has it.
fn scratch_base() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

/// Stop the whole process when one command runs past [`COMMAND_LIMIT`]: a hang is a failure
/// that no unwinding can report.
fn watchdog(watch: &Watch, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(200));
        let Ok(running) = watch.running.lock() else {
            continue;
        };
        for (since, what) in running.iter().flatten() {
            if since.elapsed() > COMMAND_LIMIT {
                eprintln!(
                    "fuzz: `small {what}` has run for more than {} s: a hang; stopping",
                    COMMAND_LIMIT.as_secs()
                );
                std::process::abort();
            }
        }
    }
}

/// The regression corpus: every file in `tests/fuzz_regressions/`, named `<slot>--<what>`,
/// put in place of that artifact in a workspace small wrote, through every command.
#[test]
fn fuzz_regressions_replay() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fuzz_regressions")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the regression corpus is empty");
    let scratch = tempfile::tempdir().expect("scratch directory");
    let seeds = built_in_seeds(scratch.path());
    let watch = Watch::default();
    if let Ok(mut r) = watch.running.lock() {
        r.resize(1, None);
    }
    let stats = Stats::default();
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let slot = name.split("--").next().unwrap_or_default();
        let target = if slot == "workspace" {
            ".small/workspace.small.yml".to_string()
        } else {
            format!(".small/{slot}.small.yml")
        };
        let bytes = std::fs::read(path).expect("a regression file");
        let damaged: Vec<Seed> = seeds
            .iter()
            .map(|seed| {
                assert!(
                    seed.files.contains_key(&target),
                    "{name}: `{slot}` names no artifact"
                );
                let mut damaged = seed.clone();
                damaged
                    .files
                    .insert(target.clone(), Content::File(bytes.clone()));
                damaged
            })
            .collect();
        let worker = Worker {
            id: 0,
            seeds: &damaged,
            root: scratch.path().join("w"),
            watch: &watch,
            stats: &stats,
            deadline: None,
        };
        for (seed, damaged_seed) in damaged.iter().enumerate() {
            for write in 0..write_commands("").len() {
                let case = Case {
                    seed,
                    target: target.clone(),
                    damage: Vec::new(),
                    write,
                };
                if let Err(e) = worker.run(&case) {
                    failures.push(format!("{name} in {}: {e}", damaged_seed.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(stats.inputs.load(Ordering::Relaxed) >= files.len());
}
