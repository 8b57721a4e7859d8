//! Workload generator and command benchmark for `small`.
//!
//! `small-bench gen` writes a valid `.small/` workspace with T plan tasks and P progress
//! entries, so that speed can be measured on workspaces of any size. `small-bench run` builds
//! a set of such workspaces and times real `small` invocations on them, reporting the median
//! wall time and the peak resident memory of each command (from `wait4`'s rusage); a
//! command with a budget (`BUDGETS`) over it makes `run` fail, so a slowdown is seen when it
//! happens.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

mod ui;
mod v2;
mod v2write;

#[derive(Parser)]
#[command(name = "small-bench")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The `small` binary to measure (build with --release)
    #[arg(long, default_value = "target/release/small")]
    small: PathBuf,
    /// A reference binary to run side by side on the same workspaces
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Repetitions per measurement (the median is reported)
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Repetitions per measurement of the reference [default: --runs]
    #[arg(long)]
    ref_runs: Option<usize>,
    /// Where to generate the workspaces
    #[arg(long, default_value = "target/bench-workspaces")]
    work: PathBuf,
    /// Progress entries of the workspaces to measure, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 10_000, 100_000])]
    sizes: Vec<usize>,
    /// Plan tasks of every workspace
    #[arg(long, default_value_t = 1000)]
    tasks: usize,
    /// Measure only the commands whose name contains one of these words (comma-separated)
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Also measure a 10-task, 10-entry workspace (start-up cost)
    #[arg(long)]
    small_workspace: bool,
    /// Print the table as Markdown
    #[arg(long)]
    markdown: bool,
    /// Report the budgets (see `BUDGETS`) but do not fail on them
    #[arg(long)]
    no_budgets: bool,
}

#[derive(clap::Args)]
struct V2AppendArgs {
    /// The `small` binary to measure (build with --release)
    #[arg(long, default_value = "target/release/small")]
    small: PathBuf,
    /// A reference binary to measure the same way
    #[arg(long)]
    reference: Option<PathBuf>,
    /// A 2.0.0 workspace (a directory holding .small/profile.json) with a task `task-1`
    /// and no active session, e.g. ../shared/conformance/v2/cases/wf-single-session
    #[arg(long)]
    case: PathBuf,
    /// Sequential appends timed for the latency
    #[arg(long, default_value_t = 200)]
    appends: usize,
    /// Writer processes for the throughput
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Appends per writer
    #[arg(long, default_value_t = 20)]
    per_writer: usize,
    /// Where to copy the workspace
    #[arg(long, default_value = "target/bench-v2")]
    work: PathBuf,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a valid workspace with T tasks and P progress entries into DIR/.small
    Gen {
        #[arg(long, short = 't', default_value_t = 1000)]
        tasks: usize,
        #[arg(long, short = 'p', default_value_t = 10000)]
        progress: usize,
        /// Directory to create the workspace in (its .small/ is replaced)
        #[arg(long)]
        dir: PathBuf,
    },
    /// Generate workspaces and time every workspace-reading command on them (median wall
    /// time and peak memory); with --reference, run that binary side by side
    Run(RunArgs),
    /// `run` with a reference binary side by side (the same as `run --reference PATH`)
    Compare(RunArgs),
    /// Profile 2.0.0: generate v1 workspaces, migrate them (timed, side by side with
    /// --reference), then time reconstruct, check --strict and status on the migrated trees
    V2(v2::Args),
    /// Time the YAML loader alone on one file (full tree, then streaming `entries`)
    Parse { file: PathBuf },
    /// Time `small ui` on a generated workspace: page loads, live-update latency, memory
    Ui(ui::UiArgs),

    /// SMALL 2.0.0 event appends on a copy of a 2.0.0 workspace: the latency of sequential
    /// `progress add` (p50, p99), then W writer processes appending N each through one
    /// session at once (appended, refused, events per second); with --reference, the same
    /// with that binary on its own copy
    V2Append(V2AppendArgs),
    /// SMALL 2.0.0 writes (`progress add`, `checkpoint`, `handoff`, `session close`) at
    /// 1 000 / 10 000 / 100 000 events: after small's own write and after another program
    /// extended the tree, with a chain of appends; `--max-ms` fails the run on a drift
    V2Write(v2write::Args),
    /// Time the secrets scanner (lint rule INV1) alone on every string of one YAML file
    Secrets {
        file: PathBuf,
        /// Repetitions (the fastest is reported)
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
}

fn main() {
    let cli = Cli::parse();
    // `run` and `compare` exit with 1 when a command is over its budget (2 on errors).
    let mut within_budgets = true;
    let mut benchmarks = |args: &RunArgs| run_benchmarks(args).map(|ok| within_budgets = ok);
    let result = match cli.command {
        Cmd::Gen {
            tasks,
            progress,
            dir,
        } => generate(&dir, tasks, progress).map(|bytes| {
            println!(
                "wrote {} (T={tasks}, P={progress}, progress log {bytes} bytes)",
                dir.join(".small").display()
            )
        }),
        Cmd::Run(args) => benchmarks(&args),
        Cmd::Compare(args) => {
            if args.reference.is_none() {
                Err("compare needs --reference PATH (the binary to compare with)".into())
            } else {
                benchmarks(&args)
            }
        }
        Cmd::V2(args) => v2::run(&args),
        Cmd::Parse { file } => time_parse(&file),
        Cmd::Ui(args) => ui::run(&args, &generate_fresh),
        Cmd::V2Append(args) => v2_append(&args),
        Cmd::V2Write(args) => match v2write::run_all(&args) {
            Ok(true) => Ok(()),
            Ok(false) => std::process::exit(1),
            Err(e) => Err(e),
        },
        Cmd::Secrets { file, runs } => time_secrets(&file, runs),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    if !within_budgets {
        std::process::exit(1);
    }
}

/// Writes the workspace; returns the size of the progress log in bytes.
fn generate(dir: &Path, tasks: usize, progress: usize) -> Result<u64, String> {
    let small = dir.join(".small");
    if small.exists() {
        fs::remove_dir_all(&small).map_err(|e| format!("{}: {e}", small.display()))?;
    }
    fs::create_dir_all(&small).map_err(|e| format!("{}: {e}", small.display()))?;
    let tasks = tasks.max(1);
    // The last tenth of the tasks stay pending; the others are completed with evidence.
    let done = tasks
        - tasks
            .div_ceil(10)
            .min(tasks - 1)
            .max(usize::from(tasks > 1));

    let intent = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Benchmark workload: a long-running project with a large progress log.\"\nscope:\n  include:\n    - \"src/**\"\n  exclude: []\nsuccess_criteria:\n  - \"Every task is completed with evidence\"\n";
    let constraints = "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"tests-pass\"\n    rule: \"Every change keeps the test suite green\"\n    severity: \"error\"\n";
    let mut plan = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n");
    for i in 1..=tasks {
        let status = if i <= done { "completed" } else { "pending" };
        let _ = write!(
            plan,
            "  - id: \"task-{i}\"\n    title: \"Implement step {i} of the benchmark project\"\n    status: \"{status}\"\n"
        );
        if i > 1 && i % 7 == 0 {
            let _ = writeln!(plan, "    depends_on:\n      - \"task-{}\"", i - 1);
        }
    }
    let replay_id = small_core::ops::formats::auto_replay_id(
        intent.as_bytes(),
        plan.as_bytes(),
        Some(constraints.as_bytes()),
    );

    let mut log = String::with_capacity(progress * 330 + 64);
    log.push_str("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
    let base = 1_767_225_600u64; // 2026-01-01T00:00:00Z
    for j in 0..progress {
        // Entries are spread over the completed tasks; the final one of each task completes it.
        let task = if done == 0 { 1 } else { j % done + 1 };
        let status = if done > 0 && j + done >= progress {
            "completed"
        } else {
            "in_progress"
        };
        let secs = base + j as u64;
        let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
        let day = 1 + (secs - base) / 86_400;
        let (month, day) = (1 + (day - 1) / 28, 1 + (day - 1) % 28);
        let _ = write!(
            log,
            "  - timestamp: \"2026-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{:06}Z\"\n    task_id: \"task-{task}\"\n    status: \"{status}\"\n    evidence: \"cargo test -p app: 214 passed, 0 failed (run {j})\"\n    command: \"cargo test -p app\"\n    notes: \"Step {j}: implemented and verified the change for task-{task}\"\n    replayId: \"{replay_id}\"\n",
            j % 1_000_000
        );
    }
    let handoff = format!(
        "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"Benchmark run with {tasks} tasks\"\nresume:\n  current_task_id: \"task-{}\"\n  next_steps:\n    - \"Continue with the next pending task\"\nlinks: []\nreplayId:\n  value: \"{replay_id}\"\n  source: \"auto\"\n",
        (done + 1).min(tasks)
    );
    let workspace = format!(
        "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\ncreated_at: \"2026-01-01T00:00:00.000000Z\"\nupdated_at: \"2026-01-01T00:00:00.000000Z\"\nrun:\n  replay_id: \"{replay_id}\"\n"
    );
    let files = [
        ("intent.small.yml", intent.to_string()),
        ("constraints.small.yml", constraints.to_string()),
        ("plan.small.yml", plan),
        ("progress.small.yml", log),
        ("handoff.small.yml", handoff),
        ("workspace.small.yml", workspace),
    ];
    for (name, text) in &files {
        let path = small.join(name);
        fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(files[3].1.len() as u64)
}

/// Generate in a child process and flush it to disk before timing anything: the measured
/// commands must not inherit this process's memory (a forked child starts with its parent's
/// resident set) nor pay for flushing the freshly written files in their own `fsync`.
fn generate_fresh(dir: &Path, tasks: usize, progress: usize) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let status = Command::new(exe)
        .args([
            "gen",
            "--tasks",
            &tasks.to_string(),
            "--progress",
            &progress.to_string(),
            "--dir",
        ])
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("generating {} failed", dir.display()));
    }
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    fs::metadata(dir.join(".small/progress.small.yml"))
        .map(|m| m.len())
        .map_err(|e| e.to_string())
}

/// One finished command: wall time, CPU time (user + system), peak RSS in KiB, exit code.
struct Sample {
    wall: Duration,
    cpu: Duration,
    max_rss_kib: u64,
    exit: i32,
}

fn measure(small: &Path, args: &[&str], dir: &Path) -> Result<Sample, String> {
    measure_with(small, args, dir, Stdio::null())
}

/// [`measure`] with the command's standard output sent to `stdout`.
fn measure_with(small: &Path, args: &[&str], dir: &Path, stdout: Stdio) -> Result<Sample, String> {
    let start = Instant::now();
    let child = Command::new(small)
        .args(args)
        .current_dir(dir)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", small.display()))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; wait4 fills it for the child we just spawned. std's
    // `Child` is dropped without waiting, so the child is reaped exactly once, here.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    drop(child);
    if rc < 0 {
        return Err(format!("wait4 failed: {}", std::io::Error::last_os_error()));
    }
    let exit = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(Sample {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss as u64,
        exit,
    })
}

fn median(mut samples: Vec<Sample>) -> Sample {
    samples.sort_by_key(|s| s.wall);
    let mid = samples.len() / 2;
    samples.swap_remove(mid)
}

/// How a measured command treats the workspace.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Reads only: every run uses the same workspace.
    Read,
    /// Writes: every run gets a fresh copy of the workspace.
    Write,
    /// `check --strict --json` right after one `progress add`, on a copy left past the racy
    /// margin whose previous check ran before the append (what a repeated gate costs).
    CheckAfterAdd,
}

/// One measured command: its name in the table, our arguments, the reference's arguments
/// (`None`: the reference has no such command).
struct Bench {
    name: &'static str,
    ours: &'static [&'static str],
    reference: Option<&'static [&'static str]>,
    kind: Kind,
}

const ADD: &[&str] = &[
    "progress",
    "add",
    "--task",
    "task-1",
    "--status",
    "in_progress",
    "--evidence",
    "bench append",
];

/// Every command that reads the workspace. The gates run with `--no-cache` so that they
/// measure a full check; the cached path has its own row.
const BENCHES: &[Bench] = &[
    Bench {
        name: "check --strict --json",
        ours: &["check", "--strict", "--json", "--no-cache"],
        reference: Some(&["check", "--strict", "--json"]),
        kind: Kind::Read,
    },
    Bench {
        name: "check after progress add",
        ours: &["check", "--strict", "--json"],
        reference: Some(&["check", "--strict", "--json"]),
        kind: Kind::CheckAfterAdd,
    },
    Bench {
        name: "lint --strict",
        ours: &["lint", "--strict", "--no-cache"],
        reference: Some(&["lint", "--strict"]),
        kind: Kind::Read,
    },
    Bench {
        name: "lint after progress add",
        ours: &["lint", "--strict"],
        reference: Some(&["lint", "--strict"]),
        kind: Kind::CheckAfterAdd,
    },
    Bench {
        name: "verify --strict",
        ours: &["verify", "--strict", "--no-cache"],
        reference: Some(&["verify", "--strict"]),
        kind: Kind::Read,
    },
    Bench {
        name: "validate",
        ours: &["validate", "--no-cache"],
        reference: Some(&["validate"]),
        kind: Kind::Read,
    },
    Bench {
        name: "status --json",
        ours: &["status", "--json"],
        reference: Some(&["status", "--json"]),
        kind: Kind::Read,
    },
    Bench {
        name: "emit",
        ours: &["emit"],
        reference: Some(&["emit"]),
        kind: Kind::Read,
    },
    Bench {
        name: "doctor",
        ours: &["doctor"],
        reference: Some(&["doctor"]),
        kind: Kind::Read,
    },
    Bench {
        name: "handoff",
        ours: &["handoff"],
        reference: Some(&["handoff"]),
        kind: Kind::Write,
    },
    Bench {
        name: "start",
        ours: &["start"],
        reference: Some(&["start"]),
        kind: Kind::Write,
    },
    Bench {
        name: "reset --yes",
        ours: &["reset", "--yes"],
        reference: Some(&["reset", "--yes"]),
        kind: Kind::Write,
    },
    Bench {
        name: "run snapshot",
        ours: &["run", "snapshot"],
        reference: Some(&["run", "snapshot"]),
        kind: Kind::Write,
    },
    Bench {
        name: "archive",
        ours: &["archive"],
        reference: Some(&["archive"]),
        kind: Kind::Write,
    },
    Bench {
        name: "progress add",
        ours: ADD,
        reference: Some(ADD),
        kind: Kind::Write,
    },
];

/// A command's budget: at `size` progress entries its median wall time must stay under `ms`.
/// A median over its budget prints a FAIL line and makes `run` and `compare` exit with 1, so
/// that a slowdown is seen where it happens instead of in a stale table.
struct Budget {
    command: &'static str,
    size: usize,
    ms: f64,
}

/// The budgets `run` and `compare` hold our binary to (not the reference).
const BUDGETS: &[Budget] = &[Budget {
    // A gate run again after an append: what an agent pays at every step (issue 43).
    command: "check after progress add",
    size: 100_000,
    ms: 30.0,
}];

/// Print one line per budgeted row measured (`budget ok` or `FAIL`); `true` when none is over.
fn check_budgets(rows: &[Row]) -> bool {
    let mut within = true;
    for b in BUDGETS {
        for r in rows
            .iter()
            .filter(|r| r.command == b.command && r.size == b.size)
        {
            let median = ms(&r.ours);
            if median > b.ms {
                within = false;
                println!(
                    "FAIL {} at P={}: median {median:.1} ms is over its budget of {:.0} ms",
                    b.command, b.size, b.ms
                );
            } else {
                println!(
                    "budget ok: {} at P={}: median {median:.1} ms (budget {:.0} ms)",
                    b.command, b.size, b.ms
                );
            }
        }
    }
    within
}

/// Copy the workspace's `.small/` into `to` (replacing what was there) and flush it.
fn fresh_copy(from: &Path, to: &Path) -> Result<(), String> {
    if to.exists() {
        fs::remove_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    let dst = to.join(".small");
    fs::create_dir_all(&dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    let src = from.join(".small");
    for entry in fs::read_dir(&src).map_err(|e| format!("{}: {e}", src.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.file_type().map_err(|e| e.to_string())?.is_file() {
            fs::copy(entry.path(), dst.join(entry.file_name())).map_err(|e| e.to_string())?;
        }
    }
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    Ok(())
}

/// How long a fresh copy is left before its first check (past the racy margin).
const RACY_AGE: Duration = Duration::from_millis(300);

/// Median of `runs` measurements of one command with one binary.
fn measure_bench(
    bin: &Path,
    args: &[&str],
    kind: Kind,
    base: &Path,
    scratch: &Path,
    runs: usize,
) -> Result<Sample, String> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let s = match kind {
            Kind::Read => measure(bin, args, base)?,
            Kind::Write => {
                fresh_copy(base, scratch)?;
                measure(bin, args, scratch)?
            }
            Kind::CheckAfterAdd => {
                fresh_copy(base, scratch)?;
                // A log in use was last written longer ago than the racy margin (200 ms)
                // when a gate checks it; a copy checked at once would not have its stat
                // recorded (docs/decisions/0151-v1-recheck-trusts-an-unchanged-stat.md).
                std::thread::sleep(RACY_AGE);
                measure(bin, args, scratch)?;
                let add = measure(bin, ADD, scratch)?;
                if add.exit != 0 {
                    return Err(format!("progress add failed with exit code {}", add.exit));
                }
                measure(bin, args, scratch)?
            }
        };
        samples.push(s);
    }
    Ok(median(samples))
}

/// One row of the table.
struct Row {
    size: usize,
    command: &'static str,
    log_bytes: u64,
    ours: Sample,
    reference: Option<Sample>,
}

/// Measure and print; `Ok(false)` when a row is over its budget (and budgets are kept).
fn run_benchmarks(a: &RunArgs) -> Result<bool, String> {
    let canon = |p: &Path| {
        fs::canonicalize(p).map_err(|e| {
            format!(
                "{}: {e} (build it with `cargo build --release -p small-cli`)",
                p.display()
            )
        })
    };
    let small = canon(&a.small)?;
    let reference = a.reference.as_deref().map(canon).transpose()?;
    let runs = a.runs.max(1);
    let ref_runs = a.ref_runs.unwrap_or(runs).max(1);
    fs::create_dir_all(&a.work).map_err(|e| format!("{}: {e}", a.work.display()))?;
    let work = canon(&a.work)?;
    let mut sizes: Vec<(usize, usize)> = a.sizes.iter().map(|&p| (a.tasks, p)).collect();
    if a.small_workspace {
        sizes.insert(0, (10, 10));
    }
    let benches: Vec<&Bench> = BENCHES
        .iter()
        .filter(|b| a.only.is_empty() || a.only.iter().any(|w| b.name.contains(w.as_str())))
        .collect();
    eprintln!(
        "small-bench: {} runs each (reference: {}), median wall time and peak RSS; load: {}",
        runs,
        reference.as_ref().map_or("none".to_string(), |r| format!(
            "{} runs of {}",
            ref_runs,
            r.display()
        )),
        load_average()
    );
    let mut rows = Vec::new();
    for (t, p) in sizes {
        let dir = work.join(format!("T{t}-P{p}"));
        let scratch = work.join(format!("T{t}-P{p}-scratch"));
        let bytes = generate_fresh(&dir, t, p)?;
        for b in &benches {
            let ours = measure_bench(&small, b.ours, b.kind, &dir, &scratch, runs)?;
            let theirs = match (&reference, b.reference) {
                (Some(r), Some(args)) => {
                    Some(measure_bench(r, args, b.kind, &dir, &scratch, ref_runs)?)
                }
                _ => None,
            };
            let row = Row {
                size: p,
                command: b.name,
                log_bytes: bytes,
                ours,
                reference: theirs,
            };
            if !a.markdown {
                print_row(&row);
            }
            rows.push(row);
        }
    }
    if a.markdown {
        print_markdown(&rows);
    }
    print_exponents(&rows);
    let within = check_budgets(&rows);
    if !within && a.no_budgets {
        eprintln!("small-bench: over budget, not failing (--no-budgets)");
    }
    Ok(within || a.no_budgets)
}

fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn ms(s: &Sample) -> f64 {
    s.wall.as_secs_f64() * 1000.0
}

fn cpu_ms(s: &Sample) -> f64 {
    s.cpu.as_secs_f64() * 1000.0
}

fn mib(s: &Sample) -> f64 {
    s.max_rss_kib as f64 / 1024.0
}

fn print_row(r: &Row) {
    let mut line = format!(
        "P={:<7} {:<26} {:>9.1} ms (cpu {:>8.1} ms) {:>7.1} MiB ({:>4.2}x log) exit {}",
        r.size,
        r.command,
        ms(&r.ours),
        cpu_ms(&r.ours),
        mib(&r.ours),
        r.ours.max_rss_kib as f64 * 1024.0 / r.log_bytes.max(1) as f64,
        r.ours.exit
    );
    if let Some(t) = &r.reference {
        let _ = write!(
            line,
            " | reference {:>9.1} ms {:>8.1} MiB exit {} | {:>6.1}x faster",
            ms(t),
            mib(t),
            t.exit,
            ms(t) / ms(&r.ours).max(0.001)
        );
    }
    println!("{line}");
}

fn print_markdown(rows: &[Row]) {
    let with_ref = rows.iter().any(|r| r.reference.is_some());
    if with_ref {
        println!("| P | command | small | peak memory (× log) | reference | reference memory | speed-up |");
        println!("|---|---|---|---|---|---|---|");
    } else {
        println!("| P | command | small | peak memory (× log) |");
        println!("|---|---|---|---|");
    }
    for r in rows {
        let ours = format!(
            "| {} | `{}` | {:.1} ms{} | {:.1} MiB ({:.2}×) |",
            r.size,
            r.command,
            ms(&r.ours),
            if r.ours.exit == 0 {
                String::new()
            } else {
                format!(" (exit {})", r.ours.exit)
            },
            mib(&r.ours),
            r.ours.max_rss_kib as f64 * 1024.0 / r.log_bytes.max(1) as f64
        );
        match &r.reference {
            Some(t) => println!(
                "{ours} {:.1} ms{} | {:.1} MiB | {:.0}× |",
                ms(t),
                if t.exit == 0 {
                    String::new()
                } else {
                    format!(" (exit {})", t.exit)
                },
                mib(t),
                ms(t) / ms(&r.ours).max(0.001)
            ),
            None if with_ref => println!("{ours} | | |"),
            None => println!("{ours}"),
        }
    }
}

/// Scaling exponent of each command between the smallest and the largest size measured:
/// time ∝ P^k (k = 1 is linear; fixed start-up costs make it smaller).
fn print_exponents(rows: &[Row]) {
    let (Some(lo), Some(hi)) = (
        rows.iter().map(|r| r.size).filter(|&p| p > 10).min(),
        rows.iter().map(|r| r.size).max(),
    ) else {
        return;
    };
    if lo >= hi {
        return;
    }
    println!("\nscaling exponent k (time ∝ P^k) from P={lo} to P={hi}:");
    for b in BENCHES {
        let at = |p: usize| rows.iter().find(|r| r.size == p && r.command == b.name);
        if let (Some(a), Some(z)) = (at(lo), at(hi)) {
            let k = (ms(&z.ours) / ms(&a.ours)).ln() / (hi as f64 / lo as f64).ln();
            println!("  {:<26} k = {:.2}", b.name, k);
        }
    }
}

fn time_parse(file: &Path) -> Result<(), String> {
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let limits = small_core::ops::formats::yaml::Limits::default();
    let start = Instant::now();
    let events = small_core::ops::formats::yaml::count_raw_events(&text);
    println!(
        "raw parser events: {events} in {:.1} ms",
        start.elapsed().as_secs_f64() * 1000.0
    );
    let start = Instant::now();
    let doc =
        small_core::ops::formats::yaml::parse_str(&text, &limits).map_err(|e| e.to_string())?;
    let full = start.elapsed();
    drop(doc);
    let start = Instant::now();
    let mut items = 0usize;
    small_core::ops::formats::yaml::parse_streaming(&text, &limits, "entries", &mut |_, _| {
        items += 1
    })
    .map_err(|e| e.to_string())?;
    println!(
        "{}: {} bytes; full tree {:.1} ms; streaming {:.1} ms ({items} items)",
        file.display(),
        text.len(),
        full.as_secs_f64() * 1000.0,
        start.elapsed().as_secs_f64() * 1000.0
    );
    Ok(())
}

/// Every string of a document with the key that holds it.
fn strings_of<'a>(
    node: &'a small_core::ops::formats::yaml::Node,
    out: &mut Vec<(Option<&'a str>, &'a str)>,
) {
    use small_core::ops::formats::yaml::Value;
    let mut stack = vec![(node, None)];
    while let Some((n, key)) = stack.pop() {
        match &n.value {
            Value::Str(s) => out.push((key, s.as_str())),
            Value::Seq(items) => stack.extend(items.iter().map(|i| (i, None))),
            Value::Map(entries) => {
                stack.extend(entries.iter().map(|e| (&e.value, Some(e.key.as_ref()))))
            }
            _ => {}
        }
    }
}

fn time_secrets(file: &Path, runs: usize) -> Result<(), String> {
    use small_core::ops::secrets;
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let doc = small_core::ops::formats::yaml::parse_str(
        &text,
        &small_core::ops::formats::yaml::Limits::default(),
    )
    .map_err(|e| e.to_string())?;
    let mut strings = Vec::new();
    strings_of(&doc.root, &mut strings);
    let bytes: usize = strings.iter().map(|(_, s)| s.len()).sum();
    let mut best_scan = Duration::MAX;
    let mut best_doc = Duration::MAX;
    let mut found = 0usize;
    let mut hits = 0usize;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        found = strings
            .iter()
            .map(|(k, s)| secrets::scan_all(*k, s).len())
            .sum();
        best_scan = best_scan.min(start.elapsed());
        let start = Instant::now();
        hits = secrets::scan_document(&doc.root).len();
        best_doc = best_doc.min(start.elapsed());
    }
    let per = |d: Duration| d.as_nanos() as f64 / strings.len().max(1) as f64;
    println!(
        "{}: {} strings, {} bytes; scan_all {:.1} ms ({:.0} ns a string, {} findings); \
         scan_document {:.1} ms ({:.0} ns a string, {} hits) (fastest of {})",
        file.display(),
        strings.len(),
        bytes,
        best_scan.as_secs_f64() * 1000.0,
        per(best_scan),
        found,
        best_doc.as_secs_f64() * 1000.0,
        per(best_doc),
        hits,
        runs.max(1)
    );
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for e in fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let ft = e.file_type().map_err(|e| e.to_string())?;
        let dest = to.join(e.file_name());
        if ft.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else if ft.is_file() && e.file_name() != "expected.json" {
            fs::copy(e.path(), &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        }
    }
    Ok(())
}

fn v2_session(bin: &Path, dir: &Path) -> Result<String, String> {
    let out = Command::new(bin)
        .args(["session", "start", "--label", "bench", "--json"])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // The session id is the only `"session_id": "session_..."` whose value starts so.
    text.split("\"session_id\": \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "session start failed: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn v2_append_one(name: &str, bin: &Path, a: &V2AppendArgs) -> Result<(), String> {
    let dir = a.work.join(name);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| e.to_string())?;
    }
    copy_tree(&a.case, &dir)?;
    let sid = v2_session(bin, &dir)?;
    let args = |ev: &str| -> Vec<String> {
        [
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            ev,
            "--session",
            &sid,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut lat = Vec::with_capacity(a.appends);
    let mut failed = 0;
    for i in 0..a.appends {
        let argv = args(&format!("seq {i}"));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let s = measure(bin, &argv, &dir)?;
        if s.exit != 0 {
            failed += 1;
        }
        lat.push(s.wall);
    }
    lat.sort();
    println!(
        "{name}: {} sequential appends: p50 {:.1} ms, p99 {:.1} ms ({failed} failed)",
        a.appends,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
    let start = Instant::now();
    let writers: Vec<_> = (0..a.writers)
        .map(|w| {
            let bin = bin.to_path_buf();
            let dir = dir.clone();
            let argv: Vec<Vec<String>> = (0..a.per_writer)
                .map(|i| args(&format!("w{w} {i}")))
                .collect();
            std::thread::spawn(move || {
                let mut ok = 0usize;
                for argv in argv {
                    let st = Command::new(&bin)
                        .args(&argv)
                        .current_dir(&dir)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                    if st.is_ok_and(|s| s.success()) {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let ok: usize = writers.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    let secs = start.elapsed().as_secs_f64();
    let total = a.writers * a.per_writer;
    println!(
        "{name}: {} writers x {} appends: {ok} of {total} appended, {} refused, {:.2} s, {:.0} appends/s",
        a.writers,
        a.per_writer,
        total - ok,
        secs,
        ok as f64 / secs
    );
    Ok(())
}

fn v2_append(a: &V2AppendArgs) -> Result<(), String> {
    // The binaries run inside the copied workspace: relative paths are taken from here.
    let canon = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    let small = canon(&a.small)?;
    v2_append_one("small", &small, a)?;
    if let Some(r) = &a.reference {
        v2_append_one("reference", &canon(r)?, a)?;
    }
    Ok(())
}
