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
//! record it read (one generation more). The holder renews by the same swap. When the
//! holder completes or cancels the task, the lease becomes a *done* record that holds the
//! task until the remote's default branch shows the completion ([`done`]); the branch is
//! fetched with the leases, so a checkout that has not pulled still sees the task as done.
//! The other front ends and the fencing of writes read [`seen_lease`] and [`holder_id`] and
//! call [`renew_if_due`] (docs/decisions/0149-claims-are-git-refs.md,
//! docs/decisions/0153-a-lease-carries-the-task-to-its-end.md).

mod branch;
pub(crate) mod done;
pub mod fence;
pub(crate) mod git;
pub mod record;
mod store;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::ops::{OpError, OpResult, Workspace};
use crate::state::Task;
use crate::workspace::error::Error as AuthoringError;

pub use done::Finish;
pub use git::{stop_running as stop_git, TIMEOUT_ENV};
pub use record::Record;
use store::{Store, Stored, Swap};

/// Codes of the claim refusals and failures (docs/rules.md, "Authoring").
pub mod code {
    /// Another holder's lease is live.
    pub const CLAIMED: &str = "claimed";
    /// The task is done: a done record holds it, or the default branch shows it finished.
    pub const DONE: &str = "done";
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
/// The longest lease (a longer `--ttl` is refused): a lease left behind by a crashed agent
/// must end within a working week.
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
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
    /// Take a task whose done record is older than its TTL while the default branch still
    /// shows it open (its completion never reached the remote).
    pub reopen: bool,
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
    /// `claimed`, `renewed`, `reopened`, `released` or `done`.
    pub status: &'static str,
    #[serde(flatten)]
    pub lease: Lease,
    /// The ended lease this claim took over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub took_over: Option<Lease>,
    /// Dependencies of the task finished on the remote that this checkout has not pulled:
    /// run `small sync` before starting it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pull_first: Vec<String>,
}

impl crate::ops::report::Report for ClaimOutcome {
    /// `claimed task-3 until 2026-11-29T04:00:00Z (holder alice, generation 1)`, and the
    /// dependencies to pull first.
    fn text(&self) -> String {
        let l = &self.lease;
        let mut o = match self.status {
            "released" => format!("released {} (holder {})\n", l.task, l.label),
            status => format!(
                "{status} {} until {} (holder {}, generation {})\n",
                l.task, l.ends, l.label, l.generation
            ),
        };
        if !self.pull_first.is_empty() {
            o.push_str(&format!(
                "{} depends on {}, finished on the remote but not here: run `small sync` before you start\n",
                l.task,
                self.pull_first.join(", ")
            ));
        }
        o
    }
}

/// One lease as read (docs/json-output.md, "Claims").
#[derive(Debug, Clone, Serialize)]
pub struct Lease {
    /// The task's name (its alias, else its id), as one line of at most
    /// [`record::MAX_TEXT_CHARS`] characters; `task_id` is the id itself.
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
    /// `held`, `expired`, `done` or `damaged`.
    pub state: &'static str,
    /// A done record: how and when the task was finished, and by what.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<record::Done>,
    /// A lease taken with `--reopen`: the completion it set aside.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reopened: Option<record::Reopened>,
    /// A damaged record: why it cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The remote it lives on (`null`: this repository's refs).
    pub remote: Option<String>,
    #[serde(rename = "ref")]
    pub ref_name: String,
}

impl Lease {
    /// One lease as a line: `task-3  alice  held until …  generation 2`.
    pub fn row(&self) -> String {
        match (self.state, &self.done, &self.problem) {
            ("done", Some(d), _) => {
                let place = if d.commit.is_empty() {
                    "not pushed yet".to_string()
                } else {
                    format!("commit {}", &d.commit[..d.commit.len().min(12)])
                };
                format!(
                    "{}  {}  done ({} at {}, {place})  generation {}",
                    self.task, self.label, d.outcome, d.at, self.generation
                )
            }
            ("damaged", _, Some(p)) => format!("{}  damaged: {p}", self.task),
            (state, _, _) => format!(
                "{}  {}  {state} until {}  generation {}",
                self.task, self.label, self.ends, self.generation
            ),
        }
    }
}

impl Lease {
    /// Whether it keeps other checkouts off the task now: a live lease or a done record.
    pub fn holds(&self) -> bool {
        self.live || self.state == "done"
    }
}

/// Every lease of the workspace.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimsOutcome {
    pub remote: Option<String>,
    /// The workspace's component in the ref names.
    pub project: String,
    pub claims: Vec<Lease>,
    /// `--prune`: the done records removed, their tasks finished on the default branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruned: Option<Vec<Lease>>,
    /// Refs under the project's namespace that name no task (not written by small).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stray_refs: Vec<String>,
    /// Refs past the most one read considers, not read.
    #[serde(skip_serializing_if = "is_zero")]
    pub unread_refs: usize,
}

impl crate::ops::report::Report for ClaimsOutcome {
    /// The leases, one a line, after what was pruned; stray and unread refs last.
    fn text(&self) -> String {
        use crate::ops::report::outln;
        let mut o = String::new();
        let place = self.remote.as_deref().unwrap_or("local refs");
        if let Some(pruned) = &self.pruned {
            outln!(
                o,
                "Pruned: {} done record(s) the default branch shows",
                pruned.len()
            );
            for c in pruned {
                outln!(o, "  {}  {}", c.task, c.label);
            }
        }
        outln!(o, "Claims: {} ({place})", self.claims.len());
        for c in &self.claims {
            outln!(o, "  {}", c.row());
        }
        for r in &self.stray_refs {
            outln!(o, "  (stray ref {r}: names no task; ignored)");
        }
        if self.unread_refs > 0 {
            outln!(o, "  ({} more refs not read)", self.unread_refs);
        }
        o
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Take the lease on a task (`req.next`: on the next free ready task), or renew the one
/// this holder has.
pub fn claim(ws: &Workspace, req: &ClaimRequest) -> OpResult<ClaimOutcome> {
    let tasks = load_tasks(ws)?;
    let store = Store::open(ws, req.where_.as_ref())?;
    let me = Claimant::new(ws, &store, req)?;
    if req.next {
        return claim_next(&store, &me, &tasks);
    }
    let name = req.task.as_deref().unwrap_or("");
    let task = resolve(&tasks, name)?;
    if req.reopen {
        return done::reopen(&store, &me, task);
    }
    claim_one(&store, &me, task)
}

/// Release the lease this holder has on a task (its done record too: the holder's word
/// that the completion will not reach the remote).
pub fn unclaim(ws: &Workspace, req: &UnclaimRequest) -> OpResult<ClaimOutcome> {
    let tasks = load_tasks(ws)?;
    let task = resolve(&tasks, &req.task)?;
    let store = Store::open(ws, req.where_.as_ref())?;
    let holder = match &req.holder {
        Some(h) => h.clone(),
        None => holder_in(&store.repo)?,
    };
    let (now, skew) = (record::now(), skew()?);
    // First on what this checkout last saw: releasing its own lease as it saw it is one
    // push; a lease changed meanwhile fails the swap, and the remote is read.
    if let Some(cur) = store.current(&task.id)? {
        if cur.ok().is_some_and(|r| r.holder == holder)
            && store.swap(&task.id, Some(&cur.sha), None)? == Swap::Done
        {
            let rec = cur.ok().cloned();
            if let Some(rec) = rec {
                return Ok(ClaimOutcome {
                    status: "released",
                    lease: lease(&store, &task.id, &rec, now, skew),
                    took_over: None,
                    pull_first: Vec::new(),
                });
            }
        }
    }
    for _ in 0..ROUNDS {
        store.refresh()?;
        let Some(cur) = store.current(&task.id)? else {
            return Err(OpError::invalid(
                code::NOT_CLAIMED,
                format!("{} is not claimed", task.name()),
            ));
        };
        let mine = cur.ok().filter(|r| r.holder == holder);
        let Some(rec) = mine else {
            return Err(OpError::invalid(
                code::NOT_HOLDER,
                format!(
                    "{} is held by {}, not by this checkout; only the holder releases it",
                    task.name(),
                    describe_stored(&cur)
                ),
            ));
        };
        if store.swap(&task.id, Some(&cur.sha), None)? == Swap::Done {
            return Ok(ClaimOutcome {
                status: "released",
                lease: lease(&store, &task.id, rec, now, skew),
                took_over: None,
                pull_first: Vec::new(),
            });
        }
    }
    Err(lost_races(task))
}

/// Every lease of the workspace, live, ended or done (read from the remote, or the local
/// refs); with `prune`, done records whose tasks the default branch shows finished are
/// removed first.
pub fn list(ws: &Workspace, where_: Option<&Where>, prune: bool) -> OpResult<ClaimsOutcome> {
    let skew = skew()?;
    let store = Store::open(ws, where_)?;
    store.refresh()?;
    let (mut listing, tip) = store.all_and_tree(prune)?;
    let pruned = if prune {
        let finished = branch::finished(&store, tip.tree)?;
        let gone = done::prune(&store, &listing.leases, &finished, skew)?;
        listing
            .leases
            .retain(|s| !gone.iter().any(|g| g.task == s.task));
        Some(gone)
    } else {
        None
    };
    let now = record::now();
    let view = |s: &Stored| view(&store, s, now, skew);
    Ok(ClaimsOutcome {
        remote: store.remote.clone(),
        project: store.project.clone(),
        claims: listing.leases.iter().map(view).collect(),
        pruned: pruned.map(|p| p.iter().map(view).collect()),
        stray_refs: listing.stray,
        unread_refs: listing.unread,
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
    let (now, skew) = (record::now(), skew_or_default());
    Store::seen(ws)
        .ok()?
        .iter()
        .filter_map(|store| {
            let s = store.current(&id).ok()??;
            Some(view(store, &s, now, skew))
        })
        .max_by(|a, b| a.renewed.cmp(&b.renewed))
}

/// Every lease this checkout has seen, without the network (its own refs and each
/// remote's mirror); empty outside a repository or when there is none.
pub fn seen_all(ws: &Workspace) -> Vec<Lease> {
    Seen::read(ws).leases
}

/// What this checkout has seen of the leases, without the network: every lease (its own
/// refs and each remote's mirror) and its holder id. An operation reads it once and hands
/// it to the checks that need it (fencing, the checkpoint's dependencies, handoff, resume).
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub leases: Vec<Lease>,
    /// This checkout's holder id (`None` when no lease was seen).
    pub me: Option<String>,
}

impl Seen {
    /// The leases seen in the repository holding `ws`; none outside a repository, and one
    /// `git` run when it has no claim ref at all.
    pub fn read(ws: &Workspace) -> Seen {
        if !store::any_seen(ws) {
            return Seen::default();
        }
        let Ok(repo) = store::repository(ws) else {
            return Seen::default();
        };
        let Ok(stores) = Store::seen_in(&repo) else {
            return Seen::default();
        };
        let (now, skew) = (record::now(), skew_or_default());
        let leases = stores
            .iter()
            .flat_map(|store| {
                store
                    .all()
                    .map(|l| l.leases)
                    .unwrap_or_default()
                    .iter()
                    .map(|s| view(store, s, now, skew))
                    .collect::<Vec<_>>()
            })
            .collect();
        Seen {
            leases,
            me: holder_in(&repo).ok(),
        }
    }

    /// The lease on `task` (its id or alias), the most recently renewed of the stores.
    pub fn lease(&self, task: &str) -> Option<&Lease> {
        let task = task.trim();
        if task.is_empty() {
            return None;
        }
        self.leases
            .iter()
            .filter(|l| l.task_id == task || l.task == task)
            .max_by(|a, b| a.renewed.cmp(&b.renewed))
    }

    /// Whether this checkout holds `l`.
    pub fn is_mine(&self, l: &Lease) -> bool {
        self.me.as_deref() == Some(l.holder.as_str())
    }

    /// The tasks done records show completed, with who completed them: a completion that
    /// may not be merged here yet, which counts as a completed dependency.
    pub fn completed_elsewhere(&self) -> Vec<(String, String)> {
        self.leases
            .iter()
            .filter(|l| l.done.as_ref().is_some_and(|d| d.outcome == "completed"))
            .map(|l| (l.task_id.clone(), l.label.clone()))
            .collect()
    }

    /// The tasks other holders have live leases on and the tasks done records hold (for
    /// `resume`, the session hooks and `handoff`: the next task skips them), and the tasks
    /// (ids) this checkout holds live leases on.
    pub fn by_holder(&self) -> (Vec<crate::authoring::resume::ClaimedView>, Vec<String>) {
        let held_here = self
            .leases
            .iter()
            .filter(|l| l.live && self.is_mine(l))
            .map(|l| l.task_id.clone())
            .collect();
        let others = self
            .leases
            .iter()
            .filter(|l| l.state == "done" || (l.live && !self.is_mine(l)))
            .map(|l| crate::authoring::resume::ClaimedView {
                state: l.state.to_string(),
                task: l.task.clone(),
                task_id: l.task_id.clone(),
                label: l.label.clone(),
                ends: l.ends.clone(),
            })
            .collect();
        (others, held_here)
    }
}

/// Whether the workspace is in a git repository, where leases can be kept.
pub fn in_repository(ws: &Workspace) -> bool {
    Store::seen(ws).is_ok()
}

/// Whether the leases of `where_` (`None`: the remote `origin`) live on a remote this
/// repository has: what [`list`] would fetch from. No network.
pub fn has_remote(ws: &Workspace, where_: Option<&Where>) -> bool {
    Store::open(ws, where_).is_ok_and(|s| s.remote.is_some())
}

/// How long past its end another checkout still treats a lease as held (the skew margin,
/// `SMALL_CLAIM_SKEW`): a lease in it is in its grace period.
pub fn grace() -> Duration {
    skew_or_default()
}

/// Renew `holder`'s lease on `task` where it was seen, when half its TTL has passed since
/// it was last renewed. `None`: not due, or not this holder's live lease.
pub fn renew_if_due(ws: &Workspace, task: &str, holder: &str) -> OpResult<Option<ClaimOutcome>> {
    match seen_lease(ws, task) {
        Some(seen) => renew_seen_if_due(ws, &seen, holder),
        None => Ok(None),
    }
}

/// [`renew_if_due`] of the lease `seen` as already read.
pub(crate) fn renew_seen_if_due(
    ws: &Workspace,
    seen: &Lease,
    holder: &str,
) -> OpResult<Option<ClaimOutcome>> {
    if seen.holder != holder || seen.state == "done" {
        return Ok(None);
    }
    let renewed = record::parse_time(&seen.renewed).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let ttl = Duration::from_secs(seen.ttl_seconds).min(MAX_TTL);
    if record::now() < record::after(renewed, ttl / 2) {
        return Ok(None);
    }
    let req = ClaimRequest {
        task: Some(seen.task_id.clone()),
        next: false,
        reopen: false,
        ttl,
        label: Some(seen.label.clone()).filter(|l| record::check_text("label", l).is_ok()),
        holder: Some(holder.to_string()),
        where_: Some(seen.remote.clone().map_or(Where::Local, Where::Remote)),
    };
    claim(ws, &req).map(Some)
}

/// This checkout's (or worktree's) holder id: random, made on first use and kept in the
/// repository's per-worktree directory (`git rev-parse --git-path small/claim-holder`),
/// never under `.small/`.
pub fn holder_id(ws: &Workspace) -> OpResult<String> {
    holder_in(&store::repository(ws)?)
}

fn holder_in(repo: &store::Repository) -> OpResult<String> {
    let path = &repo.holder_file;
    read_or_make_holder(path).map_err(|e| {
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
    fn new(ws: &Workspace, store: &Store, req: &ClaimRequest) -> OpResult<Claimant> {
        let usage = |m: String| OpError::usage(crate::workspace::error::code::USAGE, m);
        let host = record::one_line(&host_name(), record::MAX_TEXT_CHARS);
        let label = req
            .label
            .clone()
            .or_else(|| std::env::var(AGENT_ENV).ok())
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty());
        if let Some(l) = &label {
            record::check_text("label", l).map_err(usage)?;
        }
        let label = label.unwrap_or_else(|| {
            let user = std::env::var("USER")
                .or_else(|_| std::env::var("USERNAME"))
                .unwrap_or_else(|_| "someone".into());
            record::one_line(&format!("{user}@{host}"), record::MAX_TEXT_CHARS)
        });
        if req.ttl.is_zero() {
            return Err(usage("a lease needs a positive TTL".into()));
        }
        if req.ttl > MAX_TTL {
            return Err(usage(format!(
                "a lease lasts at most {} days; renew it (claim again) to keep it longer",
                MAX_TTL.as_secs() / 86_400
            )));
        }
        let skew = skew()?;
        let session = ws.backend().claim_session(ws);
        Ok(Claimant {
            holder: match &req.holder {
                Some(h) => h.clone(),
                None => holder_in(&store.repo)?,
            },
            label,
            host,
            session,
            ttl: req.ttl,
            skew,
        })
    }

    /// The record this claimant writes over `cur` (none: a fresh lease): a renewal of its
    /// own, else a new lease one generation past the ended one.
    fn record(&self, task: &Task, cur: Option<&Stored>) -> (Record, &'static str) {
        let now = record::now();
        let stamp = record::format_time(now);
        let ends = record::format_time(record::after(now, self.ttl));
        let prev = cur.and_then(Stored::ok);
        let mine = prev.filter(|r| r.holder == self.holder && r.done.is_none());
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
            generation: prev.map_or(1, |r| r.generation.saturating_add(1)),
            done: None,
            reopened: mine.and_then(|r| r.reopened.clone()),
        };
        (rec, if mine.is_some() { "renewed" } else { "claimed" })
    }
}

/// Claim `task`: swap until this claimant holds it, or refuse when another live holder or
/// a done record has it, or the default branch shows it finished.
fn claim_one(store: &Store, me: &Claimant, task: &Task) -> OpResult<ClaimOutcome> {
    if let Some(out) = claim_seen(store, me, task)? {
        return Ok(out);
    }
    for _ in 0..ROUNDS {
        store.refresh()?;
        let (cur, tip) = store.current_and_tree(&task.id, true)?;
        let finished = branch::finished(store, tip.tree)?;
        if let Some(rec) = cur.as_ref().and_then(Stored::ok) {
            if rec.done.is_some() {
                let cur = cur.as_slice();
                done::prune(store, cur, &finished, me.skew)?;
                return Err(done::refusal(task, rec, &finished));
            }
            if rec.holder != me.holder && rec.live_at(record::now(), me.skew) {
                return Err(held(task, rec));
            }
        }
        if let Some(outcome) = done::finished_elsewhere(&finished, task) {
            return Err(done::finished_refusal(task, outcome, &finished));
        }
        if let Some(out) = try_swap(store, me, task, cur.as_ref(), None)? {
            return Ok(out);
        }
    }
    Err(lost_races(task))
}

/// A claim on what this checkout last saw of a remote, without reading it first: taken
/// when the task looks free (or is this holder's), by one push that also requires the
/// default branch to be where it was last fetched, so that a completion this checkout has
/// not seen cannot slip past. `None`: not free as seen, or the remote moved on (then it is
/// read, and the claim decided on what it holds).
fn claim_seen(store: &Store, me: &Claimant, task: &Task) -> OpResult<Option<ClaimOutcome>> {
    if store.remote.is_none() {
        return Ok(None);
    }
    let (cur, tip) = store.current_and_tree(&task.id, true)?;
    if !free_as_seen(me, cur.as_ref()) {
        return Ok(None);
    }
    let finished = branch::finished(store, tip.tree.clone())?;
    if done::finished_elsewhere(&finished, task).is_some() {
        return Ok(None);
    }
    try_swap(store, me, task, cur.as_ref(), Some(&tip))
}

/// Whether `cur` leaves the task to this claimant: no lease, an ended one, or its own live
/// one (a damaged or done record is read again from the remote first).
fn free_as_seen(me: &Claimant, cur: Option<&Stored>) -> bool {
    match cur {
        None => true,
        Some(s) => s.ok().is_some_and(|r| {
            r.done.is_none() && (r.holder == me.holder || !r.live_at(record::now(), me.skew))
        }),
    }
}

/// `claim --next`: the ready tasks in the queue's order, each free one tried by a swap
/// until one is ours. Tasks that done records hold, or that the default branch shows
/// finished, count as finished: they are skipped, and complete the dependencies of others.
/// First on what this checkout last saw (pinned to the default branch, as [`claim_seen`]),
/// then on what the remote holds.
fn claim_next(store: &Store, me: &Claimant, tasks: &[Task]) -> OpResult<ClaimOutcome> {
    if store.remote.is_some() {
        if let Ok(Some(out)) = next_on(store, me, tasks, false) {
            return Ok(out);
        }
        store.refresh()?;
    }
    next_on(store, me, tasks, true)?.ok_or_else(|| {
        OpError::invalid(code::NO_FREE_TASK, "no ready task is free")
            .with_help("`small claims` lists the leases")
    })
}

/// One pass of `claim --next` over the leases as last read. `fresh`: they were just read
/// from the remote, and finding nothing free is the answer; otherwise (the mirror, pinned
/// to the branch) `None` sends the caller to the remote.
fn next_on(
    store: &Store,
    me: &Claimant,
    tasks: &[Task],
    fresh: bool,
) -> OpResult<Option<ClaimOutcome>> {
    let (listing, tip) = store.all_and_tree(true)?;
    let finished = branch::finished(store, tip.tree.clone())?;
    if fresh {
        done::prune(store, &listing.leases, &finished, me.skew)?;
    }
    let mut leases: BTreeMap<String, Stored> = listing
        .leases
        .into_iter()
        .map(|s| (s.task.clone(), s))
        .collect();
    let view = done::with_finished(tasks, &leases, &finished);
    let ready = crate::spec::queue::ready(&view);
    if ready.is_empty() {
        if !fresh {
            return Ok(None);
        }
        return Err(
            OpError::invalid(code::NO_FREE_TASK, "no task is ready").with_help(no_task_help(&view))
        );
    }
    let pin = (!fresh).then_some(&tip);
    let now = record::now();
    let free = crate::spec::next::free_ready(&view, |t| {
        leases
            .get(&t.id)
            .and_then(Stored::ok)
            .is_some_and(|r| r.done.is_some() || r.live_at(now, me.skew))
    });
    for task in free {
        let cur = leases.remove(&task.id);
        if let Some(mut out) = try_swap(store, me, task, cur.as_ref(), pin)? {
            out.pull_first = done::to_pull(task, tasks, &view);
            return Ok(Some(out));
        }
        if !fresh {
            // The mirror was behind the remote: read it.
            return Ok(None);
        }
    }
    if !fresh {
        return Ok(None);
    }
    Err(OpError::invalid(
        code::NO_FREE_TASK,
        format!(
            "no ready task is free: {} ready, all held by live leases",
            ready.len()
        ),
    )
    .with_help("`small claims` lists the leases; try again when one ends or is done"))
}

/// Why nothing is ready: everything finished, or what the open tasks wait for.
fn no_task_help(tasks: &[Task]) -> String {
    let open = tasks
        .iter()
        .filter(|t| !matches!(t.status.trim(), "completed" | "cancelled"))
        .count();
    if open == 0 {
        "every task is completed or cancelled".into()
    } else {
        format!(
            "{open} task(s) are open but wait on dependencies or are blocked; `small sync` \
             brings the others' completions"
        )
    }
}

/// Write this claimant's record over `cur` and swap it in; `None` when someone else
/// changed the ref first (or, with `pin`, the default branch moved since it was fetched).
fn try_swap(
    store: &Store,
    me: &Claimant,
    task: &Task,
    cur: Option<&Stored>,
    pin: Option<&store::Tip>,
) -> OpResult<Option<ClaimOutcome>> {
    let (rec, status) = me.record(task, cur);
    let sha = store.write(&rec)?;
    let expected = cur.map(|c| c.sha.as_str());
    let swap = match pin {
        Some(tip) => store.swap_pinned(&task.id, expected, &sha, tip.commit.as_deref())?,
        None => store.swap(&task.id, expected, Some(&sha))?,
    };
    if swap == Swap::Lost {
        return Ok(None);
    }
    let now = record::now();
    Ok(Some(ClaimOutcome {
        status,
        lease: lease(store, &task.id, &rec, now, me.skew),
        took_over: cur
            .filter(|c| c.ok().is_none_or(|r| r.holder != me.holder))
            .map(|c| view(store, c, now, me.skew)),
        pull_first: Vec::new(),
    }))
}

/// A stored lease as front ends see it (a damaged one with its problem).
fn view(store: &Store, s: &Stored, now: time::OffsetDateTime, skew: Duration) -> Lease {
    match &s.record {
        Ok(r) => lease(store, &s.task, r, now, skew),
        Err(problem) => Lease {
            task: record::one_line(&s.task, record::MAX_TEXT_CHARS),
            task_id: s.task.clone(),
            holder: String::new(),
            label: "(damaged record)".into(),
            host: String::new(),
            session: None,
            taken: String::new(),
            renewed: String::new(),
            ends: String::new(),
            ttl_seconds: 0,
            generation: 0,
            live: false,
            state: "damaged",
            done: None,
            reopened: None,
            problem: Some(format!("{}: {problem}", store.claim_ref(&s.task))),
            remote: store.remote.clone(),
            ref_name: store.claim_ref(&s.task),
        },
    }
}

fn lease(
    store: &Store,
    task: &str,
    r: &Record,
    now: time::OffsetDateTime,
    skew: Duration,
) -> Lease {
    let live = r.live_at(now, skew);
    Lease {
        // The id comes from the ref's name, which any peer writes: shown as one line.
        task: record::one_line(r.name(), record::MAX_TEXT_CHARS),
        task_id: task.to_string(),
        holder: r.holder.clone(),
        label: r.label.clone(),
        host: r.host.clone(),
        session: r.session.clone(),
        taken: r.taken.clone(),
        renewed: r.renewed.clone(),
        ends: r.ends.clone(),
        ttl_seconds: r.ttl_seconds,
        generation: r.generation,
        live,
        state: match (&r.done, live) {
            (Some(_), _) => "done",
            (None, true) => "held",
            (None, false) => "expired",
        },
        done: r.done.clone(),
        reopened: r.reopened.clone(),
        problem: None,
        remote: store.remote.clone(),
        ref_name: store.claim_ref(task),
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

fn describe_stored(s: &Stored) -> String {
    match &s.record {
        Ok(r) => describe(r),
        Err(problem) => format!("a damaged record ({problem})"),
    }
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
    Ok(crate::ops::state::load_with_cache(&loc, &opts, true)
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

/// A duration from the variable `name` (seconds, or `30s`, `2m`): `None` when it is unset
/// or empty; anything but a duration (positive, unless `zero` is allowed) is a usage error
/// that names it.
pub(crate) fn env_duration(name: &str, zero: bool) -> OpResult<Option<Duration>> {
    let Ok(value) = std::env::var(name) else {
        return Ok(None);
    };
    if value.trim().is_empty() {
        return Ok(None);
    }
    match crate::workspace::txn::parse_lock_timeout(&value) {
        Some(d) if zero || !d.is_zero() => Ok(Some(d)),
        _ => Err(OpError::usage(
            crate::workspace::error::code::USAGE,
            format!(
                "{name}={:?} is not a {}duration (write 30, 30s or 2m)",
                record::one_line(&value, 40),
                if zero { "" } else { "positive " },
            ),
        )),
    }
}

/// `SMALL_CLAIM_SKEW` (seconds, or `30s`, `2m`), else 30 s; a bad value is a usage error.
fn skew() -> OpResult<Duration> {
    Ok(env_duration(SKEW_ENV, true)?.unwrap_or(DEFAULT_SKEW))
}

/// The skew for reports that never fail on it (status, resume, the page): a bad value is
/// reported by the claim commands and the writes.
fn skew_or_default() -> Duration {
    skew().unwrap_or(DEFAULT_SKEW)
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
