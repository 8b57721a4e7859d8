//! `V2-COMMAND`: a `command_recorded` event names its command twice, as the event's
//! `source_digest` and as the payload's `command_sha256`; the two must agree, or the event
//! binds one command's display and evidence to another's digest.
//!
//! As v1.1.2, an event marked with `command_summary_version` must carry a `command_sha256`
//! string equal to `source_digest`. Beyond it, an unmarked event that carries a
//! `command_sha256` is held to the same equality (docs/decisions/0045-v2-command-digest.md).

use crate::diag::Diagnostic;
use crate::v2::json::Jv;
use crate::v2::load::{Event, Store};

/// The rule's code.
pub const CODE: &str = "V2-COMMAND";

/// The `command_recorded` events of `store` whose `command_sha256` disagrees with their
/// `source_digest`.
pub fn digest_rule(store: &Store) -> Vec<Diagnostic> {
    store
        .events
        .iter()
        .filter(|e| e.kind == "command_recorded" && !digest_agrees(e))
        .map(mismatch)
        .collect()
}

/// Whether the payload's `command_sha256` is the event's `source_digest` (an unmarked event
/// without one has nothing to disagree with).
fn digest_agrees(e: &Event) -> bool {
    let marked = e.payload.get("command_summary_version").is_some();
    match e.payload.get("command_sha256") {
        Some(Jv::Str(sha)) => *sha == e.source_digest,
        Some(_) => false,
        None => !marked,
    }
}

fn mismatch(e: &Event) -> Diagnostic {
    Diagnostic::error(
        CODE,
        format!(
            "command_recorded event {}: payload command_sha256 does not match the event's source_digest",
            e.id
        ),
    )
    .in_file(e.file())
    .with_path("/payload/command_sha256")
    .with_help("do not edit records: a recorded command is written once by `small apply`")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(source: &str, payload: Vec<(&str, Jv)>) -> Event {
        Event {
            events_dir: ".small/events".into(),
            id: "event_1".into(),
            session_id: "session_1".into(),
            kind: "command_recorded".into(),
            source_digest: source.into(),
            payload: Jv::Obj(payload.into_iter().map(|(k, v)| (k.into(), v)).collect()),
            ..blank()
        }
    }

    fn blank() -> Event {
        Event {
            events_dir: ".small/events".into(),
            id: String::new(),
            session_id: String::new(),
            kind: String::new(),
            sequence: 1,
            previous_event: String::new(),
            parents: Vec::new(),
            occurred_at: String::new(),
            task_id: String::new(),
            task_revision: 0,
            policy_revision: String::new(),
            source_digest: String::new(),
            payload: Jv::Obj(Vec::new()),
            digest: String::new(),
        }
    }

    fn codes(events: Vec<Event>) -> Vec<String> {
        let store = Store {
            events,
            ..Store::default()
        };
        digest_rule(&store).into_iter().map(|d| d.code).collect()
    }

    const A: &str = "aaaa";
    const B: &str = "bbbb";

    #[test]
    fn a_marked_event_needs_the_digest_of_its_source() {
        let mark = || ("command_summary_version", Jv::Int(2));
        let sha = |s: &str| ("command_sha256", Jv::Str(s.into()));
        assert!(codes(vec![event(A, vec![mark(), sha(A)])]).is_empty());
        assert_eq!(codes(vec![event(A, vec![mark(), sha(B)])]), [CODE]);
        assert_eq!(codes(vec![event(A, vec![mark()])]), [CODE], "missing");
        let number = ("command_sha256", Jv::Int(1));
        assert_eq!(codes(vec![event(A, vec![mark(), number])]), [CODE]);
        // Any marker value marks the event, as the reference reads it.
        let odd = ("command_summary_version", Jv::Str("x".into()));
        assert_eq!(codes(vec![event(A, vec![odd])]), [CODE]);
    }

    #[test]
    fn an_unmarked_event_is_held_to_the_digest_it_carries() {
        let sha = |s: &str| ("command_sha256", Jv::Str(s.into()));
        assert!(codes(vec![event(A, vec![sha(A)])]).is_empty());
        assert!(codes(vec![event(A, Vec::new())]).is_empty(), "none carried");
        assert_eq!(codes(vec![event(A, vec![sha(B)])]), [CODE]);
        // Other kinds are not command records.
        let mut other = event(A, vec![sha(B)]);
        other.kind = "task_transitioned".into();
        assert!(codes(vec![other]).is_empty());
    }
}
