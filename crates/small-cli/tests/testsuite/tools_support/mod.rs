//! Helpers shared by the tools_* behaviour tests: run the real `small` binary on temp dirs.
#![allow(dead_code)]

use assert_cmd::Command;
use std::path::Path;

/// `small` with a clean environment for the settings that change behaviour.
pub fn small() -> Command {
    let mut c = Command::cargo_bin("small").expect("the small binary is built");
    c.env_remove("SMALL_PROGRESS_MODE")
        .env_remove("SMALL_SPEC_DIR")
        .env("NO_COLOR", "1");
    c
}

/// `small init --no-agents` in `dir`, which must succeed.
pub fn init(dir: &Path) {
    small()
        .args(["init", "--no-agents", "--dir"])
        .arg(dir)
        .assert()
        .success();
}

pub fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref())
        .unwrap_or_else(|e| panic!("read {}: {e}", p.as_ref().display()))
}

/// Progress entries as JSON, through the project's own YAML loader.
pub fn progress_entries(root: &Path) -> Vec<serde_json::Value> {
    let bytes = std::fs::read(root.join(".small/progress.small.yml")).expect("progress exists");
    let doc = small_core::ops::formats::yaml::parse_bytes(
        &bytes,
        &small_core::ops::formats::yaml::Limits::default(),
    )
    .expect("progress parses");
    doc.root.to_json()["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Parse a YAML file into JSON.
pub fn yaml_json(p: impl AsRef<Path>) -> serde_json::Value {
    let bytes = std::fs::read(p.as_ref()).expect("file exists");
    small_core::ops::formats::yaml::parse_bytes(
        &bytes,
        &small_core::ops::formats::yaml::Limits::default(),
    )
    .unwrap_or_else(|e| panic!("{} does not parse: {e:?}", p.as_ref().display()))
    .root
    .to_json()
}

/// Runs `small check --strict` on the workspace and asserts it passes.
pub fn assert_check_strict(root: &Path) {
    let out = small()
        .args(["check", "--strict", "--dir"])
        .arg(root)
        .output()
        .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "small check --strict failed on {}:\n{text}",
        root.display()
    );
}
