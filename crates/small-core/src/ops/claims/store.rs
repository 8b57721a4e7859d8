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
use super::record::{decode_component, ref_component, Record, MAX_RECORD_BYTES};
use super::Where;

/// The claim refs of all projects.
pub const CLAIMS_NAMESPACE: &str = "refs/small/claims";
/// What this checkout last read of each remote's claims.
pub const SEEN_NAMESPACE: &str = "refs/small/seen";
const ZERO: &str = "0000000000000000000000000000000000000000";
/// The most claim refs one read considers; a remote with more is reported, not read whole.
pub const MAX_REFS: usize = 100_000;

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
        let remotes = remote_names(&repo.git)?;
        let remote = match where_ {
            Some(Where::Local) => None,
            Some(Where::Remote(name)) => Some(require_remote(&remotes, name)?),
            None => Some(require_remote(&remotes, "origin").map_err(|e| {
                e.with_help("pass --remote NAME, or --local for leases shared only by the worktrees of this repository")
            })?),
        };
        let branch = default_branch(&repo.git, remote.as_deref(), &remotes)?;
        Ok(Store {
            git: repo.git,
            remote,
            project: repo.project,
            path: repo.path,
            branch,
        })
    }

    /// The stores this checkout can read without the network: its own refs and each
    /// remote's mirror.
    pub fn seen(ws: &Workspace) -> OpResult<Vec<Store>> {
        let repo = repository(ws)?;
        let remotes = remote_names(&repo.git)?;
        let store = |remote: Option<String>| Store {
            git: repo.git.clone(),
            remote,
            project: repo.project.clone(),
            path: repo.path.clone(),
            branch: None,
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
            "-c",
            "gc.auto=0",
            "-c",
            "maintenance.auto=false",
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
                        None => listing.stray.push(String::from_utf8_lossy(name).into_owned()),
                    }
                }
                Ok(())
            },
        )?;
        if !ok {
            return Err(system(format!("`git for-each-ref` failed: {stderr}")));
        }
        let shas: Vec<&str> = refs.iter().map(|(_, sha)| sha.as_str()).collect();
        let blobs = self.read_blobs(&shas)?;
        listing.leases = refs
            .into_iter()
            .zip(blobs)
            .map(|((task, sha), blob)| Stored {
                record: blob.and_then(|b| Record::parse(&task, &b)),
                task,
                sha,
            })
            .collect();
        Ok(listing)
    }

    /// The lease of `task` as last read.
    pub fn current(&self, task: &str) -> OpResult<Option<Stored>> {
        let name = self.read_ref(task);
        let mut found = None;
        let ((), _, _) = self
            .git
            .stream(&["cat-file", "--batch"], Some(format!("{name}\n").as_bytes()), |r| {
                found = read_one(r);
                Ok(())
            })?;
        Ok(found.and_then(|(sha, blob)| {
            let sha = sha?;
            Some(Stored {
                record: blob.and_then(|b| Record::parse(task, &b)),
                task: task.to_string(),
                sha,
            })
        }))
    }

    /// The contents of the blobs `shas`, in order, through one `git cat-file --batch`.
    fn read_blobs(&self, shas: &[&str]) -> OpResult<Vec<Result<Vec<u8>, String>>> {
        if shas.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = shas.iter().map(|sha| format!("{sha}\n")).collect();
        let (mut out, _, _) = self
            .git
            .stream(&["cat-file", "--batch"], Some(input.as_bytes()), |r| {
                let mut out = Vec::with_capacity(shas.len());
                while out.len() < shas.len() {
                    match read_one(r) {
                        Some((_, blob)) => out.push(blob),
                        None => break,
                    }
                }
                Ok(out)
            })?;
        out.resize_with(shas.len(), || Err("git did not print it".into()));
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
        let swap = match &self.remote {
            Some(remote) => self.push(remote, task, expected, new)?,
            None => self.update_local(task, expected, new)?,
        };
        if swap == Swap::Done && self.remote.is_some() {
            self.mirror(task, new);
        }
        Ok(swap)
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
        let mut args: Vec<String> = vec!["push".into(), "--porcelain".into(), "--no-verify".into()];
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
        for task in &gone {
            self.mirror(task, None);
        }
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
            let out = self.git.run(
                &[
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

/// One object of `git cat-file --batch` output: its id (when git named one) and its
/// contents, or why they are not a record's. Contents past the bound are drained unread.
/// `None` at the end of the output.
fn read_one(r: &mut impl BufRead) -> Option<(Option<String>, Result<Vec<u8>, String>)> {
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
    let fits = kind == "blob" && size <= MAX_RECORD_BYTES as u64;
    let blob = if fits {
        let mut buf = Vec::with_capacity(size as usize);
        match r.by_ref().take(size).read_to_end(&mut buf) {
            Ok(n) if n as u64 == size => Ok(buf),
            _ => Err("cut short".into()),
        }
    } else {
        let _ = std::io::copy(&mut r.by_ref().take(size), &mut std::io::sink());
        Err(if kind == "blob" {
            format!("{size} bytes, over the {MAX_RECORD_BYTES} a record may have")
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
pub(crate) struct Repository {
    pub git: Git,
    /// The workspace as one ref component.
    pub project: String,
    /// The workspace's directory relative to the top level (`""`: the top level).
    pub path: String,
}

/// The repository holding `ws` and the workspace's project component: its directory
/// relative to the top level, `_` for the top level itself.
pub(crate) fn repository(ws: &Workspace) -> OpResult<Repository> {
    let root = ws.v1_root()?;
    let git = Git::new(&root)?;
    let out = git.run(&["rev-parse", "--show-toplevel"], None)?;
    if !out.success {
        return Err(system(format!(
            "{} is not in a git repository: claims are git refs",
            root.display()
        ))
        .with_help("run `git init` (and add a remote to share claims), or work without claims"));
    }
    let top = std::path::PathBuf::from(out.stdout.trim_end_matches(['\n', '\r']));
    let path = relative_path(&root, &top);
    let project = match path.as_str() {
        "" => "_".to_string(),
        p => ref_component(p),
    };
    Ok(Repository { git, project, path })
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

/// The workspace at `root` in the repository whose top level is `top`, as a ref component.
#[cfg(test)]
pub(super) fn project_component(root: &Path, top: &Path) -> String {
    match relative_path(root, top).as_str() {
        "" => "_".to_string(),
        p => ref_component(p),
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
            crate::authoring::error::code::USAGE,
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

/// The branch that completions reach (see [`Store::branch`]): the remote's default branch
/// as its `HEAD` was last seen (`git clone` records it), else `main` or `master` where this
/// repository has them; for local refs, the repository's own branch of that name.
fn default_branch(git: &Git, remote: Option<&str>, remotes: &[String]) -> OpResult<Option<Branch>> {
    let head_of = |r: &str| -> OpResult<Option<String>> {
        let out = git.run(
            &["symbolic-ref", "--quiet", &format!("refs/remotes/{r}/HEAD")],
            None,
        )?;
        let prefix = format!("refs/remotes/{r}/");
        Ok(out
            .success
            .then(|| out.stdout.trim().strip_prefix(&prefix).map(str::to_string))
            .flatten())
    };
    let exists = |name: &str| -> OpResult<bool> {
        Ok(git
            .run(&["rev-parse", "--verify", "--quiet", name], None)?
            .success)
    };
    let name = match remote {
        Some(r) => head_of(r)?,
        None if remotes.iter().any(|r| r == "origin") => head_of("origin")?,
        None => None,
    };
    let prefix = match remote {
        Some(r) => format!("refs/remotes/{r}/"),
        None => "refs/heads/".to_string(),
    };
    let name = match name {
        Some(n) => Some(n),
        None => {
            let mut found = None;
            for n in ["main", "master"] {
                if exists(&format!("{prefix}{n}"))? {
                    found = Some(n.to_string());
                    break;
                }
            }
            found
        }
    };
    Ok(name.map(|name| Branch {
        local_ref: format!("{prefix}{name}"),
        name,
    }))
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
        while let Some(item) = read_one(&mut r) {
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

    #[test]
    fn remote_names_that_read_as_options_are_refused() {
        let e = require_remote(&["-x".into()], "-x").unwrap_err();
        assert!(e.diagnostic.message.contains("option"));
        assert!(require_remote(&["origin".into()], "origin").is_ok());
    }
}
