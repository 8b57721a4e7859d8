//! No front end prints a secret back: the MCP server (driven by the official Rust MCP client)
//! and the HTTP store API mask any credential they would quote, the same way the CLI does.

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::author_support::{bin, Ws};
use crate::server_common as common;

/// Built from parts so that the source holds no scanner-shaped credential.
fn github_token() -> String {
    ["ghp", "_", "0123456789abcdefghijABCDEFGHIJ012345"].concat()
}

/// A workspace whose progress log, plan and handoff hold a pasted token (written directly,
/// as an agent's editor would).
fn leaky_workspace(token: &str) -> Ws {
    let ws = Ws::new();
    let progress = ws.read("progress.small.yml").replace(
        "entries: []",
        &format!(
            "entries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-01-02T15:04:05.123Z\"\n    status: \"in_progress\"\n    evidence: \"pushed with {token}\"\n    notes: \"password: Xk9#mQ2vLp7z\"\n"
        ),
    );
    assert!(progress.contains(token), "template has `entries: []`");
    ws.write("progress.small.yml", &progress);
    let handoff = ws.read("handoff.small.yml");
    let summary_line = handoff
        .lines()
        .find(|l| l.starts_with("summary:"))
        .expect("handoff summary")
        .to_string();
    ws.write(
        "handoff.small.yml",
        &handoff.replace(&summary_line, &format!("summary: \"deploy key {token}\"")),
    );
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_never_returns_a_pasted_secret() {
    let token = github_token();
    let ws = leaky_workspace(&token);
    let transport = TokioChildProcess::new(tokio::process::Command::new(bin()).configure(|cmd| {
        cmd.arg("mcp").arg("--dir").arg(ws.root());
    }))
    .unwrap();
    let c = ().serve(transport).await.unwrap();
    let hidden = &token[4..];

    let mut seen = Vec::new();
    for (tool, args) in [
        ("check", json!({})),
        ("check", json!({"strict": false})),
        ("status", json!({})),
        ("resume", json!({"check": true})),
    ] {
        let mut p = CallToolRequestParams::new(tool);
        if let Value::Object(m) = args {
            p = p.with_arguments(m);
        }
        let r = c.call_tool(p).await.unwrap();
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains(hidden), "{tool} returned the token: {text}");
        assert!(!text.contains("Xk9#mQ2vLp7z"), "{tool}: {text}");
        seen.push((tool, r));
    }
    // The check fails on INV1 and says which format it recognised, masked.
    let check = &seen[0].1;
    assert_eq!(check.is_error, Some(true));
    let v = check.structured_content.clone().unwrap();
    let inv1: Vec<&Value> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "INV1")
        .collect();
    assert!(!inv1.is_empty(), "{v}");
    assert!(
        inv1.iter()
            .any(|d| d["secret"]["masked"] == "ghp_…[36 chars redacted]"),
        "{v}"
    );

    // Reading the artifacts themselves: the files come back masked.
    for name in ["progress.small.yml", "handoff.small.yml"] {
        let r = c
            .read_resource(ReadResourceRequestParams::new(format!(
                "small://workspace/{name}"
            )))
            .await
            .unwrap();
        let ResourceContents::TextResourceContents { text, .. } = &r.contents[0] else {
            panic!("text resource");
        };
        assert!(!text.contains(hidden), "{name}: {text}");
        assert!(!text.contains("Xk9#mQ2vLp7z"), "{name}: {text}");
        assert!(text.contains("ghp_…[36 chars redacted]"), "{name}: {text}");
    }

    // Writing a secret through a tool is refused, and the refusal does not repeat it.
    let mut p = CallToolRequestParams::new("progress_add");
    p = p.with_arguments(
        json!({"task": "task-1", "status": "in_progress", "evidence": format!("again {token}")})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = c.call_tool(p).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let text = serde_json::to_string(&r).unwrap();
    assert!(!text.contains(hidden), "{text}");
    assert_eq!(r.structured_content.unwrap()["error"]["code"], "INV1");
    assert!(!ws.read("progress.small.yml").contains("again"));

    // What the server computes itself is not masked: a manifest replay ID is 43 base64url
    // characters, which the random-token rule would take for a credential in quoted text.
    let request = json!({"request": {"protocolVersion": "1.0.0", "manifest": {"artifact": "track.audio", "schema": "artifact.v1", "version": 1}}});
    for tool in ["manifest_replay_id", "manifest_validate"] {
        let p =
            CallToolRequestParams::new(tool).with_arguments(request.as_object().unwrap().clone());
        let r = c.call_tool(p).await.unwrap();
        assert_eq!(
            r.structured_content.unwrap()["replayId"],
            "LhKhb9nluL3hYsKIjYUQox1aLPTfL_-oefVbJLnA0XU",
            "{tool}"
        );
    }
    c.cancel().await.unwrap();
}

#[test]
fn store_api_errors_never_quote_a_credential() {
    let token = github_token();
    let hidden = &token[4..];
    let dir = tempfile::tempdir().unwrap();
    let s = common::TestServer::start(common::config(small_server::StoreLocation::Sqlite(
        dir.path().join("store.db"),
    )));
    let schema = json!({
        "$id": "schema:note:v1",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["id", "count"],
        "properties": { "id": { "type": "string" }, "count": { "type": "integer" } }
    });
    let r = s.post_json("/small/v1/schemas", schema.to_string().as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    // A schema error quotes the offending value: here, a token pasted into the wrong field.
    let artifact = json!({
        "id": "note:001", "kind": "note", "schemaId": "schema:note:v1",
        "data": {"id": "note:001", "count": token}
    });
    let r = s.post_json("/small/v1/artifacts", artifact.to_string().as_bytes());
    assert_eq!(r.status, 422, "{}", r.text());
    let text = r.text();
    assert!(!text.contains(hidden), "{text}");
    assert_eq!(
        r.json()["errors"][0]["path"],
        json!("/data/count"),
        "{text}"
    );
    assert!(text.contains("ghp_…[36 chars redacted]"), "{text}");
    // A path quoted in a not-found error.
    let r = s.get(&format!("/small/v1/artifacts/{token}"));
    assert!(r.status >= 400, "{}", r.status);
    assert!(!r.text().contains(hidden), "{}", r.text());
}
