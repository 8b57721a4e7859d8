//! Events another program wrote are folded into the cached state when that gives the
//! answer a full read gives; anything else is read in full (and gives it too).

use super::*;
use crate::v2::tests::{event_in, q, seal, write, L, P, S};

/// The first event of `session`, naming `parents`.
fn start(root: &Path, session: &str, id: &str, parents: &[&str]) {
    let text = event_in(session, id, 1, None, parents, "session_started", &[], "{}");
    write(root, &format!("events/{session}/{id}.json"), &text);
}

/// Event `seq` of `session`, after `prev`.
#[allow(clippy::too_many_arguments)]
fn then(
    root: &Path,
    session: &str,
    id: &str,
    seq: i64,
    prev: &str,
    kind: &str,
    extra: &[(&str, String)],
    payload: &str,
) {
    let text = event_in(session, id, seq, Some(prev), &[], kind, extra, payload);
    write(root, &format!("events/{session}/{id}.json"), &text);
}

/// A session record for `id`, created after `session_a`.
fn open_session(root: &Path, id: &str) {
    write(
        root,
        &format!("sessions/{id}.json"),
        &seal(&[
            ("small_version", q("2.0.0")),
            ("project_id", q(P)),
            ("lineage_id", q(L)),
            ("session_id", q(id)),
            ("label", q("other program")),
            ("observed_frontier", q("0")),
            ("tool_version", q("other")),
            ("created_at", q("2026-01-02T00:00:00Z")),
        ]),
    );
}

/// The cached answer is the full read's; `folded` events were folded to give it.
#[track_caller]
fn agrees(root: &Path, folded: usize) -> Snapshot {
    let s = cached(root);
    assert_eq!(s.folded, folded, "events folded");
    assert_eq!(s.from_cache, folded > 0, "from the cache");
    assert_eq!(answer(s.clone()), cold(root));
    s
}

fn receipt(root: &Path) -> String {
    let dir = root.join(".small/receipts/sha256");
    let name = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    name.to_string_lossy().trim_end_matches(".json").to_string()
}

fn task(id: &str, revision: i64) -> Vec<(&'static str, String)> {
    vec![("task_id", q(id)), ("task_revision", revision.to_string())]
}

fn completed_with(digest: &str) -> String {
    format!(r#"{{"evidence_digests":["{digest}"],"status":"completed"}}"#)
}

#[test]
fn another_programs_session_is_folded_event_by_event() {
    let d = valid();
    let root = d.path();
    cached(root);
    // As the reference starts a session: its record and a first event after the head.
    open_session(root, "session_b");
    start(root, "session_b", "b1", &["e5"]);
    let s = agrees(root, 1);
    assert_eq!(s.state.sessions.len(), 2);
    // A transition of a task the cache knows.
    let status = r#"{"status":"in_progress"}"#;
    then(
        root,
        "session_b",
        "b2",
        2,
        "b1",
        "task_transitioned",
        &task("task_1", 1),
        status,
    );
    let s = agrees(root, 1);
    assert_eq!(s.state.tasks[0].status, "in_progress");
    assert_eq!(s.state.tasks[0].attestation_count, 2);
    // Three at once: a handoff, a mode change, the session closed.
    let handoff = r#"{"summary":"over to you"}"#;
    then(
        root,
        "session_b",
        "b3",
        3,
        "b2",
        "handoff_recorded",
        &[],
        handoff,
    );
    let mode = r#"{"new_mode":"collaborative"}"#;
    then(root, "session_b", "b4", 4, "b3", "mode_changed", &[], mode);
    then(
        root,
        "session_b",
        "b5",
        5,
        "b4",
        "session_closed",
        &[],
        "{}",
    );
    let s = agrees(root, 3);
    assert_eq!(s.state.mode, "collaborative");
    assert_eq!(s.state.handoff.as_deref(), Some("over to you"));
    // A new task in a new session, completed with verified evidence; the folded lines now
    // outnumber what the cache keeps beside the lines file, which is written again.
    open_session(root, "session_c");
    let t3 = task("task_3", 1);
    let created = event_in(
        "session_c",
        "c1",
        1,
        None,
        &["b5"],
        "task_created",
        &t3,
        r#"{"alias":"t3","title":"Third"}"#,
    );
    write(root, "events/session_c/c1.json", &created);
    let done = completed_with(&receipt(root));
    then(
        root,
        "session_c",
        "c2",
        2,
        "c1",
        "task_transitioned",
        &t3,
        &done,
    );
    let s = agrees(root, 2);
    assert_eq!(s.state.tasks.len(), 3);
    // And on from the rewritten lines file.
    then(
        root,
        "session_c",
        "c3",
        3,
        "c2",
        "command_recorded",
        &[],
        r#"{"command":"make"}"#,
    );
    agrees(root, 1);
    let again = cached(root);
    assert_eq!((again.from_cache, again.folded), (true, 0));
    // The reports built on it are the full read's, key for key.
    let small = root.join(".small");
    let a = serde_json::to_value(crate::v2::status::status_with_cache(root, &small, true)).unwrap();
    let b = serde_json::to_value(crate::v2::status::status(root, &small)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn a_definition_keeps_the_outcome_its_transitions_set() {
    let d = valid();
    let root = d.path();
    cached(root);
    // task_1 is completed by e3; a new title at the same revision keeps that outcome.
    let renamed = r#"{"alias":"t1","title":"Renamed"}"#;
    then(
        root,
        S,
        "e6",
        6,
        "e5",
        "task_updated",
        &task("task_1", 1),
        renamed,
    );
    let s = agrees(root, 1);
    assert_eq!(s.state.tasks[0].title, "Renamed");
    assert_eq!(s.state.tasks[0].status, "completed");
}

/// A command event after the cached head.
fn one_more(root: &Path) {
    then(root, S, "e6", 6, "e5", "command_recorded", &[], "{}");
}

/// Each change is read in full (no fold), with the full read's answer.
#[test]
fn what_cannot_be_proven_is_read_in_full() {
    type Change = fn(&Path);
    let cases: [(&str, Change); 10] = [
        (
            "a first event that does not descend from the head",
            |root| {
                open_session(root, "session_b");
                start(root, "session_b", "b1", &[]);
            },
        ),
        ("two new events, neither after the other", |root| {
            for s in ["session_b", "session_c"] {
                open_session(root, s);
                start(root, s, &format!("{s}_1"), &["e5"]);
            }
        }),
        ("a new revision of a task its transitions attest", |root| {
            let same = r#"{"alias":"t1","title":"First"}"#;
            then(
                root,
                S,
                "e6",
                6,
                "e5",
                "task_updated",
                &task("task_1", 2),
                same,
            );
        }),
        ("evidence that is not a verified receipt", |root| {
            let done = completed_with(&"0".repeat(64));
            then(
                root,
                S,
                "e6",
                6,
                "e5",
                "task_transitioned",
                &task("task_2", 1),
                &done,
            );
        }),
        (
            "a recorded command whose digest is not its source's",
            |root| {
                let payload = format!(r#"{{"command_sha256":"{}"}}"#, "2".repeat(64));
                then(root, S, "e6", 6, "e5", "command_recorded", &[], &payload);
            },
        ),
        ("a gap in the session's sequence", |root| {
            then(root, S, "e7", 7, "e5", "command_recorded", &[], "{}");
        }),
        ("a stray file beside the new event", |root| {
            one_more(root);
            write(root, &format!("events/{S}/notes.txt"), "hello");
        }),
        ("a damaged record", |root| {
            write(root, &format!("events/{S}/e6.json"), "{\"truncated\":");
        }),
        ("a new receipt beside the new event", |root| {
            one_more(root);
            write(
                root,
                &format!("receipts/sha256/{}.json", "1".repeat(64)),
                "{}",
            );
        }),
        ("the cache's lines file damaged", |root| {
            one_more(root);
            let lines = root.join(".small-cache/v2-frontier.v1");
            let text = std::fs::read_to_string(&lines).unwrap();
            std::fs::write(&lines, text.replace("e1:", "e0:")).unwrap();
        }),
    ];
    for (what, change) in cases {
        let d = valid();
        let root = d.path();
        cached(root);
        change(root);
        let s = cached(root);
        assert_eq!(s.folded, 0, "{what}: folded");
        assert!(!s.from_cache, "{what}: from the cache");
        assert_eq!(answer(s), cold(root), "{what}");
    }
}

/// Once the lines file is older than the racy margin, a fold records its stat and the next
/// one trusts it instead of hashing the text; a file changed after that is hashed again, and
/// not trusted.
#[test]
fn the_lines_file_is_hashed_again_once_its_stat_changed() {
    let d = valid();
    let root = d.path();
    cached(root);
    std::thread::sleep(RACY_MARGIN + std::time::Duration::from_millis(50));
    one_more(root);
    agrees(root, 1);
    let body = read_body(
        &root.join(".small-cache"),
        &context_key(&root.join(".small")).unwrap(),
    )
    .unwrap();
    assert!(
        !body.base.as_ref().unwrap().lines_stat.is_empty(),
        "the stat of the settled lines file is recorded"
    );
    let lines = root.join(".small-cache/v2-frontier.v1");
    let text = std::fs::read_to_string(&lines).unwrap();
    std::fs::write(&lines, text.replace("e1:", "e0:")).unwrap();
    then(root, S, "e7", 7, "e6", "command_recorded", &[], "{}");
    let s = cached(root);
    assert_eq!(s.folded, 0, "a changed lines file is not folded onto");
    assert_eq!(answer(s), cold(root));
}
