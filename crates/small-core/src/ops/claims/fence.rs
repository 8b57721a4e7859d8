//! Fencing: the writes on a task (`progress add`, `checkpoint`, `apply`) ask the lease this
//! checkout has seen before they write, so a checkout never works on a task that another
//! live holder has or another checkout finished, and a holder whose lease ended claims
//! again before it goes on.
//!
//! Only what this checkout has seen counts (its own refs and its mirrors of the remotes, as
//! [`super::seen_lease`] reads them): no write waits on the network, except the holder's
//! renewal of a lease past half its TTL. A workspace whose repository has no lease at all
//! pays one `git for-each-ref` per store.

pub use super::Finish;
pub use super::Seen;
use super::{code, done, record, renew_seen_if_due, skew, unclaim, Lease};
use super::{UnclaimRequest, Where};
use crate::ops::{OpError, OpResult, Workspace};

/// A write's check against the task's lease. `Ok(Some(note))`: refused without `force`, so
/// the write goes on and records `note` (what it overrode).
pub fn before_write(
    ws: &Workspace,
    seen: &Seen,
    task: &str,
    force: bool,
) -> OpResult<Option<String>> {
    // A skew or git timeout that is not a duration is a usage error here, not a default:
    // with a bad timeout no git runs, no lease would be seen and the write would go on
    // over another's live lease.
    skew()?;
    super::env_duration(super::TIMEOUT_ENV, false)?;
    let Some(lease) = seen.lease(task) else {
        return Ok(None);
    };
    let own = seen.is_mine(lease);
    if lease.state == "done" {
        return done_elsewhere(lease, own, force);
    }
    if own {
        return own_lease(ws, lease, force);
    }
    if !lease.live {
        return Ok(None);
    }
    if force {
        return Ok(Some(format!(
            "claim overridden with --force: {} was held by {} (holder {}) until {}",
            lease.task, lease.label, lease.holder, lease.ends
        )));
    }
    Err(OpError::invalid(
        code::CLAIMED,
        format!(
            "{} is claimed by {} (holder {}, on {}) until {}",
            lease.task, lease.label, lease.holder, lease.host, lease.ends
        ),
    )
    .with_help(
        "work on another task (`small claim --next`), wait for the lease to end, or pass \
         --force (recorded in the entry)",
    ))
}

/// A write on a task a done record holds: this checkout's own goes on; another's is
/// refused without `force` (the task was finished elsewhere and not pulled yet).
fn done_elsewhere(lease: &Lease, own: bool, force: bool) -> OpResult<Option<String>> {
    if own {
        return Ok(None);
    }
    let outcome = lease
        .done
        .as_ref()
        .map_or("completed", |d| d.outcome.as_str());
    let at = lease.done.as_ref().map_or("", |d| d.at.as_str());
    if force {
        return Ok(Some(format!(
            "done record overridden with --force: {} was {outcome} by {} (holder {}) at {at}",
            lease.task, lease.label, lease.holder
        )));
    }
    Err(OpError::invalid(
        code::DONE,
        format!(
            "{} was {outcome} by {} (holder {}) at {at}",
            lease.task, lease.label, lease.holder
        ),
    )
    .with_help("pull (`small sync`) to see it, and work on another task (`small claim --next`)"))
}

/// After a checkpoint: a completed or cancelled task's lease held by this checkout becomes
/// a done record that holds the task until the remote's default branch shows it; a blocked
/// one is given back (best effort: a lease left behind ends with its TTL, and `small sync`
/// finishes what is left). The lease as it now is.
/// `seen` is what fencing read before the write.
pub fn after_checkpoint(
    ws: &Workspace,
    seen: &Seen,
    task: &str,
    status: &str,
    how: &Finish,
) -> Option<Lease> {
    let lease = seen
        .lease(task)
        .filter(|l| seen.is_mine(l) && l.state != "done")?;
    match status.trim().to_ascii_lowercase().as_str() {
        outcome @ ("completed" | "cancelled") => {
            let how = Finish {
                outcome: outcome.to_string(),
                ..how.clone()
            };
            done::finish(ws, lease, &how)
        }
        "blocked" => {
            let req = UnclaimRequest {
                task: lease.task_id.clone(),
                holder: Some(lease.holder.clone()),
                where_: Some(lease.remote.clone().map_or(Where::Local, Where::Remote)),
            };
            unclaim(ws, &req).ok().map(|out| out.lease)
        }
        _ => None,
    }
}

/// The task this checkout holds a live lease on, for a write that names none (`checkpoint
/// --status completed` in the agent loop): exactly one, else a usage error that says which.
pub fn held_task(seen: &Seen) -> OpResult<String> {
    let usage = |m: String| OpError::usage(crate::workspace::error::code::USAGE, m);
    let mut mine: Vec<&Lease> = seen
        .leases
        .iter()
        .filter(|l| l.live && seen.is_mine(l))
        .collect();
    // The same lease may be seen in the repository's refs and in a mirror.
    mine.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    mine.dedup_by(|a, b| a.task_id == b.task_id);
    match mine.len() {
        1 => Ok(mine[0].task_id.clone()),
        0 => Err(usage(
            "name the task with --task: this checkout holds no live lease".into(),
        )),
        _ => Err(usage(format!(
            "name the task with --task: this checkout holds leases on {}",
            mine.iter()
                .map(|l| l.task.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// This checkout's own lease: refused once it has ended (its end less the skew margin is
/// past: another may take it from then on); renewed when past half its TTL. A renewal that
/// finds the task taken meanwhile refuses; one that cannot reach the remote leaves the lease
/// as it is (it is still this holder's until its end).
fn own_lease(ws: &Workspace, lease: &Lease, force: bool) -> OpResult<Option<String>> {
    let ends = record::parse_time(&lease.ends).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    if record::after(record::now(), skew()?) >= ends {
        if force {
            return Ok(Some(format!(
                "claim overridden with --force: this checkout's lease on {} ended at {}",
                lease.task, lease.ends
            )));
        }
        return Err(OpError::invalid(
            code::CLAIM_ENDED,
            format!(
                "this checkout's lease on {} ends at {}: claim it again before you go on",
                lease.task, lease.ends
            ),
        )
        .with_help(format!(
            "`small claim {}` renews it, or says who took the task meanwhile",
            lease.task
        )));
    }
    match renew_seen_if_due(ws, lease, &lease.holder) {
        Err(e) if e.diagnostic.code == code::CLAIMED && !force => Err(e),
        _ => Ok(None),
    }
}
