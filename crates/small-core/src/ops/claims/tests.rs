//! The hooks fencing will call (`seen_lease`, `renew_if_due`, `holder_id`), on local refs
//! and a bare remote, with real git; the CLI's tests race clones against each other.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A v1 workspace (its plan holds task-1) in `dir`.
fn workspace(dir: &Path) -> Workspace {
    use crate::authoring::templates;
    let small = dir.join(".small");
    std::fs::create_dir_all(&small).unwrap();
    for f in templates::base_artifacts(Some("Claims")) {
        std::fs::write(small.join(f.name), f.content).unwrap();
    }
    std::fs::write(
        small.join("workspace.small.yml"),
        templates::workspace("repo-root", "2026-01-01T00:00:00.000000000Z"),
    )
    .unwrap();
    Workspace::at(dir.to_path_buf())
}

fn request(ttl: Duration, holder: &str, where_: Where) -> ClaimRequest {
    ClaimRequest {
        task: Some("task-1".into()),
        next: false,
        reopen: false,
        ttl,
        label: Some(format!("agent {holder}")),
        holder: Some(holder.into()),
        where_: Some(where_),
    }
}

#[test]
fn a_local_lease_is_seen_without_the_network_and_renewed_when_due() {
    let tmp = tempfile::tempdir().unwrap();
    git(tmp.path(), &["init", "-q"]);
    let ws = workspace(&tmp.path().join("services/api"));
    assert!(seen_lease(&ws, "task-1").is_none());
    let out = claim(&ws, &request(Duration::from_secs(1), "h1", Where::Local)).unwrap();
    assert_eq!(out.status, "claimed");
    assert_eq!(
        out.lease.ref_name,
        "refs/small/claims/services%2Fapi/task-1"
    );
    let seen = seen_lease(&ws, "task-1").expect("seen");
    assert_eq!((seen.holder.as_str(), seen.generation), ("h1", 1));
    assert_eq!(seen.remote, None);
    // Another holder's lease is not renewed; ours is, once half its TTL has passed.
    assert!(renew_if_due(&ws, "task-1", "h2").unwrap().is_none());
    std::thread::sleep(Duration::from_millis(1100));
    let renewed = renew_if_due(&ws, "task-1", "h1").unwrap().expect("due");
    assert_eq!(renewed.status, "renewed");
    assert_eq!(renewed.lease.generation, 2);
    assert_eq!(renewed.lease.label, "agent h1");
    let out = claim(&ws, &request(Duration::from_secs(60), "h1", Where::Local)).unwrap();
    assert_eq!(out.lease.generation, 3);
    assert!(renew_if_due(&ws, "task-1", "h1").unwrap().is_none());
}

#[test]
fn a_remote_lease_is_mirrored_and_the_holder_id_kept_outside_small() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let ws = workspace(&repo);
    let id = holder_id(&ws).unwrap();
    assert_eq!(id.len(), 24);
    assert_eq!(holder_id(&ws).unwrap(), id);
    assert!(repo.join(".git/small/claim-holder").is_file());
    assert!(!repo.join(".small/claim-holder").exists());
    let mut req = request(DEFAULT_TTL, &id, Where::Local);
    req.where_ = None;
    let out = claim(&ws, &req).unwrap();
    assert_eq!(out.lease.remote.as_deref(), Some("origin"));
    let seen = seen_lease(&ws, "task-1").expect("mirrored");
    assert_eq!(seen.holder, id);
    assert_eq!(seen.remote.as_deref(), Some("origin"));
    assert!(git(&repo, &["for-each-ref", "refs/small/seen/origin/_/"]).contains("task-1"));
    assert!(git(&remote, &["for-each-ref", "refs/small/claims/_/"]).contains("task-1"));
    let gone = unclaim(
        &ws,
        &UnclaimRequest {
            task: "task-1".into(),
            holder: None,
            where_: None,
        },
    )
    .unwrap();
    assert_eq!(gone.status, "released");
    assert!(seen_lease(&ws, "task-1").is_none());
    assert_eq!(git(&remote, &["for-each-ref", "refs/small/claims/"]), "");
}
