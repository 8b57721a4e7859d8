//! Shared fixtures for the run-store and archive tests: a real workspace inside a real git
//! repository, written file by file (no `small init`).
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use assert_cmd::Command;

pub const ID_A: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
pub const ID_B: &str = "a1f00000000000000000000000000000000000000000000000000000000000bb";
pub const ID_C: &str = "c0ffee0000000000000000000000000000000000000000000000000000000001";

pub const INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Add a --dry-run flag to the mailer.\"\nscope:\n  include:\n    - \"scripts/mail.py\"\n  exclude: []\nsuccess_criteria:\n  - \"--dry-run sends nothing\"\n";
pub const CONSTRAINTS: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"no-mail\"\n    rule: \"Never send real mail in tests\"\n    severity: \"error\"\n";
pub const PLAN: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"task-1\"\n    title: \"Add the flag\"\n    status: \"pending\"\n  - id: \"task-2\"\n    title: \"Skip SMTP when set\"\n    status: \"pending\"\n";
pub const PROGRESS: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nentries: []\n";
pub const WORKSPACE: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\ncreated_at: \"2026-02-20T16:00:00.000001Z\"\nupdated_at: \"2026-02-20T16:00:00.000001Z\"\n";

pub fn handoff(replay_id: &str, summary: &str) -> String {
    format!(
        "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"{summary}\"\nresume:\n  current_task_id: \"task-1\"\n  next_steps:\n    - \"Continue with task-1\"\nlinks: []\nreplayId:\n  value: \"{replay_id}\"\n  source: \"auto\"\n"
    )
}

pub fn handoff_without_replay_id() -> String {
    "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"No run yet\"\nresume:\n  current_task_id: null\n  next_steps: []\nlinks: []\n".to_string()
}

pub fn progress_with(entries: &[(&str, &str, &str)]) -> String {
    let mut s = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
    for (task, status, ts) in entries {
        s.push_str(&format!(
            "  - task_id: \"{task}\"\n    status: \"{status}\"\n    timestamp: \"{ts}\"\n    evidence: \"tests pass\"\n"
        ));
    }
    s
}

pub struct Ws {
    pub dir: tempfile::TempDir,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = StdCommand::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Ws {
    /// A committed git repository with a full workspace whose handoff carries `ID_A`.
    pub fn new() -> Ws {
        let ws = Ws::bare();
        ws.write("intent.small.yml", INTENT);
        ws.write("constraints.small.yml", CONSTRAINTS);
        ws.write("plan.small.yml", PLAN);
        ws.write("progress.small.yml", PROGRESS);
        ws.write(
            "handoff.small.yml",
            &handoff(ID_A, "Run in progress. Next task: task-1."),
        );
        ws.write("workspace.small.yml", WORKSPACE);
        ws.write_root("README.md", "project\n");
        ws.commit_all();
        ws
    }

    /// A git repository with no workspace yet.
    pub fn bare() -> Ws {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q", "-b", "main"]);
        Ws { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn small(&self) -> PathBuf {
        self.root().join(".small")
    }

    pub fn write(&self, name: &str, text: &str) {
        fs::create_dir_all(self.small()).unwrap();
        fs::write(self.small().join(name), text).unwrap();
    }

    pub fn write_root(&self, name: &str, text: &str) {
        let p = self.root().join(name);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(p, text).unwrap();
    }

    pub fn read(&self, name: &str) -> Vec<u8> {
        fs::read(self.small().join(name)).unwrap()
    }

    pub fn commit_all(&self) {
        // Only the project's own files: the run store, archives and cache stay untracked.
        git(self.root(), &["add", "-A", "--", ".small", "README.md"]);
        git(self.root(), &["commit", "-q", "-m", "state"]);
    }

    pub fn head(&self) -> String {
        git(self.root(), &["rev-parse", "HEAD"])
    }

    pub fn store(&self) -> PathBuf {
        self.root().join(".small-runs")
    }

    pub fn snap_dir(&self, id: &str) -> PathBuf {
        self.store().join(id)
    }

    /// `small <args>` run in the workspace root.
    pub fn small_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("small").expect("binary");
        c.current_dir(self.root()).args(args);
        c
    }

    /// Run `small <args>` and return (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.small_cmd(args).output().expect("small runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Run and require success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(
            code, 0,
            "small {args:?} failed\nstdout: {out}\nstderr: {err}"
        );
        out
    }

    /// Run and require `code`; returns stderr.
    pub fn fails(&self, args: &[&str], code: i32) -> String {
        let (got, out, err) = self.run(args);
        assert_eq!(
            got, code,
            "small {args:?}: expected exit {code}\nstdout: {out}\nstderr: {err}"
        );
        err
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }
}

/// Every file of a directory tree with its bytes, for before/after comparisons.
pub fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                out.push((
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}
