//! `small check`, `small status`, `small emit` and `small verify --since` on real workspaces.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_small");

const INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Ship it\"\nscope:\n  include: [\"src/**\"]\n  exclude: []\nsuccess_criteria: [\"works\"]\n";
const CONSTRAINTS: &str =
    "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"c1\"\n    rule: \"Be kind\"\n    severity: \"warn\"\n";
const PLAN: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"a\"\n    title: \"First\"\n    status: \"completed\"\n  - id: \"b\"\n    title: \"Second\"\n    status: \"pending\"\n    dependencies: [\"a\"]\n  - id: \"c\"\n    title: \"Third\"\n    dependencies: [\"b\"]\n  - id: \"d\"\n    title: \"Fourth\"\n";
const HANDOFF: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"Next: b\"\nresume:\n  current_task_id: \"b\"\n  next_steps: [\"do b\"]\nlinks: []\nreplayId:\n  value: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n  source: \"auto\"\n";
const WORKSPACE: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\n";

fn entry(i: usize, task: &str) -> String {
    format!(
        "  - task_id: \"{task}\"\n    timestamp: \"2026-01-01T10:{:02}:{:02}.000001Z\"\n    status: \"completed\"\n    evidence: \"step {i} done\"\n",
        i / 60,
        i % 60
    )
}

fn progress(n: usize) -> String {
    let mut s = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
    for i in 0..n {
        s.push_str(&entry(i, "a"));
    }
    s
}

fn workspace(progress_text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join(".small");
    std::fs::create_dir(&small).unwrap();
    for (name, text) in [
        ("intent.small.yml", INTENT),
        ("constraints.small.yml", CONSTRAINTS),
        ("plan.small.yml", PLAN),
        ("progress.small.yml", progress_text),
        ("handoff.small.yml", HANDOFF),
        ("workspace.small.yml", WORKSPACE),
    ] {
        std::fs::write(small.join(name), text).unwrap();
    }
    dir
}

fn small(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

#[test]
fn check_json_reports_stages_honestly() {
    let ws = workspace(&progress(2));
    let (code, out, err) = small(ws.path(), &["check", "--strict", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.is_empty());
    let v = json(&out);
    for s in ["validate", "lint", "verify"] {
        assert_eq!(v[s]["status"], "ok", "{v}");
    }
    assert_eq!(v["exit_code"], 0);

    std::fs::write(ws.path().join(".small/notes.md"), "x").unwrap();
    let (code, out, err) = small(ws.path(), &["check", "--strict", "--json"]);
    assert_eq!(code, 1);
    assert!(err.is_empty(), "stderr must stay empty with --json: {err}");
    let v = json(&out);
    assert_eq!(v["validate"]["status"], "ok");
    assert_eq!(v["lint"]["status"], "failed");
    assert_eq!(v["lint"]["diagnostics"][0]["code"], "S4");
    let line = v["lint"]["errors"][0].as_str().unwrap();
    assert!(
        line.starts_with(".small/notes.md") && line.contains("error[S4]"),
        "{line}"
    );
    assert_eq!(v["verify"]["status"], "skipped");
    assert_eq!(v["verify"]["reason"], "lint did not pass");
    assert_eq!(v["exit_code"], 1);
}

#[test]
fn check_human_names_the_failing_stage() {
    let bad = progress(1).replace("owner: \"agent\"", "owner: \"human\"");
    let ws = workspace(&bad);
    let (code, out, err) = small(ws.path(), &["check"]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("error[schema]"), "{err}");
    assert!(
        err.contains("check failed at validate: 1 error; lint and verify not run"),
        "{err}"
    );
}

#[test]
fn status_lists_actionable_tasks_in_dependency_order() {
    let ws = workspace(&progress(3));
    let (code, out, _) = small(ws.path(), &["status", "--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["plan"]["next_actionable"], serde_json::json!(["b", "d"]));
    assert_eq!(v["plan"]["tasks_by_status"]["pending"], 3);
    assert_eq!(v["next_task"], "b");
    assert_eq!(v["recent_progress"].as_array().unwrap().len(), 3);
    assert_eq!(v["recent_progress"][0]["evidence"], "step 2 done");
    let (_, out, _) = small(ws.path(), &["status", "--tasks", "1", "--recent", "1"]);
    assert!(out.contains("Next actionable: b\n"), "{out}");
    assert!(out.contains("Recent signal progress (newest first):\n  [2026-01-01 10:00:02.000001Z] a: completed - step 2 done\n"), "{out}");
}

#[test]
fn status_on_a_long_log_reads_the_tail() {
    let ws = workspace(&progress(3000));
    let (code, out, _) = small(ws.path(), &["status", "--json", "--recent", "2"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["recent_progress"][0]["evidence"], "step 2999 done");
    assert_eq!(v["recent_progress"][1]["evidence"], "step 2998 done");
}

#[test]
fn emit_is_json_and_check_sets_the_exit_code() {
    let ws = workspace(&progress(2));
    let (code, out, _) = small(ws.path(), &["emit"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["status"]["nextActionable"], serde_json::json!(["b", "d"]));
    assert_eq!(v["constraints"]["constraintIds"], serde_json::json!(["c1"]));
    assert_eq!(v["progress"]["recent"].as_array().unwrap().len(), 2);
    let (code, out, _) = small(
        ws.path(),
        &["emit", "--include", "plan,enforcement", "--check"],
    );
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["plan"]["tasks"].as_array().unwrap().len(), 4);
    assert_eq!(v["plan"]["tasks"][0]["ID"], v["plan"]["tasks"][0]["id"]);
    assert_eq!(v["enforcement"]["exit_code"], 0);
    // The summary sections are there whatever is named (as the reference's keys are).
    assert!(v["intent"].is_object() && v["intent"].get("artifact").is_none());
    assert!(v["paths"].is_object() && v["progress"].is_object());
    assert_eq!(small(ws.path(), &["emit", "--include", "bogus"]).0, 2);
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn verify_since_proves_progress_append_only() {
    let ws = workspace(&progress(3));
    let p = ws.path();
    git(p, &["init", "-q"]);
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "start"]);
    // Appending is fine.
    std::fs::write(p.join(".small/progress.small.yml"), progress(4)).unwrap();
    let (code, out, err) = small(p, &["verify", "--since", "HEAD"]);
    assert_eq!(code, 0, "{out}{err}");
    // Rewriting history is not.
    let altered = progress(4).replace("step 1 done", "step 1 redone");
    std::fs::write(p.join(".small/progress.small.yml"), altered).unwrap();
    let (code, _, err) = small(p, &["verify", "--since", "HEAD"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error[INV3]: entries[1] (task a, 2026-01-01T10:00:01.000001Z) present at HEAD was altered (changed: evidence)"),
        "{err}"
    );
    // Deleting the first entry.
    let mut deleted = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
    for i in 1..4 {
        deleted.push_str(&entry(i, "a"));
    }
    std::fs::write(p.join(".small/progress.small.yml"), deleted).unwrap();
    let (code, _, err) = small(p, &["verify", "--since", "HEAD"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "entries[0] (task a, 2026-01-01T10:00:00.000001Z) present at HEAD was deleted"
        ),
        "{err}"
    );
    // An unknown revision is a usage error.
    let (code, _, err) = small(p, &["verify", "--since", "no-such-rev"]);
    assert_eq!(code, 2, "{err}");
}
