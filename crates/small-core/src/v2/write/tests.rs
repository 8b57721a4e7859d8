//! The writers: records rebuilt byte for byte from the reference's, and every operation on
//! copies of the recorded reference workspaces, checked by small's strict check after.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::*;
use crate::v2::gojson::GoValue;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/v2/cases"
);

fn go(v: &Value) -> GoValue {
    match v {
        Value::Null => GoValue::Null,
        Value::Bool(b) => GoValue::Bool(*b),
        Value::Number(n) => GoValue::Int(n.as_i64().unwrap_or_default()),
        Value::String(s) => GoValue::str(s),
        Value::Array(a) => GoValue::Arr(a.iter().map(go).collect()),
        Value::Object(o) => GoValue::Obj(o.iter().map(|(k, v)| (k.clone(), go(v))).collect()),
    }
}

fn members(v: &Value, key: &str) -> Members {
    match v.get(key) {
        Some(Value::Object(o)) => o.iter().map(|(k, v)| (k.clone(), go(v))).collect(),
        _ => Vec::new(),
    }
}

fn st(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or_default()
}

/// Rebuild a reference record from its parsed members with the writers' builders.
fn rebuild(kind: &str, v: &Value) -> Vec<u8> {
    let ids = Ids {
        project_id: st(v, "project_id"),
        lineage_id: st(v, "lineage_id"),
    };
    let m = match kind {
        "events" => EventDraft {
            session_id: st(v, "session_id"),
            event_id: st(v, "event_id"),
            kind: st(v, "kind"),
            sequence: int(v, "sequence"),
            previous_event: st(v, "previous_event"),
            parents: v
                .get("parents")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            occurred_at: st(v, "occurred_at"),
            task_id: st(v, "task_id"),
            task_revision: int(v, "task_revision"),
            policy_revision: st(v, "policy_revision"),
            source_digest: st(v, "source_digest"),
            payload: members(v, "payload"),
        }
        .members(&ids),
        "sessions" => SessionDraft {
            session_id: st(v, "session_id"),
            label: st(v, "label"),
            actor_label: st(v, "actor_label"),
            model_label: st(v, "model_label"),
            parent_session_id: st(v, "parent_session_id"),
            from_handoff: st(v, "from_handoff"),
            observed_frontier: st(v, "observed_frontier"),
            tool_version: st(v, "tool_version"),
            created_at: st(v, "created_at"),
        }
        .members(&ids),
        _ => ReceiptDraft {
            receipt_id: st(v, "receipt_id"),
            strength: st(v, "strength"),
            availability: st(v, "availability"),
            producer: members(v, "producer"),
            task_id: st(v, "task_id"),
            task_revision: int(v, "task_revision"),
            policy_revision: st(v, "policy_revision"),
            source_digest: st(v, "source_digest"),
            validator: st(v, "validator"),
            outcome: st(v, "outcome"),
            artifact_path: st(v, "artifact_path"),
            artifact_digest: st(v, "artifact_digest"),
            artifact_size: int(v, "artifact_size"),
            metadata: members(v, "metadata"),
        }
        .members(&ids.project_id),
    };
    record::seal(m).unwrap().0
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            walk(&p, out);
        } else if ft.is_file() && p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

/// Every session, event and receipt the reference wrote in the workflow cases is rebuilt by
/// the builders byte for byte (member order, omitted members, escaping, digest).
#[test]
fn builders_reproduce_every_reference_record() {
    let Some(cases) = small_testkit::conformance_path(CASES) else {
        return;
    };
    let mut n = 0;
    for case in [
        "wf-single-session",
        "wf-merge-conflict-resolved",
        "wf-merge-disjoint",
        "wf-open-session-policy-mode",
        "wf-merge-conflict",
    ] {
        for kind in ["events", "sessions", "receipts"] {
            let mut files = Vec::new();
            walk(&cases.join(case).join(".small").join(kind), &mut files);
            for f in files {
                let bytes = std::fs::read(&f).unwrap();
                let v: Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&rebuild(kind, &v)),
                    String::from_utf8_lossy(&bytes),
                    "{}",
                    f.display()
                );
                n += 1;
            }
        }
    }
    assert!(n > 50, "only {n} records compared");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let ft = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if ft.is_dir() {
            copy_dir(&e.path(), &dest);
        } else if ft.is_file() {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A copy of a recorded reference workspace.
fn case(name: &str) -> Option<tempfile::TempDir> {
    let src = small_testkit::conformance_path(Path::new(CASES).join(name))?;
    let d = tempfile::tempdir().unwrap();
    copy_dir(&src, d.path());
    let _ = std::fs::remove_file(d.path().join("expected.json"));
    Some(d)
}

fn open(root: &Path) -> Writer {
    Writer::open(root, Duration::from_secs(10)).unwrap()
}

fn strict_errors(root: &Path) -> Vec<String> {
    let c = crate::v2::check(root, &root.join(".small"));
    c.diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{} {:?} {}", d.code, d.file, d.message))
        .collect()
}

#[test]
fn a_whole_session_loop_passes_the_strict_check() {
    let Some(d) = case("wf-single-session") else {
        return;
    };
    let root = d.path();
    let mut w = open(root);
    assert!(w.active_sessions().is_empty());
    let started = start_session(
        &mut w,
        &StartRequest {
            label: Some("loop".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let sid = started.session.session_id.clone();
    assert_eq!(resolve_session(root, None).unwrap(), sid);
    let (alias, id, _) = plan(
        &mut w,
        &sid,
        &PlanChange::Add {
            title: "Write <docs> & tests".into(),
        },
    )
    .unwrap();
    assert_eq!(alias, "task-2");
    progress(&mut w, &sid, &alias, "in_progress", "started", "", None).unwrap();
    record_command(
        &mut w,
        &sid,
        Some(&id),
        &CommandRun {
            command: "echo ok".into(),
            exit_code: 0,
            output: b"ok\n".to_vec(),
        },
    )
    .unwrap();
    let (_, e, r) = checkpoint(&mut w, &sid, &id, "completed", "it works", "").unwrap();
    assert_eq!(e.draft.sequence, 5);
    assert!(root
        .join(".small/receipts/sha256")
        .join(format!("{}.json", r.digest))
        .is_file());
    w.refresh().unwrap();
    let t = w.state.tasks.iter().find(|t| t.id == id).unwrap();
    assert_eq!(t.status, "completed");
    std::fs::write(root.join("report.txt"), "all green\n").unwrap();
    let saved = save_evidence(&mut w, &root.join("report.txt"), &alias, "cargo test", "").unwrap();
    assert!(root.join(&saved.blob).is_file());
    declare_unavailable(&mut w, &alias, "needs the release host").unwrap();
    handoff(&mut w, &sid, "half way").unwrap();
    let closed = close_session(&mut w, &sid, "done").unwrap();
    assert_eq!(closed[1].draft.kind, "session_closed");
    assert!(closed[1].draft.parents.is_empty());
    assert!(
        resolve_session(root, None).is_err(),
        "the selection is cleared"
    );
    assert!(progress(&mut w, &sid, &alias, "blocked", "x", "", None).is_err());
    drop(w);
    assert_eq!(strict_errors(root), Vec::<String>::new());
}

#[test]
fn solo_mode_refuses_a_second_session_unless_it_takes_over_with_a_reason() {
    let Some(d) = case("wf-single-session") else {
        return;
    };
    let root = d.path();
    let mut w = open(root);
    let first = start_session(&mut w, &StartRequest::default()).unwrap();
    let a = first.session.session_id;
    let e = start_session(&mut w, &StartRequest::default()).unwrap_err();
    assert_eq!(e.code(), code::SESSION_STATE);
    let e = start_session(
        &mut w,
        &StartRequest {
            takeover: Some(a.clone()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind, crate::workspace::error::ErrorKind::Usage);
    let e = start_session(
        &mut w,
        &StartRequest {
            takeover: Some("session_nope".into()),
            reason: Some("r".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.code(), code::SESSION_STATE);
    let b = start_session(
        &mut w,
        &StartRequest {
            takeover: Some(a.clone()),
            reason: Some("the first agent crashed".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(b.events.len(), 2);
    assert_eq!(b.events[1].draft.kind, "ownership_taken_over");
    w.refresh().unwrap();
    assert_eq!(w.active_sessions(), vec![b.session.session_id.clone()]);
    let prior = w.state.sessions.iter().find(|s| s.id == a).unwrap();
    assert!(prior.superseded && !prior.closed);
    assert_eq!(prior.status(), "superseded");
    // The superseded session writes nothing more.
    let e = handoff(&mut w, &a, "late").unwrap_err();
    assert_eq!(e.code(), code::SESSION_STATE);
    drop(w);
    assert_eq!(strict_errors(root), Vec::<String>::new());
}

#[test]
fn mode_and_policy_compare_and_swap_on_the_frontier() {
    let Some(d) = case("wf-single-session") else {
        return;
    };
    let root = d.path();
    let mut w = open(root);
    let sid = start_session(&mut w, &StartRequest::default())
        .unwrap()
        .session
        .session_id;
    let e = set_mode(&mut w, &sid, "collaborative", "pairing", "me", "0000").unwrap_err();
    assert_eq!(e.code(), code::STALE);
    let f = w.state.frontier.clone();
    // A blank reason is a refused request (exit 1), as the reference has it.
    let e = set_mode(&mut w, &sid, "collaborative", " ", "me", &f).unwrap_err();
    assert_eq!(e.kind, crate::workspace::error::ErrorKind::Invalid);
    let f = w.state.frontier.clone();
    assert!(set_mode(&mut w, &sid, "collaborative", "pairing", "me", &f)
        .unwrap()
        .is_some());
    w.refresh().unwrap();
    assert_eq!(w.state.mode, "collaborative");
    // Collaborative mode allows a second active session.
    start_session(&mut w, &StartRequest::default()).unwrap();
    // ... and solo is refused while two are active.
    w.refresh().unwrap();
    let f = w.state.frontier.clone();
    assert_eq!(
        set_mode(&mut w, &sid, "solo", "back", "me", &f)
            .unwrap_err()
            .code(),
        code::SESSION_STATE
    );
    let material = PolicyMaterial {
        intent: Some(b"intent: revised\n".to_vec()),
        constraints: None,
    };
    let e = revise_policy(&mut w, &sid, &material, "tighten", "me", "stale").unwrap_err();
    assert_eq!(e.code(), code::STALE);
    let f = w.state.frontier.clone();
    let before = w.state.policy_revision.clone();
    revise_policy(&mut w, &sid, &material, "tighten", "me", &f).unwrap();
    assert_ne!(w.state.policy_revision, before);
    assert_eq!(
        std::fs::read(root.join(".small/policy/intent.small.yml")).unwrap(),
        b"intent: revised\n"
    );
    drop(w);
    assert_eq!(strict_errors(root), Vec::<String>::new());
}

#[test]
fn writers_in_threads_queue_on_the_lock_and_lose_nothing() {
    let Some(d) = case("wf-single-session") else {
        return;
    };
    let root = d.path().to_path_buf();
    let sid = {
        let mut w = open(&root);
        start_session(&mut w, &StartRequest::default())
            .unwrap()
            .session
            .session_id
    };
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (root, sid) = (root.clone(), sid.clone());
            std::thread::spawn(move || {
                for i in 0..5 {
                    let mut w = open(&root);
                    progress(
                        &mut w,
                        &sid,
                        "task-1",
                        "in_progress",
                        &format!("step {i}"),
                        "",
                        None,
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut w = open(&root);
    let mut seqs: Vec<i64> = w
        .store()
        .unwrap()
        .events
        .iter()
        .filter(|e| e.session_id == sid)
        .map(|e| e.sequence)
        .collect();
    seqs.sort();
    assert_eq!(seqs, (1..=21).collect::<Vec<_>>());
    drop(w);
    assert_eq!(strict_errors(&root), Vec::<String>::new());
}

#[test]
fn writing_over_damaged_records_is_refused() {
    let Some(d) = case("tampered-event-payload-byte") else {
        return;
    };
    let e = Writer::open(d.path(), Duration::from_secs(5))
        .err()
        .unwrap();
    assert_eq!(e.code(), code::DAMAGED);
}

#[test]
fn no_session_is_a_clear_refusal() {
    let d = tempfile::tempdir().unwrap();
    let e = resolve_session(d.path(), None).unwrap_err();
    assert_eq!(e.code(), code::NO_SESSION);
    assert_eq!(resolve_session(d.path(), Some(" s1 ")).unwrap(), "s1");
}

#[test]
fn policy_revision_matches_the_reference() {
    // wf-open-session-policy-mode: intent 7ace..., constraints 6fac... -> policy_9119...
    assert_eq!(
        policy_revision(
            "7ace3221dd7501bd32d25377aa5c8b1b5e7756a136521e459e4cc4931f42815e",
            "6facaec8b757319543299f35928ce4b579d4fd86e280d878daefb0c8dd559068"
        ),
        "policy_91190690fc525b9fbc3b67f42cf657fb"
    );
}

#[test]
fn evidence_over_a_record_size_saves_twice_and_verifies() {
    let Some(d) = case("wf-single-session") else {
        return;
    };
    let root = d.path();
    let mut w = open(root);
    std::fs::write(root.join("big.log"), vec![b'x'; 2 << 20]).unwrap();
    let a = save_evidence(&mut w, &root.join("big.log"), "task-1", "", "").unwrap();
    let b = save_evidence(&mut w, &root.join("big.log"), "task-1", "", "").unwrap();
    assert_eq!(a.blob, b.blob);
    let all = verify_evidence(w.store().unwrap(), root);
    assert!(all.iter().all(|v| v.status == "verified"), "{all:?}");
    // A tampered blob is a mismatch; a symlinked one is refused, never followed.
    // (Verified as `evidence verify` does: on the tree as read now.)
    let now = |root: &Path| crate::v2::check_store(root, &root.join(".small")).1;
    let blob = root.join(&a.blob);
    std::fs::write(&blob, b"changed").unwrap();
    let all = verify_evidence(&now(root), root);
    assert!(
        all.iter()
            .any(|v| v.status == "failed" && v.reason.contains("mismatch")),
        "{all:?}"
    );
    std::fs::remove_file(&blob).unwrap();
    std::os::unix::fs::symlink(root.join("big.log"), &blob).unwrap();
    let all = verify_evidence(&now(root), root);
    assert!(
        all.iter()
            .any(|v| v.status == "failed" && v.reason.contains("regular")),
        "{all:?}"
    );
    // A symlink given as the evidence file is refused.
    std::os::unix::fs::symlink(root.join("big.log"), root.join("link.log")).unwrap();
    let e = save_evidence(&mut w, &root.join("link.log"), "task-1", "", "").unwrap_err();
    assert_eq!(e.code(), code::EVIDENCE);
}

#[test]
fn apply_refuses_before_the_run_and_records_checkpoint_and_handoff_after() {
    let Some(d) = case("wf-single-session") else {
        return;
    };
    let root = d.path();
    let mut w = open(root);
    let mut req = ApplyRequest {
        session: "session_none",
        task: Some("token-polling"),
        ..Default::default()
    };
    let e = apply_precheck(&mut w, &req).unwrap_err();
    assert_eq!(e.code(), code::SESSION_STATE, "{}", e.message());
    let sid = start_session(&mut w, &StartRequest::default())
        .unwrap()
        .session
        .session_id;
    req.session = &sid;
    req.task = Some("no-such-task");
    assert!(apply_precheck(&mut w, &req).is_err());
    req.task = Some("token-polling");
    req.auto_checkpoint = true;
    req.handoff = true;
    apply_precheck(&mut w, &req).unwrap();
    let run = |exit_code| CommandRun {
        command: "cargo test".into(),
        exit_code,
        output: b"ok\n".to_vec(),
    };
    let out = apply_record(&mut w, &req, &run(1)).unwrap();
    assert!(out.checkpointed);
    w.refresh().unwrap();
    let status = |w: &Writer| {
        w.state
            .tasks
            .iter()
            .find(|t| t.alias == "token-polling")
            .unwrap()
            .status
            .clone()
    };
    assert_eq!(status(&w), "blocked", "a failed run blocks the task");
    let handoffs = |w: &Writer| {
        w.state
            .timeline
            .iter()
            .filter(|e| e.kind == "handoff_recorded")
            .count()
    };
    let before = handoffs(&w);
    apply_record(&mut w, &req, &run(0)).unwrap();
    w.refresh().unwrap();
    assert_eq!(status(&w), "completed");
    assert_eq!(handoffs(&w), before + 1, "a successful run hands off");
    drop(w);
    assert_eq!(strict_errors(root), Vec::<String>::new());
}

#[test]
fn completing_a_task_with_acceptance_criteria_needs_verified_evidence_at_its_revision() {
    let Some(d) = case("migrated-valid-current-task-absent") else {
        return;
    };
    let root = d.path();
    let mut w = open(root);
    let sid = start_session(&mut w, &StartRequest::default())
        .unwrap()
        .session
        .session_id;
    // "dedupe" states one criterion and has no evidence yet.
    let e = checkpoint(&mut w, &sid, "dedupe", "completed", "looks done", "").unwrap_err();
    assert_eq!(e.code(), code::EVIDENCE);
    assert!(
        e.message()
            .contains("Re-import of a file yields zero new rows"),
        "{}",
        e.message()
    );
    let help = e.diagnostic.help.clone().unwrap_or_default();
    assert!(help.contains("small evidence save --task dedupe"), "{help}");
    // Blocking needs no acceptance evidence; a narrative receipt or a failed check is none.
    checkpoint(&mut w, &sid, "dedupe", "blocked", "waiting", "").unwrap();
    std::fs::write(root.join("bad.txt"), "1 new row\n").unwrap();
    save_evidence(
        &mut w,
        &root.join("bad.txt"),
        "dedupe",
        "reimport",
        "failed",
    )
    .unwrap();
    declare_unavailable(&mut w, "dedupe", "the bank export is private").unwrap();
    let e = checkpoint(&mut w, &sid, "dedupe", "completed", "done", "").unwrap_err();
    assert_eq!(e.code(), code::EVIDENCE);
    // Evidence for the current revision meets it; the transition names that receipt too.
    std::fs::write(root.join("ok.txt"), "0 new rows\n").unwrap();
    let saved = save_evidence(&mut w, &root.join("ok.txt"), "dedupe", "reimport", "").unwrap();
    let (_, ev, narrative) = checkpoint(&mut w, &sid, "dedupe", "completed", "done", "").unwrap();
    let digests = ev
        .draft
        .payload
        .iter()
        .find(|(k, _)| k == "evidence_digests")
        .map(|(_, v)| crate::v2::gojson::compact(v))
        .unwrap();
    assert!(digests.contains(&saved.receipt.digest), "{digests}");
    assert!(digests.contains(&narrative.digest), "{digests}");
    w.refresh().unwrap();
    let t = w.state.tasks.iter().find(|t| t.alias == "dedupe").unwrap();
    assert_eq!(t.status, "completed");
    assert_eq!(strict_errors(root), Vec::<String>::new());
    // A new revision of the task makes that evidence historical (and, as in the reference,
    // the transitions of the old revision stale).
    plan(
        &mut w,
        &sid,
        &PlanChange::Depends {
            task: "dedupe".into(),
            on: "parser".into(),
        },
    )
    .unwrap();
    let e = checkpoint(&mut w, &sid, "dedupe", "completed", "again", "").unwrap_err();
    assert!(e.message().contains("earlier revision"), "{}", e.message());
}

#[test]
fn evidence_receipts_carry_the_task_source_digest() {
    let Some(d) = case("migrated-valid-current-task-absent") else {
        return;
    };
    let root = d.path();
    let mut w = open(root);
    std::fs::write(root.join("r.txt"), "ok\n").unwrap();
    let t = w.task("dedupe").unwrap();
    let saved = save_evidence(&mut w, &root.join("r.txt"), "dedupe", "cargo test", "").unwrap();
    let m = &saved.receipt.members;
    let get = |k: &str| {
        m.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| crate::v2::gojson::compact(v))
    };
    assert_eq!(get("strength").as_deref(), Some("\"verified_artifact\""));
    assert_eq!(get("outcome").as_deref(), Some("\"passed\""));
    // Without a task (the reference allows it) the receipt names none.
    std::fs::write(root.join("n.txt"), "no task\n").unwrap();
    let none = save_evidence(&mut w, &root.join("n.txt"), " ", "", "").unwrap();
    assert!(!none
        .receipt
        .members
        .iter()
        .any(|(k, _)| k.starts_with("task_")));
    let un = declare_unavailable(&mut w, "", "private CI").unwrap();
    assert!(!un.members.iter().any(|(k, _)| k == "task_id"));
    drop(w);
    assert_eq!(strict_errors(root), Vec::<String>::new());
    // The migrated task has a source; the receipt names it, as the reference's does.
    assert_eq!(t.task.source_digest.len(), 64);
    assert_eq!(
        get("source_digest"),
        Some(format!("\"{}\"", t.task.source_digest))
    );
}

/// A policy file the request names but that cannot be read is a refused request, not a
/// failure of the workspace; a file that can be read is taken as it is.
#[test]
fn policy_material_refuses_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = PolicyMaterial::read(Some(&dir.path().join("missing.yml")), None).unwrap_err();
    assert_eq!(e.kind, crate::workspace::error::ErrorKind::Invalid);
    assert!(e.message().contains("missing.yml"), "{}", e.message());
    let file = dir.path().join("intent.yml");
    std::fs::write(&file, "intent: x\n").unwrap();
    let m = PolicyMaterial::read(None, Some(&file)).unwrap();
    assert_eq!(
        (m.intent, m.constraints),
        (None, Some(b"intent: x\n".to_vec()))
    );
}
