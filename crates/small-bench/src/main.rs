//! Workload generator and command benchmark for `small`.
//!
//! `small-bench gen` writes a valid `.small/` workspace with T plan tasks and P progress
//! entries, so that speed can be measured on workspaces of any size. `small-bench run` builds
//! a set of such workspaces and times real `small` invocations on them, reporting the median
//! wall time and the peak resident memory of each command (from `wait4`'s rusage).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "small-bench")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
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
    /// Generate workspaces and time `small` commands on them
    Run {
        /// The `small` binary to measure (build with --release)
        #[arg(long, default_value = "target/release/small")]
        small: PathBuf,
        /// Repetitions per measurement (the median is reported)
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Where to generate the workspaces
        #[arg(long, default_value = "target/bench-workspaces")]
        work: PathBuf,
        /// Skip the 100000-entry workspace
        #[arg(long)]
        quick: bool,
    },
    /// Time the YAML loader alone on one file (full tree, then streaming `entries`)
    Parse { file: PathBuf },
}

fn main() {
    let cli = Cli::parse();
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
        Cmd::Run {
            small,
            runs,
            work,
            quick,
        } => run_benchmarks(&small, runs, &work, quick),
        Cmd::Parse { file } => time_parse(&file),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(2);
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
    let replay_id = small_core::spec::replayid::auto_replay_id(
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

/// One finished command: wall time, peak RSS in KiB, exit code.
struct Sample {
    wall: Duration,
    max_rss_kib: u64,
    exit: i32,
}

fn measure(small: &Path, args: &[&str], dir: &Path) -> Result<Sample, String> {
    let start = Instant::now();
    let child = Command::new(small)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
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
    Ok(Sample {
        wall,
        max_rss_kib: usage.ru_maxrss as u64,
        exit,
    })
}

fn median(mut samples: Vec<Sample>) -> Sample {
    samples.sort_by_key(|s| s.wall);
    let mid = samples.len() / 2;
    samples.swap_remove(mid)
}

fn run_benchmarks(small: &Path, runs: usize, work: &Path, quick: bool) -> Result<(), String> {
    let small = fs::canonicalize(small).map_err(|e| {
        format!(
            "{}: {e} (build it with `cargo build --release`)",
            small.display()
        )
    })?;
    let runs = runs.max(1);
    let mut sizes = vec![
        ("small", 10, 10),
        ("T1000-P1000", 1000, 1000),
        ("T1000-P10000", 1000, 10_000),
    ];
    if !quick {
        sizes.push(("T1000-P100000", 1000, 100_000));
    }
    println!(
        "small-bench: {} runs each, median wall time, peak RSS",
        runs
    );
    println!(
        "{:<16} {:<28} {:>10} {:>10} {:>6} {:>12}",
        "workspace", "command", "median", "peak RSS", "exit", "log bytes"
    );
    for (name, t, p) in sizes {
        let dir = work.join(name);
        let bytes = generate_fresh(&dir, t, p)?;
        let commands: [&[&str]; 3] = [
            &["check", "--strict", "--json"],
            &["status", "--json"],
            &["validate"],
        ];
        for args in commands {
            let samples = (0..runs)
                .map(|_| measure(&small, args, &dir))
                .collect::<Result<Vec<_>, _>>()?;
            report(name, &args.join(" "), median(samples), bytes);
        }
        // progress add: each run appends one entry to a fresh copy of the workspace.
        let mut samples = Vec::new();
        for i in 0..runs {
            generate_fresh(&dir, t, p)?;
            let evidence = format!("bench append {i}");
            let args = [
                "progress",
                "add",
                "--task",
                "task-1",
                "--status",
                "in_progress",
                "--evidence",
                &evidence,
            ];
            samples.push(measure(&small, &args, &dir)?);
        }
        report(name, "progress add", median(samples), bytes);
    }
    Ok(())
}

fn report(workspace: &str, command: &str, s: Sample, bytes: u64) {
    println!(
        "{:<16} {:<28} {:>8.2}ms {:>7.1}MiB {:>6} {:>12}",
        workspace,
        command,
        s.wall.as_secs_f64() * 1000.0,
        s.max_rss_kib as f64 / 1024.0,
        s.exit,
        bytes
    );
}

fn time_parse(file: &Path) -> Result<(), String> {
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let limits = small_core::yaml::Limits::default();
    let start = Instant::now();
    let events = small_core::yaml::count_raw_events(&text);
    println!(
        "raw parser events: {events} in {:.1} ms",
        start.elapsed().as_secs_f64() * 1000.0
    );
    let start = Instant::now();
    let doc = small_core::yaml::parse_str(&text, &limits).map_err(|e| e.to_string())?;
    let full = start.elapsed();
    drop(doc);
    let start = Instant::now();
    let mut items = 0usize;
    small_core::yaml::parse_streaming(&text, &limits, "entries", &mut |_, _| items += 1)
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
