//! Events another program wrote are folded into the cached state when that gives the
//! answer a full read gives; anything else is read in full (and gives it too).

use super::*;
use crate::v2::tests::{q, seal, write, L, P, S};

/// An event of `session` with `parents`.
#[allow(clippy::too_many_arguments)]
fn ev(
    session: &str,
    id: &str,
    seq: i64,
    prev: Option<&str>,
    parents: &[&str],
    kind: &str,
    extra: &[(&str, String)],
    payload: &str,
) -> String {
    let mut m = vec![
        ("small_version", q("2.0.0")),
        ("project_id", q(P)),
        ("lineage_id", q(L)),
        ("session_id", q(session)),
        ("event_id", q(id)),
        ("kind", q(kind)),
        ("sequence", seq.to_string()),
    ];
    if let Some(p) = prev {
        m.push(("previous_event", q(p)));
    }
    if !parents.is_empty() {
        let ps: Vec<String> = parents.iter().map(|p| q(p)).collect();
        m.push(("parents", format!("[{}]", ps.join(","))));
    }
    m.push(("occurred_at", q("2026-01-02T00:00:00Z")));
    m.extend(extra.iter().cloned());
    m.push(("payload", payload.to_string()));
    seal(&m)
}

fn put(root: &Path, session: &str, id: &str, text: &str) {
    write(root, &format!("events/{session}/{id}.json"), text);
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
    let full = cold(root);
    assert_eq!(answer(s.clone()), full);
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

const T1: [(&str, &str); 2] = [("task_id", "\"task_1\""), ("task_revision", "1")];

fn task(id: &str, revision: i64) -> Vec<(&'static str, String)> {
    vec![("task_id", q(id)), ("task_revision", revision.to_string())]
}

#[test]
fn another_programs_session_is_folded_event_by_event() {
    let d = valid();
    let root = d.path();
    cached(root);
    // As the reference starts a session: its record and a first event after the head.
    open_session(root, "session_b");
    put(
        root,
        "session_b",
        "b1",
        &ev(
            "session_b",
            "b1",
            1,
            None,
            &["e5"],
            "session_started",
            &[],
            "{}",
        ),
    );
    let s = agrees(root, 1);
    assert_eq!(s.state.sessions.len(), 2);
    // A transition of a task the cache knows.
    let t1: Vec<(&str, String)> = T1.iter().map(|(k, v)| (*k, v.to_string())).collect();
    put(
        root,
        "session_b",
        "b2",
        &ev(
            "session_b",
            "b2",
            2,
            Some("b1"),
            &[],
            "task_transitioned",
            &t1,
            r#"{"status":"in_progress"}"#,
        ),
    );
    let s = agrees(root, 1);
    assert_eq!(s.state.tasks[0].status, "in_progress");
    assert_eq!(s.state.tasks[0].attestation_count, 2);
    // Three at once: a handoff, a mode change, the session closed.
    put(
        root,
        "session_b",
        "b3",
        &ev(
            "session_b",
            "b3",
            3,
            Some("b2"),
            &[],
            "handoff_recorded",
            &[],
            r#"{"summary":"over to you"}"#,
        ),
    );
    put(
        root,
        "session_b",
        "b4",
        &ev(
            "session_b",
            "b4",
            4,
            Some("b3"),
            &[],
            "mode_changed",
            &[],
            r#"{"new_mode":"collaborative"}"#,
        ),
    );
    put(
        root,
        "session_b",
        "b5",
        &ev(
            "session_b",
            "b5",
            5,
            Some("b4"),
            &[],
            "session_closed",
            &[],
            "{}",
        ),
    );
    let s = agrees(root, 3);
    assert_eq!(s.state.mode, "collaborative");
    assert_eq!(s.state.handoff.as_deref(), Some("over to you"));
    // A new task in a new session, completed with verified evidence; the folded lines now
    // outnumber what the cache keeps beside the lines file, which is written again.
    open_session(root, "session_c");
    let digest = receipt(root);
    put(
        root,
        "session_c",
        "c1",
        &ev(
            "session_c",
            "c1",
            1,
            None,
            &["b5"],
            "task_created",
            &task("task_3", 1),
            r#"{"alias":"t3","title":"Third"}"#,
        ),
    );
    put(
        root,
        "session_c",
        "c2",
        &ev(
            "session_c",
            "c2",
            2,
            Some("c1"),
            &[],
            "task_transitioned",
            &task("task_3", 1),
            &format!(r#"{{"evidence_digests":["{digest}"],"status":"completed"}}"#),
        ),
    );
    let s = agrees(root, 2);
    assert_eq!(s.state.tasks.len(), 3);
    // And on from the rewritten lines file.
    put(
        root,
        "session_c",
        "c3",
        &ev(
            "session_c",
            "c3",
            3,
            Some("c2"),
            &[],
            "command_recorded",
            &[],
            r#"{"command":"make"}"#,
        ),
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
    put(
        root,
        S,
        "e6",
        &ev(
            S,
            "e6",
            6,
            Some("e5"),
            &[],
            "task_updated",
            &task("task_1", 1),
            r#"{"alias":"t1","title":"Renamed"}"#,
        ),
    );
    let s = agrees(root, 1);
    assert_eq!(s.state.tasks[0].title, "Renamed");
    assert_eq!(s.state.tasks[0].status, "completed");
}

/// Each change is read in full (no fold), with the full read's answer.
#[test]
fn what_cannot_be_proven_is_read_in_full() {
    type Change = fn(&Path);
    let cases: [(&str, Change); 9] = [
        (
            "a first event that does not descend from the head",
            |root| {
                open_session(root, "session_b");
                put(
                    root,
                    "session_b",
                    "b1",
                    &ev(
                        "session_b",
                        "b1",
                        1,
                        None,
                        &[],
                        "session_started",
                        &[],
                        "{}",
                    ),
                );
            },
        ),
        ("two new events, neither after the other", |root| {
            open_session(root, "session_b");
            open_session(root, "session_c");
            put(
                root,
                "session_b",
                "b1",
                &ev(
                    "session_b",
                    "b1",
                    1,
                    None,
                    &["e5"],
                    "session_started",
                    &[],
                    "{}",
                ),
            );
            put(
                root,
                "session_c",
                "c1",
                &ev(
                    "session_c",
                    "c1",
                    1,
                    None,
                    &["e5"],
                    "session_started",
                    &[],
                    "{}",
                ),
            );
        }),
        ("a new revision of a task its transitions attest", |root| {
            put(
                root,
                S,
                "e6",
                &ev(
                    S,
                    "e6",
                    6,
                    Some("e5"),
                    &[],
                    "task_updated",
                    &task("task_1", 2),
                    r#"{"alias":"t1","title":"First"}"#,
                ),
            );
        }),
        ("evidence that is not a verified receipt", |root| {
            let missing = "0".repeat(64);
            put(
                root,
                S,
                "e6",
                &ev(
                    S,
                    "e6",
                    6,
                    Some("e5"),
                    &[],
                    "task_transitioned",
                    &task("task_2", 1),
                    &format!(r#"{{"evidence_digests":["{missing}"],"status":"completed"}}"#),
                ),
            );
        }),
        ("a gap in the session's sequence", |root| {
            put(
                root,
                S,
                "e7",
                &ev(S, "e7", 7, Some("e5"), &[], "command_recorded", &[], "{}"),
            );
        }),
        ("a stray file beside the new event", |root| {
            put(
                root,
                S,
                "e6",
                &ev(S, "e6", 6, Some("e5"), &[], "command_recorded", &[], "{}"),
            );
            write(root, &format!("events/{S}/notes.txt"), "hello");
        }),
        ("a damaged record", |root| {
            put(root, S, "e6", "{\"truncated\":");
        }),
        ("a new receipt beside the new event", |root| {
            put(
                root,
                S,
                "e6",
                &ev(S, "e6", 6, Some("e5"), &[], "command_recorded", &[], "{}"),
            );
            write(
                root,
                &format!("receipts/sha256/{}.json", "1".repeat(64)),
                "{}",
            );
        }),
        ("the cache's lines file damaged", |root| {
            put(
                root,
                S,
                "e6",
                &ev(S, "e6", 6, Some("e5"), &[], "command_recorded", &[], "{}"),
            );
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
