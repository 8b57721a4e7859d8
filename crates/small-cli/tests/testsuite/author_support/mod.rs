//! Shared helpers for the authoring behaviour tests: real temp workspaces and the real
//! `small` binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use small_core::ops::formats::yaml::{self, Limits};
use small_core::ops::init;

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_small"))
}

/// A temp directory holding a fresh, valid workspace (written directly, not by `init`).
pub struct Ws {
    pub dir: tempfile::TempDir,
}

impl Ws {
    pub fn new() -> Ws {
        let dir = tempfile::tempdir().expect("tempdir");
        let small = dir.path().join(".small");
        std::fs::create_dir(&small).unwrap();
        for f in init::base_artifacts(Some("Test the authoring commands")) {
            std::fs::write(small.join(f.name), f.content).unwrap();
        }
        let id = small_core::ops::formats::auto_replay_id_in(&small).unwrap();
        std::fs::write(
            small.join("handoff.small.yml"),
            init::bootstrap_handoff(&id),
        )
        .unwrap();
        std::fs::write(
            small.join("workspace.small.yml"),
            init::workspace("repo-root", "2026-01-01T00:00:00.000000000Z"),
        )
        .unwrap();
        Ws { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root().join(".small").join(name)
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
    }

    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).unwrap();
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .current_dir(self.root())
            .env("NO_COLOR", "1")
            .env_remove("SMALL_TEST_SLOW_COMMIT_MS");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run small")
    }

    /// Run and require exit 0; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "small {args:?} failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Run and require a failure with `code`; returns stderr.
    pub fn fails(&self, code: i32, args: &[&str]) -> String {
        let o = self.run(args);
        assert_eq!(
            o.status.code(),
            Some(code),
            "small {args:?}: expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    /// `small check --strict` must pass.
    pub fn strict_ok(&self) {
        let o = self.run(&["check", "--strict"]);
        assert!(
            o.status.success(),
            "check --strict failed\nstdout:\n{}\nstderr:\n{}\nplan:\n{}\nprogress:\n{}\nhandoff:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
            self.read("plan.small.yml"),
            self.read("progress.small.yml"),
            self.read("handoff.small.yml"),
        );
    }

    pub fn doc(&self, name: &str) -> serde_json::Value {
        let text = self.read(name);
        yaml::parse_str(&text, &Limits::default())
            .unwrap_or_else(|e| panic!("{name} does not parse: {e}\n{text}"))
            .root
            .to_json()
    }

    pub fn entries(&self) -> Vec<serde_json::Value> {
        self.doc("progress.small.yml")["entries"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub fn tasks(&self) -> Vec<serde_json::Value> {
        self.doc("plan.small.yml")["tasks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// Timestamps of entries must be strictly increasing instants.
pub fn assert_increasing(entries: &[serde_json::Value]) {
    let mut last = None;
    for (i, e) in entries.iter().enumerate() {
        let ts = e["timestamp"]
            .as_str()
            .unwrap_or_else(|| panic!("entry {i} has no timestamp"));
        let t = small_core::ops::formats::timestamp::parse(ts)
            .unwrap_or_else(|e| panic!("entry {i} timestamp {ts}: {e}"));
        if let Some(l) = last {
            assert!(
                t > l,
                "entry {i} timestamp {ts} is not after the previous one"
            );
        }
        last = Some(t);
    }
}

/// `progress add --task TASK --status STATUS` followed by `rest`.
pub fn progress_add<'a>(task: &'a str, status: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["progress", "add", "--task", task, "--status", status];
    args.extend_from_slice(rest);
    args
}
