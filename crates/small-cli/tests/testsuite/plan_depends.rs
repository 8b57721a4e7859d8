//! `small plan --depends` repeated in one call, for both profiles: every dependency is
//! recorded, in the order given, in one write; a bad one refuses the whole call and writes
//! nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::author_support::Ws;

fn depends_entries(ws: &Ws) -> Vec<(String, String)> {
    ws.entries()
        .iter()
        .filter(|e| e["notes"] == "small plan --depends")
        .map(|e| {
            (
                e["task_id"].as_str().unwrap().to_string(),
                e["evidence"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn v1_records_every_dependency_in_order_in_one_call() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Two", "--add", "Three", "--add", "Four"]);
    let v: Value = serde_json::from_str(&ws.ok(&[
        "plan",
        "--depends",
        "task-3:task-2",
        "--depends",
        "task-4:task-3",
        "--depends",
        "task-4:task-1",
        "--json",
    ]))
    .unwrap();
    let changes: Vec<(&str, &str, &str)> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap(),
                c["task_id"].as_str().unwrap(),
                c["dependency"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("dependency", "task-3", "task-2"),
            ("dependency", "task-4", "task-3"),
            ("dependency", "task-4", "task-1"),
        ],
        "{v}"
    );
    assert_eq!(v["unchanged"], false);
    let tasks = ws.tasks();
    assert_eq!(tasks[2]["dependencies"], serde_json::json!(["task-2"]));
    assert_eq!(
        tasks[3]["dependencies"],
        serde_json::json!(["task-3", "task-1"])
    );
    assert_eq!(
        depends_entries(&ws),
        [
            ("task-3".into(), "Added dependency task-2 to task-3".into()),
            ("task-4".into(), "Added dependency task-3 to task-4".into()),
            ("task-4".into(), "Added dependency task-1 to task-4".into()),
        ]
    );
    ws.strict_ok();
    // The text output names each.
    let out = ws.run(&[
        "plan",
        "--depends",
        "task-2:task-1",
        "--depends",
        "task-3:task-1",
    ]);
    assert!(out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Added dependency: task-2 depends on task-1")
            && text.contains("Added dependency: task-3 depends on task-1"),
        "{text}"
    );
    // One --depends: the outcome is as before, one change.
    ws.ok(&["plan", "--add", "Five"]);
    let v: Value =
        serde_json::from_str(&ws.ok(&["plan", "--depends", "task-5:task-4", "--json"])).unwrap();
    assert_eq!(
        v["changes"],
        serde_json::json!([{"kind": "dependency", "task_id": "task-5", "dependency": "task-4"}])
    );
}

#[test]
fn v1_a_bad_later_dependency_refuses_the_whole_call() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Two", "--add", "Three"]);
    let (plan, progress) = (ws.read("plan.small.yml"), ws.read("progress.small.yml"));
    let unchanged = |why: &str| {
        assert_eq!(ws.read("plan.small.yml"), plan, "{why}: the plan changed");
        assert_eq!(
            ws.read("progress.small.yml"),
            progress,
            "{why}: the log changed"
        );
    };
    // An unknown task in the second.
    let err = ws.fails(
        1,
        &[
            "plan",
            "--depends",
            "task-2:task-1",
            "--depends",
            "task-3:task-9",
        ],
    );
    assert!(err.contains("task-9"), "{err}");
    unchanged("unknown task");
    // A malformed second: a usage error before anything is read.
    let err = ws.fails(
        2,
        &["plan", "--depends", "task-2:task-1", "--depends", "task-3"],
    );
    assert!(err.contains("<task-id>:<dep-id>"), "{err}");
    unchanged("malformed");
    // The second closes a cycle with the first.
    let err = ws.fails(
        1,
        &[
            "plan",
            "--depends",
            "task-1:task-2",
            "--depends",
            "task-2:task-1",
        ],
    );
    assert!(err.contains("cycle"), "{err}");
    unchanged("cycle");
    // The same dependency twice.
    let err = ws.fails(
        1,
        &[
            "plan",
            "--depends",
            "task-3:task-2",
            "--depends",
            "task-3:task-2",
        ],
    );
    assert!(err.contains("already"), "{err}");
    unchanged("twice");
}

/// A SMALL 2.0.0 workspace (a v1 one migrated) with a session and the tasks task-1 (from
/// v1), task-2 and task-3 (created in the session).
struct V2 {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl V2 {
    fn new() -> V2 {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let ws = V2 { dir, root };
        ws.ok(&[
            "init",
            "--no-agents",
            "--intent",
            "Depends",
            "--task",
            "One",
        ]);
        let plan = ws.json(&[
            "migrate",
            "--to",
            "2.0.0",
            "--preview",
            "--namespace",
            "depends",
            "--json",
        ]);
        let file = ws.dir.path().join("migration.json");
        std::fs::write(&file, plan.to_string()).unwrap();
        let digest = plan["expected_input_digest"].as_str().unwrap().to_string();
        ws.ok(&[
            "migrate",
            "--apply",
            file.to_str().unwrap(),
            "--expect-state",
            &digest,
            "--json",
        ]);
        ws.ok(&["session", "start", "--label", "t"]);
        ws.ok(&["plan", "--add", "Two"]);
        ws.ok(&["plan", "--add", "Three"]);
        ws
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_small"))
            .args(args)
            .current_dir(&self.root)
            .env("NO_COLOR", "1")
            .env_remove("SMALL_LOCK_TIMEOUT")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }

    fn code(&self, code: i32, args: &[&str]) -> Output {
        let o = self.run(args);
        assert_eq!(
            o.status.code(),
            Some(code),
            "small {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    fn ok(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.code(0, args).stdout).into_owned()
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// Every file under `.small/`, with its bytes.
    fn records(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.push((p.clone(), std::fs::read(&p).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root.join(".small"), &mut out);
        out.sort();
        out
    }

    /// The task id of `alias`.
    fn id(&self, alias: &str) -> String {
        let v = self.json(&["plan", "--json"]);
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["alias"] == alias)
            .unwrap_or_else(|| panic!("{alias} in {v}"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

#[test]
fn v2_records_one_task_updated_event_per_dependency_in_order() {
    let ws = V2::new();
    let (one, two, three) = (ws.id("task-1"), ws.id("task-2"), ws.id("task-3"));
    let v = ws.json(&[
        "plan",
        "--depends",
        "task-3:task-2",
        "--depends",
        "task-3:task-1",
        "--depends",
        "task-2:task-1",
        "--json",
    ]);
    let events = v["events"].as_array().expect("the events written");
    assert_eq!(events.len(), 3, "{v}");
    let seen: Vec<(&str, &str, Value)> = events
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap(),
                e["task_id"].as_str().unwrap(),
                e["payload"]["dependencies"].clone(),
            )
        })
        .collect();
    let mut both = vec![one.clone(), two.clone()];
    both.sort();
    assert_eq!(
        seen,
        [
            ("task_updated", three.as_str(), serde_json::json!([two])),
            ("task_updated", three.as_str(), serde_json::json!(both)),
            ("task_updated", two.as_str(), serde_json::json!([one])),
        ],
        "{v}"
    );
    // In order, one after the other in the session.
    for pair in events.windows(2) {
        assert_eq!(pair[1]["previous_event"], pair[0]["event_id"], "{v}");
        assert_eq!(
            pair[1]["sequence"].as_i64().unwrap(),
            pair[0]["sequence"].as_i64().unwrap() + 1
        );
    }
    // The reference's keys are the last change's.
    assert_eq!(v["event"], events[2], "{v}");
    assert_eq!(v["alias"], "task-2");
    assert_eq!(v["task_id"], two.as_str());
    assert_eq!(v["profile"], "2.0.0");
    ws.ok(&["check", "--strict", "--workspace", "any"]);
    // The text output names each event.
    let o = ws.code(
        0,
        &[
            "plan",
            "--depends",
            "task-1:task-3",
            "--depends",
            "task-2:task-3",
        ],
    );
    let text =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.matches("Updated task-").count(), 2, "{text}");
    assert!(
        text.contains("Updated task-1 dependencies")
            && text.contains("Updated task-2 dependencies"),
        "{text}"
    );
}

#[test]
fn v2_a_bad_later_dependency_refuses_the_whole_call() {
    let ws = V2::new();
    let before = ws.records();
    let unchanged = |why: &str| {
        assert!(ws.records() == before, "{why}: a record was written");
    };
    let o = ws.code(
        1,
        &[
            "plan",
            "--depends",
            "task-3:task-2",
            "--depends",
            "task-3:task-9",
        ],
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("task-9"),
        "{o:?}"
    );
    unchanged("unknown task");
    ws.code(
        1,
        &[
            "plan",
            "--depends",
            "task-3:task-2",
            "--depends",
            "task-2:task-2",
        ],
    );
    unchanged("itself");
    ws.code(
        2,
        &["plan", "--depends", "task-3:task-2", "--depends", "task-2"],
    );
    unchanged("malformed");
    // Several --depends are one change; with another change they are refused as before.
    let o = ws.code(
        1,
        &[
            "plan",
            "--add",
            "Four",
            "--depends",
            "task-3:task-2",
            "--depends",
            "task-2:task-1",
        ],
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("one change per call"),
        "{o:?}"
    );
    unchanged("mixed");
    // One --depends: the reference's keys only.
    let v = ws.json(&["plan", "--depends", "task-3:task-2", "--json"]);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["alias", "event", "profile", "task_id"], "{v}");
    assert_eq!(v["event"]["kind"], "task_updated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_plan_tool_takes_one_dependency_or_a_list() {
    use crate::agents_mcp::{call, connect};
    use serde_json::json;
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Two", "--add", "Three", "--add", "Four"]);
    let c = connect(ws.root()).await;
    let (ok, v) = call(&c, "plan", json!({"depends": "task-2:task-1"})).await;
    assert!(ok, "{v}");
    assert_eq!(v["changes"][0]["dependency"], "task-1", "{v}");
    let (ok, v) = call(
        &c,
        "plan",
        json!({"depends": ["task-4:task-3", "task-4:task-2"]}),
    )
    .await;
    assert!(ok, "{v}");
    assert_eq!(v["changes"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(
        ws.tasks()[3]["dependencies"],
        serde_json::json!(["task-3", "task-2"])
    );
    // A bad later one refuses the call; nothing is written.
    let before = ws.read("plan.small.yml");
    let (ok, v) = call(
        &c,
        "plan",
        json!({"depends": ["task-3:task-1", "task-3:task-9"]}),
    )
    .await;
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "unknown-task", "{v}");
    assert_eq!(ws.read("plan.small.yml"), before);
    c.cancel().await.unwrap();
}
