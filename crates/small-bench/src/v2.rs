//! `small-bench v2`: the SMALL 2.0.0 profile at 1 000 / 10 000 / 100 000 events.
//!
//! For each size a v1 workspace with that many progress entries is generated and migrated
//! with `small migrate` (preview, then apply; the two timed together), and with the reference
//! binary side by side on its own copy. The migrated trees are byte-identical, so every read
//! command then runs on small's tree with both binaries: median wall time, CPU time and
//! peak RSS (from `wait4`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::{generate_fresh, measure, measure_with, median, mib, ms, Sample};

#[derive(clap::Args)]
pub struct Args {
    /// The `small` binary to measure (build with --release)
    #[arg(long, default_value = "target/release/small")]
    small: PathBuf,
    /// A reference binary to run side by side on the same workspaces
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Repetitions per read measurement (the median is reported)
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Repetitions per measurement of the reference [default: --runs]
    #[arg(long)]
    ref_runs: Option<usize>,
    /// Repetitions of each migration (on a fresh copy each time)
    #[arg(long, default_value_t = 1)]
    migrate_runs: usize,
    /// Where to generate the workspaces
    #[arg(long, default_value = "target/bench-v2")]
    work: PathBuf,
    /// Progress entries of the v1 workspaces, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 10_000, 100_000])]
    sizes: Vec<usize>,
    /// Plan tasks of every workspace
    #[arg(long, default_value_t = 100)]
    tasks: usize,
    /// Reuse the migrated workspaces of an earlier run in --work (no generation, no
    /// migration row)
    #[arg(long)]
    reuse: bool,
}

const NAMESPACE: &str = "bench/v2";

/// What runs before each timed run of a read (untimed).
#[derive(Clone, Copy, PartialEq)]
enum Prep {
    None,
    /// Run the command once first (it writes the cache), then wait out the racy margin.
    Warm,
    /// Record one new event with small first (`small session close`, else `session start`).
    NewEvent,
    /// Have the reference binary write first (`session close`, else `session start`): events
    /// small did not write, which its cache must fold in or read. Only with `--reference`.
    ForeignEvent,
}

/// (row name, small's arguments, the reference's arguments, preparation)
const READS: &[(&str, &[&str], &[&str], Prep)] = &[
    (
        "reconstruct --json",
        &["reconstruct", "--json"],
        &["reconstruct", "--json"],
        Prep::None,
    ),
    (
        "check --strict",
        &["check", "--strict"],
        &["check", "--strict"],
        Prep::None,
    ),
    (
        "status --json (cold)",
        &["status", "--json", "--no-cache"],
        &["status", "--json"],
        Prep::None,
    ),
    (
        "status --json (cached)",
        &["status", "--json"],
        &["status", "--json"],
        Prep::Warm,
    ),
    (
        "resume --json (cached)",
        &["resume", "--json"],
        &["resume", "--json"],
        Prep::Warm,
    ),
    (
        "status --json, 1 new event",
        &["status", "--json"],
        &["status", "--json"],
        Prep::NewEvent,
    ),
    (
        "status --json, new events by the reference",
        &["status", "--json"],
        &["status", "--json"],
        Prep::ForeignEvent,
    ),
];

/// Prepare one timed run of `args` in `dir` (`foreign`: the reference binary, which writes
/// for [`Prep::ForeignEvent`]).
fn prepare(
    prep: Prep,
    small: &Path,
    foreign: Option<&Path>,
    bin: &Path,
    args: &[&str],
    dir: &Path,
) -> Result<(), String> {
    match prep {
        Prep::None => {}
        Prep::Warm => {
            measure(bin, args, dir)?;
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        Prep::NewEvent => {
            // One new event: close the active session, or (none active) start one.
            let close = measure(small, &["session", "close", "--summary", "bench"], dir)?;
            if close.exit != 0 {
                let s = measure(small, &["session", "start", "--label", "bench"], dir)?;
                if s.exit != 0 {
                    return Err(format!("small session start failed (exit {})", s.exit));
                }
            }
        }
        Prep::ForeignEvent => {
            let Some(other) = foreign else {
                return Err("no reference binary to write the events".into());
            };
            let close = measure(other, &["session", "close", "--summary", "bench"], dir)?;
            if close.exit != 0 {
                let mut s = measure(other, &["session", "start", "--label", "bench"], dir)?;
                if s.exit != 0 {
                    // A session small opened is active (one at a time in solo mode).
                    measure(small, &["session", "close", "--summary", "bench"], dir)?;
                    s = measure(other, &["session", "start", "--label", "bench"], dir)?;
                }
                if s.exit != 0 {
                    return Err(format!(
                        "the reference's session start failed (exit {})",
                        s.exit
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Copy a directory tree (regular files and directories only).
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let ty = entry.file_type().map_err(|e| e.to_string())?;
        let dst = to.join(entry.file_name());
        if ty.is_dir() {
            copy_tree(&entry.path(), &dst)?;
        } else if ty.is_file() {
            fs::copy(entry.path(), &dst).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn fresh(from: &Path, to: &Path) -> Result<(), String> {
    if to.exists() {
        fs::remove_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    copy_tree(&from.join(".small"), &to.join(".small"))?;
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    Ok(())
}

/// The value of `"expected_input_digest"` in a plan (both tools print it on one line).
fn expected_digest(plan: &str) -> Option<String> {
    let at = plan.find("\"expected_input_digest\"")?;
    let rest = &plan[at + "\"expected_input_digest\"".len()..];
    let start = rest.find('"')? + 1;
    let end = start + rest[start..].find('"')?;
    Some(rest[start..end].to_string())
}

/// Migrate the workspace in `dir` with `bin`: preview into `plan.json`, then apply. The two
/// timings added (wall and CPU), the larger peak RSS; the exit code of the first to fail.
fn migrate(bin: &Path, dir: &Path) -> Result<Sample, String> {
    let plan_path = dir.join("plan.json");
    let plan_file = fs::File::create(&plan_path).map_err(|e| e.to_string())?;
    let preview = measure_with(
        bin,
        &[
            "migrate",
            "--to",
            "2.0.0",
            "--preview",
            "--namespace",
            NAMESPACE,
            "--json",
        ],
        dir,
        Stdio::from(plan_file),
    )?;
    if preview.exit != 0 {
        return Ok(preview);
    }
    let plan = fs::read_to_string(&plan_path).map_err(|e| e.to_string())?;
    let digest = expected_digest(&plan).ok_or("the plan has no expected_input_digest")?;
    let apply = measure(
        bin,
        &[
            "migrate",
            "--apply",
            "plan.json",
            "--expect-state",
            &digest,
            "--json",
        ],
        dir,
    )?;
    Ok(Sample {
        wall: preview.wall + apply.wall,
        cpu: preview.cpu + apply.cpu,
        max_rss_kib: preview.max_rss_kib.max(apply.max_rss_kib),
        exit: apply.exit,
    })
}

struct Row {
    size: usize,
    command: String,
    ours: Sample,
    reference: Option<Sample>,
}

fn repeat(n: usize, mut f: impl FnMut() -> Result<Sample, String>) -> Result<Sample, String> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n.max(1) {
        samples.push(f()?);
    }
    Ok(median(samples))
}

pub fn run(a: &Args) -> Result<(), String> {
    let canon = |p: &Path| fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    let small = canon(&a.small)?;
    let reference = a.reference.as_deref().map(canon).transpose()?;
    let ref_runs = a.ref_runs.unwrap_or(a.runs);
    fs::create_dir_all(&a.work).map_err(|e| format!("{}: {e}", a.work.display()))?;
    let work = canon(&a.work)?;
    let mut rows: Vec<Row> = Vec::new();
    for &p in &a.sizes {
        let v1 = work.join(format!("v1-P{p}"));
        let ours_dir = work.join(format!("v2-P{p}"));
        let theirs_dir = work.join(format!("v2-P{p}-reference"));
        if !(a.reuse && ours_dir.join(".small/profile.json").is_file()) {
            migrate_both(
                a,
                &small,
                reference.as_deref(),
                &v1,
                &ours_dir,
                &theirs_dir,
                p,
                &mut rows,
            )?;
        }
        let events = count_files(&ours_dir.join(".small/events"));
        eprintln!("P={p}: {events} events");
        for (name, args, ref_args, prep) in READS {
            if *prep == Prep::ForeignEvent && reference.is_none() {
                continue;
            }
            let foreign = reference.as_deref();
            let ours = repeat(a.runs, || {
                prepare(*prep, &small, foreign, &small, args, &ours_dir)?;
                measure(&small, args, &ours_dir)
            })?;
            let theirs = match &reference {
                Some(r) => Some(repeat(ref_runs, || {
                    prepare(*prep, &small, foreign, r, ref_args, &ours_dir)?;
                    measure(r, ref_args, &ours_dir)
                })?),
                None => None,
            };
            let row = Row {
                size: p,
                command: name.to_string(),
                ours,
                reference: theirs,
            };
            print_row(&row);
            rows.push(row);
        }
    }
    print_table(&rows);
    Ok(())
}

/// Generate the v1 workspace of `p` entries and migrate it with small (and the reference):
/// the migration row.
#[allow(clippy::too_many_arguments)]
fn migrate_both(
    a: &Args,
    small: &Path,
    reference: Option<&Path>,
    v1: &Path,
    ours_dir: &Path,
    theirs_dir: &Path,
    p: usize,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    {
        generate_fresh(v1, a.tasks, p)?;
        let ours = repeat(a.migrate_runs, || {
            fresh(v1, ours_dir)?;
            migrate(small, ours_dir)
        })?;
        let theirs = match reference {
            Some(r) => Some(repeat(a.migrate_runs, || {
                fresh(v1, theirs_dir)?;
                migrate(r, theirs_dir)
            })?),
            None => None,
        };
        if ours.exit != 0 {
            return Err(format!(
                "small migrate failed on P={p} (exit {})",
                ours.exit
            ));
        }
        rows.push(Row {
            size: p,
            command: "migrate (preview + apply)".into(),
            ours,
            reference: theirs,
        });
    }
    Ok(())
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "| entries | command | small | small peak RSS | reference | reference peak RSS | ratio |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        let exit = |s: &Sample| {
            if s.exit == 0 {
                String::new()
            } else {
                format!(" (exit {})", s.exit)
            }
        };
        let (rt, rm, ratio) = match &r.reference {
            Some(t) => (
                format!("{:.0} ms{}", ms(t), exit(t)),
                format!("{:.1} MiB", mib(t)),
                format!("{:.1}×", ms(t) / ms(&r.ours).max(0.001)),
            ),
            None => (String::new(), String::new(), String::new()),
        };
        println!(
            "| {} | `{}` | {:.0} ms{} | {:.1} MiB | {rt} | {rm} | {ratio} |",
            r.size,
            r.command,
            ms(&r.ours),
            exit(&r.ours),
            mib(&r.ours)
        );
    }
}

fn print_row(r: &Row) {
    let mut line = format!(
        "P={:<7} {:<26} {:>9.1} ms (cpu {:>8.1} ms) {:>7.1} MiB exit {}",
        r.size,
        r.command,
        ms(&r.ours),
        r.ours.cpu.as_secs_f64() * 1000.0,
        mib(&r.ours),
        r.ours.exit
    );
    if let Some(t) = &r.reference {
        line.push_str(&format!(
            " | reference {:>9.1} ms {:>8.1} MiB exit {} | {:>6.1}x",
            ms(t),
            mib(t),
            t.exit,
            ms(t) / ms(&r.ours).max(0.001)
        ));
    }
    eprintln!("{line}");
}

pub(crate) fn count_files(dir: &Path) -> usize {
    fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        count_files(&p)
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}
