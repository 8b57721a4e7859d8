//! Fencing: the writes on a task (`progress add`, `checkpoint`, `apply`, `handoff`) ask the
//! lease this checkout has seen before they write, so a checkout never works on a task that
//! another live holder has, and a holder whose lease ended claims again before it goes on.
//!
//! Only what this checkout has seen counts (its own refs and its mirrors of the remotes, as
//! [`super::seen_lease`] reads them): no write waits on the network, except the holder's
//! renewal of a lease past half its TTL. A workspace whose repository has no lease at all
//! pays one `git for-each-ref` per store.

use super::{code, holder_id, record, renew_if_due, seen_all, skew, unclaim, Lease};
use super::{UnclaimRequest, Where};
use crate::ops::{OpError, OpResult, Workspace};

/// A write's check against the task's lease. `Ok(Some(note))`: refused without `force`, so
/// the write goes on and records `note` (what it overrode).
pub fn before_write(ws: &Workspace, task: &str, force: bool) -> OpResult<Option<String>> {
    let Some(lease) = lease_of(ws, task) else {
        return Ok(None);
    };
    let me = holder_id(ws).ok();
    if me.as_deref() == Some(lease.holder.as_str()) {
        return own_lease(ws, &lease, force);
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

/// After a checkpoint: a completed, blocked or cancelled task's lease held by this checkout
/// is given back (best effort: a lease left behind ends with its TTL). The released lease.
pub fn after_checkpoint(ws: &Workspace, task: &str, status: &str) -> Option<Lease> {
    let finished = matches!(
        status.trim().to_ascii_lowercase().as_str(),
        "completed" | "blocked" | "cancelled"
    );
    if !finished {
        return None;
    }
    let lease = lease_of(ws, task)?;
    let me = holder_id(ws).ok()?;
    if lease.holder != me {
        return None;
    }
    let req = UnclaimRequest {
        task: lease.task_id.clone(),
        holder: Some(me),
        where_: Some(lease.remote.clone().map_or(Where::Local, Where::Remote)),
    };
    unclaim(ws, &req).ok().map(|out| out.lease)
}

/// The lease seen on `task` (its id or alias), the most recently renewed of the stores.
fn lease_of(ws: &Workspace, task: &str) -> Option<Lease> {
    let task = task.trim();
    if task.is_empty() {
        return None;
    }
    seen_all(ws)
        .into_iter()
        .filter(|l| l.task_id == task || l.task == task)
        .max_by(|a, b| a.renewed.cmp(&b.renewed))
}

/// This checkout's own lease: refused once it has ended (its end less the skew margin is
/// past: another may take it from then on); renewed when past half its TTL. A renewal that
/// finds the task taken meanwhile refuses; one that cannot reach the remote leaves the lease
/// as it is (it is still this holder's until its end).
fn own_lease(ws: &Workspace, lease: &Lease, force: bool) -> OpResult<Option<String>> {
    let ends = record::parse_time(&lease.ends).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    if record::after(record::now(), skew()) >= ends {
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
    match renew_if_due(ws, &lease.task_id, &lease.holder) {
        Err(e) if e.diagnostic.code == code::CLAIMED && !force => Err(e),
        _ => Ok(None),
    }
}
