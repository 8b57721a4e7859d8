//! Where leases live and the one write they allow: a compare-and-swap of a claim ref, on a
//! remote (`git push --force-with-lease`) or in the repository's own refs (`git
//! update-ref`). Everything above this module reads records and asks for swaps.
//!
//! Reading is streamed and bounded: the refs are listed, their blobs read through one
//! `git cat-file --batch` whose output is parsed as bytes, record by record, each at most
//! [`MAX_RECORD_BYTES`]; a ref whose blob is larger, not a blob, or not a record is a
//! damaged lease of that ref alone. A lease is its ref's task, whatever its record says.

use std::io::{BufRead, Read};
use std::path::Path;

use crate::ops::{OpError, OpResult, Workspace};

use super::git::{read_line, system, Git};
use super::record::{self, decode_component, ref_component, Record, MAX_RECORD_BYTES};
use super::Where;

/// The claim refs of all projects.
pub const CLAIMS_NAMESPACE: &str = "refs/small/claims";
/// What this checkout last read of each remote's claims.
pub const SEEN_NAMESPACE: &str = "refs/small/seen";
const ZERO: &str = "0000000000000000000000000000000000000000";
/// The most claim refs one read considers; a remote with more is reported, not read whole.
pub const MAX_REFS: usize = 20_000;
/// The most refs that name no task listed by name (the rest are counted as unread).
const MAX_STRAY: usize = 100;

/// One lease as stored: the ref, the blob it points to, and the record in it or why it
/// cannot be read.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// The task (id) its ref names.
    pub task: String,
    pub sha: String,
    pub record: Result<Record, String>,
}

impl Stored {
    /// The record, when it is readable.
    pub fn ok(&self) -> Option<&Record> {
        self.record.as_ref().ok()
    }
}

/// The result of a swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Swap {
    /// The ref now holds what we wrote.
    Done,
    /// Someone else changed it first.
    Lost,
}

/// Every lease of a project as read, and what could not be read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    pub leases: Vec<Stored>,
    /// Refs under the project that name no task (nested or undecodable names).
    pub stray: Vec<String>,
    /// Refs past [`MAX_REFS`], not read.
    pub unread: usize,
}

/// The claims of one workspace, in one place.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    pub git: Git,
    /// The repository as [`repository`] read it.
    pub repo: Repository,
    /// The remote's name; `None` for the repository's own refs.
    pub remote: Option<String>,
    /// The workspace, as a ref component (see [`project_component`]).
    pub project: String,
    /// The workspace's directory relative to the repository's top level (`""`: the top).
    pub path: String,
    /// The branch whose completions end done records: the remote's default branch as last
    /// fetched (`refs/remotes/<remote>/<branch>`), or for local refs the repository's own
    /// default branch. `None` when there is none yet.
    pub branch: Option<Branch>,
}

/// A branch that completions reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Branch {
    /// Its name on the remote (`main`).
    pub name: String,
    /// The ref this repository reads it at.
    pub local_ref: String,
}

impl Store {
    /// The store of `ws` at `where_` (default: the remote `origin`, when the repository has
    /// it). No repository or no such remote is a system error.
    pub fn open(ws: &Workspace, where_: Option<&Where>) -> OpResult<Store> {
        let repo = repository(ws)?;
        let tracking = Tracking::read(&repo.git)?;
        let wanted = match where_ {
            Some(Where::Local) => None,
            Some(Where::Remote(name)) => Some(name.as_str()),
            None => Some("origin"),
        };
        let remote = match wanted {
            None => None,
            // A remote with tracking refs exists; one without is looked up.
            Some(name) if !name.starts_with('-') && tracking.has_remote(name) => {
                Some(name.to_string())
            }
            Some(name) => Some(
                require_remote(&remote_names(&repo.git)?, name).map_err(|e| match where_ {
                    None => e.with_help(
                        "pass --remote NAME, or --local for leases shared only by the worktrees of this repository",
                    ),
                    _ => e,
                })?,
            ),
        };
        let branch = tracking.default_branch(remote.as_deref());
        Ok(Store {
            git: repo.git.clone(),
            remote,
            project: repo.project.clone(),
            path: repo.path.clone(),
            branch,
            repo,
        })
    }

    /// The stores this checkout can read without the network: its own refs and each
    /// remote's mirror.
    pub fn seen(ws: &Workspace) -> OpResult<Vec<Store>> {
        Store::seen_in(&repository(ws)?)
    }

    /// [`Store::seen`] of a repository already read.
    pub fn seen_in(repo: &Repository) -> OpResult<Vec<Store>> {
        let remotes = remote_names(&repo.git)?;
        let store = |remote: Option<String>| Store {
            git: repo.git.clone(),
            remote,
            project: repo.project.clone(),
            path: repo.path.clone(),
            branch: None,
            repo: repo.clone(),
        };
        let mut out = vec![store(None)];
        out.extend(remotes.into_iter().map(Some).map(store));
        Ok(out)
    }

    /// The claim ref of `task` (its id).
    pub fn claim_ref(&self, task: &str) -> String {
        format!(
            "{CLAIMS_NAMESPACE}/{}/{}",
            self.project,
            ref_component(task)
        )
    }

    /// Where this checkout reads the project's leases: the mirror of the remote's, or the
    /// claim refs themselves.
    fn read_prefix(&self) -> String {
        match &self.remote {
            Some(r) => format!("{SEEN_NAMESPACE}/{}/{}/", ref_component(r), self.project),
            None => format!("{CLAIMS_NAMESPACE}/{}/", self.project),
        }
    }

    fn read_ref(&self, task: &str) -> String {
        format!("{}{}", self.read_prefix(), ref_component(task))
    }

    /// Bring the mirror up to date with the remote (every lease of the project, deleted
    /// ones pruned), and the default branch with it, in one fetch: what a claim decides on
    /// is one view of the remote. Nothing to do for local refs.
    pub fn refresh(&self) -> OpResult<()> {
        let Some(remote) = &self.remote else {
            return Ok(());
        };
        let claims = format!(
            "+{CLAIMS_NAMESPACE}/{}/*:{}*",
            self.project,
            self.read_prefix()
        );
        let branch = self
            .branch
            .as_ref()
            .map(|b| format!("+refs/heads/{}:{}", b.name, b.local_ref));
        let mut out = self.fetch(remote, &claims, branch.as_deref())?;
        if !out.success && out.stderr.contains("couldn't find remote ref") && branch.is_some() {
            // The default branch is gone from the remote: the claims alone.
            out = self.fetch(remote, &claims, None)?;
        }
        if out.success {
            return Ok(());
        }
        Err(unreachable(remote, &out.reason()))
    }

    fn fetch(
        &self,
        remote: &str,
        claims: &str,
        branch: Option<&str>,
    ) -> OpResult<super::git::Output> {
        let mut args = vec![
            "fetch",
            "--quiet",
            "--no-tags",
            "--prune",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--",
            remote,
            claims,
        ];
        args.extend(branch);
        let mut out = self.git.run(&args, None)?;
        // Another claim in this checkout updating the mirror at the same time holds its
        // ref locks for a moment: not a remote that cannot be reached.
        for attempt in 1..4u64 {
            if out.success || !out.stderr.contains("cannot lock ref") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20 * attempt));
            out = self.git.run(&args, None)?;
        }
        Ok(out)
    }

    /// Every lease as last read (after [`Store::refresh`] for a remote), by ref name.
    pub fn all(&self) -> OpResult<Listing> {
        Ok(self.all_and_tree(false)?.0)
    }

    /// Every lease as last read, and (with `tip`) the default branch as last fetched, read
    /// by the same `git cat-file --batch`.
    pub fn all_and_tree(&self, tip: bool) -> OpResult<(Listing, Tip)> {
        let prefix = self.read_prefix();
        let mut listing = Listing::default();
        let mut refs: Vec<(String, String)> = Vec::new();
        let ((), ok, stderr) = self.git.stream(
            &[
                "for-each-ref",
                "--format=%(objectname) %(refname)",
                "--",
                &prefix,
            ],
            None,
            |r| {
                while let Some(line) = read_line(r, 1024) {
                    let Some(sp) = line.iter().position(|&b| b == b' ') else {
                        continue;
                    };
                    let (sha, name) = (&line[..sp], &line[sp + 1..]);
                    let suffix = name.strip_prefix(prefix.as_bytes()).unwrap_or(name);
                    match decode_component(suffix) {
                        Some(task) if refs.len() < MAX_REFS => {
                            refs.push((task, String::from_utf8_lossy(sha).into_owned()));
                        }
                        Some(_) => listing.unread += 1,
                        None if listing.stray.len() < MAX_STRAY => listing
                            .stray
                            .push(record::one_line(&String::from_utf8_lossy(name), 200)),
                        None => listing.unread += 1,
                    }
                }
                Ok(())
            },
        )?;
        if !ok {
            return Err(system(format!("`git for-each-ref` failed: {stderr}")));
        }
        let mut names: Vec<String> = refs.iter().map(|(_, sha)| sha.clone()).collect();
        names.extend(self.tip_names(tip));
        // Each record is parsed as it is read: what stays is the records, not their bytes.
        let n = refs.len();
        let mut read = self.batch_map(&names, RECORD_BOUND, |i, obj| match refs.get(i) {
            Some((task, _)) => {
                Batched::Record(Box::new(obj.1.and_then(|b| Record::parse(task, &b))))
            }
            None => Batched::Object(obj),
        })?;
        let tip = read
            .split_off(n)
            .into_iter()
            .filter_map(|r| match r {
                Batched::Object(o) => Some(o),
                Batched::Record(_) => None,
            })
            .collect::<Vec<_>>();
        listing.leases = refs
            .into_iter()
            .zip(read)
            .map(|((task, sha), r)| Stored {
                record: match r {
                    Batched::Record(rec) => *rec,
                    Batched::Object(_) => Err("not read".into()),
                },
                task,
                sha,
            })
            .collect();
        let tip = Tip::from(tip);
        Ok((listing, tip))
    }

    /// The lease of `task` as last read.
    pub fn current(&self, task: &str) -> OpResult<Option<Stored>> {
        Ok(self.current_and_tree(task, false)?.0)
    }

    /// The lease of `task` as last read, and (with `tip`) the default branch as last
    /// fetched, through one `git cat-file --batch`.
    pub fn current_and_tree(&self, task: &str, tip: bool) -> OpResult<(Option<Stored>, Tip)> {
        let mut names = vec![self.read_ref(task)];
        names.extend(self.tip_names(tip));
        let mut objects = self.batch(&names)?;
        let tip = Tip::from(objects.split_off(1));
        let lease = objects.pop().and_then(|(sha, blob)| {
            Some(Stored {
                sha: sha?,
                record: blob.and_then(|b| Record::parse(task, &b)),
                task: task.to_string(),
            })
        });
        Ok((lease, tip))
    }

    /// The default branch's commit and its copy of the workspace's `.small/`, as revisions
    /// for `cat-file` (none without a branch, or when not asked).
    fn tip_names(&self, asked: bool) -> Vec<String> {
        let Some(b) = self.branch.as_ref().filter(|_| asked) else {
            return Vec::new();
        };
        let dir = if self.path.is_empty() {
            ".small".to_string()
        } else {
            format!("{}/.small", self.path)
        };
        vec![b.local_ref.clone(), format!("{}:{dir}", b.local_ref)]
    }

    /// The objects `names` (ids or revisions), in order, through one `git cat-file
    /// --batch`: each one's id when git found it, and its contents when it is a blob that
    /// fits a record (anything else is drained unread).
    fn batch(&self, names: &[String]) -> OpResult<Vec<Object>> {
        self.batch_map(names, RECORD_BOUND, |_, obj| obj)
    }

    /// [`Store::batch`] with blobs of up to `max` bytes, each object handed to `map` (with
    /// its index) as it is read, so that only what `map` keeps stays in memory.
    pub(super) fn batch_map<T>(
        &self,
        names: &[String],
        max: u64,
        mut map: impl FnMut(usize, Object) -> T,
    ) -> OpResult<Vec<T>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = names.iter().map(|n| format!("{n}\n")).collect();
        let (mut out, _, _) =
            self.git
                .stream(&["cat-file", "--batch"], Some(input.as_bytes()), |r| {
                    let mut out = Vec::with_capacity(names.len());
                    while out.len() < names.len() {
                        match read_object(r, max) {
                            Some(obj) => out.push(map(out.len(), obj)),
                            None => break,
                        }
                    }
                    Ok(out)
                })?;
        while out.len() < names.len() {
            out.push(map(out.len(), (None, Err("git did not print it".into()))));
        }
        Ok(out)
    }

    /// Write `record` as a blob; its id.
    pub fn write(&self, record: &Record) -> OpResult<String> {
        Ok(self
            .git
            .ok(&["hash-object", "-w", "--stdin"], Some(&record.to_bytes()))?
            .trim()
            .to_string())
    }

    /// Set the claim ref of `task` to `new` (`None`: delete it) if it still holds
    /// `expected` (`None`: it must not exist).
    pub fn swap(&self, task: &str, expected: Option<&str>, new: Option<&str>) -> OpResult<Swap> {
        match &self.remote {
            Some(remote) => self.push(remote, task, expected, new),
            None => self.update_local(task, expected, new),
        }
    }

    /// [`Store::swap`] of `task` to `new` on a remote, in one atomic push that also requires
    /// the default branch to hold `commit` still (what this checkout last fetched; `None`:
    /// the remote had no such branch). `Lost` when either changed: nothing was written.
    pub fn swap_pinned(
        &self,
        task: &str,
        expected: Option<&str>,
        new: &str,
        commit: Option<&str>,
    ) -> OpResult<Swap> {
        let (Some(remote), Some(branch), Some(commit)) =
            (&self.remote, self.branch.as_ref(), commit)
        else {
            return self.swap(task, expected, Some(new));
        };
        let name = self.claim_ref(task);
        let head = format!("refs/heads/{}", branch.name);
        let args = [
            "-c".to_string(),
            self.mirror_config(remote),
            "push".into(),
            "--porcelain".into(),
            "--no-verify".into(),
            "--atomic".into(),
            format!("--force-with-lease={name}:{}", expected.unwrap_or("")),
            format!("--force-with-lease={head}:{commit}"),
            "--".into(),
            remote.clone(),
            format!("{new}:{name}"),
            format!("{commit}:{head}"),
        ];
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.git.run(&argv, None)?;
        if out.success && pushed(&out.stdout, &name) {
            return Ok(Swap::Done);
        }
        Ok(Swap::Lost)
    }

    /// Delete the claim refs of `items` (task, the value each must still hold), each on its
    /// own: one push for a remote. The tasks whose refs were deleted.
    pub fn delete_all(&self, items: &[(&str, &str)]) -> OpResult<Vec<String>> {
        let Some(remote) = &self.remote else {
            let mut gone = Vec::new();
            for (task, sha) in items {
                if self.update_local(task, Some(sha), None)? == Swap::Done {
                    gone.push(task.to_string());
                }
            }
            return Ok(gone);
        };
        let mut gone = Vec::new();
        // A bounded command line: a few hundred refs a push.
        for chunk in items.chunks(256) {
            gone.extend(self.delete_remote(remote, chunk)?);
        }
        Ok(gone)
    }

    fn delete_remote(&self, remote: &str, items: &[(&str, &str)]) -> OpResult<Vec<String>> {
        let names: Vec<String> = items.iter().map(|(t, _)| self.claim_ref(t)).collect();
        let mut args: Vec<String> = vec![
            "-c".into(),
            self.mirror_config(remote),
            "push".into(),
            "--porcelain".into(),
            "--no-verify".into(),
        ];
        args.extend(
            items
                .iter()
                .zip(&names)
                .map(|((_, sha), name)| format!("--force-with-lease={name}:{sha}")),
        );
        args.extend(["--".into(), remote.to_string()]);
        args.extend(names.iter().map(|n| format!(":{n}")));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.git.run(&argv, None)?;
        let gone: Vec<String> = items
            .iter()
            .zip(&names)
            .filter(|(_, name)| pushed(&out.stdout, name))
            .map(|((task, _), _)| task.to_string())
            .collect();
        Ok(gone)
    }

    fn push(
        &self,
        remote: &str,
        task: &str,
        expected: Option<&str>,
        new: Option<&str>,
    ) -> OpResult<Swap> {
        let name = self.claim_ref(task);
        let lease = format!("--force-with-lease={name}:{}", expected.unwrap_or(""));
        let spec = format!("{}:{name}", new.unwrap_or(""));
        // A push can lose a race on the server's ref lock without the ref changing: a few
        // more tries before it is called a failure.
        let mut last = String::new();
        for attempt in 0..4u64 {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(20 * attempt));
            }
            let mirror = self.mirror_config(remote);
            let out = self.git.run(
                &[
                    "-c",
                    &mirror,
                    "push",
                    "--porcelain",
                    "--no-verify",
                    &lease,
                    "--",
                    remote,
                    &spec,
                ],
                None,
            )?;
            if out.success && pushed(&out.stdout, &name) {
                return Ok(Swap::Done);
            }
            last = out.reason();
            // Rejected, or the connection failed after the ref may have changed: what the
            // remote holds now says which.
            let now = self.remote_value(remote, &name)?;
            if now.as_deref() == new {
                self.mirror(task, new);
                return Ok(Swap::Done);
            }
            if now.as_deref() != expected {
                return Ok(Swap::Lost);
            }
        }
        Err(system(format!(
            "the remote `{remote}` did not take {name}: {last}"
        )))
    }

    /// What `remote` holds at `name` now.
    fn remote_value(&self, remote: &str, name: &str) -> OpResult<Option<String>> {
        let out = self.git.run(&["ls-remote", "--", remote, name], None)?;
        if !out.success {
            return Err(unreachable(remote, &out.reason()));
        }
        Ok(out
            .stdout
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .find(|(_, r)| *r == name)
            .map(|(sha, _)| sha.to_string()))
    }

    fn update_local(
        &self,
        task: &str,
        expected: Option<&str>,
        new: Option<&str>,
    ) -> OpResult<Swap> {
        let name = self.claim_ref(task);
        let old = expected.unwrap_or(ZERO);
        let mut last = String::new();
        for attempt in 0..4u64 {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(20 * attempt));
            }
            let out = match new {
                Some(sha) => self.git.run(&["update-ref", &name, sha, old], None)?,
                None => self.git.run(&["update-ref", "-d", &name, old], None)?,
            };
            if out.success {
                return Ok(Swap::Done);
            }
            last = out.reason();
            let now = self.local_value(&name)?;
            if now.as_deref() != expected {
                return Ok(Swap::Lost);
            }
        }
        Err(system(format!("cannot update {name}: {last}")))
    }

    fn local_value(&self, name: &str) -> OpResult<Option<String>> {
        let out = self
            .git
            .run(&["rev-parse", "--verify", "--quiet", name], None)?;
        let sha = out.stdout.trim();
        Ok((out.success && !sha.is_empty()).then(|| sha.to_string()))
    }

    /// The fetch refspec that maps the project's claim refs on `remote` to the mirror, as
    /// `git -c` gives it to a push: git then records in the mirror what the push changed,
    /// as it updates remote-tracking branches, without a command of its own.
    fn mirror_config(&self, remote: &str) -> String {
        format!(
            "remote.{remote}.fetch=+{CLAIMS_NAMESPACE}/{}/*:{}*",
            self.project,
            self.read_prefix()
        )
    }

    /// Record in the mirror what the remote now holds for `task`, after our own swap.
    /// The mirror only records what was seen: if it cannot be written now, the next read
    /// of the remote brings it up to date, and the swap still stands.
    fn mirror(&self, task: &str, new: Option<&str>) {
        let name = self.read_ref(task);
        let _ = match new {
            Some(sha) => self.git.run(&["update-ref", &name, sha], None),
            None => self.git.run(&["update-ref", "-d", &name], None),
        };
    }
}

/// The most of a blob read as a record.
const RECORD_BOUND: u64 = MAX_RECORD_BYTES as u64;

/// One object of `git cat-file --batch` output: its id (when git found it) and its
/// contents, or why they are not a record's.
pub(super) type Object = (Option<String>, Result<Vec<u8>, String>);

/// What one line of a batch became: a lease's record, or an object kept as read.
enum Batched {
    Record(Box<Result<Record, String>>),
    Object(Object),
}

/// The default branch as this checkout last fetched it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tip {
    /// Its commit.
    pub commit: Option<String>,
    /// Its copy of the workspace's `.small/` (a tree).
    pub tree: Option<String>,
}

impl From<Vec<Object>> for Tip {
    /// From the objects [`Store::tip_names`] names, in that order.
    fn from(objects: Vec<Object>) -> Tip {
        let mut it = objects.into_iter();
        Tip {
            commit: it.next().and_then(|o| id_of(o, "commit")),
            tree: it.next().and_then(|o| id_of(o, "tree")),
        }
    }
}

/// The id of an object of `kind` (its contents were drained as "not a record").
fn id_of((sha, contents): Object, kind: &str) -> Option<String> {
    match contents {
        Err(why) if why == format!("a {kind}, not a record") => sha,
        _ => None,
    }
}

/// One object of `git cat-file --batch` output (see [`Object`]): a blob's contents up to
/// `max` bytes; larger blobs and other objects are drained unread. `None` at the end of the
/// output.
fn read_object(r: &mut impl BufRead, max: u64) -> Option<Object> {
    let header = read_line(r, 512)?;
    let header = String::from_utf8_lossy(&header).into_owned();
    let fields: Vec<&str> = header.split(' ').collect();
    let size = match fields.as_slice() {
        [_, _, size] => size.parse::<u64>().ok(),
        _ => None,
    };
    let Some(size) = size else {
        // `<name> missing`: an object this checkout does not have.
        return Some((None, Err("its object is missing here".into())));
    };
    let (sha, kind) = (fields[0].to_string(), fields[1]);
    let fits = kind == "blob" && size <= max;
    let blob = if fits {
        let mut buf = Vec::with_capacity(size as usize);
        match r.by_ref().take(size).read_to_end(&mut buf) {
            Ok(n) if n as u64 == size => Ok(buf),
            _ => Err("cut short".into()),
        }
    } else {
        let _ = std::io::copy(&mut r.by_ref().take(size), &mut std::io::sink());
        Err(if kind == "blob" {
            format!("{size} bytes, over the {max} read")
        } else {
            format!("a {kind}, not a record")
        })
    };
    let mut lf = [0u8; 1];
    let _ = r.read(&mut lf);
    Some((Some(sha), blob))
}

/// Whether the repository holding `ws` has any claim ref or mirror at all: one `git` run,
/// so that every write and report of a workspace that uses no claims pays only that.
pub fn any_seen(ws: &Workspace) -> bool {
    let Ok(root) = ws.v1_root() else {
        return false;
    };
    if !may_be_in_repository(&root) {
        return false;
    }
    let Ok(git) = Git::new(&root) else {
        return false;
    };
    git.run(
        &[
            "for-each-ref",
            "--count=1",
            "--format=%(refname)",
            CLAIMS_NAMESPACE,
            SEEN_NAMESPACE,
        ],
        None,
    )
    .is_ok_and(|out| out.success && !out.stdout.trim().is_empty())
}

/// Whether a git repository may hold `dir`: it or a directory above it has a `.git`, or
/// the environment names the repository. Where none can, there is no lease and no `git`
/// runs (a process costs more than the rest of a write).
fn may_be_in_repository(dir: &std::path::Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() || std::env::var_os("GIT_WORK_TREE").is_some() {
        return true;
    }
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    real.ancestors()
        .chain(dir.ancestors())
        .any(|d| d.join(".git").symlink_metadata().is_ok())
}

/// The repository of a workspace, and where the workspace sits in it.
#[derive(Debug, Clone)]
pub(crate) struct Repository {
    pub git: Git,
    /// The workspace as one ref component.
    pub project: String,
    /// The workspace's directory relative to the top level (`""`: the top level).
    pub path: String,
    /// Where this checkout keeps its holder id (per worktree).
    pub holder_file: std::path::PathBuf,
    /// Where it keeps what the default branch shows finished ([`super::branch`]).
    pub branch_cache: std::path::PathBuf,
}

/// The repository holding `ws` and the workspace's project component: its directory
/// relative to the top level, `_` for the top level itself. One `git` run.
pub(crate) fn repository(ws: &Workspace) -> OpResult<Repository> {
    let root = ws.v1_root()?;
    let git = Git::new(&root)?;
    let out = git.run(
        &[
            "rev-parse",
            "--show-toplevel",
            "--git-path",
            "small/claim-holder",
            "--git-path",
            "small/branch-tasks",
        ],
        None,
    )?;
    let lines: Vec<&str> = out.stdout.lines().collect();
    let [top, holder, cache] = lines.as_slice() else {
        return Err(system(format!(
            "{} is not in a git repository: claims are git refs",
            root.display()
        ))
        .with_help("run `git init` (and add a remote to share claims), or work without claims"));
    };
    if !out.success {
        return Err(system(format!("`git rev-parse` failed: {}", out.reason())));
    }
    let path = relative_path(&root, Path::new(top));
    let project = match path.as_str() {
        "" => "_".to_string(),
        p => ref_component(p),
    };
    Ok(Repository {
        holder_file: git.dir.join(holder),
        branch_cache: git.dir.join(cache),
        git,
        project,
        path,
    })
}

/// The workspace at `root` in the repository whose top level is `top`, as a `/`-separated
/// path (`""`: the top level itself).
fn relative_path(root: &Path, top: &Path) -> String {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (root, top) = (canon(root), canon(top));
    match root.strip_prefix(&top) {
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => root.to_string_lossy().into_owned(),
    }
}

/// The repository's remotes by name. A name git would read as an option (a leading `-`)
/// is left out: it can only come from a hand-edited config, and is never passed to git.
fn remote_names(git: &Git) -> OpResult<Vec<String>> {
    let out = git.run(&["remote"], None)?;
    Ok(out
        .stdout
        .lines()
        .filter(|r| !r.is_empty() && !r.starts_with('-'))
        .map(str::to_string)
        .collect())
}

fn require_remote(remotes: &[String], name: &str) -> OpResult<String> {
    if name.starts_with('-') {
        return Err(OpError::usage(
            crate::workspace::error::code::USAGE,
            format!("the remote name {name:?} starts with `-`, which git would read as an option"),
        ));
    }
    if remotes.iter().any(|r| r == name) {
        return Ok(name.to_string());
    }
    Err(system(format!(
        "this repository has no remote `{name}` to hold the claims"
    )))
}

/// The remote-tracking refs that say which remotes there are and which branch is each
/// one's default, and the repository's own `main`/`master`: one `git for-each-ref`.
struct Tracking {
    /// `(refname, symref target)`.
    refs: Vec<(String, String)>,
}

impl Tracking {
    fn read(git: &Git) -> OpResult<Tracking> {
        let out = git.ok(
            &[
                "for-each-ref",
                "--format=%(refname) %(symref)",
                "--",
                "refs/remotes/*/HEAD",
                "refs/remotes/*/main",
                "refs/remotes/*/master",
                "refs/heads/main",
                "refs/heads/master",
            ],
            None,
        )?;
        Ok(Tracking {
            refs: out
                .lines()
                .map(|l| {
                    let (name, target) = l.split_once(' ').unwrap_or((l, ""));
                    (name.to_string(), target.to_string())
                })
                .collect(),
        })
    }

    fn has_remote(&self, remote: &str) -> bool {
        let prefix = format!("refs/remotes/{remote}/");
        self.refs.iter().any(|(name, _)| {
            name.strip_prefix(&prefix)
                .is_some_and(|rest| !rest.contains('/'))
        })
    }

    /// The branch that completions reach (see [`Store::branch`]): the remote's default
    /// branch as its `HEAD` was last seen (`git clone` records it), else `main` or `master`
    /// where this repository tracks them; for local refs (`remote` none), the repository's
    /// own branch of the name `origin` gives, else its `main` or `master`.
    fn default_branch(&self, remote: Option<&str>) -> Option<Branch> {
        let head_remote = remote.or(Some("origin"));
        let from_head = head_remote.and_then(|r| {
            let head = format!("refs/remotes/{r}/HEAD");
            let (_, target) = self.refs.iter().find(|(name, _)| *name == head)?;
            target
                .strip_prefix(&format!("refs/remotes/{r}/"))
                .map(str::to_string)
        });
        let prefix = match remote {
            Some(r) => format!("refs/remotes/{r}/"),
            None => "refs/heads/".to_string(),
        };
        let name = from_head.or_else(|| {
            ["main", "master"]
                .into_iter()
                .find(|n| {
                    self.refs
                        .iter()
                        .any(|(name, _)| *name == format!("{prefix}{n}"))
                })
                .map(str::to_string)
        })?;
        Some(Branch {
            local_ref: format!("{prefix}{name}"),
            name,
        })
    }
}

fn unreachable(remote: &str, reason: &str) -> OpError {
    system(format!("cannot reach the remote `{remote}`: {reason}"))
        .with_help("nothing was claimed; try again when the remote is reachable, or use --local")
}

/// Whether `git push --porcelain` reported `name` as updated (not rejected).
fn pushed(porcelain: &str, name: &str) -> bool {
    porcelain.lines().any(|l| {
        let mut fields = l.split('\t');
        let flag = fields.next().unwrap_or("");
        let spec = fields.next().unwrap_or("");
        matches!(flag, "*" | "+" | "-" | " " | "=") && spec.ends_with(&format!(":{name}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines() {
        let ok = "To ../r.git\n*\tabc:refs/small/claims/_/t\t[new reference]\nDone\n";
        assert!(pushed(ok, "refs/small/claims/_/t"));
        let del = "To ../r.git\n-\t:refs/small/claims/_/t\t[deleted]\nDone\n";
        assert!(pushed(del, "refs/small/claims/_/t"));
        let no = "To ../r.git\n!\tabc:refs/small/claims/_/t\t[rejected] (stale info)\nDone\n";
        assert!(!pushed(no, "refs/small/claims/_/t"));
    }

    #[test]
    fn batch_output_is_read_record_by_record_as_bytes() {
        let mut out: Vec<u8> = b"aaa blob 3\nabc\nbbb missing\nccc blob 2\n\xff\xfe\n".to_vec();
        // A blob over the bound, then a record that must still be read as itself.
        out.extend(format!("ddd blob {}\n", MAX_RECORD_BYTES + 10).as_bytes());
        out.extend(vec![b'x'; MAX_RECORD_BYTES + 10]);
        out.extend(b"\neee tree 4\nabcd\nfff blob 2\nok\n");
        let mut r = std::io::BufReader::with_capacity(7, &out[..]);
        let mut got = Vec::new();
        while let Some(item) = read_object(&mut r, RECORD_BOUND) {
            got.push(item);
        }
        assert_eq!(got.len(), 6);
        assert_eq!(got[0].1.as_deref().unwrap(), b"abc");
        assert!(got[1].1.is_err() && got[1].0.is_none());
        assert_eq!(got[2].1.as_deref().unwrap(), b"\xff\xfe");
        assert!(got[3].1.as_ref().unwrap_err().contains("over the"));
        assert!(got[4].1.as_ref().unwrap_err().contains("tree"));
        assert_eq!(got[5].1.as_deref().unwrap(), b"ok");
        assert_eq!(got[5].0.as_deref(), Some("fff"));
    }

    proptest::proptest! {
        /// Whatever git (or a damaged pipe) prints, the batch reader ends, without a panic,
        /// each object within its bound.
        #[test]
        fn any_batch_output_is_read_within_bounds(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
            max in 0u64..64,
        ) {
            let mut r = std::io::BufReader::with_capacity(5, &bytes[..]);
            let mut n = 0;
            while let Some((_, blob)) = read_object(&mut r, max) {
                n += 1;
                proptest::prop_assert!(n <= bytes.len());
                if let Ok(b) = blob {
                    proptest::prop_assert!(b.len() as u64 <= max);
                }
            }
        }
    }

    #[test]
    fn remote_names_that_read_as_options_are_refused() {
        let e = require_remote(&["-x".into()], "-x").unwrap_err();
        assert!(e.diagnostic.message.contains("option"));
        assert!(require_remote(&["origin".into()], "origin").is_ok());
    }
}
