//! One test per V2 rule, each on a small valid tree damaged in one way (the valid tree
//! passes, so every rule is seen both passing and failing).

use std::path::Path;

use super::json::sha256_hex;
use super::*;

pub(crate) const P: &str = "project_1";
pub(crate) const L: &str = "lineage_1";
pub(crate) const S: &str = "session_a";
const INTENT: &str = "intent: x\n";
const CONSTRAINTS: &str = "constraints: []\n";

/// A compact record from raw JSON members, sealed with its digest.
pub(crate) fn seal(members: &[(&str, String)]) -> String {
    let body: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("\"{k}\":{v}"))
        .collect();
    let unsealed = format!("{{{}}}", body.join(","));
    let digest = sha256_hex(unsealed.as_bytes());
    format!("{{{},\"digest\":\"{digest}\"}}\n", body.join(","))
}

pub(crate) fn q(s: &str) -> String {
    format!("\"{s}\"")
}

pub(crate) fn event(
    id: &str,
    seq: i64,
    prev: Option<&str>,
    kind: &str,
    extra: &[(&str, String)],
    payload: &str,
) -> String {
    event_in(S, id, seq, prev, &[], kind, extra, payload)
}

/// [`event`] of `session`, naming `parents`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn event_in(
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
    m.push(("occurred_at", q("2026-01-01T00:00:00Z")));
    m.extend(extra.iter().cloned());
    m.push(("payload", payload.to_string()));
    seal(&m)
}

pub(crate) fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(".small").join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

pub(crate) fn ev_path(id: &str) -> String {
    format!("events/{S}/{id}.json")
}

/// A valid tree: one closed session that creates a task and completes it with a receipt.
pub(crate) fn valid() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "policy/intent.small.yml", INTENT);
    write(root, "policy/constraints.small.yml", CONSTRAINTS);
    write(
        root,
        "profile.json",
        &format!(
            r#"{{"small_version":"2.0.0","project_id":"{P}","lineage_id":"{L}","mode":"solo","policy_revision":"policy_1","intent_digest":"{}","constraints_digest":"{}"}}"#,
            sha256_hex(INTENT.as_bytes()),
            sha256_hex(CONSTRAINTS.as_bytes())
        ),
    );
    write(
        root,
        &format!("sessions/{S}.json"),
        &seal(&[
            ("small_version", q("2.0.0")),
            ("project_id", q(P)),
            ("lineage_id", q(L)),
            ("session_id", q(S)),
            ("label", q("work")),
            ("observed_frontier", q("0")),
            ("tool_version", q("test")),
            ("created_at", q("2026-01-01T00:00:00Z")),
        ]),
    );
    let receipt = seal(&[
        ("small_version", q("2.0.0")),
        ("project_id", q(P)),
        ("receipt_id", q("receipt_1")),
        ("strength", q("cli_captured")),
        ("availability", q("verified")),
        ("metadata", r#"{"exit_code":0}"#.into()),
    ]);
    let rdigest = receipt[receipt.len() - 67..receipt.len() - 3].to_string();
    write(root, &format!("receipts/sha256/{rdigest}.json"), &receipt);
    let task = [("task_id", q("task_1")), ("task_revision", "1".into())];
    write(
        root,
        &ev_path("e1"),
        &event("e1", 1, None, "session_started", &[], "{}"),
    );
    write(
        root,
        &ev_path("e2"),
        &event(
            "e2",
            2,
            Some("e1"),
            "task_created",
            &task,
            r#"{"alias":"t1","title":"First"}"#,
        ),
    );
    write(
        root,
        &ev_path("e3"),
        &event(
            "e3",
            3,
            Some("e2"),
            "task_transitioned",
            &task,
            &format!(r#"{{"evidence_digests":["{rdigest}"],"status":"completed"}}"#),
        ),
    );
    write(
        root,
        &ev_path("e4"),
        &event(
            "e4",
            4,
            Some("e3"),
            "task_created",
            &[("task_id", q("task_2")), ("task_revision", "1".into())],
            r#"{"alias":"t2","title":"Second"}"#,
        ),
    );
    write(
        root,
        &ev_path("e5"),
        &event("e5", 5, Some("e4"), "session_closed", &[], "{}"),
    );
    dir
}

fn run(dir: &tempfile::TempDir) -> Checked {
    check(dir.path(), &dir.path().join(".small"))
}

fn codes(dir: &tempfile::TempDir) -> Vec<String> {
    run(dir)
        .diagnostics
        .iter()
        .map(|d| d.code.clone())
        .collect()
}

fn has(dir: &tempfile::TempDir, code: &str) -> Checked {
    let c = run(dir);
    assert!(
        c.diagnostics
            .iter()
            .any(|d| d.code == code && d.help.is_some() && d.file.is_some()),
        "{code} expected, got {:#?}",
        c.diagnostics
    );
    c
}

fn small(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join(".small")
}

#[test]
fn v2_valid_tree_passes_and_reduces() {
    let dir = valid();
    let c = run(&dir);
    assert!(c.diagnostics.is_empty(), "{:#?}", c.diagnostics);
    let s = c.state;
    assert_eq!(s.tasks.len(), 2);
    assert_eq!(
        (s.tasks[0].alias.as_str(), s.tasks[0].status.as_str()),
        ("t1", "completed")
    );
    assert_eq!(s.next_task().map(|t| t.alias.as_str()), Some("t2"));
    assert_eq!(s.sessions.len(), 1);
    assert!(s.sessions[0].closed);
    assert!(s.timeline.is_empty(), "check leaves the timeline out");
    let (full, store) = check_store(dir.path(), &small(&dir));
    assert_eq!(full.state.timeline.len(), 5);
    assert_eq!(full.state.frontier, s.frontier);
    assert_eq!(s.frontier.len(), 64);
    // Each event names the file it was read from, and the order walks the timeline.
    for e in &store.events {
        assert!(dir.path().join(e.file()).is_file(), "{}", e.file());
        assert!(e.file().starts_with(".small/events/"), "{}", e.file());
    }
    let ids = |order: &[usize]| -> Vec<String> {
        order.iter().map(|&i| store.events[i].id.clone()).collect()
    };
    let timeline: Vec<String> = full.state.timeline.iter().map(|t| t.id.clone()).collect();
    assert_eq!(ids(&full.state.order), timeline);
}

/// An event with only its session, id and digest (for rules that read nothing else).
fn bare_event(session: &str, id: &str, digest: &str) -> crate::v2::load::Event {
    crate::v2::load::Event {
        events_dir: ".small/events".into(),
        id: id.to_string(),
        session_id: session.to_string(),
        kind: String::new(),
        sequence: 0,
        previous_event: String::new(),
        parents: Vec::new(),
        occurred_at: String::new(),
        task_id: String::new(),
        task_revision: 0,
        policy_revision: String::new(),
        source_digest: String::new(),
        payload: super::json::Jv::Obj(Vec::new()),
        digest: digest.to_string(),
    }
}

/// Events are ordered as their files are listed: by session, then by file name, which is
/// not the ids' own order when one id begins another and the next byte sorts before `.`.
#[test]
fn v2_event_file_order_is_the_listing_order() {
    let event = |session: &str, id: &str| bare_event(session, id, "");
    let mut events = [
        event("s2", "a"),
        event("s1", "e-x"),
        event("s1", "e"),
        event("s1", "ea"),
    ];
    events.sort_by(crate::v2::load::Event::file_order);
    let files: Vec<String> = events.iter().map(crate::v2::load::Event::file).collect();
    let mut listed = files.clone();
    listed.sort_by(|a, b| {
        let split = |f: &str| {
            f.rsplit_once('/')
                .map(|(d, n)| (d.to_string(), n.to_string()))
        };
        split(a).cmp(&split(b))
    });
    assert_eq!(files, listed);
    assert_eq!(
        files[0], ".small/events/s1/e-x.json",
        "'-' sorts before '.'"
    );
}

#[test]
fn v2_profile_missing_is_reported() {
    let dir = valid();
    std::fs::remove_file(small(&dir).join("profile.json")).unwrap();
    has(&dir, "V2-PROFILE");
}

#[test]
fn v2_rule_digest() {
    let dir = valid();
    let p = small(&dir).join(ev_path("e2"));
    let t = std::fs::read_to_string(&p)
        .unwrap()
        .replace("First", "Firsu");
    std::fs::write(&p, t).unwrap();
    has(&dir, "V2-DIGEST");
}

#[test]
fn v2_rule_unknown_field() {
    let dir = valid();
    write(
        dir.path(),
        &ev_path("e2"),
        &event(
            "e2",
            2,
            Some("e1"),
            "task_created",
            &[
                ("task_id", q("task_1")),
                ("task_revision", "1".into()),
                ("x_extra", "1".into()),
            ],
            r#"{"alias":"t1","title":"First"}"#,
        ),
    );
    let c = has(&dir, "V2-UNKNOWN-FIELD");
    assert!(
        !c.diagnostics.iter().any(|d| d.code == "V2-DIGEST"),
        "resealed: only the member is wrong"
    );
}

#[test]
fn v2_rule_duplicate_key_and_number_and_json() {
    let dir = valid();
    write(
        dir.path(),
        &ev_path("e2"),
        &event(
            "e2",
            2,
            Some("e1"),
            "task_created",
            &[("kind", q("task_created"))],
            "{}",
        ),
    );
    has(&dir, "V2-DUP-KEY");
    let dir = valid();
    write(
        dir.path(),
        &ev_path("e2"),
        &event("e2", 2, Some("e1"), "task_created", &[], r#"{"x":0.5}"#),
    );
    has(&dir, "V2-NUMBER");
    let dir = valid();
    write(dir.path(), &ev_path("e2"), "{\"small_version\":");
    let c = has(&dir, "V2-JSON");
    // The damaged event's child does not add a second error about it.
    assert!(
        !c.diagnostics.iter().any(|d| d.code == "V2-SEQ"),
        "{:#?}",
        c.diagnostics
    );
}

#[test]
fn v2_rule_field_types() {
    let dir = valid();
    write(
        dir.path(),
        &ev_path("e2"),
        &event(
            "e2",
            2,
            Some("e1"),
            "task_created",
            &[("task_revision", q("1"))],
            "{}",
        ),
    );
    has(&dir, "V2-FIELD");
}

#[test]
fn v2_rule_seq_gap_and_link() {
    let dir = valid();
    std::fs::remove_file(small(&dir).join(ev_path("e3"))).unwrap();
    has(&dir, "V2-SEQ");
    let dir = valid();
    write(
        dir.path(),
        &ev_path("e3"),
        &event("e3", 3, Some("e1"), "session_closed", &[], "{}"),
    );
    has(&dir, "V2-SEQ");
}

#[test]
fn v2_rule_parent() {
    let dir = valid();
    write(
        dir.path(),
        &ev_path("e1"),
        &event(
            "e1",
            1,
            None,
            "session_started",
            &[("parents", r#"["ghost"]"#.into())],
            "{}",
        ),
    );
    has(&dir, "V2-PARENT");
}

#[test]
fn v2_rule_cycle() {
    // e1 names e3 as a parent: e1 <- e2 <- e3 <- e1. Every other rule holds. The
    // reducer's order leaves the cycle out, which is when the rule is checked.
    assert!(!codes(&valid()).contains(&"V2-CYCLE".to_string()));
    let dir = valid();
    write(
        dir.path(),
        &ev_path("e1"),
        &event_in(S, "e1", 1, None, &["e3"], "session_started", &[], "{}"),
    );
    let c = has(&dir, "V2-CYCLE");
    // One finding: e4 and e5 descend from the cycle without being on it.
    let found: Vec<&str> = c.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(found, ["V2-CYCLE"], "{:#?}", c.diagnostics);
    assert!(c.diagnostics[0].message.contains("is its own ancestor"));
}

#[test]
fn v2_rule_session_missing() {
    let dir = valid();
    std::fs::remove_file(small(&dir).join(format!("sessions/{S}.json"))).unwrap();
    has(&dir, "V2-SESSION");
}

#[test]
fn v2_rule_path_identity() {
    let dir = valid();
    let from = small(&dir).join(ev_path("e2"));
    std::fs::copy(&from, small(&dir).join(ev_path("e9"))).unwrap();
    has(&dir, "V2-PATH");
}

#[test]
fn v2_rule_symlink_and_stray() {
    let dir = valid();
    let p = small(&dir).join(ev_path("e5"));
    std::fs::rename(&p, dir.path().join("outside.json")).unwrap();
    std::os::unix::fs::symlink("../../../outside.json", &p).unwrap();
    has(&dir, "V2-SYMLINK");
    let dir = valid();
    let d = small(&dir).join(format!("events/{S}"));
    std::fs::rename(&d, dir.path().join("outside")).unwrap();
    std::os::unix::fs::symlink("../../outside", &d).unwrap();
    has(&dir, "V2-SYMLINK");
    let dir = valid();
    write(dir.path(), &format!("events/{S}/NOTES.txt"), "hi");
    has(&dir, "V2-STRAY");
    // A name that is only the extension is a hidden file, not a record.
    let dir = valid();
    write(dir.path(), &format!("events/{S}/.json"), "{}");
    let c = has(&dir, "V2-STRAY");
    assert!(c
        .diagnostics
        .iter()
        .any(|d| d.code == "V2-STRAY" && d.file.as_deref().is_some_and(|f| f.ends_with("/.json"))));
}

#[test]
fn v2_rule_size() {
    let dir = valid();
    let big = format!(
        r#"{{"summary":"{}"}}"#,
        "x".repeat(MAX_RECORD_BYTES as usize)
    );
    write(
        dir.path(),
        &ev_path("e5"),
        &event("e5", 5, Some("e4"), "handoff_recorded", &[], &big),
    );
    has(&dir, "V2-SIZE");
}

#[test]
fn v2_rule_receipt_digest() {
    let dir = valid();
    let rdir = small(&dir).join("receipts/sha256");
    let p = std::fs::read_dir(&rdir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let t = std::fs::read_to_string(&p)
        .unwrap()
        .replace("receipt_1", "receipt_2");
    std::fs::write(&p, t).unwrap();
    has(&dir, "V2-DIGEST");
}

#[test]
fn v2_rule_policy_edited() {
    let dir = valid();
    write(dir.path(), "policy/intent.small.yml", "intent: y\n");
    has(&dir, "V2-POLICY");
}

#[test]
fn v2_rule_mixed_v1_artifact() {
    let dir = valid();
    write(dir.path(), "progress.small.yml", "entries: []\n");
    has(&dir, "V2-MIXED");
}

#[test]
fn v2_rule_conflict_and_resolution() {
    // Two sessions that fork from e3 and give task_2 different outcomes.
    let dir = valid();
    let root = dir.path();
    std::fs::remove_file(small(&dir).join(ev_path("e5"))).unwrap();
    let t2 = [("task_id", q("task_2")), ("task_revision", "1".into())];
    write(
        root,
        &ev_path("e5"),
        &event(
            "e5",
            5,
            Some("e4"),
            "task_transitioned",
            &t2,
            r#"{"status":"completed"}"#,
        ),
    );
    let other = event(
        "f1",
        1,
        None,
        "task_transitioned",
        &t2,
        r#"{"status":"blocked"}"#,
    )
    .replace(
        &format!("\"session_id\":\"{S}\""),
        "\"session_id\":\"session_b\"",
    );
    // Reseal after the session change, with e4 as a parent.
    let members = r#""small_version":"2.0.0","project_id":"project_1","lineage_id":"lineage_1","session_id":"session_b","event_id":"f1","kind":"task_transitioned","sequence":1,"parents":["e4"],"occurred_at":"2026-01-01T00:00:00Z","task_id":"task_2","task_revision":1,"payload":{"status":"blocked"}"#;
    let _ = other;
    let unsealed = format!("{{{members}}}");
    write(
        root,
        "events/session_b/f1.json",
        &format!(
            "{{{members},\"digest\":\"{}\"}}\n",
            sha256_hex(unsealed.as_bytes())
        ),
    );
    let session_b =
        std::fs::read_to_string(small(&dir).join(format!("sessions/{S}.json"))).unwrap();
    let _ = session_b;
    write(
        root,
        "sessions/session_b.json",
        &seal(&[
            ("small_version", q("2.0.0")),
            ("project_id", q(P)),
            ("lineage_id", q(L)),
            ("session_id", q("session_b")),
            ("observed_frontier", q("0")),
            ("tool_version", q("test")),
            ("created_at", q("2026-01-02T00:00:00Z")),
        ]),
    );
    let c = has(&dir, "V2-CONFLICT");
    assert_eq!(c.state.conflicts.len(), 1);
    let conflict = c.state.conflicts[0].clone();
    assert_eq!(conflict.kind, "task_outcome");
    // A resolution that names the conflict, its heads and the frontier it saw resolves it.
    let fr = c.state.frontier.clone();
    let members = format!(
        r#""small_version":"2.0.0","project_id":"project_1","lineage_id":"lineage_1","session_id":"session_b","event_id":"f2","kind":"conflict_resolved","sequence":2,"previous_event":"f1","parents":["e5"],"occurred_at":"2026-01-01T00:00:00Z","payload":{{"conflict_id":"{}","expected_frontier":"{fr}","heads":["e5","f1"],"selected_event":"f1"}}"#,
        conflict.id
    );
    let unsealed = format!("{{{members}}}");
    write(
        root,
        "events/session_b/f2.json",
        &format!(
            "{{{members},\"digest\":\"{}\"}}\n",
            sha256_hex(unsealed.as_bytes())
        ),
    );
    let c = run(&dir);
    assert!(c.diagnostics.is_empty(), "{:#?}", c.diagnostics);
    let t2 = c.state.tasks.iter().find(|t| t.id == "task_2").unwrap();
    assert_eq!(t2.status, "blocked");
}

#[test]
fn v2_codes_are_stable_on_valid_tree() {
    assert!(codes(&valid()).is_empty());
}

/// The stores the order test reduces: the valid tree, and two merged corpus workspaces (one
/// with an unresolved conflict, one with it resolved) when the corpus is present.
fn order_stores() -> Vec<Store> {
    let dir = valid();
    let mut out = vec![load::load(dir.path(), &small(&dir))];
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/v2/cases");
    for case in [
        "wf-merge-conflict",
        "wf-merge-conflict-resolved",
        "durable-session",
    ] {
        let root = corpus.join(case);
        if root.join(".small").is_dir() {
            out.push(load::load(&root, &root.join(".small")));
        }
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// The reduced tasks, conflicts and frontier do not depend on the order the events are
    /// read in, nor on an event read more than once.
    #[test]
    fn v2_reduce_is_order_and_duplicate_independent(
        seed in proptest::prelude::any::<u64>(),
        dups in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..6),
    ) {
        for store in order_stores() {
            let want = reduce::reduce(&store);
            let mut shuffled = store.clone();
            for &d in &dups {
                let e = shuffled.events[d % shuffled.events.len()].clone();
                shuffled.events.push(e);
            }
            // A deterministic shuffle (Fisher-Yates over a xorshift sequence).
            let mut x = seed | 1;
            for i in (1..shuffled.events.len()).rev() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let j = usize::try_from(x % (i as u64 + 1)).unwrap();
                shuffled.events.swap(i, j);
            }
            let got = reduce::reduce(&shuffled);
            proptest::prop_assert_eq!(&got.tasks, &want.tasks);
            proptest::prop_assert_eq!(&got.conflicts, &want.conflicts);
            proptest::prop_assert_eq!(&got.frontier, &want.frontier);
        }
    }
}

#[test]
fn v2_task_acceptance_source_and_attestations() {
    let dir = valid();
    write(
        dir.path(),
        &ev_path("e2"),
        &event(
            "e2",
            2,
            Some("e1"),
            "task_created",
            &[
                ("task_id", q("task_1")),
                ("task_revision", "1".into()),
                ("source_digest", q("src1")),
            ],
            r#"{"acceptance":["tests pass","docs say so"],"alias":"t1","title":"First"}"#,
        ),
    );
    let c = run(&dir);
    assert!(c.diagnostics.is_empty(), "{:#?}", c.diagnostics);
    let t = &c.state.tasks[0];
    assert_eq!(t.acceptance, ["tests pass", "docs say so"]);
    assert_eq!(
        t.source_digest, "",
        "an outcome without a candidate clears the source"
    );
    assert_eq!(t.attestations, ["e3"]);
    let t2 = &c.state.tasks[1];
    assert!(t2.attestations.is_empty() && t2.acceptance.is_empty());
    let json = serde_json::to_value(t).unwrap();
    assert_eq!(json["attestations"], serde_json::json!(["e3"]));
    assert!(json.get("source_digest").is_none());
    assert_eq!(t.attestation_count, 1);
    // status shows how many, cold or cached (the list grows with the log; reconstruct
    // --task has it).
    for cached in [false, true, true] {
        let st = status::status_with_cache(dir.path(), &small(&dir), cached);
        let json = serde_json::to_value(&st).unwrap();
        let shown = &json["tasks"][0];
        assert_eq!(shown["attestation_count"], 1, "{shown}");
        assert!(shown.get("attestations").is_none(), "{shown}");
        assert!(json["tasks"][1].get("attestation_count").is_none());
    }
}

#[path = "tests_artifacts.rs"]
mod artifacts;

/// An event of `session_b`, sealed: `members` without the digest.
fn write_b(root: &Path, id: &str, members: &str) {
    let unsealed = format!("{{{members}}}");
    write(
        root,
        &format!("events/session_b/{id}.json"),
        &format!(
            "{{{members},\"digest\":\"{}\"}}\n",
            sha256_hex(unsealed.as_bytes())
        ),
    );
}

#[test]
fn v2_ownership_claims_and_takeovers_are_folded() {
    let dir = valid();
    let root = dir.path();
    std::fs::remove_file(small(&dir).join(ev_path("e5"))).unwrap();
    let t2 = [("task_id", q("task_2")), ("task_revision", "1".into())];
    write(
        root,
        &ev_path("e5"),
        &event(
            "e5",
            5,
            Some("e4"),
            "ownership_claimed",
            &t2,
            &format!(r#"{{"owner_session":"{S}"}}"#),
        ),
    );
    write(
        root,
        "sessions/session_b.json",
        &seal(&[
            ("small_version", q("2.0.0")),
            ("project_id", q(P)),
            ("lineage_id", q(L)),
            ("session_id", q("session_b")),
            ("observed_frontier", q("0")),
            ("tool_version", q("test")),
            ("created_at", q("2026-01-02T00:00:00Z")),
        ]),
    );
    // session_b claims the same task concurrently (it saw e4, not e5).
    write_b(
        root,
        "f1",
        r#""small_version":"2.0.0","project_id":"project_1","lineage_id":"lineage_1","session_id":"session_b","event_id":"f1","kind":"ownership_claimed","sequence":1,"parents":["e4"],"occurred_at":"2026-01-01T00:00:00Z","task_id":"task_2","task_revision":1,"payload":{"owner_session":"session_b"}"#,
    );
    let c = has(&dir, "V2-CONFLICT");
    let kinds: Vec<&str> = c.state.conflicts.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, ["ownership"]);
    assert_eq!(c.state.conflicts[0].task_id, "task_2");
    assert_eq!(c.state.conflicts[0].heads, ["e5", "f1"]);
    assert!(c.state.conflicts[0].head_summaries[1].contains("ownership_claimed by session_b"));
    let a = c.state.sessions.iter().find(|s| s.id == S).unwrap();
    assert_eq!(a.status(), "active");
    // A release is no claim: it ends the conflict.
    std::fs::remove_file(small(&dir).join("events/session_b/f1.json")).unwrap();
    write_b(
        root,
        "f1",
        r#""small_version":"2.0.0","project_id":"project_1","lineage_id":"lineage_1","session_id":"session_b","event_id":"f1","kind":"ownership_claimed","sequence":1,"parents":["e4"],"occurred_at":"2026-01-01T00:00:00Z","task_id":"task_2","task_revision":1,"payload":{"action":"release","owner_session":"session_b"}"#,
    );
    assert!(run(&dir).state.conflicts.is_empty());
    // session_b takes over session_a: session_a is superseded (even once closed).
    write_b(
        root,
        "f2",
        &format!(
            r#""small_version":"2.0.0","project_id":"project_1","lineage_id":"lineage_1","session_id":"session_b","event_id":"f2","kind":"ownership_taken_over","sequence":2,"previous_event":"f1","parents":["e5"],"occurred_at":"2026-01-01T00:00:00Z","payload":{{"owner_session":"session_b","prior_session":"{S}","reason":"crashed","scope":"session"}}"#
        ),
    );
    let c = run(&dir);
    assert!(c.diagnostics.is_empty(), "{:#?}", c.diagnostics);
    let a = c.state.sessions.iter().find(|s| s.id == S).unwrap();
    assert!(a.superseded && !a.is_active());
    assert_eq!(a.status(), "superseded");
    let b = c
        .state
        .sessions
        .iter()
        .find(|s| s.id == "session_b")
        .unwrap();
    assert_eq!(b.status(), "active");
}

proptest::proptest! {
    /// The frontier hashed piece by piece is the one of the joined `id:digest` lines (the
    /// profile's definition, [`record::frontier_of`]), whatever the ids: prefixes of one
    /// another, colons in them, repeats.
    #[test]
    fn v2_frontier_is_the_hash_of_the_sorted_lines(
        pairs in proptest::collection::vec(("[ab:]{0,4}", "[0a:]{0,3}"), 0..12),
    ) {
        let events: Vec<crate::v2::load::Event> = pairs
            .iter()
            .map(|(id, digest)| bare_event("", id, digest))
            .collect();
        proptest::prop_assert_eq!(reduce::frontier(&events), record::frontier_of(&pairs));
    }
}

/// Events in many chunks, read on two threads, give exactly what one thread reads: the
/// same records in the same order and the same findings (damaged and unreadable records
/// included, wherever they fall).
#[test]
fn v2_events_read_on_two_threads_are_what_one_thread_reads() {
    let dir = valid();
    let root = dir.path();
    let mut prev = "e5".to_string();
    for n in 6..2700 {
        let id = format!("e{n}");
        let mut text = event(&id, n, Some(&prev), "command_recorded", &[], "{}");
        if n % 997 == 0 {
            // A changed byte: the digest no longer matches.
            text = text.replacen("command_recorded", "command_rekorded", 1);
        }
        if n % 1291 == 0 {
            text = "{not json".into();
        }
        write(root, &ev_path(&id), &text);
        prev = id;
    }
    let small = small(&dir);
    let both = load::load(root, &small);
    let one = crate::par::without_threads(|| load::load(root, &small));
    let ids = |s: &Store| s.events.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    assert!(both.events.len() > 2 * 1024, "{}", both.events.len());
    assert_eq!(ids(&both), ids(&one));
    assert_eq!(
        format!("{:?}", both.diagnostics),
        format!("{:?}", one.diagnostics)
    );
    assert_eq!(both.unreadable_events, one.unreadable_events);
    assert!(!both.diagnostics.is_empty() && !both.unreadable_events.is_empty());
    let (a, b) = (run(&dir), crate::par::without_threads(|| run(&dir)));
    assert_eq!(
        format!("{:?}", a.diagnostics),
        format!("{:?}", b.diagnostics)
    );
    assert_eq!(a.state.timeline, b.state.timeline);
}
