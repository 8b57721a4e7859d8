//! The fast event path ([`super::fastevent`]) against the general one: on every record it
//! accepts, the general path finds nothing wrong and reads the same members; sound records
//! are all accepted.

use std::path::Path;

use proptest::prelude::*;

use super::fastevent::{self, EventFields};
use super::load::{event_fields, Loader, Store, EVENT};
use super::tests::{event, q};

/// What the general path reads: the members when it reports nothing, else `None`.
fn general(bytes: &[u8]) -> Option<EventFields> {
    let mut l = Loader {
        root: Path::new("/"),
        store: Store::default(),
    };
    let v = l.parse_record(Path::new("/e.json"), bytes, "event", EVENT)?;
    l.store.diagnostics.is_empty().then(|| event_fields(&v))
}

/// Sound records of several shapes.
fn sound() -> Vec<String> {
    let task = [
        ("task_id", q(" task_1 ")),
        ("task_revision", "3".into()),
        ("policy_revision", q("policy_1")),
        ("source_digest", q("abc")),
    ];
    vec![
        event("e1", 1, None, "session_started", &[], "{}"),
        event(
            "e2",
            2,
            Some("e1"),
            "task_created",
            &task,
            r#"{"alias":"t1","title":"First \"one\" \u00e9","acceptance":["a","",""],"other":{"x":[1,-2,{"y":null}]},"legacy_entry":{"notes":"n"}}"#,
        ),
        event(
            "e3",
            3,
            Some("e2"),
            "task_transitioned",
            &[("parents", r#"["e1"," ","e2"]"#.into())],
            r#"{"status":"completed","evidence_digests":["d1"],"big":9223372036854775807,"neg":-9223372036854775808,"t":true,"f":false}"#,
        ),
        // Escaped member names and values.
        event(
            "e\\u0034",
            4,
            Some("e3"),
            "handoff_recorded",
            &[],
            r#"{"summ\u0061ry":"s\n"}"#,
        ),
    ]
}

#[test]
fn sound_records_take_the_fast_path_and_read_as_the_general_path_reads_them() {
    for rec in sound() {
        let fast = fastevent::parse(rec.as_bytes());
        assert!(fast.is_some(), "{rec}");
        assert_eq!(fast, general(rec.as_bytes()), "{rec}");
    }
}

/// Whole-member damage the loader must report.
fn damaged() -> Vec<String> {
    let base = &sound()[1];
    let mut out = vec![
        format!("[{}]", base.trim_end()),
        base.replace("\"sequence\":2", "\"sequence\":2.0"),
        base.replace("\"sequence\":2", "\"sequence\":\"2\""),
        base.replace("\"sequence\":2", "\"sequence\":18446744073709551615"),
        base.replace("\"task_revision\":3", "\"task_revision\":1e3"),
        base.replace("\"previous_event\":\"e1\"", "\"previous_event\":null"),
        base.replace("\"kind\":", "\"kind\":\"x\",\"kind\":"),
        base.replace("\"kind\":", "\"extra\":1,\"kind\":"),
        base.replace("\"payload\":{", "\"payload\":{\"title\":\"dup\","),
        base.replace("\"x\":[1", "\"x\":[1.5"),
        base.replace("{\"y\":null}", "{\"y\":null,\"y\":1}"),
        base.replace("\"payload\":{\"alias\":\"t1\",", "\"payload\":[\"alias\",")
            .replace(",\"legacy_entry\":{\"notes\":\"n\"}}", "]"),
        base.replace("\"occurred_at\"", "\"occurred\""),
        base.replace(",\"digest\":\"", ",\"digest\":1,\"x\":\""),
        format!("{} x", base.trim_end()),
    ];
    out.push(base[..base.len() / 2].to_string());
    out
}

#[test]
fn damaged_records_are_left_to_the_general_path() {
    for rec in damaged() {
        assert_eq!(fastevent::parse(rec.as_bytes()), None, "{rec}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any byte changed, inserted or removed: whatever the fast path accepts, the general
    /// path accepts with the same members.
    #[test]
    fn the_fast_path_never_accepts_what_the_general_path_reports(
        which in 0usize..4,
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(b"{}[]\",:0123456789.-eE \\ntfuabx\x00\xff".to_vec()),
        op in 0u8..3,
    ) {
        let mut rec = sound()[which].clone().into_bytes();
        let i = at.index(rec.len());
        match op {
            0 => rec[i] = byte,
            1 => rec.insert(i, byte),
            _ => { rec.remove(i); }
        }
        if let Some(fast) = fastevent::parse(&rec) {
            prop_assert_eq!(Some(fast), general(&rec));
        }
    }
}
