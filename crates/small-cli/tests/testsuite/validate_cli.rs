//! Behaviour of `small validate`, run as a real binary on temporary workspaces.

use std::path::Path;
use std::process::{Command, Output};

const INTENT: &str = r#"small_version: "1.0.0"
owner: human
intent: "Ship the weekly report generator."
scope:
  include: ["reports/"]
  exclude: []
success_criteria:
  - "a report is produced every Monday"
"#;
const CONSTRAINTS: &str = r#"small_version: "1.0.0"
owner: human
constraints:
  - id: no-prod-data
    rule: "Tests never read production data"
    severity: error
"#;
const PLAN: &str = r#"small_version: "1.0.0"
owner: agent
tasks:
  - id: task-1
    title: "Write the generator"
    status: in_progress
"#;
const PROGRESS: &str = r#"small_version: "1.0.0"
owner: agent
entries:
  - task_id: task-1
    timestamp: "2026-03-01T10:00:00.125Z"
    status: in_progress
    evidence: "skeleton committed"
    link: "https://example.com/ci/1"
"#;
const HANDOFF: &str = r#"small_version: "1.0.0"
owner: agent
summary: "Generator half written."
resume:
  current_task_id: task-1
  next_steps: ["finish the generator"]
links: []
replayId:
  value: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  source: manual
"#;
const WORKSPACE: &str = "small_version: \"1.0.0\"\nowner: agent\nkind: repo-root\n";

fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".small");
    std::fs::create_dir(&dir).unwrap();
    for (name, text) in [
        ("intent.small.yml", INTENT),
        ("constraints.small.yml", CONSTRAINTS),
        ("plan.small.yml", PLAN),
        ("progress.small.yml", PROGRESS),
        ("handoff.small.yml", HANDOFF),
        ("workspace.small.yml", WORKSPACE),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    tmp
}

fn write(root: &Path, file: &str, text: &str) {
    std::fs::write(root.join(".small").join(file), text).unwrap();
}

fn small(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_small"))
        .args(args)
        .current_dir(cwd)
        .env_remove("SMALL_SPEC_DIR")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn valid_workspace_passes_from_root_dir_flag_and_inside_small() {
    let ws = workspace();
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("valid"), "{}", stdout(&o));
    let o = small(&ws.path().join(".small"), &["validate"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "from inside .small: {}",
        stderr(&o)
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let o = small(
        elsewhere.path(),
        &["validate", "--dir", ws.path().to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = small(
        elsewhere.path(),
        &[
            "validate",
            "--dir",
            ws.path().join(".small").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn quiet_success_prints_nothing() {
    let ws = workspace();
    let o = small(ws.path(), &["--quiet", "validate"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "");
}

#[test]
fn no_workspace_exits_2_with_a_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let o = small(tmp.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("error[no-workspace]"), "{e}");
    assert!(e.contains("small init"), "{e}");
}

#[test]
fn small_that_is_a_file_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(".small"), "not a dir").unwrap();
    let o = small(tmp.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a directory"), "{}", stderr(&o));
}

#[test]
fn every_missing_file_is_listed() {
    let ws = workspace();
    std::fs::remove_file(ws.path().join(".small/plan.small.yml")).unwrap();
    std::fs::remove_file(ws.path().join(".small/progress.small.yml")).unwrap();
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains(".small/plan.small.yml"), "{e}");
    assert!(e.contains(".small/progress.small.yml"), "{e}");
    assert!(e.contains("validation failed: 2 errors in 2 files"), "{e}");
}

#[test]
fn schema_error_shows_file_line_column_snippet_and_path() {
    let ws = workspace();
    write(
        ws.path(),
        "plan.small.yml",
        "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: task-1\n    title: \"\"\n",
    );
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    let expected = "error[schema]: `tasks[0].title` must not be empty\n --> .small/plan.small.yml:5:12\n  |\n5 |     title: \"\"\n  |            ^^\n  = path: /tasks/0/title\n";
    assert!(e.contains(expected), "{e}");
    assert!(!e.contains('\x1b'), "no colour when NO_COLOR is set: {e}");
}

#[test]
fn several_errors_are_reported_in_file_then_position_order() {
    let ws = workspace();
    write(
        ws.path(),
        "plan.small.yml",
        "small_version: 1.0\nowner: agent\ntasks: []\nnotes: x\n",
    );
    write(
        ws.path(),
        "intent.small.yml",
        &INTENT.replace("owner: human", "owner: agent"),
    );
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    let order: Vec<&str> = e.lines().filter(|l| l.contains(" --> ")).collect();
    assert_eq!(
        order,
        vec![
            " --> .small/intent.small.yml:2:8",
            " --> .small/plan.small.yml:1:16",
            " --> .small/plan.small.yml:3:8",
            " --> .small/plan.small.yml:4:1",
        ],
        "{e}"
    );
    assert!(e.contains("quoted"), "small_version help: {e}");
}

#[test]
fn yaml_errors_point_at_their_line() {
    let ws = workspace();
    write(
        ws.path(),
        "intent.small.yml",
        &format!("{INTENT}owner: human\n"),
    );
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("error[yaml]"), "{e}");
    assert!(e.contains(".small/intent.small.yml:9:"), "{e}");
}

#[test]
fn several_yaml_documents_in_one_file_are_an_error() {
    let ws = workspace();
    write(
        ws.path(),
        "plan.small.yml",
        &format!("{PLAN}---\ntasks: 3\n"),
    );
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn formats_are_asserted() {
    let ws = workspace();
    write(
        ws.path(),
        "progress.small.yml",
        &PROGRESS.replace("https://example.com/ci/1", "see the CI page"),
    );
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("must be an absolute URI"),
        "{}",
        stderr(&o)
    );

    let ws = workspace();
    write(
        ws.path(),
        "progress.small.yml",
        &PROGRESS.replace("2026-03-01T10:00:00.125Z", "2026-03-01 10:00:00.125"),
    );
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("RFC 3339"), "{}", stderr(&o));
}

#[test]
fn workspace_metadata_is_validated_when_present() {
    let ws = workspace();
    write(
        ws.path(),
        "workspace.small.yml",
        "small_version: \"0.1\"\nkind: sandbox\n",
    );
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains(".small/workspace.small.yml:1:16"), "{e}");
    assert!(e.contains(".small/workspace.small.yml:2:7"), "{e}");

    write(
        ws.path(),
        "workspace.small.yml",
        "kind: repo-root\nrun:\n  replay_id: nothex\n",
    );
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    std::fs::remove_file(ws.path().join(".small/workspace.small.yml")).unwrap();
    let o = small(ws.path(), &["validate"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "metadata is optional for validate: {}",
        stderr(&o)
    );
}

#[test]
fn json_output_is_the_only_thing_on_stdout() {
    let ws = workspace();
    write(
        ws.path(),
        "plan.small.yml",
        "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: task-1\n",
    );
    let o = small(ws.path(), &["validate", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["errors"], 1);
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "schema");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["file"], ".small/plan.small.yml");
    assert_eq!(d["path"], "/tasks/0/title");
    assert_eq!(d["span"]["start"]["line"], 4);
    assert_eq!(d["span"]["start"]["column"], 5);
    assert!(d["message"].as_str().unwrap().contains("title"));
    assert_eq!(v["files"].as_array().unwrap().len(), 6);

    let ok = small(workspace().path(), &["validate", "--json"]);
    assert_eq!(ok.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["diagnostics"], serde_json::json!([]));

    let none = tempfile::tempdir().unwrap();
    let o = small(none.path(), &["validate", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["diagnostics"][0]["code"], "no-workspace");
}

/// Schemas in which the plan accepts anything.
fn relaxed_schemas(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for kind in ["intent", "constraints", "progress", "handoff"] {
        std::fs::write(
            dir.join(format!("{kind}.schema.json")),
            "{\"type\": \"object\"}",
        )
        .unwrap();
    }
    std::fs::write(dir.join("plan.schema.json"), "{}").unwrap();
}

#[test]
fn spec_dir_flag_and_env_choose_the_schemas() {
    let ws = workspace();
    write(
        ws.path(),
        "plan.small.yml",
        "small_version: \"1.0.0\"\nowner: agent\ntasks: []\n",
    );
    assert_eq!(small(ws.path(), &["validate"]).status.code(), Some(1));

    let schemas = tempfile::tempdir().unwrap();
    relaxed_schemas(&schemas.path().join("spec/small/v1.0.0/schemas"));
    let o = small(
        ws.path(),
        &["validate", "--spec-dir", schemas.path().to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("--spec-dir"),
        "names the schema source: {}",
        stdout(&o)
    );

    let o = Command::new(env!("CARGO_BIN_EXE_small"))
        .arg("validate")
        .current_dir(ws.path())
        .env(
            "SMALL_SPEC_DIR",
            schemas.path().join("spec/small/v1.0.0/schemas"),
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("SMALL_SPEC_DIR"), "{}", stdout(&o));

    // The flag wins over the environment: an empty --spec-dir target is an error (exit 2).
    let empty = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_small"))
        .args(["validate", "--spec-dir", empty.path().to_str().unwrap()])
        .current_dir(ws.path())
        .env("SMALL_SPEC_DIR", schemas.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no SMALL schemas"), "{}", stderr(&o));
}

#[test]
fn schemas_in_parent_directories_are_ignored() {
    let outer = tempfile::tempdir().unwrap();
    relaxed_schemas(&outer.path().join("spec/small/v1.0.0/schemas"));
    let ws_dir = outer.path().join("project");
    std::fs::create_dir(&ws_dir).unwrap();
    let ws = workspace();
    std::fs::rename(ws.path().join(".small"), ws_dir.join(".small")).unwrap();
    write(
        &ws_dir,
        "plan.small.yml",
        "small_version: \"1.0.0\"\nowner: agent\ntasks: []\n",
    );
    let o = small(&ws_dir, &["validate"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "embedded schemas must be used: {}",
        stderr(&o)
    );
}

#[test]
fn large_progress_log_is_validated_entry_by_entry() {
    let ws = workspace();
    let mut text = String::from("small_version: \"1.0.0\"\nowner: agent\nentries:\n");
    for i in 0..5000 {
        text.push_str(&format!(
            "  - task_id: task-1\n    timestamp: \"2026-03-01T10:00:{:02}.{:06}Z\"\n    evidence: \"step {i}\"\n",
            i % 60,
            i
        ));
    }
    text.push_str("  - task_id: task-1\n    commit: ABCDEF1\n");
    write(ws.path(), "progress.small.yml", &text);
    let o = small(ws.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains(".small/progress.small.yml:15005:13"), "{e}");
    assert!(e.contains("/entries/5000/commit"), "{e}");
}

/// The whole human report for a workspace with one problem of each kind, in report order.
#[test]
fn human_report_golden() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join(".small")).unwrap();
    write(tmp.path(), "handoff.small.yml", "small_version: 1.0\nowner: agent\nsummary: \"Half done.\"\nresume:\n  next_steps: []\nlinks: []\nreplayId:\n  value: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n  source: manual\n");
    write(tmp.path(), "intent.small.yml", "small_version: \"1.0.0\"\nowner: agent\nintent: \"Ship the weekly report generator.\"\nscope:\n  include: [\"reports/\"]\n  exclude: []\nsuccess_criteria: []\n");
    write(tmp.path(), "plan.small.yml", "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: task-1\n    status: pending\nmilestone: Q3\n");
    write(tmp.path(), "progress.small.yml", "small_version: \"1.0.0\"\nowner: agent\nentries:\n  - task_id: task-1\n    timestamp: \"2026-03-01T10:00:00.125Z\"\n    evidence: null\n");
    let o = small(tmp.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
    let expected = "error[missing]: required file .small/constraints.small.yml is missing\n --> .small/constraints.small.yml\n  = help: restore it (for example from version control), or create it with at least: small_version: \"1.0.0\", owner: human, constraints: [{id: ..., rule: \"...\", severity: error}]\n\nerror[schema]: `small_version` must be \"1.0.0\", found the number 1.0\n --> .small/handoff.small.yml:1:16\n  |\n1 | small_version: 1.0\n  |                ^^^\n  = path: /small_version\n  = help: write `small_version: \"1.0.0\"` (quoted, so YAML keeps it a string)\n\nerror[schema]: `owner` must be \"human\", found \"agent\"\n --> .small/intent.small.yml:2:8\n  |\n2 | owner: agent\n  |        ^^^^^\n  = path: /owner\n  = help: set it to \"human\"\n\nerror[schema]: missing required field `title` in `tasks[0]`\n --> .small/plan.small.yml:4:5\n  |\n4 |   - id: task-1\n  |     ^\n  = path: /tasks/0/title\n  = help: add `title:` with a non-empty string\n\nerror[schema]: unknown field `milestone`\n --> .small/plan.small.yml:6:1\n  |\n6 | milestone: Q3\n  | ^^^^^^^^^\n  = path: /milestone\n  = help: remove it, or use one of the allowed fields: small_version, owner, tasks\n\nerror[schema]: `entries[0].evidence` must be a non-empty string or a mapping, found null\n --> .small/progress.small.yml:6:15\n  |\n6 |     evidence: null\n  |               ^^^^\n  = path: /entries/0/evidence\n  = help: write a short text, or a mapping of details\n\nvalidation failed: 6 errors in 5 files\n";
    assert_eq!(stderr(&o), expected);
}
