//! Done records: a lease carries its task from the claim to the completion on the remote.
//!
//! A completed or cancelled checkpoint turns the holder's lease into a done record (a swap,
//! like every lease write) saying who finished the task, how, when and by which entry or
//! event; `small sync` adds the commit that carries it once pushed. Until the remote's
//! default branch shows the task finished, the record holds the task against every claim,
//! in every checkout, pulled or not. Then it is pruned (by `claims --prune`, or by any
//! claim that finds it) once a grace has passed since the record's last write (its
//! completion, or the stamp `small sync` adds after the push): `SMALL_CLAIM_TIMEOUT`, the
//! longest a fetch may take, plus the skew, so that a reader whose fetch began before the
//! push found the record or the completion. A completion that never reaches the remote is
//! reopened explicitly (`claim --reopen`), once the record is older than its TTL.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::ops::{OpError, OpResult, Workspace};
use crate::state::Task;

use super::branch::Finished;
use super::record::{self, Done, Record, Reopened};
use super::store::{Store, Stored, Swap};
use super::{code, ClaimOutcome, Claimant, Lease, Seen, Where, ROUNDS};

/// How a task was finished, for its done record.
#[derive(Debug, Clone, Default)]
pub struct Finish {
    /// `completed` or `cancelled`.
    pub outcome: String,
    /// v1: the progress entry's timestamp.
    pub entry: String,
    /// 2.0.0: the event's id.
    pub event: String,
}

/// After a completed or cancelled checkpoint: this checkout's `lease` (as seen) becomes a
/// done record, by a swap on what its place holds now (best effort: a remote that cannot
/// be reached leaves the lease held, and `small sync` finishes it). The done record.
pub(crate) fn finish(ws: &Workspace, lease: &Lease, how: &Finish) -> Option<Lease> {
    let store = Store::open(ws, Some(&where_of(lease))).ok()?;
    let cur = store.current(&lease.task_id).ok()??;
    let rec = cur.ok()?.clone();
    if rec.holder != lease.holder || rec.done.is_some() {
        return None;
    }
    let now = record::now();
    let done = Record {
        generation: rec.generation.saturating_add(1),
        renewed: record::format_time(now),
        ends: record::format_time(record::after(now, Duration::from_secs(rec.ttl_seconds))),
        done: Some(Done {
            outcome: how.outcome.clone(),
            at: record::format_time(now),
            entry: how.entry.clone(),
            event: how.event.clone(),
            commit: String::new(),
            branch: String::new(),
        }),
        ..rec
    };
    let sha = store.write(&done).ok()?;
    match store
        .swap(&lease.task_id, Some(&cur.sha), Some(&sha))
        .ok()?
    {
        Swap::Done => Some(super::lease(
            &store,
            &lease.task_id,
            &done,
            now,
            Duration::ZERO,
        )),
        Swap::Lost => None,
    }
}

/// After `small sync` pushed `commit` to `branch`: this holder's done records (as seen,
/// wherever they live) that name no commit yet name this one. The records stamped.
pub(crate) fn stamp_mine(ws: &Workspace, commit: &str, branch: &str) -> Vec<Lease> {
    let seen = Seen::read(ws);
    let Some(me) = seen.me.clone() else {
        return Vec::new();
    };
    let mut places: Vec<Where> = seen
        .leases
        .iter()
        .filter(|l| seen.is_mine(l) && l.done.as_ref().is_some_and(|d| d.commit.is_empty()))
        .map(where_of)
        .collect();
    places.dedup();
    places
        .iter()
        .flat_map(|w| stamp(ws, &me, w, commit, branch))
        .collect()
}

fn stamp(ws: &Workspace, me: &str, where_: &Where, commit: &str, branch: &str) -> Vec<Lease> {
    let Ok(store) = Store::open(ws, Some(where_)) else {
        return Vec::new();
    };
    let Ok(listing) = store.all() else {
        return Vec::new();
    };
    let now = record::now();
    let mut out = Vec::new();
    for s in &listing.leases {
        let Some(rec) = s.ok().filter(|r| r.holder == me) else {
            continue;
        };
        let Some(done) = rec.done.as_ref().filter(|d| d.commit.is_empty()) else {
            continue;
        };
        let stamped = Record {
            generation: rec.generation.saturating_add(1),
            renewed: record::format_time(now),
            done: Some(Done {
                commit: commit.to_string(),
                branch: branch.to_string(),
                ..done.clone()
            }),
            ..rec.clone()
        };
        let Ok(sha) = store.write(&stamped) else {
            continue;
        };
        if store.swap(&s.task, Some(&s.sha), Some(&sha)).ok() == Some(Swap::Done) {
            out.push(super::lease(&store, &s.task, &stamped, now, Duration::ZERO));
        }
    }
    out
}

/// This checkout's live leases (as seen) on tasks the workspace now shows finished, each
/// turned into a done record: what a checkpoint could not finish (the remote was away),
/// `small sync` finishes before it pushes.
pub(crate) fn finish_open(ws: &Workspace) -> Vec<Lease> {
    let seen = Seen::read(ws);
    let mine: Vec<&Lease> = seen
        .leases
        .iter()
        .filter(|l| seen.is_mine(l) && l.state != "done" && l.state != "damaged")
        .collect();
    if mine.is_empty() {
        return Vec::new();
    }
    let tasks = super::load_tasks(ws).unwrap_or_default();
    mine.iter()
        .filter_map(|l| {
            let t = tasks.iter().find(|t| t.id == l.task_id)?;
            let outcome = t.status.trim();
            if outcome != "completed" && outcome != "cancelled" {
                return None;
            }
            let how = Finish {
                outcome: outcome.to_string(),
                ..Finish::default()
            };
            finish(ws, l, &how)
        })
        .collect()
}

/// Remove the done records among `leases` whose tasks `finished` shows finished, once the
/// grace (the git bound plus `skew`) has passed since their last write. All in one push
/// for a remote (each ref on its own lease, so a record changed meanwhile stays). The
/// records removed.
pub(crate) fn prune(
    store: &Store,
    leases: &[Stored],
    finished: &Finished,
    skew: Duration,
) -> OpResult<Vec<Stored>> {
    let now = record::now();
    let grace = store.git.timeout().saturating_add(skew);
    let due: Vec<&Stored> = leases
        .iter()
        .filter(|s| {
            let Some(r) = s.ok() else { return false };
            let Some(d) = &r.done else { return false };
            let shown = finished.outcome(&s.task).is_some();
            // The record's last write: its completion, or the stamp after its push.
            let since = [&d.at, &r.renewed]
                .into_iter()
                .filter_map(|t| record::parse_time(t))
                .max()
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            shown && now >= record::after(since, grace)
        })
        .collect();
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let gone = store.delete_all(
        &due.iter()
            .map(|s| (s.task.as_str(), s.sha.as_str()))
            .collect::<Vec<_>>(),
    )?;
    Ok(due
        .into_iter()
        .filter(|s| gone.contains(&s.task))
        .cloned()
        .collect())
}

/// The refusal of a claim on a task a done record holds: who finished it, where the
/// completion is, and what to do.
pub(crate) fn refusal(task: &Task, r: &Record, finished: &Finished) -> OpError {
    let d = r.done.as_ref();
    let outcome = d.map_or("completed", |d| d.outcome.as_str());
    let at = d.map_or("", |d| d.at.as_str());
    let place = match d {
        Some(d) if !d.commit.is_empty() => format!(
            "in commit {} on {}",
            &d.commit[..d.commit.len().min(12)],
            if d.branch.is_empty() {
                "the remote"
            } else {
                &d.branch
            }
        ),
        _ => "not pushed yet".to_string(),
    };
    let pushed = d.is_some_and(|d| !d.commit.is_empty());
    let help = if pushed || finished.outcome(&task.id).is_some() {
        "pull (`small sync`) to see it".to_string()
    } else {
        format!(
            "pull (`small sync`) once its holder has pushed it; if that completion is lost, \
             `small claim {} --reopen` takes the task once the record is older than its TTL",
            task.name()
        )
    };
    OpError::invalid(
        code::DONE,
        format!(
            "{} was {outcome} by {} (holder {}) at {at}, {place}",
            task.name(),
            r.label,
            r.holder
        ),
    )
    .with_help(help)
}

/// The refusal of a claim on a task that is finished without a record: in this checkout's
/// plan, or on the default branch.
pub(crate) fn finished_refusal(task: &Task, outcome: &str, finished: &Finished) -> OpError {
    let place = if finished.outcome(&task.id).is_some() && !finished.contained() {
        format!("on {}", finished.branch)
    } else {
        "in this checkout".to_string()
    };
    let help = if place.starts_with("on ") {
        "pull (`small sync`) to see it; claim another task (`small claim --next`)"
    } else {
        "claim another task (`small claim --next`)"
    };
    OpError::invalid(code::DONE, format!("{} is {outcome} {place}", task.name())).with_help(help)
}

/// How `task` is finished outside any record: its status in this checkout's plan, else on
/// the default branch when this checkout has not caught up with it.
pub(crate) fn finished_elsewhere<'a>(finished: &'a Finished, task: &'a Task) -> Option<&'a str> {
    let local = task.status.trim();
    if local == "completed" || local == "cancelled" {
        return Some(local);
    }
    let shown = finished.outcome(&task.id).or_else(|| {
        (!task.alias.is_empty())
            .then(|| finished.outcome(&task.alias))
            .flatten()
    });
    shown.filter(|_| !finished.contained())
}

/// The status of a task finished in a checkout that has not pushed it yet: not offered,
/// and not a completed dependency (its work is not on the remote for a dependent to pull).
pub(crate) const UNPUBLISHED: &str = "finished, not pushed";

/// The tasks with the statuses the swarm knows: a pushed done record's outcome, or the
/// default branch's where this checkout has not caught up with it; a done record not
/// pushed yet makes its task [`UNPUBLISHED`] (unless this checkout has that completion).
pub(crate) fn with_finished(
    tasks: &[Task],
    leases: &BTreeMap<String, Stored>,
    finished: &Finished,
) -> Vec<Task> {
    let mut out = tasks.to_vec();
    for t in &mut out {
        let local = matches!(t.status.trim(), "completed" | "cancelled");
        let recorded = leases
            .get(&t.id)
            .and_then(Stored::ok)
            .and_then(|r| r.done.as_ref());
        let outcome = match recorded {
            Some(d) if !d.commit.is_empty() => Some(d.outcome.clone()),
            Some(_) if local => None,
            Some(_) => Some(UNPUBLISHED.to_string()),
            None => finished_elsewhere(finished, t).map(str::to_string),
        };
        if let Some(o) = outcome {
            t.status = o;
        }
    }
    out
}

/// The dependencies of `task` finished on the remote (`swarm`) that this checkout's plan
/// (`local`) does not show finished yet: pull them before starting the task.
pub(crate) fn to_pull(task: &Task, local: &[Task], swarm: &[Task]) -> Vec<String> {
    let finished = |ts: &[Task], d: &str| {
        ts.iter()
            .find(|t| t.id == d || (!t.alias.is_empty() && t.alias == d))
            .is_some_and(|t| matches!(t.status.trim(), "completed" | "cancelled"))
    };
    task.dependencies
        .iter()
        .filter(|d| finished(swarm, d) && !finished(local, d))
        .cloned()
        .collect()
}

/// `claim TASK --reopen`: take a task whose done record is older than its TTL while the
/// default branch (fetched just now) still shows it open. The new lease names the
/// completion it set aside. Without a done record, an ordinary claim.
pub(super) fn reopen(store: &Store, me: &Claimant, task: &Task) -> OpResult<ClaimOutcome> {
    for _ in 0..ROUNDS {
        store.refresh()?;
        let (cur, tip) = store.current_and_tree(&task.id, true)?;
        let Some(rec) = cur
            .as_ref()
            .and_then(Stored::ok)
            .filter(|r| r.done.is_some())
        else {
            return super::claim_one(store, me, task);
        };
        let d = rec.done.as_ref().map(|d| (d.outcome.clone(), d.at.clone()));
        let (outcome, done_at) = d.unwrap_or_default();
        let finished = super::branch::finished(store, tip.tree)?;
        if finished.outcome(&task.id).is_some() {
            return Err(OpError::invalid(
                code::DONE,
                format!(
                    "{} is {} on {}: its completion reached the remote, nothing to reopen",
                    task.name(),
                    finished.outcome(&task.id).unwrap_or("finished"),
                    finished.branch
                ),
            )
            .with_help("pull (`small sync`) to see it"));
        }
        let since = record::parse_time(&done_at).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
        let ttl = Duration::from_secs(rec.ttl_seconds).min(super::MAX_TTL);
        let open_at = record::after(since, ttl);
        if record::now() < open_at {
            return Err(OpError::invalid(
                code::DONE,
                format!(
                    "{} was {outcome} by {} at {done_at}; it can be reopened from {} (the \
                     record's TTL), if the remote still shows it open then",
                    task.name(),
                    rec.label,
                    record::format_time(open_at)
                ),
            )
            .with_help("its holder may still push it: wait, or ask them"));
        }
        let (mut new, _) = me.record(task, cur.as_ref());
        new.reopened = Some(Reopened {
            holder: rec.holder.clone(),
            label: rec.label.clone(),
            outcome,
            done_at,
            at: new.renewed.clone(),
        });
        let sha = store.write(&new)?;
        let expected = cur.as_ref().map(|c| c.sha.as_str());
        if store.swap(&task.id, expected, Some(&sha))? == Swap::Done {
            let now = record::now();
            return Ok(ClaimOutcome {
                status: "reopened",
                lease: super::lease(store, &task.id, &new, now, me.skew),
                took_over: cur.as_ref().map(|c| super::view(store, c, now, me.skew)),
                pull_first: Vec::new(),
            });
        }
    }
    Err(super::lost_races(task))
}

/// The place a seen lease lives.
fn where_of(l: &Lease) -> Where {
    l.remote.clone().map_or(Where::Local, Where::Remote)
}
