//! The agent loop in ordinary use (issue 14): the README sequence and the working loop of the
//! generated AGENTS.md block, run end to end with the real binary — a plan of several open
//! tasks, mid-run handoffs, a resume, resets with the same intent, snapshots of every run.

use std::path::{Path, PathBuf};
use std::process::Command;

use small_core::ops::formats::yaml::{self, Limits};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_small"))
}

struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            tmp: tempfile::tempdir().unwrap(),
        }
    }
    fn root(&self) -> &Path {
        self.tmp.path()
    }
    fn run_in(&self, cwd: &Path, args: &[&str]) -> std::process::Output {
        Command::new(bin())
            .args(args)
            .current_dir(cwd)
            .env("NO_COLOR", "1")
            .env_remove("SMALL_PROGRESS_MODE")
            .output()
            .unwrap()
    }
    fn ok(&self, args: &[&str]) -> String {
        self.ok_in(self.root(), args)
    }
    fn ok_in(&self, cwd: &Path, args: &[&str]) -> String {
        let o = self.run_in(cwd, args);
        assert!(
            o.status.success(),
            "small {args:?} failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
    fn fails(&self, code: i32, args: &[&str]) -> String {
        let o = self.run_in(self.root(), args);
        assert_eq!(
            o.status.code(),
            Some(code),
            "small {args:?}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    }
    fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
    }
    fn doc(&self, name: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(self.root().join(".small").join(name)).unwrap();
        yaml::parse_str(&text, &Limits::default())
            .unwrap()
            .root
            .to_json()
    }
    fn handoff(&self) -> serde_json::Value {
        self.doc("handoff.small.yml")
    }
}

/// Split a README command line into words (double quotes group; `#` starts a comment).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            '#' if !quoted => break,
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// The README's "Using it" sequence, exactly as written, succeeds in a new directory.
#[test]
fn the_readme_sequence_runs() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let start = readme
        .find("## Using it")
        .expect("README has a Using it section");
    let block = &readme[start..];
    let open = "```sh runnable\n";
    let body = &block[block.find(open).expect("a runnable block") + open.len()..];
    let body = &body[..body.find("```").unwrap()];
    let d = Dir::new();
    let mut ran = 0;
    for line in body.lines().filter(|l| l.starts_with("small ")) {
        let w = words(line);
        if w[1] == "serve" {
            continue; // a server; covered by the server tests
        }
        let args: Vec<&str> = w[1..].iter().map(String::as_str).collect();
        d.ok(&args);
        ran += 1;
    }
    assert!(ran >= 10, "ran {ran} commands");
    let h = d.handoff();
    assert_eq!(h["summary"], "Flag done");
    assert!(h["resume"].get("current_task_id").is_none(), "{h}");
    d.ok(&["check", "--strict"]);
}

fn replay_id(d: &Dir) -> String {
    d.handoff()["replayId"]["value"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The AGENTS.md working loop, over three runs, two of which share a replay ID.
#[test]
fn the_agents_working_loop_runs_end_to_end() {
    let d = Dir::new();
    d.ok(&[
        "init",
        "--intent",
        "Ship the --dry-run flag",
        "--task",
        "Parse the flag",
        "--task",
        "Skip writes when set",
        "--task",
        "Document it",
    ]);
    let agents = std::fs::read_to_string(d.root().join("AGENTS.md")).unwrap();
    assert!(
        agents.contains("small handoff --final"),
        "the block teaches --final"
    );

    // 1. status: the tasks by title.
    let out = d.ok(&["status"]);
    assert!(
        out.contains("Parse the flag") && out.contains("Next task: task-1 (Parse the flag)"),
        "{out}"
    );
    // 2. plan: more work, tidy.
    let v = d.json(&[
        "plan",
        "--add",
        "Benchmark it",
        "--add",
        "Tweet it",
        "--json",
    ]);
    let ids: Vec<&str> = v["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["task-4", "task-5"]);
    d.ok(&[
        "plan",
        "--cancel",
        "task-5",
        "--title",
        "task-4",
        "Measure the overhead",
    ]);
    d.ok(&["plan", "--depends", "task-3:task-2"]);
    // A session works from a subdirectory: the workspace is found upward.
    let src = d.root().join("src");
    std::fs::create_dir(&src).unwrap();
    // 3. apply with a task records the outcome only; checkpoint accepts the task.
    d.ok_in(&src, &["apply", "--cmd", "true", "--task", "task-1"]);
    assert_ne!(d.doc("plan.small.yml")["tasks"][0]["status"], "completed");
    d.ok_in(
        &src,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "the command ran clean",
        ],
    );
    // Work in progress on task-2, then a mid-run handoff (AGENTS.md step 4).
    d.ok_in(
        &src,
        &[
            "progress",
            "add",
            "--task",
            "task-2",
            "--status",
            "in_progress",
            "--evidence",
            "dry-run branch written, tests pending",
        ],
    );
    let v = d.json(&["handoff", "--json"]);
    assert_eq!(v["current_task_id"], "task-2");
    assert_eq!(v["open"][0]["id"], "task-2");
    assert_eq!(v["last_evidence"]["task_id"], "task-2");
    d.ok(&["check", "--strict"]);
    // Completing task-3 before task-2 is refused; the end-of-run check refuses too.
    d.fails(
        1,
        &[
            "checkpoint",
            "--task",
            "task-3",
            "--status",
            "completed",
            "--evidence",
            "docs",
        ],
    );
    d.fails(1, &["handoff", "--final"]);

    // A new session resumes from the handoff.
    let h = d.handoff();
    let resume = h["resume"]["current_task_id"].as_str().unwrap().to_string();
    assert_eq!(resume, "task-2");
    d.ok(&[
        "checkpoint",
        "--task",
        &resume,
        "--status",
        "completed",
        "--test",
        "cargo test dry_run",
    ]);
    d.ok(&[
        "checkpoint",
        "--task",
        "task-4",
        "--status",
        "blocked",
        "--evidence",
        "needs a benchmark machine",
    ]);
    d.ok(&["handoff"]);
    assert_eq!(d.handoff()["resume"]["current_task_id"], "task-3");
    d.ok(&[
        "checkpoint",
        "--task",
        "task-3",
        "--status",
        "completed",
        "--evidence",
        "README section",
    ]);
    // When blocked: the blocker is the resume point.
    d.ok(&["handoff", "--final"]);
    assert_eq!(d.handoff()["resume"]["current_task_id"], "task-4");
    d.ok(&["check", "--strict"]);
    d.ok(&["run", "snapshot"]);
    let run1 = replay_id(&d);

    // Run 2 and run 3: resets with the same intent share a replay ID.
    d.ok(&["reset", "--yes", "--keep-intent"]);
    let run2 = replay_id(&d);
    assert_ne!(run1, run2);
    // Entries of run 1 do not count in run 2.
    d.ok(&["handoff", "--final"]);
    d.ok(&["plan", "--title", "task-1", "Tidy the flag parser"]);
    d.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "started",
    ]);
    d.ok(&["handoff"]);
    d.ok(&["run", "snapshot"]);
    d.ok(&["reset", "--yes", "--keep-intent"]);
    let run3 = replay_id(&d);
    assert_eq!(
        run2, run3,
        "the replay ID is a fingerprint of intent, plan and constraints"
    );
    d.ok(&["handoff", "--final"]);
    let out = d.ok(&["run", "snapshot"]);
    assert!(out.contains("~2"), "{out}");
    // Every run is kept: listed, shown, diffed and checked out.
    let v = d.json(&["run", "list", "--json"]);
    assert_eq!(v["runs"].as_array().unwrap().len(), 3, "{v}");
    let gen1 = format!("{run2}~1");
    let v = d.json(&["run", "show", &gen1, "--json"]);
    assert_eq!(v["generation"], 1);
    let out = d.ok(&["run", "diff", &gen1, &run2]);
    assert!(out.contains("Tidy the flag parser"), "{out}");
    d.ok(&["run", "checkout", &gen1]);
    assert_eq!(d.handoff()["resume"]["current_task_id"], "task-1");
    d.ok(&["run", "checkout", &run1]);
    d.ok(&["check", "--strict"]);
}

/// Issue 14.4: from a subdirectory the workspace is found upward; `--dir` is exact; init
/// warns before nesting.
#[test]
fn the_workspace_is_found_upward() {
    let d = Dir::new();
    d.ok(&["init", "--intent", "x"]);
    let deep = d.root().join("a").join("b");
    std::fs::create_dir_all(&deep).unwrap();
    let out = d.ok_in(&deep, &["status"]);
    assert!(out.contains("Initial task"), "{out}");
    d.ok_in(&deep, &["check"]);
    d.ok_in(&deep, &["plan", "--add", "From below"]);
    assert!(!deep.join(".small").exists());
    let o = d.run_in(&deep, &["check", "--dir", "."]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--dir means exactly that directory"
    );
    let o = d.run_in(&deep, &["init", "--intent", "nested"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("inside the SMALL workspace"), "{err}");
}

/// Issue 14.5: plans an agent can keep tidy; status shows titles.
#[test]
fn plans_can_be_kept_tidy() {
    let d = Dir::new();
    let v = d.json(&[
        "init", "--intent", "x", "--task", "Alpha", "--task", "Beta", "--json",
    ]);
    assert_eq!(v["tasks"][1]["id"], "task-2");
    assert!(!d.ok(&["status"]).contains("Initial task"));
    d.ok(&["plan", "--cancel", "task-2"]);
    let plan = d.doc("plan.small.yml");
    assert_eq!(plan["tasks"][1]["status"], "cancelled", "kept, cancelled");
    d.ok(&["plan", "--title", "task-1", "Alpha, renamed"]);
    assert_eq!(
        d.doc("plan.small.yml")["tasks"][0]["title"],
        "Alpha, renamed"
    );
    d.fails(1, &["plan", "--cancel", "task-9"]);
    d.ok(&[
        "checkpoint",
        "--task",
        "task-1",
        "--status",
        "completed",
        "--evidence",
        "done",
    ]);
    // A cancelled task does not hold the run open.
    d.ok(&["handoff", "--final"]);
    assert_eq!(
        d.handoff()["summary"],
        "Run complete. strict check passed. All plan tasks completed."
    );
    d.ok(&["check", "--strict"]);
}

/// Issue 14.5: every writing command and gate reports what it did as one JSON document.
#[test]
fn writing_commands_and_gates_speak_json() {
    let d = Dir::new();
    let v = d.json(&["init", "--intent", "x", "--json"]);
    assert!(v["replay_id"].as_str().is_some());
    let v = d.json(&["plan", "--add", "A", "--json"]);
    assert_eq!(v["added"][0]["id"], "task-2");
    assert!(v["written"].as_array().is_some() && v["appended"].as_array().is_some());
    let v = d.json(&["handoff", "--json"]);
    assert_eq!(v["summary_source"], "computed");
    let v = d.json(&["start", "--json"]);
    assert_eq!(v["strict_ok"], true);
    let v = d.json(&["reset", "--yes", "--json"]);
    assert!(v["replay_id"].as_str().is_some());
    let v = d.json(&[
        "apply",
        "--cmd",
        "echo hidden",
        "--task",
        "task-1",
        "--json",
    ]);
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["entries"][0]["task_id"], "task-1");
    let v = d.json(&["fix", "--versions", "--json"]);
    assert_eq!(v["repairs"][0]["repair"], "versions");
    let intent = std::fs::read_to_string(d.root().join(".small/intent.small.yml")).unwrap();
    std::fs::write(d.root().join("intent.yml"), format!("{intent}# reviewed\n")).unwrap();
    let v = d.json(&["draft", "intent", "--from", "intent.yml", "--json"]);
    assert_eq!(v["valid"], true, "{v}");
    let v = d.json(&["accept", "intent", "--json"]);
    assert_eq!(v["changed"], true, "{v}");
    for gate in [
        ["lint", "--json"],
        ["verify", "--json"],
        ["doctor", "--json"],
    ] {
        let v = d.json(&gate);
        assert!(v.is_object(), "{gate:?}: {v}");
    }
    let v = d.json(&["lint", "--strict", "--json"]);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["exit_code"], 0);
}

/// Issue 14.2: S1 and the evidence gate ignore the tool's bookkeeping entries.
#[test]
fn bookkeeping_is_not_evidence() {
    let d = Dir::new();
    d.ok(&["init", "--intent", "x"]);
    d.ok(&["plan", "--add", "A"]);
    // Mark task-2 completed by hand: its only entry is the plan --add bookkeeping.
    let p = d.root().join(".small/plan.small.yml");
    let text = std::fs::read_to_string(&p).unwrap();
    let text = text.replace("status: \"pending\"", "status: \"completed\"");
    std::fs::write(&p, text).unwrap();
    let o = d.run_in(d.root(), &["check", "--strict"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("S1"));
    let o = d.run_in(d.root(), &["verify"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("GATE"));
    d.ok(&[
        "progress",
        "add",
        "--task",
        "task-2",
        "--status",
        "completed",
        "--evidence",
        "it works",
    ]);
    d.ok(&["check", "--strict"]);
}
