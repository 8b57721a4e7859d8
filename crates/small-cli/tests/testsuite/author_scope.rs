//! `--workspace SCOPE` is parsed by one parser for every command: the same spellings (any
//! case, surrounding spaces ignored) are accepted everywhere, and the same ones refused.

use crate::author_support::Ws;

#[test]
fn every_command_accepts_the_scope_in_any_case() {
    let ws = Ws::new();
    ws.ok(&["check", "--workspace", "ROOT"]);
    ws.ok(&[
        "progress",
        "add",
        "--workspace",
        "ROOT",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "started",
    ]);
    ws.ok(&["plan", "--workspace", " Any ", "--add", "Second"]);
}

#[test]
fn an_unknown_scope_is_refused_the_same_way_by_every_command() {
    let ws = Ws::new();
    for args in [
        &["check", "--workspace", "everywhere"][..],
        &[
            "progress",
            "add",
            "--workspace",
            "everywhere",
            "--task",
            "task-1",
        ],
        &["plan", "--workspace", "everywhere", "--add", "X"],
    ] {
        let err = ws.fails(2, args);
        assert!(
            err.contains("invalid workspace scope `everywhere`: use root, examples or any"),
            "{args:?}: {err}"
        );
    }
}
