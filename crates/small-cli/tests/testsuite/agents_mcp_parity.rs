//! MCP's tool results are the CLI's `--json` documents: both front ends call the same
//! operations (`small_core::ops`), so an agent and a script see one answer. Read-only tools
//! are compared whole on one workspace; a write is made once through each front end on two
//! copies of a workspace and compared key for key, with the values that name a moment or a
//! fresh id (times, event ids, digests) left out.

use serde_json::{json, Value};

use crate::agents_mcp::{call, connect};
use crate::author_support::Ws;

/// The CLI's `--json` document of `args` in `ws`.
fn cli(ws: &Ws, args: &[&str]) -> Value {
    serde_json::from_str(&ws.ok(args)).expect("a JSON document")
}

/// `v` with the values that differ between two equal runs replaced by their type.
fn stable(v: &Value) -> Value {
    const VOLATILE: &[&str] = &[
        "timestamp",
        "checkpoint_at",
        "checkpoint",
        "occurred_at",
        "event_id",
        "digest",
        "previous_event",
        "frontier",
        "replayId",
        "replay_id",
        "workspace",
        "session_id",
        "receipt_id",
    ];
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = if VOLATILE.contains(&k.as_str()) {
                        json!(format!("<{}>", type_name(x)))
                    } else {
                        stable(x)
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(stable).collect()),
        Value::String(s) if s.starts_with("event_") || s.starts_with("receipt_") => {
            json!("<id>")
        }
        x => x.clone(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_tools_return_the_cli_documents() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Write the parser"]);
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "begun",
    ]);
    let c = connect(ws.root()).await;
    for (tool, args, cmd) in [
        ("status", json!({}), vec!["status", "--json"]),
        ("reconstruct", json!({}), vec!["reconstruct", "--json"]),
        (
            "reconstruct",
            json!({"task": "task-1", "limit": 1}),
            vec!["reconstruct", "--task", "task-1", "--limit", "1", "--json"],
        ),
    ] {
        let (ok, from_mcp) = call(&c, tool, args).await;
        assert!(ok, "{tool}: {from_mcp}");
        assert_eq!(
            from_mcp,
            cli(&ws, &cmd),
            "{tool} and `small {}`",
            cmd.join(" ")
        );
    }
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_tools_return_the_cli_documents() {
    let (by_cli, by_mcp) = (Ws::new(), Ws::new());
    let c = connect(by_mcp.root()).await;
    for (tool, args, cmd) in [
        (
            "plan",
            json!({"add": "Write the parser"}),
            vec!["plan", "--add", "Write the parser", "--json"],
        ),
        (
            "progress_add",
            json!({"task": "task-1", "status": "in_progress", "evidence": "begun"}),
            vec![
                "progress",
                "add",
                "--task",
                "task-1",
                "--status",
                "in_progress",
                "--evidence",
                "begun",
                "--json",
            ],
        ),
        (
            "checkpoint",
            json!({"task": "task-1", "status": "completed", "evidence": "cargo test"}),
            vec![
                "checkpoint",
                "--task",
                "task-1",
                "--status",
                "completed",
                "--evidence",
                "cargo test",
                "--json",
            ],
        ),
        (
            "handoff",
            json!({"summary": "parser done"}),
            vec!["handoff", "--summary", "parser done", "--json"],
        ),
    ] {
        let want = stable(&cli(&by_cli, &cmd));
        let (ok, got) = call(&c, tool, args).await;
        assert!(ok, "{tool}: {got}");
        assert_eq!(stable(&got), want, "{tool} and `small {}`", cmd.join(" "));
    }
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_the_same_over_both() {
    let ws = Ws::new();
    let c = connect(ws.root()).await;
    let (ok, v) = call(
        &c,
        "checkpoint",
        json!({"task": "task-99", "status": "completed", "evidence": "x"}),
    )
    .await;
    assert!(!ok);
    let o = ws.run(&[
        "checkpoint",
        "--task",
        "task-99",
        "--status",
        "completed",
        "--evidence",
        "x",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("the error document");
    assert_eq!(v["error"]["code"], doc["errors"][0]["code"], "{v} / {doc}");
    assert_eq!(v["error"]["message"], doc["errors"][0]["message"]);
    c.cancel().await.unwrap();
}
