//! `small sync`: publish this checkout's SMALL records, as every agent of a swarm otherwise
//! scripts by hand: fetch, rebase onto the remote branch through the merge driver, push,
//! and retry with a bounded backoff when another agent pushed first. It refuses where a
//! person must decide (changes it was not asked to commit, a conflict the driver cannot
//! resolve), always with the rebase aborted and the work kept.
//!
//! Around the push it keeps the leases true: this checkout's leases on tasks the workspace
//! shows finished become done records first, and its done records name the pushed commit
//! after (docs/decisions/0154-small-sync.md).

use std::time::Duration;

use serde::Serialize;

use crate::ops::claims::git::{system, Git};
use crate::ops::claims::{self, Lease};
use crate::ops::{OpError, OpResult, Workspace};

/// How git should call the `small` at a path (the merge driver's command).
pub use crate::authoring::merge::driver_command_for;

/// Refusal codes of `small sync` (docs/rules.md).
pub mod code {
    /// Changes that sync was not asked to commit are in the way.
    pub const UNCOMMITTED: &str = "uncommitted";
    /// The rebase met a conflict the merge driver could not resolve.
    pub const CONFLICT: &str = "conflict";
    /// Every push was rejected: others kept pushing first.
    pub const REJECTED: &str = "push-rejected";
    /// The repository is not in a state to sync (detached HEAD, a rebase in progress).
    pub const NOT_READY: &str = "not-ready";
}

/// The message of the commit `--commit` makes.
pub const COMMIT_MESSAGE: &str = "small: record SMALL state";

/// What to publish.
#[derive(Debug, Clone, Default)]
pub struct SyncRequest {
    /// Commit the pending changes under `.small/` (only those) first.
    pub commit: bool,
    /// That commit's message (default [`COMMIT_MESSAGE`]).
    pub message: Option<String>,
    /// The remote (default: the branch's upstream remote, else `origin`).
    pub remote: Option<String>,
    /// How many pushes to try before giving up (default 10).
    pub attempts: Option<u32>,
    /// How git calls `small merge-driver` when the driver must be installed (the front
    /// end's own path); `None`: `small`.
    pub driver_command: Option<String>,
}

/// What `small sync` did (docs/json-output.md, "Sync").
#[derive(Debug, Clone, Serialize)]
pub struct SyncOutcome {
    /// `pushed`, or `up-to-date` when the remote already had everything.
    pub status: &'static str,
    pub remote: String,
    /// The branch pushed to, on the remote.
    pub branch: String,
    /// The commit the remote branch now holds.
    pub head: String,
    /// The commit `--commit` made (`null`: none was needed).
    pub committed: Option<String>,
    /// Whether this checkout's commits were rebased onto others'.
    pub rebased: bool,
    /// Pushes tried (1 when the first went through).
    pub attempts: u32,
    /// Whether the merge driver had to be installed first.
    pub installed_merge_driver: bool,
    /// Leases turned into done records before the push.
    pub finished: Vec<Lease>,
    /// Done records that now name the pushed commit.
    pub stamped: Vec<Lease>,
}

impl crate::ops::report::Report for SyncOutcome {
    /// `pushed 3f2a9c1 to origin/main (rebased, 2 attempts); committed …`.
    fn text(&self) -> String {
        let short = |s: &str| s[..s.len().min(12)].to_string();
        let mut s = match self.status {
            "up-to-date" => format!("{}/{} is up to date", self.remote, self.branch),
            _ => format!(
                "pushed {} to {}/{}",
                short(&self.head),
                self.remote,
                self.branch
            ),
        };
        let mut notes = Vec::new();
        if let Some(c) = &self.committed {
            notes.push(format!("committed .small/ as {}", short(c)));
        }
        if self.rebased {
            notes.push("rebased onto the others' work".to_string());
        }
        if self.attempts > 1 {
            notes.push(format!("{} attempts", self.attempts));
        }
        if self.installed_merge_driver {
            notes.push("installed the merge driver".to_string());
        }
        for l in &self.finished {
            notes.push(format!("{} done", l.task));
        }
        if !notes.is_empty() {
            s.push_str(&format!(" ({})", notes.join("; ")));
        }
        s.push('\n');
        s
    }
}

const DEFAULT_ATTEMPTS: u32 = 10;

/// Fetch, rebase, push (with retries); see the module's description.
pub fn sync(ws: &Workspace, req: &SyncRequest) -> OpResult<SyncOutcome> {
    let root = ws.v1_root()?;
    let git = Git::new(&root)?;
    let repo = Repo::open(&git, req.remote.as_deref())?;
    let installed_merge_driver = ensure_merge_driver(&git, &root, req)?;
    let committed = if req.commit {
        commit_small(&git, req)?
    } else {
        None
    };
    refuse_uncommitted(&git, req.commit)?;
    let finished = claims::done::finish_open(ws);
    let attempts = req.attempts.unwrap_or(DEFAULT_ATTEMPTS).max(1);
    let mut rebased = false;
    for attempt in 1..=attempts {
        let upstream = repo.fetch(&git)?;
        if let Some(up) = &upstream {
            rebased |= rebase(&git, up)?;
        }
        let head = git.ok(&["rev-parse", "HEAD"], None)?.trim().to_string();
        if upstream
            .as_deref()
            .is_some_and(|up| sha_of(&git, up) == head)
        {
            return Ok(outcome(
                "up-to-date",
                &repo,
                head,
                committed,
                rebased,
                attempt,
                installed_merge_driver,
                finished,
                Vec::new(),
            ));
        }
        if repo.push(&git)? {
            let stamped = claims::done::stamp_mine(ws, &head, &repo.label());
            return Ok(outcome(
                "pushed",
                &repo,
                head,
                committed,
                rebased,
                attempt,
                installed_merge_driver,
                finished,
                stamped,
            ));
        }
        if attempt < attempts {
            std::thread::sleep(backoff(attempt));
        }
    }
    Err(OpError::invalid(
        code::REJECTED,
        format!(
            "{} rejected every push ({attempts}): others kept pushing first",
            repo.label()
        ),
    )
    .with_help("run `small sync` again; your commits are kept"))
}

#[allow(clippy::too_many_arguments)]
fn outcome(
    status: &'static str,
    repo: &Repo,
    head: String,
    committed: Option<String>,
    rebased: bool,
    attempts: u32,
    installed_merge_driver: bool,
    finished: Vec<Lease>,
    stamped: Vec<Lease>,
) -> SyncOutcome {
    SyncOutcome {
        status,
        remote: repo.remote.clone(),
        branch: repo.branch.clone(),
        head,
        committed,
        rebased,
        attempts,
        installed_merge_driver,
        finished,
        stamped,
    }
}

/// The wait before push `attempt + 1`: doubling from 50 ms up to 2 s, with jitter so that
/// agents that lost together do not retry together.
fn backoff(attempt: u32) -> Duration {
    let base = 50u64.saturating_mul(1 << attempt.min(6)).min(2000);
    let mut b = [0u8; 2];
    let jitter =
        getrandom::fill(&mut b).map_or(0, |()| u64::from(u16::from_le_bytes(b)) % (base / 2 + 1));
    Duration::from_millis(base / 2 + jitter)
}

/// The branch being published and where it goes.
struct Repo {
    remote: String,
    /// The branch on the remote.
    branch: String,
}

impl Repo {
    fn open(git: &Git, remote: Option<&str>) -> OpResult<Repo> {
        let top = git.run(&["rev-parse", "--show-toplevel"], None)?;
        if !top.success {
            return Err(
                system("this workspace is not in a git repository: nothing to sync")
                    .with_help("run `git init` and add a remote"),
            );
        }
        if in_progress(git)? {
            return Err(OpError::invalid(
                code::NOT_READY,
                "a rebase, merge or cherry-pick is in progress here",
            )
            .with_help("finish it or abort it (`git rebase --abort`), then sync"));
        }
        let head = git.run(&["symbolic-ref", "--quiet", "--short", "HEAD"], None)?;
        let local = head.stdout.trim().to_string();
        if !head.success || local.is_empty() {
            return Err(OpError::invalid(
                code::NOT_READY,
                "HEAD is detached: sync publishes a branch",
            )
            .with_help("check out the branch to publish (`git switch main`)"));
        }
        let config = |key: String| -> OpResult<Option<String>> {
            let out = git.run(&["config", "--get", &key], None)?;
            Ok(Some(out.stdout.trim().to_string()).filter(|v| out.success && !v.is_empty()))
        };
        let up_remote = config(format!("branch.{local}.remote"))?.filter(|r| r != ".");
        let up_branch = config(format!("branch.{local}.merge"))?
            .and_then(|m| m.strip_prefix("refs/heads/").map(str::to_string));
        let remote = match remote {
            Some(r) => r.to_string(),
            None => up_remote.clone().unwrap_or_else(|| "origin".to_string()),
        };
        if remote.starts_with('-') {
            return Err(OpError::usage(
                crate::workspace::error::code::USAGE,
                format!(
                    "the remote name {remote:?} starts with `-`, which git would read as an option"
                ),
            ));
        }
        let remotes = git.ok(&["remote"], None)?;
        if !remotes.lines().any(|r| r == remote) {
            return Err(system(format!("this repository has no remote `{remote}`"))
                .with_help("add one (`git remote add origin URL`) or pass --remote NAME"));
        }
        let branch = match (&up_remote, up_branch) {
            (Some(r), Some(b)) if *r == remote => b,
            _ => local.clone(),
        };
        Ok(Repo { remote, branch })
    }

    /// `origin/main`.
    fn label(&self) -> String {
        format!("{}/{}", self.remote, self.branch)
    }

    fn tracking(&self) -> String {
        format!("refs/remotes/{}/{}", self.remote, self.branch)
    }

    /// Fetch the remote branch; its tracking ref, or `None` when the remote has no such
    /// branch yet (the first push makes it).
    fn fetch(&self, git: &Git) -> OpResult<Option<String>> {
        let spec = format!("+refs/heads/{}:{}", self.branch, self.tracking());
        let out = git.run(
            &[
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-recurse-submodules",
                "--",
                &self.remote,
                &spec,
            ],
            None,
        )?;
        if out.success {
            return Ok(Some(self.tracking()));
        }
        if out.stderr.contains("couldn't find remote ref") {
            return Ok(None);
        }
        Err(system(format!(
            "cannot fetch from `{}`: {}",
            self.remote,
            out.reason()
        ))
        .with_help("nothing was pushed; try again when the remote is reachable"))
    }

    /// Push HEAD to the remote branch: `true` when it went through, `false` when the remote
    /// moved on first (fetch, rebase and try again).
    fn push(&self, git: &Git) -> OpResult<bool> {
        let spec = format!("HEAD:refs/heads/{}", self.branch);
        let out = git.run(&["push", "--porcelain", "--", &self.remote, &spec], None)?;
        let target = format!(":refs/heads/{}", self.branch);
        let line = out
            .stdout
            .lines()
            .find(|l| l.split('\t').nth(1).is_some_and(|s| s.ends_with(&target)));
        let flag = line.and_then(|l| l.split('\t').next()).unwrap_or("");
        if out.success && matches!(flag, "*" | " " | "+" | "=") {
            return Ok(true);
        }
        // Another push got there first (or holds the server's ref lock for a moment):
        // fetch, rebase and try again. Anything else (a hook that declined, no permission)
        // is reported as git says it.
        let rejected = flag == "!"
            && line.is_some_and(|l| {
                [
                    "non-fast-forward",
                    "fetch first",
                    "stale info",
                    "cannot lock ref",
                    "failed to update ref",
                    "incorrect old value",
                ]
                .iter()
                .any(|why| l.contains(why))
            });
        if rejected {
            return Ok(false);
        }
        Err(system(format!(
            "`git push` to `{}` failed: {}",
            self.remote,
            out.reason()
        )))
    }
}

/// Whether git is in the middle of a rebase, merge or cherry-pick.
fn in_progress(git: &Git) -> OpResult<bool> {
    let names = [
        "rebase-merge",
        "rebase-apply",
        "MERGE_HEAD",
        "CHERRY_PICK_HEAD",
    ];
    let mut args = vec!["rev-parse"];
    for name in names {
        args.extend(["--git-path", name]);
    }
    let out = git.ok(&args, None)?;
    Ok(out.lines().any(|p| git.dir.join(p.trim()).exists()))
}

fn sha_of(git: &Git, name: &str) -> String {
    git.run(&["rev-parse", "--verify", "--quiet", name], None)
        .map(|o| o.stdout.trim().to_string())
        .unwrap_or_default()
}

/// Install the merge driver when the repository lacks it: the driver in the local config,
/// and, when no `.gitattributes` names it, the attributes in `$GIT_DIR/info/attributes`
/// (this clone's own, so the work tree does not change). Whether anything was installed.
fn ensure_merge_driver(git: &Git, root: &std::path::Path, req: &SyncRequest) -> OpResult<bool> {
    let mut installed = false;
    let have = git.run(&["config", "--get", "merge.small.driver"], None)?;
    if !have.success || have.stdout.trim().is_empty() {
        let command = req.driver_command.clone().unwrap_or_else(|| "small".into());
        crate::authoring::merge::configure_driver(root, &command)
            .map_err(|e| system(e.to_string()))?;
        installed = true;
    }
    let rel = workspace_path(git)?;
    let attr = git.ok(
        &["check-attr", "merge", "--", ".small/progress.small.yml"],
        None,
    )?;
    if !attr.trim_end().ends_with(": merge: small") {
        let path = git.ok(&["rev-parse", "--git-path", "info/attributes"], None)?;
        let path = git.dir.join(path.trim());
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        for line in crate::authoring::merge::attribute_lines(&rel) {
            text.push_str(&format!("/{line}\n"));
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| system(format!("cannot write {}: {e}", dir.display())))?;
        }
        crate::workspace::txn::atomic_write(&path, text.as_bytes())
            .map_err(|e| system(format!("cannot write {}: {e}", path.display())))?;
        installed = true;
    }
    Ok(installed)
}

/// The workspace's directory relative to the top level (`""` for the top).
fn workspace_path(git: &Git) -> OpResult<String> {
    let out = git.ok(&["rev-parse", "--show-prefix"], None)?;
    Ok(out.trim().trim_end_matches('/').to_string())
}

/// `--commit`: commit the pending changes under the workspace's `.small/` (only those).
/// The commit made, if there was anything to commit.
fn commit_small(git: &Git, req: &SyncRequest) -> OpResult<Option<String>> {
    let dir = ".small";
    git.ok(&["add", "-A", "--", dir], None)?;
    let staged = git.run(&["diff", "--cached", "--quiet", "--", dir], None)?;
    if staged.success {
        return Ok(None);
    }
    let message = req
        .message
        .clone()
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| COMMIT_MESSAGE.to_string());
    let out = git.run(&["commit", "--quiet", "-m", &message, "--", dir], None)?;
    if !out.success {
        return Err(system(format!("`git commit` failed: {}", out.reason())));
    }
    Ok(Some(
        git.ok(&["rev-parse", "HEAD"], None)?.trim().to_string(),
    ))
}

/// Refuse when tracked files have changes a rebase would trip on, naming them.
fn refuse_uncommitted(git: &Git, committed: bool) -> OpResult<()> {
    let out = git.ok(
        &[
            "status",
            "--porcelain=v1",
            "--untracked-files=no",
            "--",
            ":/",
        ],
        None,
    )?;
    let files: Vec<&str> = out.lines().filter_map(|l| l.get(3..)).collect();
    if files.is_empty() {
        return Ok(());
    }
    let small = files.iter().all(|f| f.contains(".small/"));
    let help = if small && !committed {
        "pass --commit to commit the .small/ changes, or commit them yourself"
    } else {
        "commit or stash these changes, then sync (--commit commits only .small/)"
    };
    Err(OpError::invalid(
        code::UNCOMMITTED,
        format!("uncommitted changes would be in the way: {}", shown(&files)),
    )
    .with_help(help))
}

/// Rebase HEAD onto `upstream` when it is not already on it; `true` when it rebased. A
/// conflict the merge driver did not resolve aborts the rebase (the work is kept) and is
/// refused, naming the files.
fn rebase(git: &Git, upstream: &str) -> OpResult<bool> {
    let on_top = git
        .run(&["merge-base", "--is-ancestor", upstream, "HEAD"], None)?
        .success;
    if on_top {
        return Ok(false);
    }
    let out = git.run(
        &[
            "-c",
            "core.editor=true",
            "-c",
            "rebase.autoStash=false",
            "rebase",
            "--quiet",
            upstream,
        ],
        None,
    )?;
    if out.success {
        return Ok(true);
    }
    let conflicted = git
        .run(&["diff", "--name-only", "--diff-filter=U"], None)?
        .stdout;
    let files: Vec<&str> = conflicted.lines().collect();
    let _ = git.run(&["rebase", "--abort"], None);
    if files.is_empty() {
        return Err(system(format!("`git rebase` failed: {}", out.reason()))
            .with_help("the rebase was aborted; your commits are kept"));
    }
    let code_files: Vec<&str> = files
        .iter()
        .copied()
        .filter(|f| !f.contains(".small/"))
        .collect();
    let what = if code_files.is_empty() {
        "the merge driver could not merge"
    } else {
        "others changed the same lines of"
    };
    Err(
        OpError::invalid(code::CONFLICT, format!("{what} {}", shown(&files))).with_help(
            "the rebase was aborted and your commits are kept: `git pull --rebase`, resolve the \
         files, `git rebase --continue`, then `small sync`",
        ),
    )
}

/// At most ten names, then how many more.
fn shown(files: &[&str]) -> String {
    let mut s = files
        .iter()
        .take(10)
        .map(|f| claims::record::one_line(f, 200))
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > 10 {
        s.push_str(&format!(" and {} more", files.len() - 10));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_bounded() {
        for attempt in 1..20 {
            let d = backoff(attempt);
            assert!(d <= Duration::from_millis(2000), "{d:?}");
            assert!(d >= Duration::from_millis(25), "{d:?}");
        }
    }
}
