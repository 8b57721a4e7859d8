//! Work on a second thread that still gets done when no thread can be started.
//!
//! `std::thread::scope`'s `spawn` panics when the system refuses a thread (a cgroup's pid
//! limit, an exhausted `ulimit -u`). The gates and the copies use threads only to go faster,
//! so where one cannot be started the work runs on the calling thread instead.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{Builder, Scope, ScopedJoinHandle};

/// Work started by [`spawn`]: on its own thread, or already done.
pub enum Task<'scope, T> {
    Running(ScopedJoinHandle<'scope, Option<T>>),
    Done(T),
    /// Neither ran nor can run (not expected: the work is kept until one of them takes it).
    Lost,
}

impl<T> Task<'_, T> {
    /// The work's result; `Err` when its thread panicked.
    pub fn join(self) -> std::thread::Result<T> {
        let lost = || -> std::thread::Result<T> { Err(Box::new("the task did not run")) };
        match self {
            Task::Done(t) => Ok(t),
            Task::Running(h) => match h.join() {
                Ok(Some(t)) => Ok(t),
                Ok(None) => lost(),
                Err(p) => Err(p),
            },
            Task::Lost => lost(),
        }
    }
}

/// Run `f` on a new thread of `scope`, or right here if none can be started.
pub fn spawn<'scope, 'env, T, F>(scope: &'scope Scope<'scope, 'env>, f: F) -> Task<'scope, T>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    let cell = Arc::new(Mutex::new(Some(f)));
    let theirs = Arc::clone(&cell);
    let run = move || {
        let f = theirs.lock().unwrap_or_else(PoisonError::into_inner).take();
        f.map(|f| f())
    };
    match start(scope, run) {
        Ok(h) => Task::Running(h),
        // The refused thread's closure went with its copy of the cell; the work did not.
        Err(_) => match cell.lock().unwrap_or_else(PoisonError::into_inner).take() {
            Some(f) => Task::Done(f()),
            None => Task::Lost,
        },
    }
}

/// Start `f` on a new thread of `scope`; `Err` when the system refuses one. For work that
/// cannot simply run in the caller's place (a consumer of what the caller produces).
pub fn start<'scope, 'env, T, F>(
    scope: &'scope Scope<'scope, 'env>,
    f: F,
) -> std::io::Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    if refused() {
        return Err(std::io::Error::other("no thread may be started"));
    }
    Builder::new().spawn_scoped(scope, f)
}

#[cfg(test)]
thread_local! {
    /// Set by [`without_threads`].
    static REFUSE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether threads are refused to this thread (only ever by a test).
fn refused() -> bool {
    #[cfg(test)]
    {
        REFUSE.get()
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// Run `f` as if the system refused every thread [`spawn`] asks for on this thread.
#[cfg(test)]
pub fn without_threads<R>(f: impl FnOnce() -> R) -> R {
    REFUSE.set(true);
    let r = f();
    REFUSE.set(false);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_a_thread_and_its_result_comes_back() {
        let here = std::thread::current().id();
        let (id, sum) = std::thread::scope(|s| {
            let t = spawn(s, || (std::thread::current().id(), (1..=10).sum::<u32>()));
            t.join().unwrap()
        });
        assert_ne!(id, here);
        assert_eq!(sum, 55);
    }

    #[test]
    fn refused_threads_run_the_work_here() {
        let here = std::thread::current().id();
        let (id, sum) = without_threads(|| {
            std::thread::scope(|s| {
                let t = spawn(s, || (std::thread::current().id(), (1..=10).sum::<u32>()));
                assert!(matches!(t, Task::Done(_)));
                t.join().unwrap()
            })
        });
        assert_eq!(id, here);
        assert_eq!(sum, 55);
    }

    #[test]
    fn a_panic_on_the_thread_is_an_error_of_join() {
        let r = std::thread::scope(|s| spawn(s, || -> u32 { panic!("boom") }).join());
        assert!(r.is_err());
    }
}
