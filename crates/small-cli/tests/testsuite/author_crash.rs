//! Crash safety: `small` killed with SIGKILL at random moments while writing never leaves a
//! torn or half-written file, and never loses an entry that was there before.
#![cfg(unix)]

use crate::author_support;
use author_support::{assert_increasing, Ws};
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn new() -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        eprintln!("crash test seed: {seed}");
        Rng(seed | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn only_canonical_files(ws: &Ws) {
    for e in std::fs::read_dir(ws.root().join(".small")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            small_core::ops::gate::is_canonical_file_name(&name),
            "stray file under .small/ after a crash: {name}"
        );
    }
}

fn all_parse(ws: &Ws) {
    for name in [
        "intent.small.yml",
        "constraints.small.yml",
        "plan.small.yml",
        "progress.small.yml",
        "handoff.small.yml",
        "workspace.small.yml",
    ] {
        let _ = ws.doc(name);
    }
}

/// Kill writers at random moments; `slow_ms` widens the window between commit steps.
fn crash_loop(iterations: usize, slow_ms: Option<u64>, max_delay_ms: u64) {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Two"]);
    let mut rng = Rng::new();
    let mut kills = 0;
    for it in 0..iterations {
        let before_progress = ws.read("progress.small.yml");
        let before_entries = ws.entries().len();
        let before_status = ws
            .tasks()
            .into_iter()
            .find(|t| t["id"] == "task-2")
            .unwrap()["status"]
            .clone();
        let checkpoint = rng.below(3) == 0;
        let status = if it % 2 == 0 { "completed" } else { "blocked" };
        let mut c = if checkpoint {
            ws.cmd(&[
                "checkpoint",
                "--task",
                "task-2",
                "--status",
                status,
                "--evidence",
                &format!("ck-{it}"),
            ])
        } else {
            ws.cmd(&[
                "progress",
                "add",
                "--task",
                "task-1",
                "--status",
                "in_progress",
                "--evidence",
                &format!("it-{it}"),
            ])
        };
        if let Some(ms) = slow_ms {
            c.env("SMALL_TEST_SLOW_COMMIT_MS", ms.to_string());
        }
        c.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        let delay = Duration::from_micros(rng.below(max_delay_ms * 1000));
        let start = Instant::now();
        while start.elapsed() < delay {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let killed = child.try_wait().unwrap().is_none();
        let _ = child.kill(); // SIGKILL
        let status_code = child.wait().unwrap();
        if killed {
            kills += 1;
        }
        // Right after the kill: every file is whole (old or new), nothing stray in .small/.
        all_parse(&ws);
        only_canonical_files(&ws);
        // The next command finishes or discards the interrupted commit.
        ws.ok(&[
            "progress",
            "add",
            "--task",
            "meta/after-crash",
            "--status",
            "completed",
            "--evidence",
            &format!("after-{it}"),
        ]);
        let text = ws.read("progress.small.yml");
        assert!(
            text.starts_with(&before_progress),
            "iteration {it}: earlier progress bytes changed"
        );
        let entries = ws.entries();
        let new = entries.len() - before_entries;
        assert!(new == 1 || new == 2, "iteration {it}: {new} new entries");
        if !killed {
            assert!(
                status_code.success(),
                "iteration {it}: writer failed on its own"
            );
            assert_eq!(new, 2, "iteration {it}: acknowledged entry lost");
        }
        if checkpoint && new == 2 {
            // the checkpoint's entry is there, so its plan change must be too
            let task2 = ws
                .tasks()
                .into_iter()
                .find(|t| t["id"] == "task-2")
                .unwrap();
            assert_eq!(
                task2["status"], status,
                "iteration {it}: plan and progress disagree after a crash"
            );
        }
        if checkpoint && new == 1 {
            let task2 = ws
                .tasks()
                .into_iter()
                .find(|t| t["id"] == "task-2")
                .unwrap();
            assert_eq!(
                task2["status"], before_status,
                "iteration {it}: plan changed without its progress entry"
            );
        }
        assert_increasing(&entries);
        only_canonical_files(&ws);
    }
    eprintln!("{kills} of {iterations} writers killed mid-run");
    ws.strict_ok();
}

#[test]
fn sigkill_at_random_moments_without_slowdown() {
    crash_loop(120, None, 40);
}

#[test]
fn sigkill_between_commit_steps() {
    crash_loop(80, Some(15), 80);
}
