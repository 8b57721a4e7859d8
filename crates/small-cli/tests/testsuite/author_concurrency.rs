//! Many writers at once: 8 processes each running 200 `small progress add` on one workspace
//! end with exactly 1600 new entries, a valid file and strictly increasing timestamps.

use crate::author_support;
use author_support::{assert_increasing, Ws};

#[test]
fn eight_writers_two_hundred_adds_each_lose_nothing() {
    const WRITERS: usize = 8;
    const ADDS: usize = 200;
    let ws = Ws::new();
    // Some history that must survive.
    for i in 0..5 {
        ws.ok(&[
            "progress",
            "add",
            "--task",
            "meta/seed",
            "--status",
            "completed",
            "--evidence",
            &format!("seed-{i}"),
        ]);
    }
    let before = ws.read("progress.small.yml");
    let root = ws.root().to_path_buf();
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let root = root.clone();
            std::thread::spawn(move || {
                for i in 0..ADDS {
                    let o = std::process::Command::new(author_support::bin())
                        .args([
                            "progress",
                            "add",
                            "--task",
                            "meta/load",
                            "--status",
                            "completed",
                            "--evidence",
                            &format!("w{w}-{i}"),
                        ])
                        .current_dir(&root)
                        .env("SMALL_LOCK_TIMEOUT", "300")
                        .output()
                        .expect("spawn small");
                    assert!(
                        o.status.success(),
                        "writer {w} add {i} failed: {}",
                        String::from_utf8_lossy(&o.stderr)
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer thread");
    }
    let after = ws.read("progress.small.yml");
    assert!(after.starts_with(&before), "earlier entries were rewritten");
    let entries = ws.entries();
    assert_eq!(entries.len(), 5 + WRITERS * ADDS);
    assert_increasing(&entries);
    let mut seen = std::collections::HashSet::new();
    for e in &entries[5..] {
        assert!(
            seen.insert(e["evidence"].as_str().unwrap().to_string()),
            "duplicate {}",
            e["evidence"]
        );
    }
    for w in 0..WRITERS {
        for i in 0..ADDS {
            assert!(seen.contains(&format!("w{w}-{i}")), "lost w{w}-{i}");
        }
    }
    ws.strict_ok();
}
