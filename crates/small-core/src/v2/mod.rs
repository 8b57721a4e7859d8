//! The read side of the SMALL 2.0.0 session profile (docs/v2.md).
//!
//! A 2.0.0 `.small/` holds `profile.json`, `policy/`, and immutable JSON records:
//! `sessions/<id>.json`, `events/<session>/<event>.json`, `receipts/sha256/<digest>.json`.
//! [`detect`] tells a 2.0.0 tree from a v1 one; [`check`] loads it safely ([`load`]), checks
//! every record and the event graph, folds the events into a [`State`] ([`reduce`]) and
//! reports every problem as a [`Diagnostic`] with a `V2-*` rule code.

pub mod artifacts;
mod command;
mod fastevent;
pub mod gojson;
pub mod inspect;
pub mod json;
pub mod load;
pub mod read;
pub mod record;
pub mod reduce;
pub mod snapshot;
pub mod status;
pub mod write;

use std::path::Path;

use crate::diag::{self, Diagnostic};
use crate::spec::consts::{ArtifactKind, WORKSPACE_FILE};

pub use load::{Store, MAX_RECORD_BYTES, PROFILE_VERSION};
pub use reduce::{Conflict, State, Task};

/// Which gate stage a `V2-*` rule belongs to (for `check`'s staged report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Reading records: files, JSON, members, digests, identities.
    Records,
    /// The event graph: sessions, sequences, parents, cycles; v1 files left beside.
    Graph,
    /// The reduced state: conflicts, policy material.
    State,
}

/// The stage of a diagnostic code.
pub fn stage_of(code: &str) -> Stage {
    match code {
        "V2-SESSION" | "V2-SEQ" | "V2-PARENT" | "V2-CYCLE" | "V2-MIXED" => Stage::Graph,
        "V2-CONFLICT" | "V2-POLICY" => Stage::State,
        _ => Stage::Records,
    }
}

/// What [`check`] found.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Every problem, sorted (file, then code).
    pub diagnostics: Vec<Diagnostic>,
    /// The state of the records that could be read (with the conflicts among them).
    pub state: State,
}

/// Load, check and reduce the 2.0.0 tree at `root/.small` (`small_dir`).
/// The state's `timeline` is left empty: the gates never show it, and at 100 000 events it
/// is the largest part of the state ([`check_store`] keeps it).
pub fn check(root: &Path, small_dir: &Path) -> Checked {
    let store = load::load(root, small_dir);
    check_records(root, small_dir, &store, false)
}

/// [`check`], also naming the records read, for the commands that list or hash them
/// ([`record_files`]).
pub fn check_listed(root: &Path, small_dir: &Path) -> (Checked, Vec<String>) {
    let store = load::load(root, small_dir);
    let checked = check_records(root, small_dir, &store, false);
    (checked, record_files(&store))
}

/// The records of `store` (workspace-relative paths): profile, sessions, events, receipts.
/// Not part of [`Checked`]: the gates never show them, and at 100 000 events formatting
/// the paths took a tenth of `check --strict`'s time after reading.
fn record_files(store: &Store) -> Vec<String> {
    store
        .profile
        .as_ref()
        .map(|_| ".small/profile.json".to_string())
        .into_iter()
        .chain(store.sessions.iter().map(|s| s.file.clone()))
        .chain(store.events.iter().map(load::Event::file))
        .chain(store.receipts.iter().map(|r| r.file.clone()))
        .collect()
}

/// [`check`], also giving the records read (for the commands that show them).
pub fn check_store(root: &Path, small_dir: &Path) -> (Checked, Store) {
    let store = load::load(root, small_dir);
    let checked = check_loaded(root, small_dir, &store);
    (checked, store)
}

/// [`check_store`] without the timeline's copies: readers walk the state's `order`
/// (positions in the store) instead. At 100 000 events the copies are about 37 MiB.
pub fn check_store_ordered(root: &Path, small_dir: &Path) -> (Checked, Store) {
    let store = load::load(root, small_dir);
    let checked = check_records(root, small_dir, &store, false);
    (checked, store)
}

/// The checks and the state of records already read: what [`check_store`] does after
/// loading (the writer uses it on its records plus the ones it published).
pub(crate) fn check_loaded(root: &Path, small_dir: &Path, store: &Store) -> Checked {
    check_records(root, small_dir, store, true)
}

/// [`check_loaded`], with the state's timeline or without it.
fn check_records(root: &Path, small_dir: &Path, store: &Store, timeline: bool) -> Checked {
    let mut diags = store.diagnostics.clone();
    diags.extend(mixed_profile(root, small_dir));
    diags.extend(command::digest_rule(store));
    // The graph's rules and the frontier on a second thread (or here, when none can be
    // started), the reducer here: they read the same records and nothing of each other.
    let (graph, reduced) = std::thread::scope(|scope| {
        let graph = crate::par::spawn(scope, || {
            (reduce::graph_rules(store), reduce::frontier(&store.events))
        });
        let reduced = reduce::reduce_all(store, timeline);
        (graph.join(), reduced)
    });
    let mut state = reduced.state;
    match graph {
        Ok((g, frontier)) => {
            diags.extend(g);
            state.frontier = frontier;
        }
        Err(panic) => std::panic::resume_unwind(panic),
    }
    // The last graph rule, no cycle, holds when the reducer ordered every event.
    if !reduced.whole {
        diags.extend(reduce::cycle_diagnostic(store));
    }
    // Conflicts computed over a damaged event set are consequences of the damage, not
    // findings of their own: they are reported once the records and the graph are sound.
    if !diags.iter().any(Diagnostic::is_error) {
        diags.extend(
            state
                .conflicts
                .iter()
                .map(|c| conflict_diagnostic(c, &state)),
        );
    }
    diag::sort(&mut diags);
    diags.dedup();
    Checked {
        diagnostics: diags,
        state,
    }
}

/// How to resolve conflict `c` of a tree whose frontier is `frontier`: the heads to choose
/// from, the resolution file to write and the command that applies it. Empty for a
/// conflict `small reconcile` does not resolve (policy material).
pub fn resolution_steps(c: &Conflict, state: &State) -> Option<ResolutionSteps> {
    let frontier = state.frontier.as_str();
    if c.kind == "policy_material" {
        return None;
    }
    let selected = c.heads.first().cloned().unwrap_or_default();
    let file = serde_json::json!({
        "profile": PROFILE_VERSION,
        "conflict_id": c.id,
        "heads": c.heads,
        "selected_event": selected,
        "reason": "<why this head is kept>",
        "expected_frontier": frontier,
    });
    Some(ResolutionSteps {
        conflict_id: c.id.clone(),
        kind: c.kind.clone(),
        task_id: c.task_id.clone(),
        heads: c
            .heads
            .iter()
            .zip(
                c.head_summaries
                    .iter()
                    .chain(std::iter::repeat(&String::new())),
            )
            .map(|(h, s)| HeadChoice {
                event: h.clone(),
                says: s.clone(),
            })
            .collect(),
        frontier: frontier.to_string(),
        start_session: (!state.sessions.iter().any(|s| s.is_active()))
            .then(|| "small session start --label reconcile".to_string()),
        preview: "small reconcile --preview".to_string(),
        resolution_file: file,
        apply: format!("small reconcile --apply FILE --expect-state {frontier}"),
    })
}

/// One head of a conflict and what it records.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HeadChoice {
    pub event: String,
    pub says: String,
}

/// The steps that resolve one conflict ([`resolution_steps`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResolutionSteps {
    pub conflict_id: String,
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    pub heads: Vec<HeadChoice>,
    pub frontier: String,
    /// When no session is active: the command that starts one (a resolution is an event of
    /// a session). Starting it adds an event, so the frontier to write is then the new one
    /// (`small reconcile --preview --json` prints it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_session: Option<String>,
    /// The read-only command that shows the conflict.
    pub preview: String,
    /// A resolution file for it: `selected_event` is the first head (write the one to keep)
    /// and `reason` is to be written.
    pub resolution_file: serde_json::Value,
    /// The command that applies the file (FILE is where it was written).
    pub apply: String,
}

impl ResolutionSteps {
    /// The steps as one line of help.
    pub fn help(&self) -> String {
        let heads: Vec<String> = self
            .heads
            .iter()
            .map(|h| {
                if h.says.is_empty() {
                    h.event.clone()
                } else {
                    format!("{} ({})", h.event, h.says)
                }
            })
            .collect();
        let start = match &self.start_session {
            Some(cmd) => format!(
                "No session is active: run `{cmd}` first; it changes the frontier, so take the new one from `small reconcile --preview --json`. "
            ),
            None => String::new(),
        };
        format!(
            "keep one head: {}. {start}Write a resolution file such as {} with selected_event set to the head you keep and your reason, then run `{}` (`{}` shows the conflict)",
            heads.join(" or "),
            self.resolution_file,
            self.apply,
            self.preview
        )
    }
}

fn conflict_diagnostic(c: &Conflict, state: &State) -> Diagnostic {
    if c.kind == "policy_material" {
        return Diagnostic::error(
            "V2-POLICY",
            format!("{} ({}; heads {})", c.message, c.id, c.heads.join(", ")),
        )
        .in_file(".small/policy")
        .with_help("policy files change only with a policy_changed event: restore the file, or revise the policy through small so that the change is recorded");
    }
    let task = if c.task_id.is_empty() {
        String::new()
    } else {
        format!(" on task {}", c.task_id)
    };
    Diagnostic::error(
        "V2-CONFLICT",
        format!(
            "{} conflict{task}: {} ({}; heads {})",
            c.kind,
            c.message,
            c.id,
            c.heads.join(", ")
        ),
    )
    .in_file(".small/events")
    .with_help(match resolution_steps(c, state) {
        Some(steps) => steps.help(),
        None => "resolve it with a conflict_resolved event that names the conflict, its heads, the selected event and the frontier it saw".to_string(),
    })
}

/// v1 artifacts left beside 2.0.0 records: two sources of truth. The reference ignores them;
/// small reports them (docs/decisions/0106-v2-tree-with-v1-artifacts.md).
fn mixed_profile(root: &Path, small_dir: &Path) -> Vec<Diagnostic> {
    let names = ArtifactKind::ALL
        .iter()
        .map(|k| k.file_name())
        .chain([WORKSPACE_FILE]);
    names
        .filter(|n| std::fs::symlink_metadata(small_dir.join(n)).is_ok())
        .map(|n| {
            let rel = small_dir
                .join(n)
                .strip_prefix(root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| n.to_string());
            Diagnostic::error(
                "V2-MIXED",
                format!("v1 artifact {n} beside profile 2.0.0 records: a second, stale source of truth"),
            )
            .in_file(rel)
            .with_help("remove it: the migration keeps the v1 originals under .small/imports/v1/<id>/originals/")
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_fastevent;
