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
