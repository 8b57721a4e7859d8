//! The plan: task ids, statuses and dependencies, changed in place.
//!
//! Every change edits `plan.small.yml` at the spans the loader recorded (see `crate::authoring::edit`),
//! so comments, key order and quoting a human wrote survive `small plan --done` and friends.
//! New tasks get the id `task-N`, one past the highest `task-N` in the plan. Dependencies
//! must name existing tasks and may not form a cycle.

use crate::authoring::edit::{self, NewValue};
use crate::gates::invariants::scalar_text;
use crate::spec::consts::ArtifactKind;
use crate::spec::model::TaskStatus;
use crate::workspace::error::{code, Error};
use crate::yaml::{self, Document, Limits, Node};

/// Workspace-relative path of the plan.
pub fn plan_rel() -> String {
    ArtifactKind::Plan.rel_path()
}

/// One task as authoring needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: String,
    pub title: String,
    /// The status as written (trimmed; empty when absent).
    pub status: String,
    pub dependencies: Vec<String>,
}

impl Task {
    /// The status with an absent one read as `pending` (as the reference does).
    pub fn effective_status(&self) -> &str {
        if self.status.is_empty() {
            TaskStatus::Pending.as_str()
        } else {
            &self.status
        }
    }
}

/// Parse plan text.
pub fn parse(src: &str) -> Result<Document, Error> {
    yaml::parse_str(src, &Limits::default()).map_err(|e| {
        Error::invalid(
            code::UNEDITABLE,
            format!("plan.small.yml is not valid YAML: {e}"),
        )
        .in_file(plan_rel())
        .with_help("fix the YAML (`small lint` shows where), then run the command again")
    })
}

/// An edit of the plan that cannot be made as the file is written.
fn uneditable(e: impl std::fmt::Display) -> Error {
    Error::invalid(code::UNEDITABLE, format!("cannot edit plan.small.yml: {e}")).in_file(plan_rel())
}

/// The tasks of a parsed plan (items that are not mappings are skipped).
pub fn tasks(root: &Node) -> Vec<Task> {
    let Some(items) = root.get("tasks").and_then(Node::as_seq) else {
        return Vec::new();
    };
    items
        .iter()
        .filter(|t| t.as_map().is_some())
        .map(|t| {
            let text = |k: &str| {
                t.get(k)
                    .and_then(scalar_text)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default()
            };
            Task {
                id: text("id"),
                title: text("title"),
                status: text("status"),
                dependencies: t
                    .get("dependencies")
                    .and_then(Node::as_seq)
                    .map(|d| {
                        d.iter()
                            .filter_map(scalar_text)
                            .map(|s| s.trim().to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// `task-N` with N one past the highest `task-<number>` id.
pub fn next_task_id(tasks: &[Task]) -> String {
    let max = tasks
        .iter()
        .filter_map(|t| t.id.strip_prefix("task-"))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|n| n.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    format!("task-{}", max + 1)
}

fn task_node<'a>(root: &'a Node, id: &str) -> Option<&'a Node> {
    root.get("tasks")?.as_seq()?.iter().find(|t| {
        t.get("id")
            .and_then(scalar_text)
            .is_some_and(|s| s.trim() == id)
    })
}

fn tasks_key_col(src: &str, root: &Node) -> usize {
    root.entry("tasks").map_or(0, |e| {
        edit::column_of(src, e.key_span.start.offset as usize)
    })
}

/// Add a task with `title` and `status: pending`; returns the new text and the new id.
#[cfg(test)]
pub fn add_task(src: &str, title: &str) -> Result<(String, String), Error> {
    add_task_as(src, title, None)
}

/// Whether `id` may name a new task: letters, digits, `.`, `_`, `-` (starting with a letter
/// or digit), at most 64 bytes; `meta/` ids belong to the tool.
pub fn valid_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.as_bytes()[0].is_ascii_alphanumeric()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// [`add_task`] with an id chosen by the caller (`None`: the next free `task-N`). Branches
/// that add tasks in parallel give them distinct ids up front, so their plans merge.
pub fn add_task_as(src: &str, title: &str, id: Option<&str>) -> Result<(String, String), Error> {
    let doc = parse(src)?;
    let existing = tasks(&doc.root);
    let id = match id.map(str::trim) {
        None => next_task_id(&existing),
        Some(id) if !valid_task_id(id) => {
            return Err(Error::invalid(
                code::REFUSED,
                format!("task id {id:?} is not valid: use letters, digits, '.', '_' and '-' (e.g. auth-login)"),
            ))
        }
        Some(id) => {
            if let Some(t) = existing.iter().find(|t| t.id == id) {
                return Err(Error::invalid(
                    code::REFUSED,
                    format!("task id {id} is already in the plan ({:?})", t.title),
                ));
            }
            id.to_string()
        }
    };
    let Some(seq) = doc.root.get("tasks") else {
        // No tasks key at all: add one.
        let e = edit::set_key(
            src,
            &doc.root,
            "tasks",
            &NewValue::Block(vec![
                format!("- id: {}", edit::quote(&id)),
                format!("  title: {}", edit::quote(title)),
                format!("  status: {}", edit::quote(TaskStatus::Pending.as_str())),
            ]),
        )
        .map_err(uneditable)?;
        return Ok((edit::apply(src, vec![e]).map_err(uneditable)?, id));
    };
    if seq.is_null() {
        let e = edit::set_key(
            src,
            &doc.root,
            "tasks",
            &NewValue::Block(vec![
                format!("- id: {}", edit::quote(&id)),
                format!("  title: {}", edit::quote(title)),
                format!("  status: {}", edit::quote(TaskStatus::Pending.as_str())),
            ]),
        )
        .map_err(uneditable)?;
        return Ok((edit::apply(src, vec![e]).map_err(uneditable)?, id));
    }
    let fields = vec![
        ("id".to_string(), edit::quote(&id)),
        ("title".to_string(), edit::quote(title)),
        (
            "status".to_string(),
            edit::quote(TaskStatus::Pending.as_str()),
        ),
    ];
    let e = edit::append_map_item(src, seq, tasks_key_col(src, &doc.root), &fields)
        .map_err(uneditable)?;
    Ok((edit::apply(src, vec![e]).map_err(uneditable)?, id))
}

/// Set a task's status; an error names the unknown task.
pub fn set_status(src: &str, id: &str, status: TaskStatus) -> Result<String, Error> {
    let doc = parse(src)?;
    let task = task_node(&doc.root, id).ok_or_else(|| unknown_task(&doc.root, id))?;
    let e = edit::set_key(
        src,
        task,
        "status",
        &NewValue::Scalar(edit::quote(status.as_str())),
    )
    .map_err(uneditable)?;
    edit::apply(src, vec![e]).map_err(uneditable)
}

fn unknown_task(root: &Node, id: &str) -> Error {
    let ids: Vec<String> = tasks(root).into_iter().map(|t| t.id).collect();
    Error::unknown_task(id, &ids)
}

/// Whether adding `task -> dep` closes a cycle (dep already reaches task).
pub fn would_cycle(tasks: &[Task], task: &str, dep: &str) -> Option<Vec<String>> {
    // Depth-first search from dep along dependencies, looking for task.
    let mut stack = vec![(dep.to_string(), vec![dep.to_string()])];
    let mut seen = std::collections::HashSet::new();
    while let Some((cur, path)) = stack.pop() {
        if cur == task {
            return Some(path);
        }
        if !seen.insert(cur.clone()) {
            continue;
        }
        if let Some(t) = tasks.iter().find(|t| t.id == cur) {
            for d in &t.dependencies {
                let mut p = path.clone();
                p.push(d.clone());
                stack.push((d.clone(), p));
            }
        }
    }
    None
}

/// Add the dependency `task` depends on `dep`, after checking both exist, that it is not a
/// self-dependency, a duplicate, or a cycle.
pub fn add_dependency(src: &str, task: &str, dep: &str) -> Result<String, Error> {
    let doc = parse(src)?;
    let all = tasks(&doc.root);
    let node = task_node(&doc.root, task).ok_or_else(|| unknown_task(&doc.root, task))?;
    if task_node(&doc.root, dep).is_none() {
        let mut e = unknown_task(&doc.root, dep);
        e.diagnostic.message = format!("dependency {}", e.diagnostic.message);
        return Err(e);
    }
    if task == dep {
        return Err(Error::invalid(
            code::REFUSED,
            format!("task {task} cannot depend on itself"),
        ));
    }
    let t = all.iter().find(|t| t.id == task).cloned();
    if t.is_some_and(|t| t.dependencies.iter().any(|d| d == dep)) {
        return Err(Error::invalid(
            code::REFUSED,
            format!("task {task} already depends on {dep}"),
        ));
    }
    if let Some(path) = would_cycle(&all, task, dep) {
        return Err(Error::invalid(
            code::REFUSED,
            format!(
                "{task} cannot depend on {dep}: that would make a cycle ({task} -> {})",
                path.join(" -> ")
            ),
        ));
    }
    let key_col = node.as_map().and_then(|m| m.first()).map_or(0, |e| {
        edit::column_of(src, e.key_span.start.offset as usize)
    });
    let e = match node.get("dependencies") {
        Some(deps) if deps.as_seq().is_some() => {
            edit::append_item(src, deps, key_col, &edit::quote(dep)).map_err(uneditable)?
        }
        _ => edit::set_key(
            src,
            node,
            "dependencies",
            &NewValue::List(vec![edit::quote(dep)]),
        )
        .map_err(uneditable)?,
    };
    edit::apply(src, vec![e]).map_err(uneditable)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "# my plan\nsmall_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  # first\n  - id: \"task-1\"\n    title: \"One\" # keep me\n  - id: task-7\n    title: Seven\n    status: pending\n";

    #[test]
    fn ids_and_add() {
        let (out, id) = add_task(PLAN, "New \"thing\"").unwrap();
        assert_eq!(id, "task-8");
        assert!(out.starts_with(PLAN));
        let t = tasks(&parse(&out).unwrap().root);
        assert_eq!(t[2].title, "New \"thing\"");
        assert_eq!(t[2].status, "pending");
    }

    #[test]
    fn status_keeps_comments() {
        let out = set_status(PLAN, "task-1", TaskStatus::Completed).unwrap();
        assert!(
            out.contains("title: \"One\" # keep me\n    status: \"completed\"\n"),
            "{out}"
        );
        let out = set_status(&out, "task-7", TaskStatus::Blocked).unwrap();
        assert!(out.contains("status: \"blocked\""));
        assert!(out.contains("# first"));
        assert!(set_status(PLAN, "task-9", TaskStatus::Completed)
            .unwrap_err()
            .message()
            .contains("task-9"));
    }

    #[test]
    fn dependencies_checked() {
        let out = add_dependency(PLAN, "task-7", "task-1").unwrap();
        let t = tasks(&parse(&out).unwrap().root);
        assert_eq!(t[1].dependencies, vec!["task-1"]);
        assert!(add_dependency(&out, "task-1", "task-7")
            .unwrap_err()
            .message()
            .contains("cycle"));
        assert!(add_dependency(&out, "task-7", "task-1")
            .unwrap_err()
            .message()
            .contains("already"));
        assert!(add_dependency(&out, "task-7", "task-7")
            .unwrap_err()
            .message()
            .contains("itself"));
        assert!(add_dependency(&out, "task-7", "nope")
            .unwrap_err()
            .message()
            .contains("nope"));
        let (out, _) = add_task(&out, "Eight").unwrap();
        let out = add_dependency(&out, "task-8", "task-7").unwrap();
        assert!(add_dependency(&out, "task-1", "task-8")
            .unwrap_err()
            .message()
            .contains("cycle"));
        let out = add_dependency(&out, "task-8", "task-1").unwrap();
        let t = tasks(&parse(&out).unwrap().root);
        assert_eq!(t[2].dependencies, vec!["task-7", "task-1"]);
    }
}
