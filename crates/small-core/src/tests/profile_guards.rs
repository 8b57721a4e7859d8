//! The profile decided once: the back end refuses the v1 run commands on a 2.0.0 tree and
//! the 2.0.0 writer on a v1 one, and a v1 write that waited while the tree became 2.0.0 is
//! refused under the lock, with nothing written.

use std::path::Path;

use crate::authoring::init::fresh_workspace;
use crate::ops::{self, OpError, Workspace};

/// Every file under `dir` with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn refusal(e: OpError) -> String {
    assert_eq!(e.diagnostic.code, "refused", "{}", e.diagnostic.message);
    e.diagnostic.message.clone()
}

/// A v1 workspace that has become a 2.0.0 tree (a record directory appeared).
fn became_v2(root: &Path) {
    std::fs::create_dir_all(root.join(".small/events")).unwrap();
}

#[test]
fn v1_run_commands_are_refused_on_a_2_0_0_tree() {
    let d = fresh_workspace("guards", &["a"]);
    became_v2(d.path());
    let before = files(d.path());
    let ws = Workspace::at(d.path().to_path_buf());

    let e = ops::start::start(&ws, &Default::default()).unwrap_err();
    assert!(refusal(e).contains("`small start` prepares a v1 run"));
    let e = ops::reset::reset(&ws, &Default::default()).unwrap_err();
    assert!(refusal(e).contains("cannot be reset"));
    let e = ops::init::init(&ops::init::InitRequest {
        root: d.path(),
        intent: None,
        force: true,
        agents: None,
        tasks: &[],
    })
    .unwrap_err();
    assert!(e
        .message()
        .contains("`small init --force` writes the v1 artifacts"));

    assert_eq!(files(d.path()), before, "a refusal wrote something");
}

#[test]
fn the_2_0_0_writer_is_refused_on_a_v1_tree() {
    let d = fresh_workspace("guards", &["a"]);
    let ws = Workspace::at(d.path().to_path_buf());
    let e = ws.writer(None).map(|_| ()).unwrap_err();
    assert!(refusal(e).contains("not a SMALL 2.0.0 workspace"));
}

#[test]
fn a_tree_that_changed_profile_while_the_lock_was_awaited_is_refused() {
    let d = fresh_workspace("guards", &["a"]);
    // Opened as v1; a migration finishes before the command takes the lock.
    let ws = Workspace::at(d.path().to_path_buf());
    became_v2(d.path());
    let before = files(d.path());
    let e = ops::start::start(&ws, &Default::default()).unwrap_err();
    assert!(refusal(e).contains("changed profile while this command waited"));
    let e =
        ops::reset::reset(&Workspace::at(d.path().to_path_buf()), &Default::default()).unwrap_err();
    assert!(refusal(e).contains("cannot be reset"));
    assert_eq!(files(d.path()), before, "a refusal wrote something");
}
