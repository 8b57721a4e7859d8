//! The next task: which task an agent picks up, given which tasks are held. One rule for
//! `claim --next`, `resume` and the web page's "Next task", so that the page never names a
//! task that `claim --next` would skip.
//!
//! The tasks there are to work on are the queue's ([`crate::spec::queue::ready`]): those in
//! progress, then the pending ones whose dependencies are all completed, in plan order. The
//! next task is the first of them that no lease holds; what counts as held (a live lease of
//! another holder, a done record) is the caller's to say, from the leases it has read.

use crate::spec::queue::{self, QueueTask};

/// The tasks there are to work on that `held` does not hold, in the order they are offered.
pub fn free_ready<T: QueueTask>(tasks: &[T], held: impl Fn(&T) -> bool) -> Vec<&T> {
    queue::ready(tasks)
        .into_iter()
        .filter(|t| !held(t))
        .collect()
}

/// The next task: the first task there is to work on that `held` does not hold.
pub fn next_free<T: QueueTask>(tasks: &[T], held: impl Fn(&T) -> bool) -> Option<&T> {
    queue::ready(tasks).into_iter().find(|t| !held(t))
}

/// Where `resume` resumes: [`next_free`] when any task is there to work on; otherwise (every
/// open task is blocked or waits on a dependency) the queue's preferred task, so that the
/// agent is told what stands in the way, unless that one is held too.
pub fn resume_at<T: QueueTask>(tasks: &[T], held: impl Fn(&T) -> bool) -> Option<&T> {
    if queue::ready(tasks).is_empty() {
        queue::preferred(tasks).filter(|t| !held(t))
    } else {
        next_free(tasks, held)
    }
}

/// Whether `task` is counted as a task of the plan: cancelled tasks and the `meta/*`
/// bookkeeping tasks are not (completion ratios, boards).
pub fn counts_as_task<T: QueueTask>(task: &T) -> bool {
    let meta = crate::spec::consts::META_TASK_PREFIX;
    task.status() != "cancelled" && !task.id().starts_with(meta) && !task.alias().starts_with(meta)
}

/// Whether a progress entry records work: not the tool's bookkeeping (`plan --add`, an
/// added dependency, ...) and not on a `meta/*` task. What a summary of recent work lists.
pub fn counts_as_work(task_id: &str, evidence: Option<&str>, notes: Option<&str>) -> bool {
    // Every plan edit marks its entry with the command in `notes`.
    let plan_edit = notes.is_some_and(|n| n.trim().starts_with("small plan --"));
    !task_id.starts_with(crate::spec::consts::META_TASK_PREFIX)
        && !plan_edit
        && !crate::spec::bookkeeping::is_bookkeeping(evidence, notes)
}

/// Whether every dependency of `task` is completed (a missing one is not).
pub fn dependencies_met<T: QueueTask>(tasks: &[T], task: &T) -> bool {
    task.dependencies().iter().all(|d| {
        tasks
            .iter()
            .find(|x| x.id() == d || (!x.alias().is_empty() && x.alias() == d))
            .is_some_and(|x| x.status() == "completed")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct T(&'static str, &'static str, Vec<String>);
    impl QueueTask for T {
        fn id(&self) -> &str {
            self.0
        }
        fn status(&self) -> &str {
            self.1
        }
        fn dependencies(&self) -> &[String] {
            &self.2
        }
    }
    fn t(id: &'static str, status: &'static str, deps: &[&str]) -> T {
        T(id, status, deps.iter().map(|d| d.to_string()).collect())
    }
    fn id<X: QueueTask>(t: Option<&X>) -> Option<&str> {
        t.map(QueueTask::id)
    }

    fn plan() -> Vec<T> {
        vec![
            t("t1", "completed", &[]),
            t("t2", "pending", &["t1"]),
            t("t3", "pending", &["t2"]),
            t("t4", "pending", &["t1"]),
            t("t5", "blocked", &[]),
        ]
    }

    #[test]
    fn the_next_task_is_the_first_ready_one_nobody_holds() {
        let tasks = plan();
        assert_eq!(id(next_free(&tasks, |_| false)), Some("t2"));
        assert_eq!(id(next_free(&tasks, |x| x.0 == "t2")), Some("t4"));
        assert_eq!(id(next_free(&tasks, |x| x.0 != "t3")), None);
        let free: Vec<&str> = free_ready(&tasks, |x| x.0 == "t2")
            .iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(free, ["t4"]);
    }

    #[test]
    fn a_task_in_progress_comes_first_unless_held() {
        let mut tasks = plan();
        tasks[3].1 = "in_progress";
        assert_eq!(id(next_free(&tasks, |_| false)), Some("t4"));
        assert_eq!(id(next_free(&tasks, |x| x.0 == "t4")), Some("t2"));
    }

    #[test]
    fn resume_names_what_stands_in_the_way_when_nothing_is_ready() {
        let tasks = vec![t("a", "blocked", &[]), t("b", "pending", &["a"])];
        assert_eq!(id(next_free(&tasks, |_| false)), None);
        assert_eq!(id(resume_at(&tasks, |_| false)), Some("a"));
        assert_eq!(id(resume_at(&tasks, |x| x.0 == "a")), None);
        let tasks = plan();
        assert_eq!(id(resume_at(&tasks, |x| x.0 == "t2")), Some("t4"));
        assert_eq!(id(resume_at(&tasks, |x| x.0 != "t5")), None);
    }

    #[test]
    fn cancelled_and_meta_tasks_are_not_counted() {
        assert!(counts_as_task(&t("t1", "pending", &[])));
        assert!(!counts_as_task(&t("t1", "cancelled", &[])));
        assert!(!counts_as_task(&t("meta/init", "completed", &[])));
    }

    #[test]
    fn bookkeeping_and_meta_entries_are_not_work() {
        assert!(counts_as_work("t1", Some("cargo test passed"), None));
        assert!(!counts_as_work(
            "t2",
            Some("Added dependency t1 to t2"),
            None
        ));
        assert!(!counts_as_work("t2", Some("x"), Some("small plan --add")));
        assert!(!counts_as_work("meta/init", Some("initialised"), None));
        assert!(!counts_as_work(
            "t6",
            Some("Cancelled task t6"),
            Some("small plan --cancel")
        ));
    }

    #[test]
    fn dependencies_are_met_only_when_all_are_completed() {
        let tasks = plan();
        assert!(dependencies_met(&tasks, &tasks[1]));
        assert!(!dependencies_met(&tasks, &tasks[2]));
        assert!(!dependencies_met(&tasks, &t("x", "pending", &["missing"])));
    }
}
