//! `small agents hooks` and the commands the AGENTS.md harness block tells an agent to run.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::author_support::bin;

fn small(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn ok(dir: &std::path::Path, args: &[&str]) -> String {
    let o = small(dir, args);
    assert!(
        o.status.success(),
        "small {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn hooks_merge_into_existing_settings_for_each_host() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    ok(root, &["init", "--intent", "Hooks", "--no-merge-driver"]);
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::fs::write(
        root.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]}}"#,
    )
    .unwrap();
    // --dry-run shows a diff and writes nothing.
    let before = std::fs::read_to_string(root.join(".claude/settings.json")).unwrap();
    let diff = ok(root, &["agents", "hooks", "--tool", "claude", "--dry-run"]);
    assert!(
        diff.starts_with("--- a/.claude/settings.json\n+++ b/.claude/settings.json\n"),
        "{diff}"
    );
    assert!(
        diff.contains("+        \"matcher\": \"startup|resume|clear|compact\""),
        "{diff}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".claude/settings.json")).unwrap(),
        before
    );

    let out = ok(root, &["agents", "hooks", "--tool", "claude"]);
    assert!(
        out.starts_with("Updated .claude/settings.json: SessionStart hook runs `"),
        "{out}"
    );
    let v = json(&root.join(".claude/settings.json"));
    assert_eq!(v["permissions"]["allow"][0], "Bash(ls)");
    assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "guard");
    let cmd = v["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(cmd.ends_with(" resume --hook --max-chars 8000"), "{cmd}");
    let again = ok(root, &["agents", "hooks", "--tool", "claude"]);
    assert!(again.contains("already installed"), "{again}");

    ok(root, &["agents", "hooks", "--tool", "gemini"]);
    let g = json(&root.join(".gemini/settings.json"));
    assert_eq!(
        g["hooks"]["SessionStart"][0]["hooks"][0]["name"],
        "small-resume"
    );
    assert!(g["hooks"]["SessionStart"][0].get("matcher").is_none());
    ok(root, &["agents", "hooks", "--tool", "codex"]);
    let c = json(&root.join(".codex/hooks.json"));
    assert_eq!(
        c["hooks"]["SessionStart"][0]["matcher"],
        "startup|resume|clear|compact"
    );

    // The command the hook runs prints the SessionStart output every host reads.
    let out = Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(h["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = h["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        ctx.starts_with("# SMALL resume\n") && ctx.len() <= 8000,
        "{ctx}"
    );
}

#[test]
fn the_hook_lets_a_session_start_where_there_is_no_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(dir.path(), &["resume", "--hook"]);
    let h: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ctx = h["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.starts_with("SMALL: "), "{ctx}");
    // Without --hook it is the usual error.
    assert_eq!(small(dir.path(), &["resume"]).status.code(), Some(2));
}

#[test]
fn unreadable_settings_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".gemini")).unwrap();
    std::fs::write(root.join(".gemini/settings.json"), "{ // a comment\n}").unwrap();
    let o = small(root, &["agents", "hooks", "--tool", "gemini"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not plain JSON"));
    assert_eq!(
        std::fs::read_to_string(root.join(".gemini/settings.json")).unwrap(),
        "{ // a comment\n}"
    );
}

/// Every `small …` command line the AGENTS.md block prints runs, with its placeholders filled,
/// in a git repository with a workspace and a remote: none is refused as a usage error (exit
/// 2), and the ones for sessions, hosts, branches and claims, and `small sync --commit`,
/// succeed.
#[test]
fn every_command_the_harness_block_prints_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Who commits, for the repository's first commit and `small sync --commit`.
    let identity = [
        ("GIT_AUTHOR_NAME", "agent"),
        ("GIT_AUTHOR_EMAIL", "agent@example.invalid"),
        ("GIT_COMMITTER_NAME", "agent"),
        ("GIT_COMMITTER_EMAIL", "agent@example.invalid"),
    ];
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(root)
            .envs(identity)
            .output()
            .map(|o| o.status.success())
    };
    if git(&["init", "-q"]).is_err() {
        eprintln!("skipped: git is not installed");
        return;
    }
    // A remote for the claims the block asks for.
    let remote = root.join("remote.git");
    assert_eq!(
        git(&["init", "-q", "--bare", remote.to_str().unwrap()]).ok(),
        Some(true)
    );
    assert_eq!(
        git(&["remote", "add", "origin", remote.to_str().unwrap()]).ok(),
        Some(true)
    );
    ok(root, &["init", "--intent", "Block commands"]);
    // A first commit, which `small sync` publishes on.
    assert_eq!(git(&["add", "-A"]).ok(), Some(true));
    assert_eq!(git(&["commit", "-q", "-m", "init"]).ok(), Some(true));
    let block = ok(root, &["agents", "print"]);
    std::fs::write(root.join("draft.yml"), "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Drafted\"\nscope:\n  include: []\n  exclude: []\nsuccess_criteria: []\n").unwrap();
    let mut lines = Vec::new();
    let mut rest = block.as_str();
    while let Some(i) = rest.find("`small ") {
        let tail = &rest[i + 1..];
        let end = tail.find('`').unwrap();
        lines.push(tail[..end].to_string());
        rest = &tail[end + 1..];
    }
    assert!(lines.len() >= 10, "{lines:?}");
    let must_pass = [
        "small resume",
        "small agents hooks",
        "small mcp",
        "--id <name>",
        "small merge-driver --install",
        "small plan --add",
        "small status",
        "small check --strict",
        "small claim",
        "small sync --commit",
    ];
    for line in &lines {
        let filled = line
            .replace("intent|constraints", "intent")
            .replace("<file>", "draft.yml")
            .replace("<task-id>", "task-1")
            .replace("<task>", "Write the docs")
            .replace("<name>", "docs-task")
            .replace("<command>", "true")
            .replace("<what proves it>", "the docs build")
            .replace("<why>", "waiting for review");
        let filled = if filled == "small accept" {
            "small accept intent".to_string()
        } else {
            filled
        };
        // Split like a shell would for these simple lines (double quotes only).
        let mut args: Vec<String> = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        for c in filled.chars() {
            match c {
                '"' => quoted = !quoted,
                ' ' if !quoted => {
                    if !cur.is_empty() {
                        args.push(std::mem::take(&mut cur));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            args.push(cur);
        }
        assert_eq!(args[0], "small");
        let mut child = Command::new(bin())
            .args(&args[1..])
            .current_dir(root)
            .envs(identity)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{filled} did not finish"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let code = status.code().unwrap_or(-1);
        assert_ne!(code, 2, "{filled}: usage error: {err}");
        if must_pass.iter().any(|m| line.contains(m)) {
            assert_eq!(code, 0, "{filled}: {err}");
        }
    }
}
