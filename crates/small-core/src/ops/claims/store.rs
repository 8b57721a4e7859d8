//! Where leases live and the one write they allow: a compare-and-swap of a claim ref, on a
//! remote (`git push --force-with-lease`) or in the repository's own refs (`git
//! update-ref`). Everything above this module reads records and asks for swaps.

use std::path::Path;

use crate::ops::{OpResult, Workspace};

use super::git::{system, Git};
use super::record::{ref_component, Record};
use super::Where;

/// The claim refs of all projects.
pub const CLAIMS_NAMESPACE: &str = "refs/small/claims";
/// What this checkout last read of each remote's claims.
pub const SEEN_NAMESPACE: &str = "refs/small/seen";
const ZERO: &str = "0000000000000000000000000000000000000000";

/// One lease as stored: the ref, the blob it points to, the record in it.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub sha: String,
    pub record: Record,
}

/// The result of a swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Swap {
    /// The ref now holds what we wrote.
    Done,
    /// Someone else changed it first.
    Lost,
}

/// The claims of one workspace, in one place.
#[derive(Debug, Clone)]
pub(super) struct Store {
    pub git: Git,
    /// The remote's name; `None` for the repository's own refs.
    pub remote: Option<String>,
    /// The workspace, as a ref component (see [`project_component`]).
    pub project: String,
}

impl Store {
    /// The store of `ws` at `where_` (default: the remote `origin`, when the repository has
    /// it). No repository or no such remote is a system error.
    pub fn open(ws: &Workspace, where_: Option<&Where>) -> OpResult<Store> {
        let (git, project) = repository(ws)?;
        let remote = match where_ {
            Some(Where::Local) => None,
            Some(Where::Remote(name)) => Some(require_remote(&git, name)?),
            None => Some(require_remote(&git, "origin").map_err(|e| {
                e.with_help("pass --remote NAME, or --local for leases shared only by the worktrees of this repository")
            })?),
        };
        Ok(Store {
            git,
            remote,
            project,
        })
    }

    /// The stores this checkout can read without the network: its own refs and each
    /// remote's mirror.
    pub fn seen(ws: &Workspace) -> OpResult<Vec<Store>> {
        let (git, project) = repository(ws)?;
        let remotes = git.ok(&["remote"], None)?;
        let mut out = vec![Store {
            git: git.clone(),
            remote: None,
            project: project.clone(),
        }];
        out.extend(remotes.lines().filter(|r| !r.is_empty()).map(|r| Store {
            git: git.clone(),
            remote: Some(r.to_string()),
            project: project.clone(),
        }));
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
    /// ones pruned). Nothing to do for local refs.
    pub fn refresh(&self) -> OpResult<()> {
        let Some(remote) = &self.remote else {
            return Ok(());
        };
        let spec = format!(
            "+{CLAIMS_NAMESPACE}/{}/*:{}*",
            self.project,
            self.read_prefix()
        );
        let args = [
            "-c",
            "gc.auto=0",
            "-c",
            "maintenance.auto=false",
            "fetch",
            "--quiet",
            "--no-tags",
            "--prune",
            "--no-write-fetch-head",
            remote,
            &spec,
        ];
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
        if out.success {
            return Ok(());
        }
        Err(unreachable(remote, &out.reason()))
    }

    /// Every lease as last read (after [`Store::refresh`] for a remote), by ref name.
    pub fn all(&self) -> OpResult<Vec<Stored>> {
        let prefix = self.read_prefix();
        let refs = self.git.ok(
            &["for-each-ref", "--format=%(objectname) %(refname)", &prefix],
            None,
        )?;
        let found: Vec<(&str, &str)> = refs.lines().filter_map(|l| l.split_once(' ')).collect();
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = found.iter().map(|(sha, _)| format!("{sha}\n")).collect();
        let blobs = self
            .git
            .ok(&["cat-file", "--batch"], Some(input.as_bytes()))?;
        let contents = split_batch(&blobs);
        Ok(found
            .iter()
            .zip(contents)
            .map(|((sha, name), bytes)| {
                let task = decode_component(name.strip_prefix(&prefix).unwrap_or(name));
                Stored {
                    sha: sha.to_string(),
                    record: Record::from_bytes(&task, bytes.as_bytes()),
                }
            })
            .collect())
    }

    /// The lease of `task` as last read.
    pub fn current(&self, task: &str) -> OpResult<Option<Stored>> {
        let name = self.read_ref(task);
        let out = self
            .git
            .run(&["rev-parse", "--verify", "--quiet", &name], None)?;
        let sha = out.stdout.trim();
        if !out.success || sha.is_empty() {
            return Ok(None);
        }
        let bytes = self.git.ok(&["cat-file", "blob", sha], None)?;
        Ok(Some(Stored {
            sha: sha.to_string(),
            record: Record::from_bytes(task, bytes.as_bytes()),
        }))
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
            let out = self
                .git
                .run(&["push", "--porcelain", &lease, remote, &spec], None)?;
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
        let out = self.git.run(&["ls-remote", remote, name], None)?;
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

/// Whether the repository holding `ws` has any claim ref or mirror at all: one `git` run,
/// so that every write and report of a workspace that uses no claims pays only that.
pub fn any_seen(ws: &Workspace) -> bool {
    let Ok(root) = ws.v1_root() else {
        return false;
    };
    if !may_be_in_repository(&root) {
        return false;
    }
    Git::new(&root)
        .run(
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

/// The repository holding `ws` and the workspace's project component: its directory
/// relative to the top level, `_` for the top level itself.
fn repository(ws: &Workspace) -> OpResult<(Git, String)> {
    let root = ws.v1_root()?;
    let git = Git::new(&root);
    let out = git.run(&["rev-parse", "--show-toplevel"], None)?;
    if !out.success {
        return Err(system(format!(
            "{} is not in a git repository: claims are git refs",
            root.display()
        ))
        .with_help("run `git init` (and add a remote to share claims), or work without claims"));
    }
    let top = std::path::PathBuf::from(out.stdout.trim_end_matches(['\n', '\r']));
    Ok((git, project_component(&root, &top)))
}

/// The workspace at `root` in the repository whose top level is `top`, as a ref component.
pub(super) fn project_component(root: &Path, top: &Path) -> String {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (root, top) = (canon(root), canon(top));
    match root.strip_prefix(&top) {
        Ok(rel) if rel.as_os_str().is_empty() => "_".to_string(),
        Ok(rel) => {
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            ref_component(&parts.join("/"))
        }
        Err(_) => ref_component(&root.to_string_lossy()),
    }
}

fn require_remote(git: &Git, name: &str) -> OpResult<String> {
    let out = git.run(&["remote"], None)?;
    if out.stdout.lines().any(|r| r == name) {
        return Ok(name.to_string());
    }
    Err(system(format!(
        "this repository has no remote `{name}` to hold the claims"
    )))
}

fn unreachable(remote: &str, reason: &str) -> crate::ops::OpError {
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

/// The contents of `git cat-file --batch` output, in order.
fn split_batch(out: &str) -> Vec<String> {
    let mut rest = out;
    let mut items = Vec::new();
    while let Some((header, tail)) = rest.split_once('\n') {
        let size = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse::<usize>().ok());
        match size {
            Some(n) if header.split(' ').count() == 3 && tail.len() >= n => {
                items.push(tail[..n].to_string());
                rest = tail[n..].strip_prefix('\n').unwrap_or(&tail[n..]);
            }
            // `<sha> missing`: an object this checkout does not have.
            _ => {
                items.push(String::new());
                rest = tail;
            }
        }
    }
    items
}

/// A ref component back to the name it encodes.
fn decode_component(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        if let (b'%', Some(hex)) = (bytes[i], hex) {
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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
    fn batch_output_and_components() {
        let out = "aaa blob 3\nabc\nbbb missing\nccc blob 0\n\n";
        assert_eq!(split_batch(out), ["abc", "", ""]);
        assert_eq!(decode_component("a%2Fb%5F"), "a/b_");
        assert_eq!(decode_component(&ref_component("x.lock")), "x.lock");
    }
}
