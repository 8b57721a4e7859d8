//! `status`: where the project stands (artifacts, plan by status, next tasks, current run,
//! recent work), for either profile.

use serde::Serialize;

use crate::ops::Workspace;
use crate::state::report::Status as V1Status;
/// The v1 status document and its options, which the page builds from the loaded state.
pub use crate::state::report::{Status, StatusOptions, KNOWN_STATUSES};
use crate::v2::status::Status as V2Status;

/// What to show.
#[derive(Debug, Clone, Copy)]
pub struct StatusRequest {
    /// Recent progress entries (v1).
    pub recent: usize,
    /// Next actionable tasks (v1).
    pub tasks: usize,
    /// Show apply's bookkeeping entries too (v1, `SMALL_PROGRESS_MODE=audit`).
    pub audit: bool,
    /// 2.0.0: use the state cached in `.small-cache/` when it is proven current.
    pub cache: bool,
}

impl Default for StatusRequest {
    fn default() -> StatusRequest {
        StatusRequest {
            recent: 5,
            tasks: 3,
            audit: false,
            cache: true,
        }
    }
}

/// The status of either profile (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum StatusReport {
    V1(Box<V1Status>),
    V2(Box<V2Status>),
}

/// The status and the leases this checkout has seen (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
pub struct StatusOutcome {
    #[serde(flatten)]
    pub report: StatusReport,
    /// Every lease on a task of this workspace that this checkout has seen, without the
    /// network (docs/agents.md, "Claims"); absent when there is none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<crate::ops::claims::Lease>,
}

impl StatusOutcome {
    pub fn exit_code(&self) -> u8 {
        self.report.exit_code()
    }
}

impl crate::ops::report::Report for StatusOutcome {
    /// The status, then the leases seen, one line each.
    fn text(&self) -> String {
        use crate::ops::report::pad;
        let mut o = self.report.text();
        if self.claims.is_empty() {
            return o;
        }
        o.push_str("\nClaims (as last seen; `small claims` asks the remote):\n");
        for l in &self.claims {
            let when = match (l.state, &l.done) {
                ("done", Some(d)) if d.commit.is_empty() => {
                    format!("{} (not pushed yet)", d.outcome)
                }
                ("done", Some(d)) => format!("{} (on {})", d.outcome, d.branch),
                ("damaged", _) => "damaged record".to_string(),
                ("held", _) => format!("held until {}", l.ends),
                _ => format!("ended {}", l.ends),
            };
            o.push_str(&format!("  {}  {}  {when}\n", pad(&l.task, 10), l.label));
        }
        o
    }
}

/// The status of the workspace, with the leases seen on its tasks.
pub fn status(ws: &Workspace, req: &StatusRequest) -> StatusOutcome {
    StatusOutcome {
        report: report(ws, req),
        claims: crate::ops::claims::seen_all(ws),
    }
}

fn report(ws: &Workspace, req: &StatusRequest) -> StatusReport {
    ws.backend().status(ws, req)
}

/// The report of a v1 workspace.
pub(super) fn status_v1(ws: &Workspace, req: &StatusRequest) -> StatusReport {
    StatusReport::V1(Box::new(crate::state::status::status(
        &ws.small_dir,
        StatusOptions {
            recent: req.recent,
            tasks: req.tasks,
            audit: req.audit,
        },
    )))
}

/// The report of a 2.0.0 workspace.
pub(super) fn status_v2(ws: &Workspace, req: &StatusRequest) -> StatusReport {
    StatusReport::V2(Box::new(crate::v2::status::status_with_cache(
        &ws.root,
        &ws.small_dir,
        req.cache,
    )))
}

/// What an agent resuming work reads (`small resume`, the session hooks, MCP's `resume`):
/// the next task skips tasks other agents hold live leases on, and the context names them.
pub fn resume(
    loc: &crate::workspace::Location,
    opts: &crate::authoring::resume::ResumeOptions,
) -> crate::authoring::resume::Resume {
    let ws = Workspace::from_small_dir(loc.small_dir.clone());
    let (claimed, held_here) = crate::ops::claims::Seen::read(&ws).by_holder();
    let opts = crate::authoring::resume::ResumeOptions {
        claimed,
        held_here,
        claims_available: crate::ops::claims::in_repository(&ws),
        ..opts.clone()
    };
    let (load, use_cache) = crate::authoring::resume::load_options(&opts);
    let st = crate::ops::state::load_with_cache(loc, &load, use_cache);
    let mut r = crate::authoring::resume::resume(&st, &opts);
    ws.backend().resume_checks(loc, &st, opts.gates, &mut r);
    r
}
