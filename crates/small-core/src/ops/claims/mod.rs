//! `claim`, `unclaim`, `claims`: a lease on a task, held as a git ref and taken by
//! compare-and-swap, so that agents on different machines never start the same task twice.
//!
//! A lease is the ref `refs/small/claims/<project>/<task>` pointing to a blob holding one
//! JSON [`Record`] (who holds it, until when, its generation). `<project>` names the
//! workspace inside the repository: its directory relative to the top level as one ref
//! component (`_` for the top level; [`record::ref_component`]); `<task>` is the task's id.
//! The refs live on a remote (default `origin`), written with `git push
//! --force-with-lease` and read into the mirror `refs/small/seen/<remote>/<project>/` (what
//! this checkout has seen), or, with [`Where::Local`], in the repository's own refs, shared
//! by its worktrees. Nothing is written under `.small/`.
//!
//! A lease ends at its holder's clock plus its TTL; another checkout treats it as held until
//! that end plus `SMALL_CLAIM_SKEW` (default 30 s), then may take it over by a swap on the
//! record it read (one generation more). The holder renews by the same swap. The other
//! front ends and the fencing of writes read [`seen_lease`] and [`holder_id`] and call
//! [`renew_if_due`] (docs/decisions/0149-claims-are-git-refs.md).

pub mod fence;
mod git;
pub mod record;
mod store;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::authoring::Error as AuthoringError;
use crate::ops::{OpError, OpResult, Profile, Workspace};
use crate::state::Task;

pub use git::TIMEOUT_ENV;
pub use record::Record;
use store::{Store, Stored, Swap};

/// Codes of the claim refusals and failures (docs/rules.md, "Authoring").
pub mod code {
    /// Another holder's lease is live.
    pub const CLAIMED: &str = "claimed";
    /// `claim --next`: every ready task is held (or none is ready).
    pub const NO_FREE_TASK: &str = "no-free-task";
    /// `unclaim` of a task nobody holds.
    pub const NOT_CLAIMED: &str = "not-claimed";
    /// `unclaim` of another holder's lease.
    pub const NOT_HOLDER: &str = "not-holder";
    /// A write by a holder whose own lease has ended (fencing).
    pub const CLAIM_ENDED: &str = "claim-ended";
    /// The claims cannot be read or written: no repository, no remote, git failed.
    pub const STORE: &str = "claim-store";
}

/// The variable giving the clock skew a taker allows before a lease counts as ended.
pub const SKEW_ENV: &str = "SMALL_CLAIM_SKEW";
/// The variable naming the agent (the default label).
pub const AGENT_ENV: &str = "SMALL_AGENT";
/// A lease's default length.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 60);
const DEFAULT_SKEW: Duration = Duration::from_secs(30);
/// How many lost swaps a claim of one task re-reads after before it gives up.
const ROUNDS: usize = 8;

/// Where the leases live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Where {
    /// On this remote (by name), shared by every clone that pushes there.
    Remote(String),
    /// In this repository's refs, shared by its worktrees only.
    Local,
}

impl Where {
    /// The place a front end's `--remote NAME` / `--local` name; `None`: the default
    /// (the remote `origin`). `local` wins over a remote.
    pub fn from_flags(remote: Option<String>, local: bool) -> Option<Where> {
        if local {
            Some(Where::Local)
        } else {
            remote.map(Where::Remote)
        }
    }
}

/// What to claim. `where_: None` is the remote `origin`, when the repository has it.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    /// The task (id or alias); ignored with `next`.
    pub task: Option<String>,
    /// Take the next ready task that no live lease holds.
    pub next: bool,
    pub ttl: Duration,
    /// Who works here (default `$SMALL_AGENT`, else `$USER@host`).
    pub label: Option<String>,
    /// The holder id (default: this checkout's, [`holder_id`]).
    pub holder: Option<String>,
    pub where_: Option<Where>,
}

/// What to release.
#[derive(Debug, Clone)]
pub struct UnclaimRequest {
    pub task: String,
    pub holder: Option<String>,
    pub where_: Option<Where>,
}

/// A lease taken, renewed or released (docs/json-output.md, "Claims").
#[derive(Debug, Clone, Serialize)]
pub struct ClaimOutcome {
    /// `claimed`, `renewed` or `released`.
    pub status: &'static str,
    #[serde(flatten)]
    pub lease: Lease,
    /// The ended lease this claim took over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub took_over: Option<Lease>,
}

/// One lease as read (docs/json-output.md, "Claims").
#[derive(Debug, Clone, Serialize)]
pub struct Lease {
    /// The task's name (its alias, else its id).
    pub task: String,
    pub task_id: String,
    pub holder: String,
    pub label: String,
    pub host: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub taken: String,
    pub renewed: String,
    pub ends: String,
    pub ttl_seconds: u64,
    pub generation: u64,
    /// Whether another checkout would treat it as held now (its end plus the skew is ahead).
    pub live: bool,
    /// The remote it lives on (`null`: this repository's refs).
    pub remote: Option<String>,
    #[serde(rename = "ref")]
    pub ref_name: String,
}

/// Every lease of the workspace.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimsOutcome {
    pub remote: Option<String>,
    /// The workspace's component in the ref names.
    pub project: String,
    pub claims: Vec<Lease>,
}

/// Take the lease on a task (`req.next`: on the next free ready task), or renew the one
/// this holder has.
pub fn claim(ws: &Workspace, req: &ClaimRequest) -> OpResult<ClaimOutcome> {
    let tasks = load_tasks(ws)?;
    let store = Store::open(ws, req.where_.as_ref())?;
    let me = Claimant::new(ws, req)?;
    if req.next {
        return claim_next(&store, &me, &tasks);
    }
    let name = req.task.as_deref().unwrap_or("");
    let task = resolve(&tasks, name)?;
    claim_one(&store, &me, task)
}

/// Release the lease this holder has on a task.
pub fn unclaim(ws: &Workspace, req: &UnclaimRequest) -> OpResult<ClaimOutcome> {
    let tasks = load_tasks(ws)?;
    let task = resolve(&tasks, &req.task)?;
    let store = Store::open(ws, req.where_.as_ref())?;
    let holder = match &req.holder {
        Some(h) => h.clone(),
        None => holder_id(ws)?,
    };
    let (now, skew) = (record::now(), skew());
    for _ in 0..ROUNDS {
        store.refresh()?;
        let Some(cur) = store.current(&task.id)? else {
            return Err(OpError::invalid(
                code::NOT_CLAIMED,
                format!("{} is not claimed", task.name()),
            ));
        };
        if cur.record.holder != holder {
            return Err(OpError::invalid(
                code::NOT_HOLDER,
                format!(
                    "{} is held by {}, not by this checkout; only the holder releases it",
                    task.name(),
                    describe(&cur.record)
                ),
            ));
        }
        if store.swap(&task.id, Some(&cur.sha), None)? == Swap::Done {
            return Ok(ClaimOutcome {
                status: "released",
                lease: lease(&store, &cur.record, now, skew),
                took_over: None,
            });
        }
    }
    Err(lost_races(task))
}

/// Every lease of the workspace, live or ended (read from the remote, or the local refs).
pub fn list(ws: &Workspace, where_: Option<&Where>) -> OpResult<ClaimsOutcome> {
    let store = Store::open(ws, where_)?;
    store.refresh()?;
    let (now, skew) = (record::now(), skew());
    Ok(ClaimsOutcome {
        remote: store.remote.clone(),
        project: store.project.clone(),
        claims: store
            .all()?
            .iter()
            .map(|s| lease(&store, &s.record, now, skew))
            .collect(),
    })
}

/// The lease on `task` (id or alias) this checkout last saw, without the network: the
/// repository's own claim refs and each remote's mirror, the most recently renewed. `None`
/// outside a repository or when none was seen.
pub fn seen_lease(ws: &Workspace, task: &str) -> Option<Lease> {
    let id = load_tasks(ws)
        .ok()
        .and_then(|tasks| resolve(&tasks, task).ok().map(|t| t.id.clone()))
        .unwrap_or_else(|| task.to_string());
    let (now, skew) = (record::now(), skew());
    Store::seen(ws)
        .ok()?
        .iter()
        .filter_map(|store| {
            let s = store.current(&id).ok()??;
            Some(lease(store, &s.record, now, skew))
        })
        .max_by(|a, b| a.renewed.cmp(&b.renewed))
}

/// Every lease this checkout has seen, without the network (its own refs and each
/// remote's mirror); empty outside a repository or when there is none.
pub fn seen_all(ws: &Workspace) -> Vec<Lease> {
    if !store::any_seen(ws) {
        return Vec::new();
    }
    let (now, skew) = (record::now(), skew());
    let Ok(stores) = Store::seen(ws) else {
        return Vec::new();
    };
    stores
        .iter()
        .flat_map(|store| {
            store
                .all()
                .unwrap_or_default()
                .iter()
                .map(|s| lease(store, &s.record, now, skew))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether the workspace is in a git repository, where leases can be kept.
pub fn in_repository(ws: &Workspace) -> bool {
    Store::seen(ws).is_ok()
}

/// The tasks other holders have live leases on, as this checkout has seen them (for
/// `resume` and the session hooks: the next task skips them).
pub fn claimed_by_others(ws: &Workspace) -> Vec<crate::authoring::resume::ClaimedView> {
    let leases = seen_all(ws);
    if leases.is_empty() {
        return Vec::new();
    }
    let me = holder_id(ws).ok();
    leases
        .into_iter()
        .filter(|l| l.live && me.as_deref() != Some(l.holder.as_str()))
        .map(|l| crate::authoring::resume::ClaimedView {
            task: l.task,
            task_id: l.task_id,
            label: l.label,
            ends: l.ends,
        })
        .collect()
}

/// Renew `holder`'s lease on `task` where it was seen, when half its TTL has passed since
/// it was last renewed. `None`: not due, or not this holder's.
pub fn renew_if_due(ws: &Workspace, task: &str, holder: &str) -> OpResult<Option<ClaimOutcome>> {
    let Some(seen) = seen_lease(ws, task) else {
        return Ok(None);
    };
    if seen.holder != holder {
        return Ok(None);
    }
    let renewed = record::parse_time(&seen.renewed).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let ttl = Duration::from_secs(seen.ttl_seconds);
    if record::now() < record::after(renewed, ttl / 2) {
        return Ok(None);
    }
    let req = ClaimRequest {
        task: Some(seen.task_id.clone()),
        next: false,
        ttl,
        label: Some(seen.label.clone()),
        holder: Some(holder.to_string()),
        where_: Some(seen.remote.clone().map_or(Where::Local, Where::Remote)),
    };
    claim(ws, &req).map(Some)
}

/// This checkout's (or worktree's) holder id: random, made on first use and kept in the
/// repository's per-worktree directory (`git rev-parse --git-path small/claim-holder`),
/// never under `.small/`.
pub fn holder_id(ws: &Workspace) -> OpResult<String> {
    let git = git::Git::new(&ws.v1_root()?);
    let rel = git.ok(&["rev-parse", "--git-path", "small/claim-holder"], None)?;
    let path = git.dir.join(rel.trim_end_matches(['\n', '\r']));
    read_or_make_holder(&path).map_err(|e| {
        git::system(format!(
            "cannot keep the holder id in {}: {e}",
            path.display()
        ))
    })
}

fn read_or_make_holder(path: &std::path::Path) -> std::io::Result<String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let id = text.trim();
        if !id.is_empty() {
            return Ok(id.to_string());
        }
    }
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let id = hex::encode(bytes);
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    // Published by a hard link, which fails if another process was first: its id wins.
    let tmp = dir.join(format!("claim-holder.{id}.tmp"));
    std::fs::write(&tmp, format!("{id}\n"))?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(std::fs::read_to_string(path)?.trim().to_string())
        }
        Err(e) => Err(e),
    }
}

/// Who is claiming, and for how long.
struct Claimant {
    holder: String,
    label: String,
    host: String,
    session: Option<String>,
    ttl: Duration,
    skew: Duration,
}

impl Claimant {
    fn new(ws: &Workspace, req: &ClaimRequest) -> OpResult<Claimant> {
        let host = host_name();
        let label = req
            .label
            .clone()
            .or_else(|| std::env::var(AGENT_ENV).ok())
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| {
                let user = std::env::var("USER")
                    .or_else(|_| std::env::var("USERNAME"))
                    .unwrap_or_else(|_| "someone".into());
                format!("{user}@{host}")
            });
        if req.ttl.is_zero() {
            return Err(OpError::usage(
                crate::authoring::error::code::USAGE,
                "a lease needs a positive TTL",
            ));
        }
        let session = (ws.profile == Profile::V2)
            .then(|| crate::v2::write::resolve_session(&ws.root, None).ok())
            .flatten();
        Ok(Claimant {
            holder: match &req.holder {
                Some(h) => h.clone(),
                None => holder_id(ws)?,
            },
            label,
            host,
            session,
            ttl: req.ttl,
            skew: skew(),
        })
    }

    /// The record this claimant writes over `cur` (none: a fresh lease): a renewal of its
    /// own, else a new lease one generation past the ended one.
    fn record(&self, task: &Task, cur: Option<&Record>) -> (Record, &'static str) {
        let now = record::now();
        let stamp = record::format_time(now);
        let ends = record::format_time(record::after(now, self.ttl));
        let mine = cur.filter(|r| r.holder == self.holder);
        let rec = Record {
            version: record::RECORD_VERSION,
            task: task.id.clone(),
            alias: task.alias.clone(),
            holder: self.holder.clone(),
            label: self.label.clone(),
            host: self.host.clone(),
            session: self.session.clone(),
            taken: mine.map_or_else(|| stamp.clone(), |r| r.taken.clone()),
            renewed: stamp,
            ends,
            ttl_seconds: self.ttl.as_secs().max(1),
            generation: cur.map_or(1, |r| r.generation + 1),
        };
        (rec, if mine.is_some() { "renewed" } else { "claimed" })
    }
}

/// Claim `task`: swap until this claimant holds it, or refuse when another live holder does.
fn claim_one(store: &Store, me: &Claimant, task: &Task) -> OpResult<ClaimOutcome> {
    // First on what this checkout last saw: taking a task seen free, or renewing this
    // holder's own lease, is one round trip. The swap is on the remote's value, so a stale
    // view only loses it, and the remote is then read as below.
    let seen = store.current(&task.id)?;
    if seen.as_ref().is_none_or(|c| c.record.holder == me.holder) {
        if let Some(out) = try_swap(store, me, task, seen.as_ref())? {
            return Ok(out);
        }
    }
    for _ in 0..ROUNDS {
        store.refresh()?;
        let cur = store.current(&task.id)?;
        if let Some(c) = cur.as_ref().filter(|c| c.record.holder != me.holder) {
            if c.record.live_at(record::now(), me.skew) {
                return Err(held(task, &c.record));
            }
        }
        if let Some(out) = try_swap(store, me, task, cur.as_ref())? {
            return Ok(out);
        }
    }
    Err(lost_races(task))
}

/// `claim --next`: the ready tasks in the queue's order, each free one tried by a swap
/// until one is ours.
fn claim_next(store: &Store, me: &Claimant, tasks: &[Task]) -> OpResult<ClaimOutcome> {
    let ready = crate::spec::queue::ready(tasks);
    if ready.is_empty() {
        return Err(OpError::invalid(code::NO_FREE_TASK, "no task is ready"));
    }
    store.refresh()?;
    let mut leases: BTreeMap<String, Stored> = store
        .all()?
        .into_iter()
        .map(|s| (s.record.task.clone(), s))
        .collect();
    for task in &ready {
        let cur = leases.remove(&task.id);
        if cur
            .as_ref()
            .is_some_and(|c| c.record.live_at(record::now(), me.skew))
        {
            continue;
        }
        if let Some(out) = try_swap(store, me, task, cur.as_ref())? {
            return Ok(out);
        }
    }
    Err(OpError::invalid(
        code::NO_FREE_TASK,
        format!(
            "no ready task is free: {} ready, all held by live leases",
            ready.len()
        ),
    )
    .with_help("`small claims` lists the leases"))
}

/// Write this claimant's record over `cur` and swap it in; `None` when someone else
/// changed the ref first.
fn try_swap(
    store: &Store,
    me: &Claimant,
    task: &Task,
    cur: Option<&Stored>,
) -> OpResult<Option<ClaimOutcome>> {
    let (rec, status) = me.record(task, cur.map(|c| &c.record));
    let sha = store.write(&rec)?;
    if store.swap(&task.id, cur.map(|c| c.sha.as_str()), Some(&sha))? == Swap::Lost {
        return Ok(None);
    }
    let now = record::now();
    Ok(Some(ClaimOutcome {
        status,
        lease: lease(store, &rec, now, me.skew),
        took_over: cur
            .filter(|c| c.record.holder != me.holder)
            .map(|c| lease(store, &c.record, now, me.skew)),
    }))
}

fn lease(store: &Store, r: &Record, now: time::OffsetDateTime, skew: Duration) -> Lease {
    Lease {
        task: r.name().to_string(),
        task_id: r.task.clone(),
        holder: r.holder.clone(),
        label: r.label.clone(),
        host: r.host.clone(),
        session: r.session.clone(),
        taken: r.taken.clone(),
        renewed: r.renewed.clone(),
        ends: r.ends.clone(),
        ttl_seconds: r.ttl_seconds,
        generation: r.generation,
        live: r.live_at(now, skew),
        remote: store.remote.clone(),
        ref_name: store.claim_ref(&r.task),
    }
}

/// The refusal of a task another live lease holds: whose, and until when.
fn held(task: &Task, r: &Record) -> OpError {
    OpError::invalid(
        code::CLAIMED,
        format!("{} is claimed by {}", task.name(), describe(r)),
    )
    .with_help("claim another task (`small claim --next`), or wait until the lease ends")
}

/// `alice (holder 3f2a…, until 2026-11-29T04:00:00Z)`.
fn describe(r: &Record) -> String {
    format!("{} (holder {}, until {})", r.label, r.holder, r.ends)
}

fn lost_races(task: &Task) -> OpError {
    git::system(format!(
        "the lease on {} changed under every attempt ({ROUNDS}); try again",
        task.name()
    ))
}

/// The tasks of the workspace (either profile), as status reads them.
fn load_tasks(ws: &Workspace) -> OpResult<Vec<Task>> {
    let root = ws.v1_root()?;
    let loc = crate::workspace::Location {
        small_dir: ws.small_dir.clone(),
        root,
    };
    let opts = crate::state::LoadOptions {
        recent: 0,
        audit: false,
    };
    Ok(crate::state::load_with_cache(&loc, &opts, true)
        .tasks
        .unwrap_or_default())
}

/// The task `name` (id or alias), else the unknown-task refusal.
fn resolve<'a>(tasks: &'a [Task], name: &str) -> OpResult<&'a Task> {
    tasks
        .iter()
        .find(|t| t.id == name || (!t.alias.is_empty() && t.alias == name))
        .ok_or_else(|| {
            let known: Vec<&str> = tasks.iter().map(Task::name).collect();
            AuthoringError::unknown_task(name, &known).into()
        })
}

/// `SMALL_CLAIM_SKEW` (seconds, or `30s`, `2m`), else 30 s.
fn skew() -> Duration {
    std::env::var(SKEW_ENV)
        .ok()
        .and_then(|s| crate::authoring::txn::parse_lock_timeout(&s))
        .unwrap_or(DEFAULT_SKEW)
}

/// This machine's name.
fn host_name() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer it is given.
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if rc == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            let name = String::from_utf8_lossy(&buf[..end]).trim().to_string();
            if !name.is_empty() {
                return name;
            }
        }
    }
    std::env::var("COMPUTERNAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "localhost".into())
}

#[cfg(all(test, unix))]
mod tests;
