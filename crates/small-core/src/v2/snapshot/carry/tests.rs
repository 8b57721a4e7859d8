//! A writer leaves a cache only for a tree it can prove is its records plus its own, and
//! the cached answer is always the one a full read gives.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::super::{snapshot, snapshot_at, Snapshot, CACHE_FILE, RACY_MARGIN};
use crate::v2::tests::valid;
use crate::v2::write::{self, StartRequest, Writer};

/// Let the tree age past the racy margin (a writer proves only a settled tree).
fn settle() {
    std::thread::sleep(RACY_MARGIN + Duration::from_millis(50));
}

fn open(root: &Path) -> Writer {
    Writer::open(root, Duration::from_secs(10)).unwrap()
}

fn start(w: &mut Writer) -> String {
    write::start_session(
        w,
        &StartRequest {
            label: Some("next".into()),
            ..Default::default()
        },
    )
    .unwrap()
    .session
    .session_id
}

/// The snapshot through the cache, as a later reader sees it (nothing racy).
fn cached(root: &Path) -> Snapshot {
    snapshot_at(
        root,
        &root.join(".small"),
        SystemTime::now() + Duration::from_secs(3600),
    )
}

fn cold(root: &Path) -> Snapshot {
    snapshot(root, &root.join(".small"), false)
}

fn answer(mut s: Snapshot) -> Snapshot {
    s.from_cache = false;
    s
}

fn cache_file(root: &Path) -> std::path::PathBuf {
    root.join(".small-cache").join(CACHE_FILE)
}

#[test]
fn a_writers_own_records_are_carried_and_read_as_a_full_read_gives_them() {
    let d = valid();
    let root = d.path();
    settle();
    let sid = {
        let mut w = open(root);
        start(&mut w)
    };
    assert!(cache_file(root).is_file(), "the writer left a cache");
    let s = cached(root);
    assert!(
        s.from_cache,
        "the new session is read from the carried cache"
    );
    assert_eq!(answer(s.clone()), cold(root));
    assert!(s
        .state
        .sessions
        .iter()
        .any(|x| x.id == sid && x.is_active()));

    // Two events with a read in between (close writes a handoff, then the close).
    settle();
    {
        let mut w = open(root);
        write::close_session(&mut w, &sid, "done for today").unwrap();
    }
    let s = cached(root);
    assert!(s.from_cache);
    assert_eq!(answer(s.clone()), cold(root));
    assert_eq!(s.state.handoff.as_deref(), Some("done for today"));
    assert!(s.state.sessions.iter().all(|x| !x.is_active()));
}

#[test]
fn another_file_in_the_written_directory_stops_the_carry() {
    let d = valid();
    let root = d.path();
    settle();
    {
        let mut w = open(root);
        let sid = start(&mut w);
        // Another program drops a file beside the writer's event, in the same instant.
        let dir = root.join(".small/events").join(&sid);
        std::fs::write(dir.join("evt_foreign.json"), "{}\n").unwrap();
    }
    let s = cached(root);
    assert!(!s.from_cache, "the tree is not the writer's: read in full");
    assert_eq!(answer(s.clone()), cold(root));
    assert!(s.diagnostics.iter().any(|d| d.is_error()));
}

#[test]
fn a_change_elsewhere_during_the_write_stops_the_carry() {
    let d = valid();
    let root = d.path();
    settle();
    {
        let mut w = open(root);
        start(&mut w);
        std::fs::write(root.join(".small/policy/intent.small.yml"), "intent: y\n").unwrap();
    }
    assert!(!cache_file(root).is_file());
    let s = cached(root);
    assert!(!s.from_cache);
    assert_eq!(answer(s), cold(root));
}

#[test]
fn a_receipt_written_is_carried() {
    let d = valid();
    let root = d.path();
    settle();
    {
        let mut w = open(root);
        let sid = start(&mut w);
        write::record_command(
            &mut w,
            &sid,
            None,
            &write::CommandRun {
                command: "echo ok".into(),
                exit_code: 0,
                output: b"ok\n".to_vec(),
            },
        )
        .unwrap();
    }
    assert!(cache_file(root).is_file(), "the writer left a cache");
    let s = cached(root);
    assert!(s.from_cache);
    assert_eq!(answer(s.clone()), cold(root));
    assert!(s
        .state
        .receipts
        .iter()
        .any(|r| r.strength == "cli_captured" && r.availability == "verified"));
}

/// Writes in quick succession (an agent's `progress add` after `session start`): the tree
/// is younger than the racy margin when each writer opens, so the writer waits for the
/// stamping clock to pass its newest change and proves the tree again from there.
#[test]
fn a_tree_changed_a_moment_before_the_writer_opened_is_carried_once_the_clock_moved_on() {
    let d = valid();
    let root = d.path();
    // No settling: the records are younger than the racy margin.
    let sid = {
        let mut w = open(root);
        start(&mut w)
    };
    assert!(cache_file(root).is_file(), "the writer left a cache");
    let s = cached(root);
    assert!(s.from_cache);
    assert_eq!(answer(s), cold(root));
    {
        let mut w = open(root);
        write::close_session(&mut w, &sid, "right after").unwrap();
    }
    let s = cached(root);
    assert!(
        s.from_cache,
        "the second write, right after the first, carried it too"
    );
    assert_eq!(answer(s.clone()), cold(root));
    assert_eq!(s.state.handoff.as_deref(), Some("right after"));
}

#[test]
fn a_writer_that_publishes_nothing_leaves_the_cache_alone() {
    let d = valid();
    let root = d.path();
    settle();
    drop(open(root));
    assert!(!cache_file(root).is_file());
}

#[test]
fn after_its_own_appends_a_writer_adds_them_without_reading_every_record() {
    let d = valid();
    let root = d.path();
    settle();
    let mut w = open(root);
    let before = w.store().unwrap().events.len();
    let sid = start(&mut w);
    // An old event edited in place (same size): a full read would refuse the damaged tree;
    // the writer, which proved the tree is its records plus its own, does not read it again.
    let p = root.join(".small").join(crate::v2::tests::ev_path("e2"));
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("First", "Fir5t");
    let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    drop(f);
    w.refresh().unwrap();
    assert_eq!(w.store().unwrap().events.len(), before + 1);
    assert!(w
        .state
        .sessions
        .iter()
        .any(|s| s.id == sid && s.is_active()));
    drop(w);
    // Without the writer's proof, the next read finds the edit.
    assert!(cold(root).diagnostics.iter().any(|d| d.code == "V2-DIGEST"));
    // A writer opening now starts from the cache the first one left, which (as for
    // `status`) does not see an event edited in place (docs/decisions/0128-v2-state-cache.md);
    // `check`, which never uses it, does.
    assert!(Writer::open(root, Duration::from_secs(10))
        .unwrap()
        .on_cached_state());
    std::fs::remove_dir_all(root.join(".small-cache")).unwrap();
    assert!(Writer::open(root, Duration::from_secs(10)).is_err());
}
