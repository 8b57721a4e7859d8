//! `small mcp` driven by the official Rust MCP client over a spawned process.

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::author_support::{bin, Ws};

pub(crate) async fn connect(dir: &std::path::Path) -> RunningService<RoleClient, ()> {
    let transport = TokioChildProcess::new(tokio::process::Command::new(bin()).configure(|cmd| {
        cmd.arg("mcp").arg("--dir").arg(dir);
    }))
    .unwrap();
    ().serve(transport).await.unwrap()
}

pub(crate) async fn call(
    c: &RunningService<RoleClient, ()>,
    name: &'static str,
    args: Value,
) -> (bool, Value) {
    let mut p = CallToolRequestParams::new(name);
    if let Value::Object(m) = args {
        p = p.with_arguments(m);
    }
    let r = c.call_tool(p).await.unwrap();
    (
        r.is_error != Some(true),
        r.structured_content.unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_workflow_over_mcp() {
    let ws = Ws::new();
    let c = connect(ws.root()).await;
    let tools: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    for t in [
        "resume",
        "status",
        "check",
        "plan",
        "progress_add",
        "checkpoint",
        "manifest_validate",
        "manifest_replay_id",
        "run_snapshot",
        "run_list",
    ] {
        assert!(tools.contains(&t.to_string()), "{t} in {tools:?}");
    }
    let plan_tool = c
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "plan")
        .unwrap();
    assert!(plan_tool
        .input_schema
        .get("properties")
        .and_then(|p| p.get("add"))
        .is_some());

    let (ok, v) = call(
        &c,
        "plan",
        json!({"add": "Write the parser", "id": "parser"}),
    )
    .await;
    assert!(ok, "{v}");
    assert_eq!(v["added"][0]["id"], "parser", "{v}");
    let (ok, v) = call(
        &c,
        "progress_add",
        json!({"task": "parser", "status": "in_progress", "evidence": "lexer done"}),
    )
    .await;
    assert!(ok, "{v}");
    assert_eq!(v["entry"]["task_id"], "parser");
    // Completing with no evidence is refused, as on the command line.
    let (ok, v) = call(
        &c,
        "checkpoint",
        json!({"task": "parser", "status": "completed"}),
    )
    .await;
    assert!(!ok);
    assert_eq!(v["error"]["code"], "no-evidence", "{v}");
    let (ok, v) = call(
        &c,
        "checkpoint",
        json!({"task": "parser", "status": "completed", "evidence": "cargo test passes"}),
    )
    .await;
    assert!(ok, "{v}");
    let (ok, v) = call(
        &c,
        "checkpoint",
        json!({"task": "task-1", "status": "completed", "evidence": "placeholder closed"}),
    )
    .await;
    assert!(ok, "{v}");
    let (ok, v) = call(&c, "handoff", json!({"summary": "Parser done"})).await;
    assert!(ok, "{v}");
    assert_eq!(v["summary"], "Parser done");
    let (ok, v) = call(&c, "check", json!({})).await;
    assert!(ok, "{v}");
    assert_eq!(v["passed"], true);
    let (ok, v) = call(&c, "resume", json!({"max_chars": 2000})).await;
    assert!(ok, "{v}");
    assert!(v["markdown"]
        .as_str()
        .unwrap()
        .starts_with("# SMALL resume"));
    assert_eq!(v["gates"]["status"], "pass");
    let (ok, v) = call(&c, "status", json!({})).await;
    assert!(ok, "{v}");
    assert_eq!(v["plan"]["total_tasks"], 2, "{v}");

    // Errors are diagnostics with a code and help.
    let (ok, v) = call(
        &c,
        "checkpoint",
        json!({"task": "task-99", "status": "completed", "evidence": "x"}),
    )
    .await;
    assert!(!ok);
    assert_eq!(v["error"]["code"], "unknown-task", "{v}");
    assert!(v["error"]["help"].is_string(), "{v}");
    let (ok, v) = call(
        &c,
        "progress_add",
        json!({"task": "parser", "status": "finished"}),
    )
    .await;
    assert!(!ok);
    assert_eq!(v["error"]["code"], "refused");

    // Manifests.
    let (ok, v) = call(
        &c,
        "manifest_validate",
        json!({"request": {"manifest": {}}}),
    )
    .await;
    assert!(!ok);
    assert_eq!(v["valid"], false);

    // Runs.
    let (ok, v) = call(&c, "run_snapshot", json!({})).await;
    assert!(ok, "{v}");
    let (ok, v) = call(&c, "run_list", json!({})).await;
    assert!(ok, "{v}");
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);

    // Resources: the handoff first, then the artifacts, metadata and schemas.
    let res = c.list_all_resources().await.unwrap();
    assert_eq!(res[0].uri, "small://workspace/handoff.small.yml");
    assert!(res
        .iter()
        .any(|r| r.uri == "small://schemas/plan.schema.json"));
    let r = c
        .read_resource(ReadResourceRequestParams::new(
            "small://workspace/plan.small.yml",
        ))
        .await
        .unwrap();
    match &r.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => {
            assert!(text.contains("id: \"parser\""))
        }
        other => panic!("{other:?}"),
    }
    assert!(c
        .read_resource(ReadResourceRequestParams::new(
            "small://workspace/../../etc/passwd"
        ))
        .await
        .is_err());
    c.cancel().await.unwrap();
    // Every write went through the same files the CLI reads.
    ws.strict_ok();
}

/// A workspace failing hundreds of rules answers `check` with a bounded list: the first
/// `limit` diagnostics (100 unless asked), the whole count, and how many were left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_lists_a_bounded_number_of_diagnostics() {
    let ws = Ws::new();
    let mut plan = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n");
    for i in 0..250 {
        plan.push_str(&format!(
            "  - id: \"t{i}\"\n    title: \"Task {i}\"\n    status: \"completed\"\n"
        ));
    }
    ws.write("plan.small.yml", &plan);
    let c = connect(ws.root()).await;
    let s1 = |v: &Value| {
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == "S1")
            .count()
    };
    let (ok, v) = call(&c, "check", json!({})).await;
    assert!(!ok);
    assert_eq!(v["passed"], false);
    let total = v["total_diagnostics"].as_u64().unwrap();
    assert!(total >= 250, "{total}");
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 100);
    assert_eq!(v["omitted"].as_u64().unwrap(), total - 100);
    assert_eq!(v["lint"]["errors"].as_array().unwrap().len(), 100);
    assert_eq!(v["diagnostics"][0]["code"], "S1", "{}", v["diagnostics"][0]);

    let (_, v) = call(&c, "check", json!({"limit": 7})).await;
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 7);
    assert_eq!(v["omitted"].as_u64().unwrap(), total - 7);

    let (_, v) = call(&c, "check", json!({"limit": 0})).await;
    assert_eq!(v["diagnostics"].as_array().unwrap().len() as u64, total);
    assert_eq!(v["omitted"], 0);
    assert_eq!(s1(&v), 250);
    c.cancel().await.unwrap();
}

/// The Python MCP SDK's client (PyPI `mcp`) drives init, plan, progress, checkpoint, handoff
/// and check through `small mcp` (`ci/mcp_client.py`). The interpreter is
/// `SMALL_TEST_MCP_PYTHON` (CI points it at a venv with `mcp` installed), else `python3`;
/// without Python or the package the suite is skipped visibly (and fails where CI requires it).
#[test]
fn python_sdk_client_drives_a_workflow() {
    let python = std::env::var("SMALL_TEST_MCP_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ci/mcp_client.py");
    let out = match std::process::Command::new(&python)
        .arg(&script)
        .arg(bin())
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            small_testkit::skip(small_testkit::MCP, &format!("cannot run {python}: {e}"));
            return;
        }
    };
    if out.status.code() == Some(3) {
        small_testkit::skip(
            small_testkit::MCP,
            &format!(
                "{python} has no `mcp` package (pip install mcp, or set SMALL_TEST_MCP_PYTHON)"
            ),
        );
        return;
    }
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconstruct_and_health_over_mcp() {
    let ws = Ws::new();
    let c = connect(ws.root()).await;
    let tools: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    for t in ["reconstruct", "health"] {
        assert!(tools.contains(&t.to_string()), "{t} in {tools:?}");
    }
    for (status, evidence) in [
        ("in_progress", "lexer done"),
        ("in_progress", "parser done"),
    ] {
        let (ok, v) = call(
            &c,
            "progress_add",
            json!({"task": "task-1", "status": status, "evidence": evidence}),
        )
        .await;
        assert!(ok, "{v}");
    }
    let (ok, v) = call(&c, "reconstruct", json!({"task": "task-1", "limit": 1})).await;
    assert!(ok, "{v}");
    assert_eq!(v["task"]["id"], "task-1", "{v}");
    assert_eq!(v["matched_entries"], 2, "{v}");
    assert_eq!(v["returned_entries"], 1, "{v}");
    assert_eq!(v["truncated"], true, "{v}");
    assert_eq!(v["entries"][0]["evidence"], "parser done", "{v}");

    let (ok, v) = call(&c, "reconstruct", json!({"since": "2026-01-01T00:00:00Z"})).await;
    assert!(!ok, "a --since without fraction is refused: {v}");
    assert_eq!(v["error"]["code"], "reconstruct", "{v}");

    let (ok, v) = call(&c, "health", json!({})).await;
    assert!(ok, "{v}");
    let w = &v["workspaces"][0];
    assert_eq!(w["small_dir_exists"], true, "{v}");
    assert!(w["strict_status"].is_string(), "{v}");
    assert_eq!(w["artifact_digest"].as_str().map(str::len), Some(64), "{v}");
    assert_eq!(w["snapshot_count"], 0, "{v}");
}

/// A 2.0.0 workspace over MCP: the read tools and resources come from its project state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_workspace_over_mcp() {
    let Some(case) = small_testkit::conformance_path(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/v2/cases/wf-single-session"
    )) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    crate::conformance_v2::copy_case_links(&case, work.path());
    let c = connect(work.path()).await;

    let (ok, v) = call(&c, "resume", json!({})).await;
    assert!(ok, "{v}");
    assert_eq!(v["gates"]["status"], "pass", "{v}");
    assert_eq!(v["next_task"]["id"], "token-polling", "{v}");
    assert_eq!(
        v["next_task"]["dependencies"][0]["status"], "completed",
        "{v}"
    );
    assert!(
        v["markdown"].as_str().unwrap().contains("token-polling"),
        "{v}"
    );

    let (ok, v) = call(&c, "status", json!({})).await;
    assert!(ok, "{v}");
    assert_eq!(v["profile"], "2.0.0", "{v}");
    assert_eq!(v["sessions"], 2, "{v}");

    let (ok, v) = call(&c, "check", json!({})).await;
    assert!(ok, "{v}");
    assert_eq!(v["passed"], true, "{v}");

    let (ok, v) = call(&c, "reconstruct", json!({"task": "task-1"})).await;
    assert!(ok, "{v}");
    assert_eq!(v["profile"], "2.0.0", "{v}");
    assert_eq!(v["task"]["alias"], "task-1", "{v}");
    let (ok, v) = call(&c, "reconstruct", json!({"task": "no-such-task"})).await;
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "unknown-task", "{v}");

    let uris: Vec<String> = c
        .list_all_resources()
        .await
        .unwrap()
        .iter()
        .map(|r| r.uri.to_string())
        .collect();
    for u in [
        "small://workspace/state.json",
        "small://workspace/profile.json",
        "small://workspace/policy/intent.small.yml",
    ] {
        assert!(uris.contains(&u.to_string()), "{u} in {uris:?}");
    }
    assert!(
        !uris.iter().any(|u| u.ends_with("plan.small.yml")),
        "{uris:?}"
    );
    let r = c
        .read_resource(ReadResourceRequestParams::new(
            "small://workspace/state.json",
        ))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &r.contents[0] else {
        panic!("text expected");
    };
    let state: Value = serde_json::from_str(text).unwrap();
    assert_eq!(state["profile"], "2.0.0", "{state}");
    assert_eq!(state["tasks"].as_array().map(Vec::len), Some(5), "{state}");
    assert_eq!(state["sessions"]["conflicts"], json!([]), "{state}");
    let r = c
        .read_resource(ReadResourceRequestParams::new(
            "small://workspace/policy/intent.small.yml",
        ))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &r.contents[0] else {
        panic!("text expected");
    };
    assert!(text.contains("device authorization grant"), "{text}");
}
