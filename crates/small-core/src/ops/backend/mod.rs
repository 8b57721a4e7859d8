//! The profile back end: where a workspace's profile is decided, once, and the one place
//! that knows which profile does what.
//!
//! Opening a workspace ([`of`]) picks the back end of its profile; an operation asks the back
//! end for each step that differs between v1.0.0 and SMALL 2.0.0 (load and check the state,
//! record a transition, write a handoff, run a command, reconstruct). The v1 half of a step
//! is in [`v1`], the 2.0.0 half in [`v2`]; the steps the profiles share stay in the
//! operation's own module. No code outside this module matches on the profile (the model is
//! jj's storage back end behind one trait).

mod outcome;
mod stored;
mod v1;
mod v2;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::diag::Diagnostic;
use crate::gates::schemas::SchemaSet;
use crate::ops::apply::{Applied, ApplyRequest};
use crate::ops::claims::fence;
use crate::ops::doctor::DoctorReport;
use crate::ops::emit::{EmitError, EmitRequest, Emitted};
use crate::ops::gate::{GateOutcome, GateRequest};
use crate::ops::handoff::{HandedOff, HandoffRequest};
use crate::ops::health::WorkspaceHealth;
use crate::ops::plan::{PlanRequest, Planned};
use crate::ops::reconstruct::{ReconstructRequest, Reconstructed};
use crate::ops::record::{Checkpointed, Progressed, RecordRequest};
use crate::ops::resume::{GateMode, Resume};
use crate::ops::runs::{
    ArchiveOptions, ArchiveReport, CheckedOut, RunError, Scope, SnapshotResult,
};
use crate::ops::session::Labels;
use crate::ops::state::{LoadOptions, ProjectState};
use crate::ops::status::{StatusReport, StatusRequest};
use crate::ops::validate::{ValidateRequest, Validated};
use crate::ops::{OpError, OpResult, Profile, V1Run, Workspace};
use crate::spec::consts::SMALL_DIR;
use crate::workspace::Location;

/// The steps of the operations that differ by profile. One implementation per profile.
pub(crate) trait Backend: std::fmt::Debug + Send + Sync {
    /// Which profile this is.
    fn profile(&self) -> Profile;
    /// The profile's version string, as the documents name it.
    fn version(&self) -> &'static str;
    /// The files a session resumes from first, relative to `.small/`.
    fn state_files(&self) -> Vec<String>;
    /// Refuse a 2.0.0-only operation (`what`) on a workspace of another profile.
    fn require_sessions(&self, what: &str) -> OpResult<()>;
    /// Refuse a command that writes a v1 run (`start`, `reset`, `init --force`) on a profile
    /// whose history is its events.
    fn allow_v1_run(&self, run: V1Run) -> Result<(), crate::workspace::error::Error>;
    /// Lock the workspace for a 2.0.0 write, waiting `wait`, and read its records.
    fn writer(&self, root: &Path, wait: std::time::Duration) -> OpResult<crate::v2::write::Writer>;
    /// Why the handoff no longer describes the run, if it does not (a v1 handoff is a file
    /// the agent rewrites; a 2.0.0 handoff is an event and cannot go stale).
    fn handoff_staleness(&self, st: &ProjectState, small_dir: &Path) -> Option<String>;
    /// How each task is shown on a board (`progress`: the v1 progress timeline).
    fn shown_tasks(
        &self,
        loc: &Location,
        tasks: &[crate::ops::state::Task],
        progress: &crate::gates::timeline::Timeline,
    ) -> Vec<crate::ops::state::Shown>;

    /// `status`'s report of the workspace.
    fn status(&self, ws: &Workspace, req: &StatusRequest) -> StatusReport;
    /// Change the plan (`depends` parsed from the request).
    fn plan(
        &self,
        ws: &Workspace,
        req: &PlanRequest,
        depends: Vec<(String, String)>,
    ) -> OpResult<Planned>;
    /// Record progress on a task (the claim check made).
    fn progress(
        &self,
        ws: &Workspace,
        seen: &fence::Seen,
        req: &RecordRequest,
    ) -> OpResult<Progressed>;
    /// Close a task (the claim check made).
    fn checkpoint(
        &self,
        ws: &Workspace,
        seen: &fence::Seen,
        req: &RecordRequest,
    ) -> OpResult<Checkpointed>;
    /// Write the handoff.
    fn handoff(&self, ws: &Workspace, req: &HandoffRequest) -> OpResult<HandedOff>;
    /// Run a command and record it.
    fn apply(&self, ws: &Workspace, req: &ApplyRequest) -> OpResult<Applied>;
    /// Rebuild the record of the work.
    fn reconstruct(&self, ws: &Workspace, req: &ReconstructRequest) -> OpResult<Reconstructed>;
    /// The actor and model labels of the sessions, by session id (none without sessions).
    fn session_labels(&self, ws: &Workspace) -> BTreeMap<String, Labels>;
    /// The session a claim is made for, if the profile has sessions and one is current.
    fn claim_session(&self, ws: &Workspace) -> Option<String>;

    /// The project state of the workspace at `loc` (2.0.0: from the cache when `use_cache`
    /// and nothing changed).
    fn load_state(&self, loc: &Location, opts: &LoadOptions, use_cache: bool) -> ProjectState;
    /// Complete a resume context from the state it was built from: the gate verdict (checked
    /// as `mode` says) and what the profile requires that is missing.
    fn resume_checks(&self, loc: &Location, st: &ProjectState, mode: GateMode, r: &mut Resume);

    /// Every event of the workspace, in timeline order (`None` without events).
    fn events(&self, root: &Path, small_dir: &Path) -> Option<crate::ops::timeline::EventTimeline>;

    /// `validate` of the workspace at `loc`.
    fn validate(&self, loc: Location, req: &ValidateRequest) -> Validated;
    /// `lint` of the workspace at `loc`.
    fn lint(&self, loc: Location, req: &GateRequest) -> GateOutcome;
    /// `verify` of the workspace at `loc`.
    fn verify(&self, loc: Location, req: &GateRequest) -> GateOutcome;
    /// `check` of the workspace at `loc`.
    fn check(&self, loc: Location, req: &GateRequest) -> crate::ops::check::Checked;
    /// `emit` of the workspace at `loc`.
    fn emit(&self, loc: Location, req: &EmitRequest) -> Result<Emitted, EmitError>;
    /// `doctor`'s findings on the workspace at `loc` (which exists).
    fn doctor(
        &self,
        loc: Location,
        schemas: Result<Arc<SchemaSet>, Diagnostic>,
        cache: bool,
        r: &mut DoctorReport,
    );
    /// Snapshot the workspace at `root` into `store`.
    fn snapshot(&self, root: &Path, store: &Path, force: bool) -> Result<SnapshotResult, RunError>;
    /// Restore the snapshot `query` names into the workspace at `root`.
    fn checkout(
        &self,
        root: &Path,
        store: &Path,
        query: &str,
        force: bool,
    ) -> Result<CheckedOut, RunError>;
    /// Enforce the run commands' `--workspace` scope.
    fn run_scope(&self, root: &Path, scope: Scope) -> Result<(), RunError>;
    /// The live workspace at `root` as a side of `run diff`.
    fn live_side(&self, root: &Path) -> Result<crate::ops::runs::DiffSide, RunError>;
    /// Archive the workspace at `root`.
    fn archive(&self, root: &Path, opts: &ArchiveOptions) -> Result<ArchiveReport, RunError>;

    /// `health`'s strict verdict on the state of the workspace at `root`.
    fn health(
        &self,
        root: &Path,
        small: &Path,
        schemas: &Result<Arc<SchemaSet>, String>,
        h: &mut WorkspaceHealth,
    );
}

/// The entries whose presence makes a tree 2.0.0 even without `profile.json`.
const V2_DIRS: &[&str] = &["sessions", "events", "receipts", "policy"];

/// Whether `small_dir` holds a 2.0.0 tree, told by its entries (no file is read):
/// `profile.json`, else any of `sessions/`, `events/`, `receipts/`, `policy/`. Costs one
/// `lstat` on a v1 tree that has none of them besides the first. A `small_dir` that is not a
/// directory holds none (no entry under it can be found).
fn holds_sessions(small_dir: &Path) -> bool {
    let has = |name: &str| std::fs::symlink_metadata(small_dir.join(name)).is_ok();
    has("profile.json") || V2_DIRS.iter().any(|d| has(d))
}

/// The back end of the workspace whose `.small/` is `small_dir`: 2.0.0 when it holds
/// `profile.json` or 2.0.0 record directories, else v1 (also when there is nothing yet).
fn of(small_dir: &Path) -> &'static dyn Backend {
    if holds_sessions(small_dir) {
        &v2::V2
    } else {
        &v1::V1
    }
}

/// The back end of `profile`.
fn of_profile(profile: Profile) -> &'static dyn Backend {
    match profile {
        Profile::V1 => &v1::V1,
        Profile::V2 => &v2::V2,
    }
}

/// Opening a workspace: the one place its profile is decided.
impl Workspace {
    /// The workspace at `dir` (the directory holding `.small/`, or `.small` itself), else the
    /// nearest one upward from the current directory. A directory without `.small/` is a v1
    /// workspace that is missing; operations report that in their own terms.
    pub fn find(dir: Option<&Path>) -> Workspace {
        Workspace::at(crate::workspace::discover_root(dir))
    }

    /// The workspace whose `.small` directory is `small_dir` (its parent is the root).
    pub fn from_small_dir(small_dir: std::path::PathBuf) -> Workspace {
        let root = small_dir
            .parent()
            .map_or_else(|| small_dir.clone(), Path::to_path_buf);
        Workspace::at(root)
    }

    /// The workspace whose root is `root`.
    pub fn at(root: std::path::PathBuf) -> Workspace {
        let small_dir = root.join(SMALL_DIR);
        Workspace {
            profile: of(&small_dir).profile(),
            root,
            small_dir,
        }
    }

    /// The back end of the workspace's profile.
    pub(crate) fn backend(&self) -> &'static dyn Backend {
        of_profile(self.profile)
    }

    /// The files that hold the workspace's state, relative to the root, the one a session
    /// resumes from first: v1's handoff, artifacts and metadata; 2.0.0's profile and policy
    /// (its sessions and events are read through the operations).
    pub fn state_files(&self) -> Vec<String> {
        self.backend()
            .state_files()
            .into_iter()
            .map(|f| format!("{SMALL_DIR}/{f}"))
            .collect()
    }

    /// Lock a v1 workspace for writing, waiting `lock` (default: `SMALL_LOCK_TIMEOUT`, else
    /// 60 s): its root and the transaction. A workspace that changed profile while the lock
    /// was awaited (a migration finished) is refused, with nothing written.
    pub(crate) fn transaction(
        &self,
        lock: Option<Duration>,
    ) -> OpResult<(std::path::PathBuf, crate::workspace::txn::Transaction)> {
        use crate::workspace::txn::Transaction;
        let root = self.v1_root()?;
        let txn = match lock {
            Some(t) => Transaction::begin_with_timeout(&root, t)?,
            None => Transaction::begin(&root)?,
        };
        if of(&root.join(SMALL_DIR)).profile() != self.profile {
            return Err(OpError::invalid(
                crate::workspace::error::code::REFUSED,
                "the workspace changed profile while this command waited for its lock (a \
                 migration finished)",
            )
            .with_help("nothing was changed; run the command again"));
        }
        Ok((root, txn))
    }

    /// Lock a 2.0.0 workspace for writing and read its records, waiting `lock` (default:
    /// `SMALL_LOCK_TIMEOUT`, else 60 s); refused on a v1 workspace.
    pub(crate) fn writer(&self, lock: Option<Duration>) -> OpResult<crate::v2::write::Writer> {
        let wait = lock.unwrap_or_else(crate::workspace::txn::lock_timeout_from_env);
        self.backend().writer(&self.root, wait)
    }

    /// Refuse a command that writes a v1 run on a workspace whose profile has none.
    pub(crate) fn allow_v1_run(&self, run: V1Run) -> OpResult<()> {
        Ok(self.backend().allow_v1_run(run)?)
    }

    /// The profile's version string, as the documents name it.
    pub fn profile_version(&self) -> &'static str {
        self.backend().version()
    }
}

/// The back end of the workspace a location names (the gates and the page take a location).
impl Location {
    pub(crate) fn backend(&self) -> &'static dyn Backend {
        of(&self.small_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::holds_sessions;
    use crate::v2::tests::valid;

    #[test]
    fn a_tree_is_2_0_0_by_its_entries() {
        let dir = valid();
        let small = dir.path().join(".small");
        assert!(holds_sessions(&small));
        // Without `profile.json`, its record directories still make it 2.0.0.
        std::fs::remove_file(small.join("profile.json")).unwrap();
        assert!(holds_sessions(&small));
    }

    #[test]
    fn a_tree_without_records_is_v1() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".small")).unwrap();
        assert!(!holds_sessions(&dir.path().join(".small")));
        // `.small` as a file, or missing: nothing under it, so v1 (the callers rely on it).
        let file = tempfile::tempdir().unwrap();
        std::fs::write(file.path().join(".small"), "x").unwrap();
        assert!(!holds_sessions(&file.path().join(".small")));
        assert!(!holds_sessions(&file.path().join("missing")));
    }
}
