//! Memory near the size limit: `handoff` and `reset` on a progress log just under the 256 MiB
//! load limit must never need more than a small multiple of the log's size.
//!
//! Slow (it writes a 250 MiB log and runs the commands on it), so it is ignored by default.
//! CI runs it in release mode:
//! `cargo test --release -p small-cli --test testsuite hostile_limits -- --ignored`.
//! `SMALL_TEST_LIMIT_LOG_MB` sets a smaller log for a quick local run.

use crate::author_support::{bin, Ws};
use std::io::Write;
use std::process::Command;

/// Peak resident memory (bytes) of one run of `small args` in `ws`, which must succeed.
// The child is reaped by `wait4` (which also reports its peak memory), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn peak_rss(ws: &Ws, args: &[&str]) -> u64 {
    let child = Command::new(bin())
        .args(args)
        .current_dir(ws.root())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // wait4 gives this child's own peak, whatever other tests run alongside.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "small {args:?} failed: {status}"
    );
    usage.ru_maxrss as u64 * 1024 // kilobytes on Linux
}

#[test]
#[ignore = "writes a 250 MiB log; run with --ignored (release) in CI"]
fn a_log_at_the_limit_needs_a_small_multiple_of_its_size() {
    let mb: u64 = std::env::var("SMALL_TEST_LIMIT_LOG_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(250);
    let ws = Ws::new();
    let path = ws.path("progress.small.yml");
    let head = ws
        .read("progress.small.yml")
        .replace("entries: []", "entries:");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(head.as_bytes()).unwrap();
    if !head.ends_with('\n') {
        f.write_all(b"\n").unwrap();
    }
    let target = mb * 1024 * 1024;
    let mut written = head.len() as u64;
    let filler = "x".repeat(160);
    let mut i: u64 = 0;
    while written < target {
        let entry = format!(
            "  - task_id: task-1\n    status: in_progress\n    timestamp: \"2020-01-01T{:02}:{:02}:{:02}.{:06}000Z\"\n    evidence: \"step {i} {filler}\"\n",
            (i / 3_600_000_000) % 24,
            (i / 60_000_000) % 60,
            (i / 1_000_000) % 60,
            i % 1_000_000
        );
        f.write_all(entry.as_bytes()).unwrap();
        written += entry.len() as u64;
        i += 1;
    }
    drop(f);
    let size = std::fs::metadata(&path).unwrap().len();
    ws.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "done",
    ]);
    // A small multiple: the log once or twice in memory plus a fixed base, never the
    // parsed tree of every entry.
    let bound = 3 * size + 128 * 1024 * 1024;
    for args in [&["handoff"][..], &["reset", "--yes"]] {
        let peak = peak_rss(&ws, args);
        eprintln!(
            "small {args:?}: peak {} MiB for a {} MiB log",
            peak >> 20,
            size >> 20
        );
        assert!(
            peak <= bound,
            "small {args:?} peaked at {} MiB for a {} MiB log (bound {} MiB)",
            peak >> 20,
            size >> 20,
            bound >> 20
        );
    }
}
