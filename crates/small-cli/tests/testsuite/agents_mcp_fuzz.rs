//! Fuzzing `small mcp`'s tools through a real MCP client: random, wrong-typed, hostile and
//! missing arguments for every tool the server lists, and random resource URIs. Every call
//! must be answered (a result or a tool error; never a dropped connection or a hang), and the
//! server must still serve a clean call at the end.

use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};

use crate::author_support::{bin, Ws};

/// Strings put into string arguments.
const STRINGS: &[&str] = &[
    "",
    "task-1",
    "task-999",
    "../../etc/passwd",
    "/etc/passwd",
    "\u{0}",
    "<script>alert(1)</script>",
    "password: hunter2",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "http://example.com/x",
    "completed",
    "pending",
    "bogus-status",
    "2026-13-45T99:99:99Z",
    "é\u{202e}\u{feff}",
    "a\nb: c\n- d",
    "{\"json\": true}",
    "*",
    "~2",
];

/// One argument value of any shape.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<Index>().prop_map(|i| json!(STRINGS[i.index(STRINGS.len())])),
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        Just(json!(1e308)),
        Just(json!(-0.5)),
        "[a-z0-9 _-]{0,12}".prop_map(Value::String),
        (1usize..5).prop_map(|n| json!("x".repeat(n * 40_000))),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Debug, Clone)]
struct Call {
    tool: Index,
    /// Per property of the tool's schema: leave it out, or give it a value.
    args: Vec<Option<Value>>,
    extra: Option<(String, Value)>,
    resource: Option<Index>,
}

fn call() -> impl Strategy<Value = Call> {
    (
        any::<Index>(),
        proptest::collection::vec(proptest::option::of(value()), 0..6),
        proptest::option::weighted(0.2, ("[a-z]{1,6}", value())),
        proptest::option::weighted(0.1, any::<Index>()),
    )
        .prop_map(|(tool, args, extra, resource)| Call {
            tool,
            args,
            extra,
            resource,
        })
}

const URIS: &[&str] = &[
    "small://workspace/handoff.small.yml",
    "small://workspace/../../etc/passwd",
    "small://workspace/",
    "small://nothing",
    "",
    "file:///etc/passwd",
];

#[test]
fn no_tool_call_takes_the_mcp_server_down() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Second"]);
    let client = rt.block_on(async {
        let transport =
            TokioChildProcess::new(tokio::process::Command::new(bin()).configure(|cmd| {
                cmd.arg("mcp").arg("--dir").arg(ws.root());
            }))
            .expect("spawn small mcp");
        ().serve(transport).await.expect("an MCP session")
    });
    let tools = rt.block_on(client.list_all_tools()).expect("the tool list");
    assert!(tools.len() >= 8, "{} tools", tools.len());
    let props: Vec<(String, Vec<String>)> = tools
        .iter()
        .map(|t| {
            let names = t
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            (t.name.to_string(), names)
        })
        .collect();
    let cases = std::env::var("SMALL_FUZZ_MCP_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 50,
        ..Config::default()
    });
    let (answered, tool_errors) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
    let result = runner.run(&call(), |c| {
        if let Some(r) = &c.resource {
            let uri = URIS[r.index(URIS.len())];
            let read = rt.block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(10),
                    client.read_resource(ReadResourceRequestParams::new(uri)),
                )
                .await
            });
            // A refusal is a JSON-RPC error; a dropped connection or a hang is a failure.
            return match read {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(rmcp::ServiceError::McpError(_))) => Ok(()),
                Ok(Err(e)) => Err(TestCaseError::fail(format!("read {uri}: {e}"))),
                Err(_) => Err(TestCaseError::fail(format!("read {uri}: no answer"))),
            };
        }
        let (name, names) = &props[c.tool.index(props.len())];
        let mut args = Map::new();
        for (key, v) in names.iter().zip(&c.args) {
            if let Some(v) = v {
                args.insert(key.clone(), v.clone());
            }
        }
        if let Some((k, v)) = &c.extra {
            args.insert(k.clone(), v.clone());
        }
        let shown = format!("{name} {}", Value::Object(args.clone()));
        let params = CallToolRequestParams::new(name.clone()).with_arguments(args);
        let outcome = rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), client.call_tool(params)).await
        });
        match outcome {
            Ok(Ok(r)) => {
                answered.set(answered.get() + 1);
                if r.is_error == Some(true) {
                    tool_errors.set(tool_errors.get() + 1);
                    let code = r
                        .structured_content
                        .as_ref()
                        .and_then(|v| v.pointer("/error/code"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if code == "internal" {
                        return Err(TestCaseError::fail(format!("{shown}: an internal error")));
                    }
                }
                Ok(())
            }
            // Arguments that do not fit the schema are refused by the protocol layer.
            Ok(Err(rmcp::ServiceError::McpError(_))) => Ok(()),
            Ok(Err(e)) => Err(TestCaseError::fail(format!("{shown}: {e}"))),
            Err(_) => Err(TestCaseError::fail(format!(
                "{shown}: no answer within 10 s"
            ))),
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Still serving, and the workspace still whole.
    let status = rt
        .block_on(client.call_tool(CallToolRequestParams::new("status")))
        .expect("status after the fuzzing");
    assert_ne!(status.is_error, Some(true));
    // The tools write what the reference writes: an `http://` link a caller gives is
    // accepted (a warning; an error only under --strict), secrets are refused (decision
    // 0078). So the workspace passes `check`, and under --strict fails on nothing but links.
    ws.ok(&["check"]);
    let strict = ws.run(&["check", "--strict", "--json"]);
    let doc: Value = serde_json::from_slice(&strict.stdout).expect("check --json");
    let codes: Vec<&str> = ["validate", "lint", "verify"]
        .iter()
        .filter_map(|stage| doc[stage]["diagnostics"].as_array())
        .flatten()
        .filter(|d| d["severity"] == "error")
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(
        codes.iter().all(|c| *c == "LINK"),
        "check --strict fails on more than links: {codes:?}"
    );
    assert_eq!(
        strict.status.code() == Some(0),
        codes.is_empty(),
        "{codes:?}"
    );
    let (answered, tool_errors) = (answered.get(), tool_errors.get());
    assert!(
        answered > 0 && tool_errors > 0,
        "{answered} answered, {tool_errors} tool errors"
    );
    let _ = rt.block_on(client.cancel());
}

/// A tool that panics (made to, between the steps of a commit, by the test hook
/// `SMALL_TEST_PANIC_IN_COMMIT`) answers with an `internal` tool error; the server keeps
/// serving and the workspace stays whole.
#[test]
fn a_panicking_tool_is_an_internal_tool_error_and_the_server_goes_on() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let ws = Ws::new();
    let client = rt.block_on(async {
        let transport =
            TokioChildProcess::new(tokio::process::Command::new(bin()).configure(|cmd| {
                cmd.arg("mcp")
                    .arg("--dir")
                    .arg(ws.root())
                    .env("SMALL_TEST_PANIC_IN_COMMIT", "1");
            }))
            .expect("spawn small mcp");
        ().serve(transport).await.expect("an MCP session")
    });
    let mut args = Map::new();
    args.insert("task".into(), json!("task-1"));
    args.insert("status".into(), json!("in_progress"));
    args.insert("evidence".into(), json!("ran: cargo test"));
    let r = rt
        .block_on(client.call_tool(CallToolRequestParams::new("progress_add").with_arguments(args)))
        .expect("an answer, not a dropped connection");
    assert_eq!(r.is_error, Some(true));
    let code = r
        .structured_content
        .as_ref()
        .and_then(|v| v.pointer("/error/code"))
        .and_then(Value::as_str);
    assert_eq!(code, Some("internal"), "{:?}", r.structured_content);
    let status = rt
        .block_on(client.call_tool(CallToolRequestParams::new("status")))
        .expect("status after the panic");
    assert_ne!(status.is_error, Some(true));
    let _ = rt.block_on(client.cancel());
    ws.ok(&["check", "--strict"]);
}
