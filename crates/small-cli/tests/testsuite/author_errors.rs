//! Authoring errors are diagnostics: a stable code, the file, and a help line with the fix,
//! printed the way the gates print theirs, or as JSON with `--json`. Snapshots reviewed by
//! hand (tests/testsuite/snapshots/).

use crate::author_support::{progress_add, Ws};

/// `$ small ARGS`, the exit code, stdout and stderr, as one reviewed text.
fn transcript(ws: &Ws, args: &[&str]) -> String {
    let out = ws.run(args);
    let root = ws.root().display().to_string();
    let text = format!(
        "$ small {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    text.replace(&root, "<ROOT>")
}

#[test]
fn plan_done_of_an_unknown_task_names_the_closest_ids() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(&ws, &["plan", "--done", "task-99"]));
}

#[test]
fn an_unknown_dependency_is_the_same_diagnostic() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(&ws, &["plan", "--depends", "task-1:tsk-1"]));
}

#[test]
fn checkpoint_errors_are_json_with_json() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(
        &ws,
        &[
            "checkpoint",
            "--task",
            "task-99",
            "--status",
            "completed",
            "--evidence",
            "ok",
            "--json",
        ]
    ));
}

#[test]
fn a_bad_timestamp_is_an_entry_error() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(
        &ws,
        &progress_add(
            "task-1",
            "in_progress",
            &["--evidence", "started", "--at", "yesterday"]
        )
    ));
}

#[test]
fn a_dependency_cycle_is_refused() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Second"]);
    ws.ok(&["plan", "--depends", "task-2:task-1"]);
    insta::assert_snapshot!(transcript(&ws, &["plan", "--depends", "task-1:task-2"]));
}

#[test]
fn init_says_what_it_wrote_and_what_comes_next() {
    let ws = Ws::new();
    std::fs::remove_dir_all(ws.root().join(".small")).unwrap();
    let text = transcript(&ws, &["init", "--intent", "Ship the mailer", "--no-agents"]);
    // The replay ID depends on the templates' text; the rest is fixed.
    let text = regex_lite_replace_replay_id(&text);
    insta::assert_snapshot!(text);
}

#[test]
fn init_refuses_an_existing_workspace_with_a_help_line() {
    let ws = Ws::new();
    insta::assert_snapshot!(transcript(&ws, &["init", "--no-agents"]));
}

/// `replayId 0123456789ab…` as `replayId <ID>…`.
fn regex_lite_replace_replay_id(text: &str) -> String {
    match text.find("replayId ") {
        Some(i) => {
            let start = i + "replayId ".len();
            format!("{}<ID>{}", &text[..start], &text[start + 12..])
        }
        None => text.to_string(),
    }
}
