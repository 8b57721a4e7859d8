//! `small merge-driver` with real git: parallel branches whose agents append progress and
//! edit the plan merge without conflicts or loss; broken append-only logs and colliding task
//! ids conflict with a message naming the entry or both titles.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use crate::author_support::bin;

struct Repo {
    dir: tempfile::TempDir,
}

fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Repo {
    /// A git repository with a workspace made by `small init` (and its first commit).
    fn new(init_args: &[&str]) -> Repo {
        let r = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        r.git(&["init", "-q", "-b", "main"]);
        let mut args = vec!["init", "--intent", "Merge test"];
        args.extend_from_slice(init_args);
        r.small(&args);
        r.small(&["plan", "--add", "Shared task", "--id", "shared"]);
        r.commit("base");
        r
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn cmd(&self, prog: &Path, args: &[&str]) -> Output {
        Command::new(prog)
            .args(args)
            .current_dir(self.root())
            .env("NO_COLOR", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.root())
            .output()
            .unwrap()
    }

    fn git_out(&self, args: &[&str]) -> Output {
        self.cmd(Path::new("git"), args)
    }

    fn git(&self, args: &[&str]) -> String {
        let o = self.git_out(args);
        assert!(
            o.status.success(),
            "git {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn small_out(&self, args: &[&str]) -> Output {
        self.cmd(&bin(), args)
    }

    fn small(&self, args: &[&str]) -> String {
        let o = self.small_out(args);
        assert!(
            o.status.success(),
            "small {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
    }

    fn entries(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.root().join(".small/progress.small.yml")).unwrap();
        let doc = small_core::ops::formats::yaml::parse_str(&text, &Default::default()).unwrap();
        doc.root.to_json()["entries"].as_array().unwrap().clone()
    }

    fn task_ids(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.root().join(".small/plan.small.yml")).unwrap();
        let doc = small_core::ops::formats::yaml::parse_str(&text, &Default::default()).unwrap();
        doc.root.to_json()["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Work on branch `name` as two agents: progress appends, a task added with its own id,
    /// a checkpoint.
    fn agents_work(&self, name: &str, from: &str) {
        self.git(&["checkout", "-q", "-B", name, from]);
        let task = format!("{name}-feature");
        self.small(&[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            &format!("agent A on {name} started"),
        ]);
        self.small(&[
            "plan",
            "--add",
            &format!("Feature of {name}"),
            "--id",
            &task,
        ]);
        self.small(&[
            "progress",
            "add",
            "--task",
            &task,
            "--status",
            "in_progress",
            "--evidence",
            &format!("agent B on {name} wrote the code"),
        ]);
        self.small(&[
            "checkpoint",
            "--task",
            &task,
            "--status",
            "completed",
            "--evidence",
            &format!("agent B on {name}: tests pass"),
        ]);
        self.small(&[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            &format!("agent A on {name} reviewed"),
        ]);
        self.commit(&format!("work on {name}"));
    }
}

fn key(e: &serde_json::Value) -> String {
    format!("{}|{}|{}", e["task_id"], e["timestamp"], e["evidence"])
}

#[test]
fn parallel_branches_merge_without_conflict_or_loss() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let r = Repo::new(&[]);
    let attrs = std::fs::read_to_string(r.root().join(".gitattributes")).unwrap();
    assert!(
        attrs.contains(".small/progress.small.yml merge=small"),
        "{attrs}"
    );
    assert!(r
        .git(&["config", "--get", "merge.small.driver"])
        .contains("merge-driver %O %A %B %P"));
    let base: Vec<String> = r.entries().iter().map(key).collect();
    r.agents_work("left", "main");
    let left: Vec<String> = r.entries().iter().map(key).collect();
    r.agents_work("right", "main");
    let right: Vec<String> = r.entries().iter().map(key).collect();
    r.git(&["checkout", "-q", "left"]);
    let out = r.git_out(&["merge", "--no-edit", "right"]);
    assert!(
        out.status.success(),
        "merge: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    r.small(&["check", "--strict"]);
    let merged: Vec<String> = r.entries().iter().map(key).collect();
    // Base entries first and unchanged; every entry of both sides exactly once.
    assert_eq!(&merged[..base.len()], &base[..]);
    let mut counts: HashMap<&String, usize> = HashMap::new();
    for k in &merged {
        *counts.entry(k).or_default() += 1;
    }
    for k in left.iter().chain(right.iter()) {
        assert_eq!(counts.get(k), Some(&1), "{k} in {merged:#?}");
    }
    assert_eq!(merged.len(), left.len() + right.len() - base.len());
    // New entries in timestamp order.
    let ts: Vec<String> = r
        .entries()
        .iter()
        .map(|e| e["timestamp"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = ts.clone();
    sorted.sort();
    assert_eq!(ts, sorted);
    // Both branches' tasks are in the plan, completed.
    let ids = r.task_ids();
    assert!(
        ids.contains(&"left-feature".to_string()) && ids.contains(&"right-feature".to_string()),
        "{ids:?}"
    );
    // After a merge, `small handoff` records the merged state.
    let handoff = || std::fs::read_to_string(r.root().join(".small/handoff.small.yml")).unwrap();
    for t in ["task-1", "shared"] {
        r.small(&[
            "checkpoint",
            "--task",
            t,
            "--status",
            "completed",
            "--evidence",
            "merged",
        ]);
    }
    r.small(&["handoff"]);
    assert!(
        !small_core::ops::merge::handoff_needs_regeneration(&handoff()),
        "{}",
        handoff()
    );
    r.small(&["check", "--strict"]);
}

#[test]
fn without_the_driver_the_same_branches_conflict() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let r = Repo::new(&["--no-merge-driver"]);
    assert!(!r.root().join(".gitattributes").exists());
    r.agents_work("left", "main");
    r.agents_work("right", "main");
    r.git(&["checkout", "-q", "left"]);
    let out = r.git_out(&["merge", "--no-edit", "right"]);
    assert!(
        !out.status.success(),
        "a plain text merge of two appends conflicts"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CONFLICT") && text.contains("progress.small.yml"),
        "{text}"
    );
}

#[test]
fn rewriting_a_base_entry_fails_naming_it() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let r = Repo::new(&[]);
    r.agents_work("left", "main");
    r.git(&["checkout", "-q", "-b", "rewrite", "main"]);
    let p = r.root().join(".small/progress.small.yml");
    let text = std::fs::read_to_string(&p).unwrap();
    let text = text.replace("Created the .small workspace", "Rewritten history");
    std::fs::write(&p, text).unwrap();
    r.small(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "after the rewrite",
    ]);
    r.commit("rewrite history");
    r.git(&["checkout", "-q", "left"]);
    let out = r.git_out(&["merge", "--no-edit", "rewrite"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("theirs rewrote progress entry #1 (meta/init at"),
        "{err}"
    );
}

#[test]
fn colliding_task_ids_conflict_naming_both_titles() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let r = Repo::new(&[]);
    r.git(&["checkout", "-q", "-b", "a", "main"]);
    r.small(&["plan", "--add", "Login page"]);
    r.commit("a");
    r.git(&["checkout", "-q", "-b", "b", "main"]);
    r.small(&["plan", "--add", "Billing export"]);
    r.commit("b");
    let out = r.git_out(&["merge", "--no-edit", "a"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("task id task-2 was added on both sides for different tasks: ours \"Billing export\", theirs \"Login page\""),
        "{err}"
    );
}

#[test]
fn plan_fields_merge_and_same_field_conflicts() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let r = Repo::new(&[]);
    r.small(&["plan", "--add", "Second", "--id", "second"]);
    r.commit("two tasks");
    r.git(&["checkout", "-q", "-b", "a", "main"]);
    r.small(&["plan", "--blocked", "shared"]);
    r.commit("a");
    r.git(&["checkout", "-q", "-b", "b", "main"]);
    r.small(&["plan", "--depends", "second:shared"]);
    r.commit("b");
    let out = r.git_out(&["merge", "--no-edit", "a"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = std::fs::read_to_string(r.root().join(".small/plan.small.yml")).unwrap();
    let doc = small_core::ops::formats::yaml::parse_str(&plan, &Default::default())
        .unwrap()
        .root
        .to_json();
    let task = |id: &str| {
        doc["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(task("shared")["status"], "blocked");
    assert_eq!(
        task("second")["dependencies"],
        serde_json::json!(["shared"])
    );
    assert!(plan.starts_with("# Agent-owned"), "comments kept: {plan}");

    // The same field changed differently on both sides.
    r.git(&["checkout", "-q", "-b", "c", "main"]);
    r.small(&["plan", "--blocked", "second"]);
    r.commit("c");
    r.git(&["checkout", "-q", "-b", "d", "main"]);
    r.small(&[
        "checkpoint",
        "--task",
        "second",
        "--status",
        "completed",
        "--evidence",
        "done",
    ]);
    r.commit("d");
    let out = r.git_out(&["merge", "--no-edit", "c"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("task second: field `status` changed on both sides: ours \"completed\", theirs \"blocked\""),
        "{err}"
    );
}

#[test]
fn install_on_an_existing_workspace_says_what_it_did() {
    if !git_available() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let r = Repo::new(&["--no-merge-driver"]);
    let out = r.small(&["merge-driver", "--install"]);
    assert!(
        out.contains(".gitattributes: created with .small/progress.small.yml merge=small"),
        "{out}"
    );
    assert!(out.contains("git config merge.small.driver set:"), "{out}");
    let again = r.small(&["merge-driver", "--install"]);
    assert!(again.contains("already routes"), "{again}");
    assert!(again.contains("merge.small.driver already set"), "{again}");
    // Outside a git repository: a clear error, exit 2.
    let plain = tempfile::tempdir().unwrap();
    std::fs::create_dir(plain.path().join(".small")).unwrap();
    let o = Command::new(bin())
        .args(["merge-driver", "--install", "--dir"])
        .arg(plain.path())
        .env("GIT_CEILING_DIRECTORIES", plain.path().parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not inside a git repository"));
}
