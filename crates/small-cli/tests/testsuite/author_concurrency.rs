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

/// MCP sessions and CLI processes writing at once: 3 `small mcp` sessions (the rmcp client)
/// and 3 CLI writers, 40 appends each, lose nothing and keep the log valid and ordered.
#[test]
fn mcp_sessions_and_cli_processes_together_lose_nothing() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    use rmcp::ServiceExt;

    const SESSIONS: usize = 3;
    const CLI: usize = 3;
    const ADDS: usize = 40;
    let ws = Ws::new();
    let initial = ws.entries().len();
    let root = ws.root().to_path_buf();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mcp: Vec<_> =
        (0..SESSIONS)
            .map(|s| {
                let root = root.clone();
                rt.spawn(async move {
                let transport = TokioChildProcess::new(
                    tokio::process::Command::new(author_support::bin()).configure(|cmd| {
                        cmd.arg("mcp").arg("--dir").arg(&root).env("SMALL_LOCK_TIMEOUT", "300");
                    }),
                )
                .unwrap();
                let client = ().serve(transport).await.unwrap();
                for i in 0..ADDS {
                    let args = serde_json::json!({
                        "task": "meta/load", "status": "completed", "evidence": format!("m{s}-{i}")
                    });
                    let r = client
                        .call_tool(
                            CallToolRequestParams::new("progress_add")
                                .with_arguments(args.as_object().unwrap().clone()),
                        )
                        .await
                        .unwrap();
                    assert_ne!(r.is_error, Some(true), "{:?}", r.structured_content);
                }
                client.cancel().await.unwrap();
            })
            })
            .collect();
    let cli: Vec<_> = (0..CLI)
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
                        ])
                        .args(["--evidence", &format!("c{w}-{i}")])
                        .current_dir(&root)
                        .env("SMALL_LOCK_TIMEOUT", "300")
                        .output()
                        .expect("spawn small");
                    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                }
            })
        })
        .collect();
    for h in cli {
        h.join().expect("cli writer");
    }
    rt.block_on(async {
        for h in mcp {
            h.await.expect("mcp session");
        }
    });
    let entries = ws.entries();
    assert_increasing(&entries);
    let seen: std::collections::HashSet<String> = entries
        .iter()
        .filter_map(|e| e["evidence"].as_str().map(str::to_string))
        .collect();
    for (p, n) in [("m", SESSIONS), ("c", CLI)] {
        for w in 0..n {
            for i in 0..ADDS {
                assert!(seen.contains(&format!("{p}{w}-{i}")), "lost {p}{w}-{i}");
            }
        }
    }
    assert_eq!(entries.len(), initial + (SESSIONS + CLI) * ADDS);
    ws.strict_ok();
}

/// Hold the workspace lock (`.small-cache/lock`, an advisory `flock`) from this process.
#[cfg(unix)]
fn hold_lock(root: &std::path::Path) -> std::fs::File {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(root.join(".small-cache")).unwrap();
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(".small-cache/lock"))
        .unwrap();
    // SAFETY: flock only reads its integer arguments; the descriptor stays open with `f`.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    f
}

/// `--lock-timeout` on v1 writes: the same flag and meaning as on 2.0.0, outranking
/// SMALL_LOCK_TIMEOUT, for every transaction of the command (apply takes several).
#[cfg(unix)]
#[test]
fn lock_timeout_flag_on_v1_writes() {
    let ws = Ws::new();
    let before = ws.read("plan.small.yml");
    let lock = hold_lock(ws.root());
    let writes: [&[&str]; 5] = [
        &["plan", "--add", "Blocked by the lock"],
        &[
            "progress",
            "add",
            "--task",
            "meta/x",
            "--status",
            "in_progress",
            "--evidence",
            "e",
        ],
        &[
            "checkpoint",
            "--task",
            "meta/x",
            "--status",
            "blocked",
            "--evidence",
            "e",
        ],
        &["handoff", "--summary", "s"],
        &["apply", "--cmd", "true", "--task", "meta/x"],
    ];
    for args in writes {
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--lock-timeout", "0.1"]);
        // The environment would wait five minutes: the flag decides.
        let o = ws
            .cmd(&full)
            .env("SMALL_LOCK_TIMEOUT", "300")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{full:?}: {err}");
        assert!(
            err.contains("locked by another small process"),
            "{full:?}: {err}"
        );
    }
    assert_eq!(ws.read("plan.small.yml"), before);
    let bad = ws.fails(2, &["plan", "--add", "x", "--lock-timeout", "soon"]);
    assert!(bad.contains("--lock-timeout"), "{bad}");
    // A wait long enough sees the lock released, though the environment says not to wait.
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(lock);
    });
    let o = ws
        .cmd(&["plan", "--add", "After the lock", "--lock-timeout", "60"])
        .env("SMALL_LOCK_TIMEOUT", "0")
        .output()
        .unwrap();
    release.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(ws.read("plan.small.yml").contains("After the lock"));
}
