//! Live updates: a file watcher on each workspace's `.small/` (and `.small-runs/`), whose
//! events are gathered for [`DEBOUNCE`], mapped to the parts of the page they change, and
//! broadcast to the event streams; and a checker thread per workspace that re-runs the gates
//! after a change, off the request path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher as _};
use small_core::ops::runs;

use crate::{view, App, Change, Scope, STORE_SCOPE};

/// How long events are gathered before the page is told.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

/// Keeps the watcher alive.
pub struct Watcher {
    _inner: notify::RecommendedWatcher,
}

/// The parts of a workspace page that a change to `name` (a file in `.small/`) affects.
fn parts_for(name: &str) -> &'static [&'static str] {
    match name {
        "progress.small.yml" => &["summary", "card", "timeline", "task"],
        "plan.small.yml" => &["summary", "card", "graph", "board", "task"],
        "handoff.small.yml" => &["summary", "card", "handoff"],
        "intent.small.yml" | "constraints.small.yml" => &["summary", "card", "intent"],
        _ => &["summary", "card"],
    }
}

/// Temporary and lock files of writers: not a change anyone needs to see.
fn ignored(name: &str) -> bool {
    name.starts_with('.') || name.ends_with(".tmp") || name.contains(".tmp.") || name.ends_with('~')
}

pub fn start(app: Arc<App>) -> notify::Result<Watcher> {
    let (tx, rx) = mpsc::channel();
    let mut w = notify::recommended_watcher(move |res| {
        let _ = tx.send(res);
    })?;
    for ws in &app.workspaces {
        w.watch(&ws.loc.small_dir, RecursiveMode::Recursive)?;
        let runs_dir = runs::store_dir(&ws.loc.root, None);
        if runs_dir.is_dir() {
            // Best effort: without it the runs list refreshes on the next page load.
            let _ = w.watch(&runs_dir, RecursiveMode::Recursive);
        }
    }
    if let Some(file) = app.store.as_ref().and_then(|s| s.file.as_ref()) {
        // The store's directory: SQLite writes the file and its `-wal` beside it.
        if let Some(dir) = file.parent() {
            let _ = w.watch(dir, RecursiveMode::NonRecursive);
        }
    }
    std::thread::Builder::new()
        .name("small-ui-watch".into())
        .spawn(move || dispatch(app, rx))
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
    Ok(Watcher { _inner: w })
}

fn dispatch(app: Arc<App>, rx: Receiver<notify::Result<notify::Event>>) {
    loop {
        let Ok(first) = rx.recv() else {
            return;
        };
        let mut batch = vec![first];
        let until = Instant::now() + DEBOUNCE;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(e) => batch.push(e),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        let mut changed: BTreeMap<usize, BTreeSet<&'static str>> = BTreeMap::new();
        let mut store_changed = false;
        for ev in batch.into_iter().flatten() {
            if matches!(ev.kind, EventKind::Access(_)) {
                continue;
            }
            for path in &ev.paths {
                if store_file_changed(&app, path) {
                    store_changed = true;
                }
                for (i, ws) in app.workspaces.iter().enumerate() {
                    if let Some(parts) = classify(path, &ws.loc.small_dir, &ws.loc.root) {
                        changed.entry(i).or_default().extend(parts.iter().copied());
                    }
                }
            }
        }
        for (i, parts) in changed {
            let ws = &app.workspaces[i];
            if parts.contains("timeline") {
                ws.timeline().refresh();
            }
            if !parts.iter().all(|p| *p == "runs") {
                ws.request_check();
            }
            let _ = app.events.send(Change {
                ws: Scope::Ws(i),
                parts: parts.into_iter().collect(),
            });
        }
        if store_changed {
            let _ = app.events.send(Change {
                ws: STORE_SCOPE,
                parts: vec!["store", "artifact"],
            });
        }
    }
}

/// Whether `path` is the SQLite store file or one of its companions (`-wal`, `-journal`).
fn store_file_changed(app: &App, path: &Path) -> bool {
    let Some(file) = app.store.as_ref().and_then(|s| s.file.as_ref()) else {
        return false;
    };
    if path.parent() != file.parent() {
        return false;
    }
    match (path.file_name(), file.file_name()) {
        (Some(p), Some(f)) => {
            let (p, f) = (p.to_string_lossy(), f.to_string_lossy());
            p == f || p == format!("{f}-wal") || p == format!("{f}-journal")
        }
        _ => false,
    }
}

fn classify(path: &Path, small_dir: &Path, root: &Path) -> Option<&'static [&'static str]> {
    let name = path.file_name()?.to_string_lossy();
    if ignored(&name) {
        return None;
    }
    if path.starts_with(small_dir) {
        // 2.0.0: a new event can change every part the events feed.
        if path.starts_with(small_dir.join("events"))
            || path.starts_with(small_dir.join("receipts"))
        {
            return Some(&[
                "summary", "card", "timeline", "task", "graph", "board", "handoff",
            ]);
        }
        return Some(parts_for(&name));
    }
    if path.starts_with(runs::store_dir(root, None)) {
        return Some(&["runs"]);
    }
    None
}

/// The checker of workspace `i`: each request (coalesced) re-runs the gates and tells the
/// page.
pub fn start_checker(app: Arc<App>, i: usize, rx: Receiver<()>) {
    let spawned = std::thread::Builder::new()
        .name(format!("small-ui-check-{i}"))
        .spawn(move || {
            while rx.recv().is_ok() {
                while rx.try_recv().is_ok() {}
                let ws = &app.workspaces[i];
                let loc = ws.loc.clone();
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| view::checks(&loc)));
                if let Ok(c) = result {
                    *ws.checks.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(c));
                }
                let _ = app.events.send(Change {
                    ws: Scope::Ws(i),
                    parts: vec!["card", "checks", "summary"],
                });
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(target: "small::ui", "the gate verdict will not be shown: cannot start a thread: {e}");
    }
}

/// The parts of a workspace page the leases feed.
pub const LEASE_PARTS: [&str; 6] = ["claims", "board", "graph", "summary", "card", "task"];

/// What the page shows of the leases: a change in it is worth telling the page.
fn lease_marks(
    loc: &small_core::ops::workspace::Location,
) -> Vec<(String, String, u64, &'static str)> {
    let now = view::unix_now();
    let mut v: Vec<_> = view::leases(loc)
        .iter()
        .map(|l| {
            let ends = small_core::ops::claims::record::parse_time(&l.ends)
                .map_or(0, |t| t.unix_timestamp());
            let state = match l.state {
                "held" if ends <= now => "grace",
                s => s,
            };
            (l.task_id.clone(), l.holder.clone(), l.generation, state)
        })
        .collect();
    v.sort();
    v
}

/// The lease refresher of workspace `i`: every `every`, fetch the leases from the remote
/// (when the repository has one; the git runner bounds each fetch in time) and read what
/// this checkout has seen; when that changed (a lease taken, renewed, released, done, or
/// ended), tell the page. It runs on its own thread, so a slow remote never holds up a
/// page, and it stops with the server.
pub fn start_lease_refresh(app: Arc<App>, i: usize, every: Duration) {
    let loc = app.workspaces[i].loc.clone();
    let ws = small_core::ops::Workspace::from_small_dir(loc.small_dir.clone());
    if !small_core::ops::claims::in_repository(&ws) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name(format!("small-ui-leases-{i}"))
        .spawn(move || {
            let remote = small_core::ops::claims::has_remote(&ws, None);
            let mut marks = lease_marks(&loc);
            let mut warned = false;
            loop {
                let until = Instant::now() + every;
                while Instant::now() < until {
                    if *app.shutdown.borrow() {
                        return;
                    }
                    std::thread::sleep(
                        until
                            .saturating_duration_since(Instant::now())
                            .min(Duration::from_millis(200)),
                    );
                }
                if *app.shutdown.borrow() {
                    return;
                }
                if remote {
                    let fetched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        small_core::ops::claims::list(&ws, None, false)
                    }));
                    match fetched {
                        Ok(Err(e)) if !warned => {
                            warned = true;
                            tracing::warn!(target: "small::ui", "cannot refresh the leases from the remote (the page shows those last seen): {}", small_core::ops::secrets::redact(&e.diagnostic.message));
                        }
                        Ok(Ok(_)) => warned = false,
                        _ => {}
                    }
                }
                let now = lease_marks(&loc);
                if now != marks {
                    marks = now;
                    let _ = app.events.send(Change {
                        ws: Scope::Ws(i),
                        parts: LEASE_PARTS.to_vec(),
                    });
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(target: "small::ui", "the leases will not refresh: cannot start a thread: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_file_names_the_parts_it_changes() {
        let root = PathBuf::from("/w");
        let small = root.join(".small");
        let p = |n: &str| classify(&small.join(n), &small, &root);
        assert!(p("progress.small.yml").unwrap().contains(&"timeline"));
        assert!(p("plan.small.yml").unwrap().contains(&"graph"));
        assert!(p("handoff.small.yml").unwrap().contains(&"handoff"));
        assert!(p(".lock").is_none());
        let ev = small.join("events").join("session_1").join("event_2.json");
        assert!(classify(&ev, &small, &root).unwrap().contains(&"timeline"));
        assert!(p("plan.small.yml.tmp").is_none());
        let runs = runs::store_dir(&root, None).join("x").join("meta.json");
        assert_eq!(classify(&runs, &small, &root), Some(&["runs"][..]));
        assert_eq!(classify(Path::new("/elsewhere/f"), &small, &root), None);
    }
}
