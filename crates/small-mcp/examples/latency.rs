//! MCP tool-call latency of `small mcp`, measured from the official Rust client over stdio.
//!
//! ```sh
//! cargo run --release -p small-mcp --example latency -- target/release/small DIR [CALLS]
//! ```
//!
//! DIR must hold a workspace (e.g. from `small init` or `small-bench gen`). Prints the median
//! and 99th percentile of `progress_add` and `check` round trips. A benchmark, not a test.

use std::time::Instant;

use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: latency SMALL DIR [CALLS]");
        std::process::exit(2);
    }
    let (small, dir) = (args[1].clone(), args[2].clone());
    let calls: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let transport = TokioChildProcess::new(tokio::process::Command::new(&small).configure(|c| {
        c.arg("mcp").arg("--dir").arg(&dir);
    }))
    .expect("spawn small mcp");
    let client = ().serve(transport).await.expect("connect");
    for (tool, args, n) in [
        (
            "progress_add",
            serde_json::json!({"task": "meta/bench", "status": "completed", "evidence": "latency run"}),
            calls,
        ),
        ("check", serde_json::json!({}), calls.min(50)),
    ] {
        let mut ms = Vec::with_capacity(n);
        for _ in 0..n {
            let p =
                CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone());
            let t = Instant::now();
            client.call_tool(p).await.expect("call");
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "{tool:<13} calls {n:>4}  median {:>8.2} ms  p99 {:>8.2} ms",
            percentile(&ms, 0.5),
            percentile(&ms, 0.99)
        );
    }
    client.cancel().await.ok();
}
