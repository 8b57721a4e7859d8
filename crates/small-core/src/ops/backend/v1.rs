//! The v1.0.0 back end: five YAML artifacts and an append-only progress log.

use super::*;
use crate::ops::{apply, check, doctor, emit, handoff, health, lint, plan, reconstruct, record};
use crate::ops::{status, validate, verify, OpError};

/// The v1.0.0 profile.
#[derive(Debug)]
pub(super) struct V1;

impl Backend for V1 {
    fn profile(&self) -> Profile {
        Profile::V1
    }

    fn version(&self) -> &'static str {
        crate::spec::consts::PROTOCOL_VERSION
    }

    fn state_files(&self) -> Vec<String> {
        use crate::spec::consts::{ArtifactKind, WORKSPACE_FILE};
        [
            ArtifactKind::Handoff,
            ArtifactKind::Intent,
            ArtifactKind::Constraints,
            ArtifactKind::Plan,
            ArtifactKind::Progress,
        ]
        .iter()
        .map(|k| k.file_name().to_string())
        .chain([WORKSPACE_FILE.to_string()])
        .collect()
    }

    fn require_sessions(&self, what: &str) -> OpResult<()> {
        Err(OpError::invalid(
            crate::workspace::error::code::REFUSED,
            format!("{what}: part of SMALL 2.0.0, and this is not a 2.0.0 workspace"),
        )
        .with_help("`small migrate --to 2.0.0 --preview` converts a v1 workspace"))
    }

    fn allow_v1_run(&self, _run: V1Run) -> Result<(), crate::workspace::error::Error> {
        Ok(())
    }

    fn writer(
        &self,
        _root: &Path,
        _wait: std::time::Duration,
    ) -> OpResult<crate::v2::write::Writer> {
        Err(OpError::invalid(
            crate::workspace::error::code::REFUSED,
            "this is not a SMALL 2.0.0 workspace (`small migrate` converts a v1 one)",
        ))
    }

    fn handoff_staleness(&self, st: &ProjectState, small_dir: &Path) -> Option<String> {
        crate::state::v1::handoff_staleness(st, small_dir)
    }

    fn shown_tasks(
        &self,
        _loc: &Location,
        tasks: &[crate::ops::state::Task],
        progress: &crate::gates::timeline::Timeline,
    ) -> Vec<crate::ops::state::Shown> {
        crate::ops::state::shown_v1(tasks, progress)
    }

    fn status(&self, ws: &Workspace, req: &StatusRequest) -> StatusReport {
        status::status_v1(ws, req)
    }

    fn plan(
        &self,
        ws: &Workspace,
        req: &PlanRequest,
        depends: Vec<(String, String)>,
    ) -> OpResult<Planned> {
        plan::plan_v1(ws, req, depends)
    }

    fn progress(
        &self,
        ws: &Workspace,
        seen: &fence::Seen,
        req: &RecordRequest,
    ) -> OpResult<Progressed> {
        record::progress_v1(ws, seen, req)
    }

    fn checkpoint(
        &self,
        ws: &Workspace,
        seen: &fence::Seen,
        req: &RecordRequest,
    ) -> OpResult<Checkpointed> {
        record::checkpoint_v1(ws, seen, req)
    }

    fn handoff(&self, ws: &Workspace, req: &HandoffRequest) -> OpResult<HandedOff> {
        handoff::handoff_v1(ws, req)
    }

    fn apply(&self, ws: &Workspace, req: &ApplyRequest) -> OpResult<Applied> {
        apply::apply_v1(ws, req)
    }

    fn reconstruct(&self, ws: &Workspace, req: &ReconstructRequest) -> OpResult<Reconstructed> {
        reconstruct::reconstruct_v1(ws, req)
    }

    fn session_labels(&self, _ws: &Workspace) -> BTreeMap<String, Labels> {
        BTreeMap::new()
    }

    fn claim_session(&self, _ws: &Workspace) -> Option<String> {
        None
    }

    fn load_state(&self, loc: &Location, opts: &LoadOptions, _use_cache: bool) -> ProjectState {
        let mut st = crate::state::load_v1(loc, opts);
        st.profile = crate::state::ProfileName::V1;
        st
    }

    fn resume_checks(&self, loc: &Location, st: &ProjectState, mode: GateMode, r: &mut Resume) {
        crate::authoring::resume::v1_checks(loc, st, mode, r)
    }

    fn events(
        &self,
        _root: &Path,
        _small_dir: &Path,
    ) -> Option<crate::ops::timeline::EventTimeline> {
        None
    }

    fn validate(&self, loc: Location, req: &ValidateRequest) -> Validated {
        validate::validate_v1(loc, req)
    }

    fn lint(&self, loc: Location, req: &GateRequest) -> GateOutcome {
        lint::lint_v1(loc, req)
    }

    fn verify(&self, loc: Location, req: &GateRequest) -> GateOutcome {
        verify::verify_v1(loc, req)
    }

    fn check(&self, loc: Location, req: &GateRequest) -> check::Checked {
        check::check_v1(loc, req)
    }

    fn emit(&self, loc: Location, req: &EmitRequest) -> Result<Emitted, EmitError> {
        emit::emit_v1(loc, req)
    }

    fn doctor(
        &self,
        loc: Location,
        schemas: Result<Arc<SchemaSet>, Diagnostic>,
        cache: bool,
        r: &mut DoctorReport,
    ) {
        doctor::diagnose_v1(loc, schemas, cache, r)
    }

    fn snapshot(&self, root: &Path, store: &Path, force: bool) -> Result<SnapshotResult, RunError> {
        crate::history::runs::snapshot(root, store, force)
    }

    fn checkout(
        &self,
        root: &Path,
        store: &Path,
        query: &str,
        force: bool,
    ) -> Result<CheckedOut, RunError> {
        super::stored::checkout_v1(root, store, query, force).map(CheckedOut::V1)
    }

    fn run_scope(&self, root: &Path, scope: Scope) -> Result<(), RunError> {
        crate::history::runs::check_run_scope(root, scope)
    }

    fn live_side(&self, root: &Path) -> Result<crate::ops::runs::DiffSide, RunError> {
        crate::history::runs::diff::live_side(root, false)
    }

    fn archive(&self, root: &Path, opts: &ArchiveOptions) -> Result<ArchiveReport, RunError> {
        crate::history::archive::create(root, opts, &crate::ops::Stored)
    }

    fn health(
        &self,
        root: &Path,
        small: &Path,
        schemas: &Result<Arc<SchemaSet>, String>,
        h: &mut WorkspaceHealth,
    ) {
        health::v1_state(root, small, schemas, h)
    }
}
