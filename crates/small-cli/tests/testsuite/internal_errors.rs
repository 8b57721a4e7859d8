//! The last line of defence: a panic inside `small` (a bug) is one clear message and exit 2,
//! with no backtrace noise and no half-written file. The panic is made on purpose by the test
//! hook `SMALL_TEST_PANIC_IN_COMMIT`, between the steps of a commit, the worst moment for it.

use crate::author_support::Ws;

#[test]
fn a_panic_mid_commit_is_an_internal_error_and_the_workspace_stays_whole() {
    let ws = Ws::new();
    ws.ok(&["plan", "--add", "Second"]);
    let progress_before = ws.read("progress.small.yml");
    for args in [
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            "ran: cargo test",
        ][..],
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "cargo test: 3 passed",
        ][..],
    ] {
        let out = ws
            .cmd(args)
            .env("SMALL_TEST_PANIC_IN_COMMIT", "1")
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("run small");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "small {args:?}: {stderr}");
        assert!(
            stderr.starts_with("error[internal]: small hit an internal error"),
            "{stderr}"
        );
        assert!(stderr.contains("= at: "), "{stderr}");
        assert!(!stderr.contains("panicked at"), "{stderr}");
        assert!(
            !stderr.contains("stack backtrace") && !stderr.contains("  0: "),
            "{stderr}"
        );
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        // The next command finds a whole workspace: the write either happened entirely or not
        // at all, and the strict check passes.
        ws.ok(&["check", "--strict"]);
        let progress = ws.read("progress.small.yml");
        assert!(
            progress.starts_with(progress_before.trim_end()),
            "the log lost or changed an entry:\n{progress}"
        );
    }
    // Without the hook the same command works.
    ws.ok(&[
        "progress",
        "add",
        "--task",
        "task-1",
        "--status",
        "in_progress",
        "--evidence",
        "ran it again",
    ]);
}

#[test]
fn an_internal_error_prints_its_backtrace_only_when_asked() {
    let ws = Ws::new();
    let out = ws
        .cmd(&["plan", "--add", "Second"])
        .env("SMALL_TEST_PANIC_IN_COMMIT", "1")
        .env("SMALL_BACKTRACE", "1")
        .output()
        .expect("run small");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("panic_guard") || stderr.contains("  0: "),
        "{stderr}"
    );
}
