//! The project state: one typed value, built once per operation from either profile.
//!
//! A v1 workspace keeps its state in five YAML artifacts; a 2.0.0 workspace keeps it as
//! immutable events that the reducer folds ([`crate::v2::reduce`]). Readers — status, resume,
//! emit, doctor, the MCP server, the web view — should not care which: they read a
//! [`ProjectState`], never the files. [`load`] tells the profile, reads what the request
//! needs (the v1 progress log only from its end, [`crate::state::report::recent_entries`]),
//! and gives back the value, with every file it could not read listed in `problems` rather
//! than failing: a report on a damaged workspace still shows the rest.
//!
//! The state is a view of the workspace at one instant (jj's `View` over its operation log):
//! nothing in it reads a file later, and two loads of an unchanged workspace are equal.

pub mod report;
pub mod status;
pub mod v1;
mod v2view;

pub use v2view::{event_timeline, EventEntry, EventTimeline};

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::diag::{Diagnostic, Span};
use crate::spec::facts::ProgressFacts;
use crate::spec::model::ArtifactPresence;
use crate::spec::model::TaskStatus;
use crate::spec::queue::{self, QueueTask};
use crate::state::report::RecentEntry;
use crate::v2::reduce::{Conflict, ReceiptState, SessionState};
use crate::workspace::Location;

/// One task, whichever profile holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    pub id: String,
    /// A short name (2.0.0 tasks carry one; v1 ids are their own alias).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub alias: String,
    pub title: String,
    /// A longer text some plans give a task (`description`; not a protocol field).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Trimmed; an absent v1 status is `pending`.
    pub status: String,
    /// The task's revision (2.0.0; 0 for v1).
    pub revision: i64,
    pub steps: Vec<String>,
    pub acceptance: Vec<String>,
    pub dependencies: Vec<String>,
    /// Digests of the evidence receipts its transitions cite (2.0.0).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// How many events attest its outcome at its current revision (2.0.0; `reconstruct
    /// --task` lists them).
    #[serde(skip_serializing_if = "crate::json::is_zero")]
    pub attestation_count: usize,
    /// Where a v1 plan writes it (the gates' cross-file rules cite it).
    #[serde(skip)]
    pub source: Option<TaskSource>,
}

/// Where a v1 task is written in `plan.small.yml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSource {
    /// Its place in `tasks`.
    pub index: usize,
    /// The span of its `id` value (of the task when it has none).
    pub span: Span,
}

impl Task {
    /// The name people and commands use: the alias when the task has one, else its id.
    pub fn name(&self) -> &str {
        if self.alias.is_empty() {
            &self.id
        } else {
            &self.alias
        }
    }

    /// Whether the task is done.
    pub fn is_completed(&self) -> bool {
        self.status == TaskStatus::Completed.as_str()
    }
}

impl QueueTask for Task {
    fn id(&self) -> &str {
        &self.id
    }
    fn alias(&self) -> &str {
        &self.alias
    }
    fn status(&self) -> &str {
        &self.status
    }
    fn dependencies(&self) -> &[String] {
        &self.dependencies
    }
}

/// The intent (v1 `intent.small.yml`, 2.0.0 `policy/intent.small.yml`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Intent {
    pub intent: String,
    pub scope_include: Vec<String>,
    pub scope_exclude: Vec<String>,
    pub success_criteria: Vec<String>,
}

/// One constraint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Constraint {
    pub id: String,
    pub rule: String,
    pub severity: String,
}

/// The handoff: where the last agent left off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Handoff {
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_id_source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_task_id: Option<String>,
    pub next_steps: Vec<String>,
    /// The handoff's links (v1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// A merge of two branches left the handoff stale (v1): `small handoff` rewrites it.
    pub needs_regeneration: bool,
    /// Where a v1 handoff writes `resume.current_task_id`, when it writes it as a string
    /// (S3 checks only those; any other value is the schema's to report).
    #[serde(skip)]
    pub current_task_span: Option<Span>,
}

/// A link of the handoff.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Link {
    pub url: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// What the 2.0.0 profile adds: sessions, receipts, conflicts and the frontier.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Sessions {
    pub project_id: String,
    pub mode: String,
    pub policy_revision: String,
    /// Names the event set the state was reduced from.
    pub frontier: String,
    pub sessions: Vec<SessionState>,
    pub receipts: Vec<ReceiptState>,
    pub conflicts: Vec<Conflict>,
    /// How many events were folded.
    pub events: usize,
    /// Every finding of the 2.0.0 checks the state was loaded with (records, graph and
    /// state stages): the strict verdict without reading the records again.
    #[serde(skip)]
    pub findings: Vec<Diagnostic>,
    /// The state came from the cache in `.small-cache/` (no record it vouches for changed
    /// since it was written).
    #[serde(skip)]
    pub from_cache: bool,
    /// How many events written since the cache were read and folded into it.
    #[serde(skip)]
    pub folded: usize,
}

/// The state of one workspace (see the module documentation).
#[derive(Debug, Clone, Serialize)]
pub struct ProjectState {
    pub profile: ProfileName,
    #[serde(skip)]
    pub root: PathBuf,
    #[serde(skip)]
    pub small_dir: PathBuf,
    pub small_dir_exists: bool,
    /// The v1 artifacts present in `.small/` (none in a sound 2.0.0 tree).
    pub artifacts: ArtifactPresence,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
    pub constraints: Vec<Constraint>,
    /// `None` when the workspace has no plan (v1) — distinct from a plan with no task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<Task>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoff>,
    /// The current run's replay id (v1 `workspace.small.yml`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_replay_id: Option<String>,
    /// The last progress entries or events (newest first), as many as asked for.
    pub recent: Vec<RecentEntry>,
    /// 2.0.0 only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Sessions>,
    /// Files that could not be read (the rest is still reported).
    pub problems: Vec<String>,
    /// 2.0.0: problems with the records or the event graph (the state cannot be trusted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub record_problems: Vec<Diagnostic>,
    /// What every entry of a v1 progress log says of the tasks: which have entries,
    /// evidence, a completion of their own, and which entries of the current run name no
    /// task. Only a state the gates built ([`v1::from_docs`]) has it, from their one pass
    /// over the log; [`load`] reads the log from its end and leaves it `None`, as does a
    /// workspace without a log.
    #[serde(skip)]
    pub log: Option<ProgressFacts>,
}

/// The profile, as JSON names it. The profile back end that loads a state labels it; a
/// state built below it (the gates' v1 state) carries the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum ProfileName {
    #[default]
    #[serde(rename = "1.0.0")]
    V1,
    #[serde(rename = "2.0.0")]
    V2,
}

/// What to load.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions {
    /// How many recent entries (0: none; the log is then not read at all).
    pub recent: usize,
    /// Keep every entry; otherwise only signal entries (not apply bookkeeping).
    pub audit: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            recent: 5,
            audit: false,
        }
    }
}

impl ProjectState {
    /// The task `id` (or, in 2.0.0, alias).
    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks
            .as_deref()?
            .iter()
            .find(|t| t.id == id || (!t.alias.is_empty() && t.alias == id))
    }

    /// Every task (none without a plan).
    pub fn task_list(&self) -> &[Task] {
        self.tasks.as_deref().unwrap_or(&[])
    }

    /// Pending tasks whose dependencies all exist and are completed, in plan order, at most
    /// `limit` (0 = no limit).
    pub fn next_actionable(&self, limit: usize) -> Vec<&Task> {
        queue::next_actionable(self.task_list(), limit)
    }

    /// The task to work on: the one in progress, else the first actionable, else the first
    /// blocked, else the first pending.
    pub fn preferred_task(&self) -> Option<&Task> {
        queue::preferred(self.task_list())
    }

    /// Whether every task is completed (false without tasks).
    pub fn all_completed(&self) -> bool {
        let t = self.task_list();
        !t.is_empty() && t.iter().all(Task::is_completed)
    }

    /// Whether the records could be read and their graph is sound (always true for v1,
    /// whose damage the gates report).
    pub fn is_sound(&self) -> bool {
        self.record_problems.is_empty()
    }
}

/// Load the state of the v1 workspace at `loc`. Never fails: what cannot be read is listed
/// in `problems`. (The profile back end chooses between this and [`load_v2`].)
pub fn load_v1(loc: &Location, opts: &LoadOptions) -> ProjectState {
    let (mut st, readable) = opened(loc);
    if readable {
        v1::load(&mut st, opts);
    }
    st
}

/// Load the state of the 2.0.0 workspace at `loc`; what cannot be read is listed in
/// `problems` and `record_problems`. The state comes from the cache in `.small-cache/` when
/// `use_cache` and no record changed since it was written ([`crate::v2::snapshot`]; the same
/// value either way).
pub fn load_v2(loc: &Location, opts: &LoadOptions, use_cache: bool) -> ProjectState {
    let (mut st, readable) = opened(loc);
    if readable {
        v2view::load(&mut st, opts, use_cache);
    }
    st
}

/// The state of `loc` before any record is read, and whether there are records to read: a
/// missing `.small/`, or a linked one (refused), is the whole state.
fn opened(loc: &Location) -> (ProjectState, bool) {
    let small = &loc.small_dir;
    let mut st = ProjectState {
        profile: ProfileName::default(),
        root: loc.root.clone(),
        small_dir: small.clone(),
        small_dir_exists: small.is_dir(),
        artifacts: ArtifactPresence::default(),
        intent: None,
        constraints: Vec::new(),
        tasks: None,
        handoff: None,
        run_replay_id: None,
        recent: Vec::new(),
        sessions: None,
        problems: Vec::new(),
        record_problems: Vec::new(),
        log: None,
    };
    if std::fs::symlink_metadata(small).is_ok_and(|m| m.file_type().is_symlink()) {
        // A linked `.small/` is refused (docs/decisions/0070-hostile-files-links.md): nothing
        // outside is read.
        st.small_dir_exists = false;
        st.problems.push(format!(
            "{} is a symbolic link; small works only on a real .small/ directory",
            small.display()
        ));
        return (st, false);
    }
    if !st.small_dir_exists {
        return (st, false);
    }
    st.artifacts = v1::presence(small);
    (st, true)
}

/// [`load_v1`] of the `.small/` directory `small_dir` (its parent is the root).
pub fn load_dir_v1(small_dir: &Path, opts: &LoadOptions) -> ProjectState {
    let loc = Location {
        root: small_dir.parent().unwrap_or(small_dir).to_path_buf(),
        small_dir: small_dir.to_path_buf(),
    };
    load_v1(&loc, opts)
}
