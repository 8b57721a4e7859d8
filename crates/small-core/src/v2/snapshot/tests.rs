//! The cache gives the answer a full read gives, whatever happened to the tree or to the
//! cache file since it was written.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::*;
use crate::v2::tests::{ev_path, event, valid, write};

/// A start time far enough ahead that nothing in a tree written by the test is racy.
fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(3600)
}

fn cold(root: &Path) -> Snapshot {
    snapshot(root, &root.join(".small"), false)
}

fn cached(root: &Path) -> Snapshot {
    snapshot_at(root, &root.join(".small"), later())
}

/// The snapshot without its provenance, to compare a cached one with a cold one.
fn answer(mut s: Snapshot) -> Snapshot {
    s.from_cache = false;
    s.folded = 0;
    s
}

fn cache_file(root: &Path) -> std::path::PathBuf {
    root.join(".small-cache").join(CACHE_FILE)
}

#[test]
fn a_cache_hit_gives_the_cold_answer() {
    let d = valid();
    let root = d.path();
    let first = cached(root);
    assert!(!first.from_cache, "nothing cached yet");
    assert!(cache_file(root).is_file(), "the cache is written");
    let second = cached(root);
    assert!(
        second.from_cache,
        "the unchanged tree is read from the cache"
    );
    assert_eq!(answer(second.clone()), cold(root));
    assert_eq!(second.events, 5);
    assert!(second.tail_complete);
    // Attestations are kept as counts, and the count survives the cache.
    assert_eq!(second.state.tasks[0].attestation_count, 1);
    assert!(second.state.tasks.iter().all(|t| t.attestations.is_empty()));
    // The status built on it is the cold status, key for key.
    let small = root.join(".small");
    let a = serde_json::to_value(crate::v2::status::status_with_cache(root, &small, true)).unwrap();
    let b = serde_json::to_value(crate::v2::status::status(root, &small)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn a_new_event_is_seen() {
    let d = valid();
    let root = d.path();
    cached(root);
    write(
        root,
        &ev_path("e6"),
        &event(
            "e6",
            6,
            Some("e5"),
            "command_recorded",
            &[],
            r#"{"command":"make"}"#,
        ),
    );
    // Written by another program: folded into the cached state.
    let s = cached(root);
    assert_eq!((s.from_cache, s.folded), (true, 1));
    assert_eq!(s.events, 6);
    assert_eq!(answer(s), cold(root));
    let again = cached(root);
    assert_eq!(
        (again.from_cache, again.folded),
        (true, 0),
        "rewritten for the new tree"
    );
}

#[test]
fn a_removed_event_is_seen() {
    let d = valid();
    let root = d.path();
    cached(root);
    std::fs::remove_file(root.join(".small").join(ev_path("e5"))).unwrap();
    let s = cached(root);
    assert!(!s.from_cache);
    assert_eq!(s.events, 4);
    assert_eq!(answer(s), cold(root));
}

#[test]
fn a_record_changed_in_place_is_seen() {
    let d = valid();
    let root = d.path();
    let before = cached(root);
    assert!(before.diagnostics.is_empty(), "{:#?}", before.diagnostics);
    let p = root.join(".small/sessions/session_a.json");
    // Same length, one byte changed, written in place (same inode).
    let text = std::fs::read_to_string(&p).unwrap().replace("work", "w0rk");
    let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    drop(f);
    let s = cached(root);
    assert!(!s.from_cache);
    assert!(
        s.diagnostics.iter().any(|d| d.code == "V2-DIGEST"),
        "{:#?}",
        s.diagnostics
    );
    assert_eq!(answer(s), cold(root));
}

#[test]
fn an_event_replaced_is_seen_and_one_edited_in_place_only_without_the_cache() {
    let d = valid();
    let root = d.path();
    cached(root);
    let p = root.join(".small").join(ev_path("e2"));
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("First", "Fir5t");
    // Edited in place: the cache trusts the session's directory
    // (docs/decisions/0128-v2-state-cache.md).
    let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    drop(f);
    assert!(cached(root).from_cache);
    let full = cold(root);
    assert!(full.diagnostics.iter().any(|d| d.code == "V2-DIGEST"));
    // Replaced (a new file renamed over it): the directory changed, the cache is not used.
    let tmp = root.join(".small/events/tmp");
    std::fs::write(&tmp, &text).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
    let s = cached(root);
    assert!(!s.from_cache);
    assert_eq!(answer(s), full);
}

#[test]
fn a_damaged_cache_is_ignored_and_rewritten() {
    for damage in [
        b"".as_slice(),
        b"garbage",
        b"0000000000000000000000000000000000000000000000000000000000000000\n{}",
    ] {
        let d = valid();
        let root = d.path();
        cached(root);
        let good = std::fs::read(cache_file(root)).unwrap();
        std::fs::write(cache_file(root), damage).unwrap();
        let s = cached(root);
        assert!(!s.from_cache, "damage {damage:?} is no cache");
        assert_eq!(answer(s), cold(root));
        // Truncated: no cache either.
        std::fs::write(cache_file(root), &good[..good.len() / 2]).unwrap();
        assert!(!cached(root).from_cache);
        assert!(cached(root).from_cache, "rewritten");
    }
}

#[test]
fn a_sealed_cache_that_lies_is_not_trusted() {
    // A well-formed, correctly sealed body for another tree state (a hand-made cache):
    // the proof does not match this tree, so it is not used.
    let d = valid();
    let root = d.path();
    cached(root);
    let json = crate::workspace::cache::read_sealed(
        &root.join(".small-cache"),
        CACHE_FILE,
        CACHE_MAX_BYTES,
    )
    .unwrap();
    let forged = json.replace("\"status\":\"completed\"", "\"status\":\"blocked\"");
    let mut body: serde_json::Value = serde_json::from_str(&forged).unwrap();
    body["proof"] = serde_json::Value::String("0".repeat(64));
    crate::workspace::cache::write_sealed(
        &root.join(".small-cache"),
        CACHE_FILE,
        &body.to_string(),
    );
    let s = cached(root);
    assert!(!s.from_cache);
    assert_eq!(answer(s), cold(root));
}

#[test]
fn a_cache_from_another_workspace_is_not_used() {
    let a = valid();
    let b = valid();
    cached(a.path());
    std::fs::create_dir_all(b.path().join(".small-cache")).unwrap();
    std::fs::copy(cache_file(a.path()), cache_file(b.path())).unwrap();
    // b differs from a only by where it is (and its inodes and times).
    let s = cached(b.path());
    assert!(!s.from_cache);
    assert_eq!(answer(s), cold(b.path()));
}

#[test]
fn a_racy_tree_is_not_cached() {
    let d = valid();
    let root = d.path();
    // Started now: every file was written within the racy margin.
    snapshot_at(root, &root.join(".small"), SystemTime::now());
    assert!(
        !cache_file(root).exists(),
        "a racy tree is read in full next time"
    );
}

#[test]
fn without_the_cache_nothing_is_written() {
    let d = valid();
    let root = d.path();
    cold(root);
    assert!(!root.join(".small-cache").exists());
}

#[test]
fn the_tail_holds_the_newest_events_and_the_latest_handoff() {
    let d = valid();
    let root = d.path();
    let (c, store) = crate::v2::check_store(root, &root.join(".small"));
    let s = Snapshot::build_with_tail(c.clone(), &store, 1);
    let ids: Vec<&str> = s.tail.iter().map(|e| e.id.as_str()).collect();
    // The newest event, and the newest progress event (e3, a transition).
    assert_eq!(ids, ["e3", "e5"]);
    assert!(!s.tail_complete);
    let all = Snapshot::build_with_tail(c, &store, usize::MAX);
    assert!(all.tail_complete);
    assert_eq!(all.tail.len(), 5);
    assert!(all.state.timeline.is_empty());
}

mod fold;
