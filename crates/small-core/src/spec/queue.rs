//! The task queue: which task to work on next. One rule for every report and both profiles
//! (status, resume, emit, health, the 2.0.0 status), over anything that is a task.

use crate::spec::model::TaskStatus;

/// What the queue needs of a task.
pub trait QueueTask {
    /// The id.
    fn id(&self) -> &str;
    /// Another name dependencies may use (a 2.0.0 alias), or "".
    fn alias(&self) -> &str {
        ""
    }
    /// The status, trimmed, an absent one being `pending`.
    fn status(&self) -> &str;
    /// The ids (or aliases) of the tasks it depends on.
    fn dependencies(&self) -> &[String];
}

fn find<'a, T: QueueTask>(tasks: &'a [T], name: &str) -> Option<&'a T> {
    tasks
        .iter()
        .find(|t| t.id() == name || (!t.alias().is_empty() && t.alias() == name))
}

/// Pending tasks whose dependencies all exist and are completed, in plan order, at most
/// `limit` (0 = no limit).
pub fn next_actionable<T: QueueTask>(tasks: &[T], limit: usize) -> Vec<&T> {
    let mut out = Vec::new();
    for t in tasks {
        if t.status() != TaskStatus::Pending.as_str() || t.id().is_empty() {
            continue;
        }
        let ready = t
            .dependencies()
            .iter()
            .all(|d| find(tasks, d).is_some_and(|x| x.status() == TaskStatus::Completed.as_str()));
        if ready {
            out.push(t);
            if limit > 0 && out.len() >= limit {
                break;
            }
        }
    }
    out
}

/// Every task there is to work on, in the order [`preferred`] picks from: those in
/// progress, then the actionable ones (what `claim --next` offers, one by one).
pub fn ready<T: QueueTask>(tasks: &[T]) -> Vec<&T> {
    tasks
        .iter()
        .filter(|t| !t.id().is_empty() && t.status() == TaskStatus::InProgress.as_str())
        .chain(next_actionable(tasks, 0))
        .collect()
}

fn first_with_status<'a, T: QueueTask>(tasks: &'a [T], status: &str) -> Option<&'a T> {
    tasks
        .iter()
        .find(|t| !t.id().is_empty() && t.status() == status)
}

/// The task to work on: the one in progress, else the first actionable, else the first
/// blocked, else the first pending.
pub fn preferred<T: QueueTask>(tasks: &[T]) -> Option<&T> {
    first_with_status(tasks, TaskStatus::InProgress.as_str())
        .or_else(|| next_actionable(tasks, 1).into_iter().next())
        .or_else(|| first_with_status(tasks, TaskStatus::Blocked.as_str()))
        .or_else(|| first_with_status(tasks, TaskStatus::Pending.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct T(&'static str, &'static str, &'static str, Vec<String>);
    impl QueueTask for T {
        fn id(&self) -> &str {
            self.0
        }
        fn alias(&self) -> &str {
            self.1
        }
        fn status(&self) -> &str {
            self.2
        }
        fn dependencies(&self) -> &[String] {
            &self.3
        }
    }
    fn t(id: &'static str, alias: &'static str, status: &'static str, deps: &[&str]) -> T {
        T(
            id,
            alias,
            status,
            deps.iter().map(|d| d.to_string()).collect(),
        )
    }

    #[test]
    fn actionable_respects_dependencies_by_id_or_alias() {
        let tasks = [
            t("a", "", "completed", &[]),
            t("b", "", "pending", &["a"]),
            t("c", "", "pending", &["b"]),
            t("d", "", "pending", &["zz"]),
            t("task_e", "e", "pending", &[]),
            t("f", "", "pending", &["e"]),
        ];
        let ids = |v: Vec<&T>| v.iter().map(|t| t.0).collect::<Vec<_>>();
        assert_eq!(ids(next_actionable(&tasks, 0)), ["b", "task_e"]);
        assert_eq!(ids(next_actionable(&tasks, 1)), ["b"]);
        assert_eq!(preferred(&tasks).map(|t| t.0), Some("b"));
        assert_eq!(ids(ready(&tasks)), ["b", "task_e"]);
    }

    #[test]
    fn in_progress_then_actionable_then_blocked_then_pending() {
        let mut tasks = vec![
            t("a", "", "blocked", &[]),
            t("b", "", "pending", &["a"]),
            t("c", "", "in_progress", &[]),
        ];
        assert_eq!(preferred(&tasks).map(|t| t.0), Some("c"));
        assert_eq!(ready(&tasks).iter().map(|t| t.0).collect::<Vec<_>>(), ["c"]);
        tasks.pop();
        assert_eq!(preferred(&tasks).map(|t| t.0), Some("a"));
        tasks.remove(0);
        assert_eq!(preferred(&tasks).map(|t| t.0), Some("b"));
        assert!(preferred::<T>(&[]).is_none());
    }
}
