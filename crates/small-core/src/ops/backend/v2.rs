//! The SMALL 2.0.0 back end: sessions, immutable events and evidence receipts.

use super::*;
use crate::ops::gate::v2_outcome;
use crate::ops::{apply, check, doctor, emit, handoff, health, plan, reconstruct, record};
use crate::ops::{session, status, validate};

/// The SMALL 2.0.0 profile.
#[derive(Debug)]
pub(super) struct V2;

impl Backend for V2 {
    fn profile(&self) -> Profile {
        Profile::V2
    }

    fn version(&self) -> &'static str {
        crate::v2::PROFILE_VERSION
    }

    fn state_files(&self) -> Vec<String> {
        [
            "profile.json",
            "policy/intent.small.yml",
            "policy/constraints.small.yml",
        ]
        .map(String::from)
        .to_vec()
    }

    fn require_sessions(&self, _what: &str) -> OpResult<()> {
        Ok(())
    }

    fn allow_v1_run(&self, run: V1Run) -> Result<(), crate::workspace::error::Error> {
        use crate::workspace::error::{code, Error};
        Err(match run {
            V1Run::Start => Error::invalid(
                code::REFUSED,
                "`small start` prepares a v1 run (the v1 artifacts and their handoff); this is a \
                 SMALL 2.0.0 workspace, whose events are its one source of truth",
            )
            .with_help(
                "begin work with `small session start`; `small resume` shows where the work \
                 stands. Nothing was changed",
            ),
            V1Run::Reset => Error::invalid(
                code::REFUSED,
                "a SMALL 2.0.0 workspace's history cannot be reset: its events are authoritative \
                 and never rewritten",
            )
            .with_help(
                "record each change as an event instead (`small plan --add`, `small plan \
                 --pending ID`, `small progress add`), or begin new work in a new session \
                 (`small session start`). Nothing was changed",
            ),
            V1Run::Reinit => Error::invalid(
                code::REFUSED,
                "`small init --force` writes the v1 artifacts; this is a SMALL 2.0.0 workspace, \
                 whose events are its one source of truth (v1 files beside them would damage it)",
            )
            .with_help("begin work with `small session start`; nothing was changed"),
        })
    }

    fn writer(&self, root: &Path, wait: std::time::Duration) -> OpResult<crate::v2::write::Writer> {
        Ok(crate::v2::write::Writer::open(root, wait)?)
    }

    fn handoff_staleness(&self, _st: &ProjectState, _small_dir: &Path) -> Option<String> {
        None
    }

    fn shown_tasks(
        &self,
        loc: &Location,
        tasks: &[crate::ops::state::Task],
        _progress: &crate::gates::timeline::Timeline,
    ) -> Vec<crate::ops::state::Shown> {
        crate::ops::state::shown_v2(loc, tasks)
    }

    fn status(&self, ws: &Workspace, req: &StatusRequest) -> StatusReport {
        status::status_v2(ws, req)
    }

    fn plan(
        &self,
        ws: &Workspace,
        req: &PlanRequest,
        depends: Vec<(String, String)>,
    ) -> OpResult<Planned> {
        plan::plan_v2(ws, req, depends)
    }

    fn progress(
        &self,
        ws: &Workspace,
        _seen: &fence::Seen,
        req: &RecordRequest,
    ) -> OpResult<Progressed> {
        record::progress_v2(ws, req)
    }

    fn checkpoint(
        &self,
        ws: &Workspace,
        _seen: &fence::Seen,
        req: &RecordRequest,
    ) -> OpResult<Checkpointed> {
        record::checkpoint_v2(ws, req)
    }

    fn handoff(&self, ws: &Workspace, req: &HandoffRequest) -> OpResult<HandedOff> {
        handoff::handoff_v2(ws, req)
    }

    fn apply(&self, ws: &Workspace, req: &ApplyRequest) -> OpResult<Applied> {
        apply::apply_v2(ws, req)
    }

    fn reconstruct(&self, ws: &Workspace, req: &ReconstructRequest) -> OpResult<Reconstructed> {
        reconstruct::reconstruct_v2(ws, req)
    }

    fn session_labels(&self, ws: &Workspace) -> BTreeMap<String, Labels> {
        session::labels_v2(ws)
    }

    fn claim_session(&self, ws: &Workspace) -> Option<String> {
        crate::v2::write::resolve_session(&ws.root, None).ok()
    }

    fn load_state(&self, loc: &Location, opts: &LoadOptions, use_cache: bool) -> ProjectState {
        let mut st = crate::state::load_v2(loc, opts, use_cache);
        // A `.small/` that could not be read (a link, refused) keeps the state's default
        // label, as it holds no records.
        if st.small_dir_exists {
            st.profile = crate::state::ProfileName::V2;
        }
        st
    }

    fn resume_checks(&self, _loc: &Location, st: &ProjectState, _mode: GateMode, r: &mut Resume) {
        crate::authoring::resume::v2_checks(st, r)
    }

    fn events(&self, root: &Path, small_dir: &Path) -> Option<crate::ops::timeline::EventTimeline> {
        Some(crate::state::event_timeline(root, small_dir))
    }

    fn validate(&self, loc: Location, _req: &ValidateRequest) -> Validated {
        validate::validate_v2(loc)
    }

    fn lint(&self, loc: Location, _req: &GateRequest) -> GateOutcome {
        v2_outcome(
            crate::v2::check(&loc.root, &loc.small_dir),
            crate::v2::Stage::Graph,
        )
    }

    fn verify(&self, loc: Location, _req: &GateRequest) -> GateOutcome {
        v2_outcome(
            crate::v2::check(&loc.root, &loc.small_dir),
            crate::v2::Stage::State,
        )
    }

    fn check(&self, loc: Location, _req: &GateRequest) -> check::Checked {
        check::check_v2(loc)
    }

    fn emit(&self, loc: Location, req: &EmitRequest) -> Result<Emitted, EmitError> {
        Ok(emit::emit_v2(loc, req))
    }

    fn doctor(
        &self,
        loc: Location,
        _schemas: Result<Arc<SchemaSet>, Diagnostic>,
        _cache: bool,
        r: &mut DoctorReport,
    ) {
        doctor::diagnose_v2(&loc, r)
    }

    fn snapshot(&self, root: &Path, store: &Path, force: bool) -> Result<SnapshotResult, RunError> {
        crate::history::runs::v2::snapshot(root, store, force)
    }

    fn checkout(
        &self,
        root: &Path,
        store: &Path,
        query: &str,
        force: bool,
    ) -> Result<CheckedOut, RunError> {
        super::stored::checkout_v2(root, store, query, force).map(CheckedOut::V2)
    }

    fn run_scope(&self, _root: &Path, _scope: Scope) -> Result<(), RunError> {
        Ok(())
    }

    fn live_side(&self, root: &Path) -> Result<crate::ops::runs::DiffSide, RunError> {
        crate::history::runs::diff::live_side(root, true)
    }

    fn archive(&self, root: &Path, opts: &ArchiveOptions) -> Result<ArchiveReport, RunError> {
        crate::history::runs::require_small_dir(root)?;
        crate::history::archive::v2::create(root, opts, &crate::ops::Stored)
    }

    fn health(
        &self,
        root: &Path,
        small: &Path,
        _schemas: &Result<Arc<SchemaSet>, String>,
        h: &mut WorkspaceHealth,
    ) {
        health::v2_strict(root, small, h)
    }
}
