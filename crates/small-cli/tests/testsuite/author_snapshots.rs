//! What the writing commands print, success and refusal alike, as reviewed snapshots
//! (tests/testsuite/snapshots/): apply, fix, checkpoint, progress add, plan, handoff, start
//! and reset. Times, replay IDs, durations and the workspace path are redacted.

use crate::author_support::{progress_add, Ws};

/// `$ small ARGS`, the exit code, stdout and stderr, redacted, as one reviewed text.
fn transcript(ws: &Ws, args: &[&str]) -> String {
    transcript_env(ws, args, &[])
}

fn transcript_env(ws: &Ws, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = ws.cmd(args);
    c.env_remove("SMALL_PROGRESS_MODE");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run small");
    let text = format!(
        "$ small {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    redact(&text, ws)
}

fn redact(text: &str, ws: &Ws) -> String {
    let text = text.replace(&ws.root().display().to_string(), "<ROOT>");
    let rules = [
        (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "<TIME>"),
        (r"\d{8}T\d{6}(\.\d+)?Z", "<STAMP>"),
        (r"\b[0-9a-f]{64}\b", "<HEX64>"),
        (r"\d+\.\d{2} s\)", "<SECS> s)"),
    ];
    rules.iter().fold(text, |t, (re, with)| {
        regex::Regex::new(re)
            .unwrap()
            .replace_all(&t, *with)
            .into_owned()
    })
}

#[test]
fn apply_a_successful_run_of_a_plan_task() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(
        &ws,
        &["apply", "--cmd", "echo hello", "--task", "task-1"]
    ));
}

#[test]
fn apply_a_failing_run_skips_the_handoff() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(
        &ws,
        &["apply", "--cmd", "exit 3", "--task", "task-1", "--handoff"]
    ));
}

#[test]
fn apply_auto_checkpoint_and_handoff() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(
        &ws,
        &[
            "apply",
            "--cmd",
            "echo built",
            "--task",
            "task-1",
            "--auto-checkpoint",
            "--handoff"
        ]
    ));
}

#[test]
fn apply_dry_run_and_audit_mode() {
    let ws = Ws::new();
    let dry = transcript(
        &ws,
        &[
            "apply",
            "--dry-run",
            "--cmd",
            "cargo test",
            "--task",
            "task-1",
        ],
    );
    let audit = transcript_env(
        &ws,
        &["apply", "--cmd", "true"],
        &[("SMALL_PROGRESS_MODE", "audit")],
    );
    insta::assert_snapshot!(format!("{dry}\n{audit}"));
}

#[test]
fn apply_refusals() {
    let ws = Ws::new();
    let unknown = transcript(&ws, &["apply", "--cmd", "true", "--task", "task-9"]);
    let no_cmd = transcript(&ws, &["apply", "--task", "task-1", "--auto-progress"]);
    insta::assert_snapshot!(format!("{unknown}\n{no_cmd}"));
}

#[test]
fn apply_json() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(
        &ws,
        &["apply", "--cmd", "echo quiet", "--task", "task-1", "--json"]
    ));
}

#[test]
fn fix_runtime_layout_and_refusals() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.path("runs/r1")).unwrap();
    std::fs::write(ws.path("runs/r1/a.txt"), "a").unwrap();
    std::fs::create_dir_all(ws.path("archive")).unwrap();
    std::fs::write(ws.path("archive/x.yml"), "x").unwrap();
    std::fs::create_dir_all(ws.root().join(".small-archive")).unwrap();
    std::fs::write(ws.root().join(".small-archive/x.yml"), "x").unwrap();
    let none = transcript(&ws, &["fix"]);
    let moved = transcript(&ws, &["fix", "--runtime-layout"]);
    std::fs::create_dir_all(ws.path("runs")).unwrap();
    std::fs::write(ws.path("runs/z.txt"), "legacy").unwrap();
    std::fs::write(ws.root().join(".small-runs/z.txt"), "new").unwrap();
    let conflict = transcript(&ws, &["fix", "--runtime-layout"]);
    insta::assert_snapshot!(format!("{none}\n{moved}\n{conflict}"));
}

#[test]
fn fix_all_and_workspace() {
    let ws = Ws::new();
    let all = transcript(&ws, &["fix", "--all"]);
    std::fs::remove_file(ws.path("workspace.small.yml")).unwrap();
    let created = transcript(&ws, &["fix", "workspace"]);
    insta::assert_snapshot!(format!("{all}\n{created}"));
}

#[test]
fn checkpoint_and_its_refusals() {
    let ws = Ws::new();
    let no_evidence = transcript(
        &ws,
        &["checkpoint", "--task", "task-1", "--status", "completed"],
    );
    let bad_status = transcript(
        &ws,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "done",
            "--evidence",
            "x",
        ],
    );
    let ok = transcript(
        &ws,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--test",
            "cargo test",
        ],
    );
    insta::assert_snapshot!(format!("{no_evidence}\n{bad_status}\n{ok}"));
}

#[test]
fn checkpoint_of_a_task_with_open_dependencies() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Second"]);
    ws.ok(&["plan", "--depends", "task-2:task-1"]);
    let refused = transcript(
        &ws,
        &[
            "checkpoint",
            "--task",
            "task-2",
            "--status",
            "completed",
            "--evidence",
            "done",
        ],
    );
    let forced = transcript(
        &ws,
        &[
            "checkpoint",
            "--task",
            "task-2",
            "--status",
            "completed",
            "--evidence",
            "done",
            "--force",
        ],
    );
    insta::assert_snapshot!(format!("{refused}\n{forced}"));
}

#[test]
fn progress_add_and_an_unknown_task() {
    let ws = Ws::new();
    let ok = transcript(
        &ws,
        &progress_add("task-1", "in_progress", &["--evidence", "half"]),
    );
    let unknown = transcript(
        &ws,
        &progress_add("tsk-1", "in_progress", &["--evidence", "x"]),
    );
    insta::assert_snapshot!(format!("{ok}\n{unknown}"));
}

#[test]
fn plan_add_and_done_refusals() {
    let ws = Ws::new();
    let add = transcript(&ws, &["plan", "--add", "Write the docs"]);
    let empty = transcript(&ws, &["plan", "--add", " "]);
    let unknown = transcript(&ws, &["plan", "--done", "task-3"]);
    let no_evidence = transcript(&ws, &["plan", "--done", "task-2"]);
    insta::assert_snapshot!(format!("{add}\n{empty}\n{unknown}\n{no_evidence}"));
}

#[test]
fn handoff_mid_run_and_final() {
    let ws = Ws::new();
    ws.ok(&progress_add(
        "task-1",
        "in_progress",
        &["--evidence", "started"],
    ));
    let mid = transcript(&ws, &["handoff"]);
    let fin = transcript(&ws, &["handoff", "--final"]);
    insta::assert_snapshot!(format!("{mid}\n{fin}"));
}

#[test]
fn start_and_reset() {
    let ws = Ws::new();
    let start = transcript(&ws, &["start", "--summary", "Begin the work"]);
    let refused = transcript(&ws, &["reset", "--workspace", "examples", "--yes"]);
    let reset = transcript(&ws, &["reset", "--yes", "--keep-intent"]);
    insta::assert_snapshot!(format!("{start}\n{refused}\n{reset}"));
}

#[test]
fn writing_outside_a_workspace() {
    let ws = Ws::new();
    std::fs::remove_dir_all(ws.root().join(".small")).unwrap();
    let root = ws.root().display().to_string();
    let apply = transcript(&ws, &["apply", "--cmd", "true", "--dir", &root]);
    let fix = transcript(&ws, &["fix", "--all", "--dir", &root]);
    insta::assert_snapshot!(format!("{apply}\n{fix}"));
}
