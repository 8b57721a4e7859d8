//! Drop-in compatibility with the reference on workspaces of long agent work: the exit codes
//! of validate, lint, verify, check, status and handoff match the recording in
//! tests/fixtures/agent-workspaces/reference-exit-codes.tsv, except where a decision record of
//! docs/decisions/ says why ours differ. The reference itself is never run here.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_small");

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent-workspaces")
}

/// A fresh copy of a fixture workspace, `⟨⟩` marks removed.
fn copy(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join(".small");
    std::fs::create_dir(&to).unwrap();
    for f in std::fs::read_dir(fixtures().join(name).join(".small")).unwrap() {
        let f = f.unwrap();
        let text = std::fs::read_to_string(f.path()).unwrap().replace("⟨⟩", "");
        std::fs::write(to.join(f.file_name()), text).unwrap();
    }
    dir
}

fn small(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("SMALL_SPEC_DIR")
        .env_remove("SMALL_PROGRESS_MODE")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn exit_codes_match_the_reference_recording() {
    let table = std::fs::read_to_string(fixtures().join("reference-exit-codes.tsv")).unwrap();
    let (mut same, mut documented, mut rows) = (0, 0, 0);
    let mut failures = Vec::new();
    for line in table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        let (ws, cmd, reference, ours, why) = (cols[0], cols[1], cols[2], cols[3], cols[4]);
        rows += 1;
        if reference == ours {
            same += 1;
        } else {
            documented += 1;
            if let Err(e) = crate::docs::decision_in_force(why) {
                panic!(
                    "{ws} {cmd}: a difference from the reference needs a decision in force: {e}"
                );
            }
        }
        let dir = copy(ws);
        let args: Vec<&str> = cmd.split(' ').collect();
        let (code, out) = small(dir.path(), &args);
        if code.to_string() != ours {
            failures.push(format!(
                "{ws}: small {cmd} exited {code}, expected {ours} (reference {reference})\n{}",
                out.lines().take(12).collect::<Vec<_>>().join("\n")
            ));
        }
    }
    println!("{rows} runs: {same} as the reference, {documented} different as documented");
    assert!(rows >= 72, "{rows}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn unknown_workspace_fields_are_kept_and_only_warned_about_in_strict_mode() {
    let dir = copy("unknown-workspace-fields");
    let meta = dir.path().join(".small/workspace.small.yml");
    let (code, out) = small(dir.path(), &["check"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("notes"), "{out}");
    let (code, out) = small(dir.path(), &["check", "--strict"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("warning[WS]: unknown field `notes`"), "{out}");
    assert!(out.contains("warning[WS]: unknown field `labels`"), "{out}");
    // Edits keep them.
    let (code, out) = small(dir.path(), &["handoff"]);
    assert_eq!(code, 0, "{out}");
    let text = std::fs::read_to_string(&meta).unwrap();
    assert!(
        text.contains("notes: \"migrated from the spreadsheet tracker\""),
        "{text}"
    );
    assert!(text.contains("  - backend"), "{text}");
    // Known fields keep their types and formats.
    std::fs::write(&meta, text.replace("kind: \"repo-root\"", "kind: 5")).unwrap();
    let (code, out) = small(dir.path(), &["validate"]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn a_deep_flow_list_passes_and_a_hundred_thousand_levels_are_a_clear_error() {
    let dir = copy("deep-flow-list");
    for args in [
        &["validate"][..],
        &["lint", "--strict"],
        &["check", "--strict"],
        &["status"],
    ] {
        let (code, out) = small(dir.path(), args);
        assert_eq!(code, 0, "small {args:?}: {out}");
    }
    let plan = dir.path().join(".small/plan.small.yml");
    let text = std::fs::read_to_string(&plan).unwrap();
    let n = 100_000;
    let deep = format!("{}\"leaf\"{}", "[".repeat(n), "]".repeat(n));
    let start = text.find("    data: ").unwrap();
    let end = start + text[start..].find('\n').unwrap();
    std::fs::write(
        &plan,
        format!("{}    data: {deep}{}", &text[..start], &text[end..]),
    )
    .unwrap();
    for args in [&["validate"][..], &["lint"], &["check", "--strict"]] {
        let (code, out) = small(dir.path(), args);
        assert_eq!(code, 1, "small {args:?}: {out}");
        assert!(
            out.contains("nesting is deeper than the limit of 2048 levels"),
            "{out}"
        );
    }
}

#[test]
fn handoff_final_refuses_open_tasks_as_the_reference_handoff_does() {
    let dir = copy("unfinished-task");
    let (code, out) = small(dir.path(), &["handoff", "--final"]);
    assert_eq!(code, 1, "{out}");
}
