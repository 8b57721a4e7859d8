//! What the default branch shows finished: the tasks completed or cancelled in the
//! workspace as committed there. A done record may go once this shows its task, and
//! `claim` treats such a task as done even in a checkout that has not pulled it.
//!
//! The workspace's `.small/` tree at the branch is read with git (no checkout, no work
//! tree change), written to a temporary directory and loaded as any workspace; the answer
//! is kept per tree id in the repository's git directory, so it is worked out once for
//! each state of the branch.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use crate::ops::OpResult;

use super::git::{read_line, Git};
use super::store::Store;

/// The most bytes of one file, and of all files, read from a branch's tree.
const MAX_FILE_BYTES: u64 = 64 << 20;
const MAX_TOTAL_BYTES: u64 = 512 << 20;

/// The statuses the branch shows, by task id and by alias: `completed` or `cancelled`
/// (other statuses are left out).
#[derive(Debug, Clone, Default)]
pub(crate) struct Finished {
    /// The branch as people name it (`origin/main`), empty when there is none.
    pub branch: String,
    pub tasks: BTreeMap<String, String>,
    /// Asks whether `HEAD` contains the branch, once, when it matters.
    contained: std::cell::OnceCell<bool>,
    probe: Option<(Git, String)>,
}

impl Finished {
    /// How the branch shows `task` (its id or alias), when finished.
    pub fn outcome(&self, task: &str) -> Option<&str> {
        self.tasks.get(task).map(String::as_str)
    }

    /// Whether this checkout's `HEAD` already contains the branch: then its own plan is
    /// the newer word on every task (one `git merge-base`, asked once).
    pub fn contained(&self) -> bool {
        *self.contained.get_or_init(|| {
            self.probe.as_ref().is_some_and(|(git, local_ref)| {
                git.run(&["merge-base", "--is-ancestor", local_ref, "HEAD"], None)
                    .is_ok_and(|o| o.success)
            })
        })
    }
}

/// What `store`'s branch (as last fetched) shows finished, given the id of its `.small/`
/// tree there (read with the leases; `None`: the branch has no workspace).
pub(crate) fn finished(store: &Store, tree: Option<String>) -> OpResult<Finished> {
    let Some(branch) = &store.branch else {
        return Ok(Finished::default());
    };
    let label = match &store.remote {
        Some(r) => format!("{r}/{}", branch.name),
        None => branch.name.clone(),
    };
    let Some(tree) = tree else {
        return Ok(Finished {
            branch: label,
            ..Finished::default()
        });
    };
    let cache = &store.repo.branch_cache;
    let tasks = match cached(cache, &tree) {
        Some(tasks) => tasks,
        None => {
            let tasks = load_tree(store, &tree)?;
            keep(cache, &tree, &tasks);
            tasks
        }
    };
    Ok(Finished {
        branch: label,
        tasks,
        contained: std::cell::OnceCell::new(),
        probe: Some((store.git.clone(), branch.local_ref.clone())),
    })
}

/// The answer kept for `tree`, when the cache holds it.
fn cached(path: &Path, tree: &str) -> Option<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != tree {
        return None;
    }
    Some(
        lines
            .filter_map(|l| l.split_once(' '))
            .map(|(status, task)| (task.to_string(), status.to_string()))
            .collect(),
    )
}

/// Keep the answer for `tree` (best effort, published by a rename).
fn keep(path: &Path, tree: &str, tasks: &BTreeMap<String, String>) {
    let mut text = format!("{tree}\n");
    for (task, status) in tasks {
        if !task.contains('\n') {
            text.push_str(&format!("{status} {task}\n"));
        }
    }
    let Some(dir) = path.parent() else { return };
    let _ = std::fs::create_dir_all(dir);
    if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) {
        use std::io::Write;
        if tmp.write_all(text.as_bytes()).is_ok() {
            let _ = tmp.persist(path);
        }
    }
}

/// Load the `.small/` tree `tree` as a workspace: its finished tasks.
fn load_tree(store: &Store, tree: &str) -> OpResult<BTreeMap<String, String>> {
    let tmp = tempfile::tempdir()
        .map_err(|e| super::git::system(format!("cannot make a temporary directory: {e}")))?;
    let small = tmp.path().join(crate::spec::consts::SMALL_DIR);
    std::fs::create_dir_all(&small)
        .map_err(|e| super::git::system(format!("cannot write {}: {e}", small.display())))?;
    let files = list_tree(&store.git, tree)?;
    write_blobs(store, &small, &files)?;
    let loc = crate::workspace::Location {
        small_dir: small.clone(),
        root: tmp.path().to_path_buf(),
    };
    let opts = crate::state::LoadOptions {
        recent: 0,
        audit: false,
    };
    let st = crate::ops::state::load(&loc, &opts);
    let mut tasks = BTreeMap::new();
    for t in st.tasks.unwrap_or_default() {
        let status = t.status.trim();
        if status == "completed" || status == "cancelled" {
            if !t.alias.is_empty() {
                tasks.insert(t.alias.clone(), status.to_string());
            }
            tasks.insert(t.id.clone(), status.to_string());
        }
    }
    Ok(tasks)
}

/// The regular files of `tree` (path, blob id, size), without the v1 progress log (a
/// load that needs no entries does not read it) and within the bounds.
fn list_tree(git: &Git, tree: &str) -> OpResult<Vec<(String, String)>> {
    let mut files = Vec::new();
    let mut total = 0u64;
    let ((), _, _) = git.stream(&["ls-tree", "-r", "-l", "--", tree], None, |r| {
        while let Some(line) = read_line(r, 8192) {
            let line = String::from_utf8_lossy(&line).into_owned();
            let Some((meta, path)) = line.split_once('\t') else {
                continue;
            };
            let fields: Vec<&str> = meta.split_whitespace().collect();
            let [mode, "blob", sha, size] = fields.as_slice() else {
                continue;
            };
            let size = size.parse::<u64>().unwrap_or(u64::MAX);
            let plain = matches!(*mode, "100644" | "100755");
            if !plain || size > MAX_FILE_BYTES || path == "progress.small.yml" || !safe(path) {
                continue;
            }
            total = total.saturating_add(size);
            if total > MAX_TOTAL_BYTES {
                break;
            }
            files.push((path.to_string(), sha.to_string()));
        }
        Ok(())
    })?;
    Ok(files)
}

/// A tree path that stays inside the directory it is written to.
fn safe(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('"')
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Write each file's blob under `dir`, through one `git cat-file --batch`.
fn write_blobs(store: &Store, dir: &Path, files: &[(String, String)]) -> OpResult<()> {
    let shas: Vec<String> = files.iter().map(|(_, sha)| sha.clone()).collect();
    store.batch_map(&shas, MAX_FILE_BYTES, |i, (_, blob)| {
        let (Ok(content), Some((path, _))) = (blob, files.get(i)) else {
            return;
        };
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(&target, content);
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_paths_stay_inside() {
        assert!(safe("plan.small.yml"));
        assert!(safe("sessions/s1/events/e.json"));
        assert!(!safe("../x"));
        assert!(!safe("/etc/passwd"));
        assert!(!safe("a/../../x"));
        assert!(!safe("\"quoted\\npath\""));
    }
}
