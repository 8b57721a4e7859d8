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
        crate::state::load_v2(loc, opts, use_cache)
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
        crate::history::runs::v2::checkout(root, store, query, force).map(CheckedOut::V2)
    }

    fn run_scope(&self, _root: &Path, _scope: Scope) -> Result<(), RunError> {
        Ok(())
    }

    fn live_side(&self, root: &Path) -> Result<crate::ops::runs::DiffSide, RunError> {
        crate::history::runs::diff::live_side(root, true)
    }

    fn archive(&self, root: &Path, opts: &ArchiveOptions) -> Result<ArchiveReport, RunError> {
        crate::history::runs::require_small_dir(root)?;
        crate::history::archive::v2::create(root, opts)
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
