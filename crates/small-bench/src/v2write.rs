//! `small-bench v2-write`: what one SMALL 2.0.0 write costs at 1 000 / 10 000 / 100 000
//! events, when small wrote last and when another program extended the tree, side by side
//! with a reference binary.
//!
//! Each size's migrated tree (made as `small-bench v2` makes it, or reused from `--work`)
//! is copied and a session started; then each command runs `--runs` times, each run timed
//! as a whole process:
//! - **small wrote last**: the run follows small's own write, so the state small cached is
//!   the tree's;
//! - **extended by another program**: before the run small appends one event untimed and
//!   the state cache from before that append is put back, so the tree is the cached one
//!   plus an event small did not carry (what a `git pull` or the reference leaves).
//!
//! A chain of `--chain` `progress add` calls is timed in all, and the reference runs the
//! same commands on its own copy. With `--max-ms`, any small figure of the "small wrote
//! last" rows above it fails the run (exit 1), so a drift is loud.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{measure, median, ms, Sample};

#[derive(clap::Args)]
pub struct Args {
    /// The `small` binary to measure (build with --release)
    #[arg(long, default_value = "target/release/small")]
    small: PathBuf,
    /// A reference binary to run the same commands on its own copy
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Timed runs of each command (the median is reported)
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Timed runs of each command of the reference
    #[arg(long, default_value_t = 1)]
    ref_runs: usize,
    /// Where the migrated trees are (`small-bench v2 --work`), made when missing
    #[arg(long, default_value = "target/bench-v2")]
    work: PathBuf,
    /// Progress entries of the v1 workspaces the trees are migrated from, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 10_000, 100_000])]
    sizes: Vec<usize>,
    /// Plan tasks of a generated workspace
    #[arg(long, default_value_t = 100)]
    tasks: usize,
    /// Length of the timed chain of `progress add` calls
    #[arg(long, default_value_t = 100)]
    chain: usize,
    /// Fail (exit 1) when a "small wrote last" median is above this many milliseconds
    #[arg(long)]
    max_ms: Option<f64>,
}

/// The files of the state cache a writer carries (`small-core`'s v2 snapshot cache).
const CACHE_FILES: [&str; 2] = ["v2-state.v1", "v2-frontier.v1"];

/// A pending task of the generated plan (the last tenth stays pending).
fn task(tasks: usize) -> String {
    format!("task-{}", tasks.max(1))
}

/// The timed commands: (row name, arguments after the binary; `{s}` is the session id).
const COMMANDS: &[(&str, &[&str])] = &[
    (
        "progress add",
        &[
            "progress",
            "add",
            "--task",
            "{t}",
            "--status",
            "in_progress",
            "--evidence",
            "bench",
            "--session",
            "{s}",
        ],
    ),
    (
        "checkpoint",
        &[
            "checkpoint",
            "--task",
            "{t}",
            "--status",
            "blocked",
            "--evidence",
            "bench",
            "--session",
            "{s}",
        ],
    ),
    (
        "handoff",
        &["handoff", "--summary", "bench", "--session", "{s}"],
    ),
    (
        "session close",
        &["session", "close", "--summary", "bench", "--session", "{s}"],
    ),
];

fn fill(args: &[&str], session: &str, task: &str) -> Vec<String> {
    args.iter()
        .map(|a| a.replace("{s}", session).replace("{t}", task))
        .collect()
}

fn run(bin: &Path, args: &[String], dir: &Path) -> Result<Sample, String> {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = measure(bin, &argv, dir)?;
    if s.exit != 0 {
        return Err(format!(
            "`{} {}` failed in {} (exit {})",
            bin.display(),
            argv.join(" "),
            dir.display(),
            s.exit
        ));
    }
    Ok(s)
}

/// Start a session with `bin` in `dir`; its id. A session left active (solo mode allows
/// one) is closed first.
fn start(bin: &Path, dir: &Path) -> Result<String, String> {
    match start_once(bin, dir) {
        Err(e) => {
            let active = e
                .split("active session ")
                .nth(1)
                .map(|r| {
                    r.chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .filter(|s| s.starts_with("session_"));
            let Some(active) = active else { return Err(e) };
            run(bin, &fill(COMMANDS[3].1, &active, ""), dir)?;
            start_once(bin, dir)
        }
        ok => ok,
    }
}

fn start_once(bin: &Path, dir: &Path) -> Result<String, String> {
    super::v2_session(bin, dir).map_err(|e| format!("in {}: {e}", dir.display()))
}

/// A fresh copy of `from` at `to` (`cp -a`: the trees hold up to 100 000 files).
fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if to.exists() {
        fs::remove_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .map_err(|e| format!("cannot run cp: {e}"))?;
    st.success()
        .then_some(())
        .ok_or_else(|| format!("cp -a {} {} failed", from.display(), to.display()))
}

/// Append one event that small's cache does not carry: the cache files are kept, small
/// appends, and they are put back.
fn extend_behind_cache(small: &Path, dir: &Path, session: &str, t: &str) -> Result<(), String> {
    let cache = dir.join(".small-cache");
    let saved: Vec<(PathBuf, Option<Vec<u8>>)> = CACHE_FILES
        .iter()
        .map(|f| {
            let p = cache.join(f);
            let bytes = fs::read(&p).ok();
            (p, bytes)
        })
        .collect();
    run(small, &fill(COMMANDS[0].1, session, t), dir)?;
    for (p, bytes) in saved {
        match bytes {
            Some(b) => fs::write(&p, b).map_err(|e| format!("{}: {e}", p.display()))?,
            None => {
                let _ = fs::remove_file(&p);
            }
        }
    }
    Ok(())
}

/// The median of `runs` timed runs of command `c` with `bin` in `dir`; `foreign`: each run
/// after an event small's cache did not carry (written with `small`).
fn time_command(
    bin: &Path,
    small: &Path,
    dir: &Path,
    c: usize,
    runs: usize,
    foreign: bool,
    t: &str,
) -> Result<Sample, String> {
    let (_, args) = COMMANDS[c];
    let mut samples = Vec::new();
    let mut session = start(bin, dir)?;
    for _ in 0..runs.max(1) {
        if foreign {
            extend_behind_cache(small, dir, &session, t)?;
        }
        samples.push(run(bin, &fill(args, &session, t), dir)?);
        if args[0] == "session" {
            session = start(bin, dir)?;
        }
    }
    // Leave no session active for the next command.
    run(bin, &fill(COMMANDS[3].1, &session, t), dir)?;
    Ok(median(samples))
}

/// The migrated tree of `p` entries in `work`, made with `small-bench v2` when missing.
fn tree(a: &Args, p: usize) -> Result<PathBuf, String> {
    let dir = a.work.join(format!("v2-P{p}"));
    if dir.join(".small/profile.json").is_file() {
        return Ok(dir);
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let st = std::process::Command::new(exe)
        .arg("v2")
        .arg("--small")
        .arg(&a.small)
        .arg("--work")
        .arg(&a.work)
        .args(["--sizes", &p.to_string(), "--tasks", &a.tasks.to_string()])
        .args(["--runs", "1"])
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() || !dir.join(".small/profile.json").is_file() {
        return Err(format!("cannot make the migrated tree {}", dir.display()));
    }
    Ok(dir)
}

/// Run every row; `false` when a figure is over `--max-ms`.
pub fn run_all(a: &Args) -> Result<bool, String> {
    let canon = |p: &Path| fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    let small = canon(&a.small)?;
    let reference = a.reference.as_deref().map(canon).transpose()?;
    fs::create_dir_all(&a.work).map_err(|e| format!("{}: {e}", a.work.display()))?;
    let t = task(a.tasks);
    let mut over: Vec<String> = Vec::new();
    println!("| events | command | small wrote last | extended by another program | reference |");
    println!("|---|---|---|---|---|");
    for &p in &a.sizes {
        let base = canon(&tree(a, p)?)?;
        let events = super::v2::count_files(&base.join(".small/events"));
        let ours = canon(&a.work)?.join(format!("write-P{p}"));
        copy(&base, &ours)?;
        // The first read of the copy builds the cache (what any earlier command leaves).
        measure(&small, &["status", "--json"], &ours)?;
        let theirs = canon(&a.work)?.join(format!("write-P{p}-reference"));
        if reference.is_some() {
            copy(&base, &theirs)?;
        }
        for (c, (name, _)) in COMMANDS.iter().enumerate() {
            let last = time_command(&small, &small, &ours, c, a.runs, false, &t)?;
            let ext = time_command(&small, &small, &ours, c, a.runs, true, &t)?;
            let r = match &reference {
                Some(r) => Some(time_command(r, &small, &theirs, c, a.ref_runs, false, &t)?),
                None => None,
            };
            if a.max_ms.is_some_and(|m| ms(&last) > m) {
                over.push(format!("{events} events, {name}: {:.1} ms", ms(&last)));
            }
            println!(
                "| {events} | `{name}` | {:.1} ms | {:.1} ms | {} |",
                ms(&last),
                ms(&ext),
                r.map_or(String::new(), |r| format!("{:.0} ms", ms(&r)))
            );
        }
        let session = start(&small, &ours)?;
        let args = fill(COMMANDS[0].1, &session, &t);
        let began = Instant::now();
        for _ in 0..a.chain {
            run(&small, &args, &ours)?;
        }
        let all = began.elapsed();
        run(&small, &fill(COMMANDS[3].1, &session, &t), &ours)?;
        println!(
            "| {events} | {} × `progress add` in a row | {:.2} s in all | | |",
            a.chain,
            all.as_secs_f64()
        );
    }
    if let Some(m) = a.max_ms {
        if !over.is_empty() {
            for o in &over {
                eprintln!("FAIL: {o} (budget {m} ms)");
            }
            return Ok(false);
        }
    }
    Ok(true)
}
