//! `small mcp`: the SMALL workspace as a Model Context Protocol server over stdio.
//!
//! A thin front end on `small-core`, like the CLI: every tool calls the same library
//! operations the matching command calls, takes the workspace lock for writes, and returns a
//! structured result (`structuredContent`) or, on failure, a tool error whose structured
//! content is a diagnostic: `{"error": {"code", "message", "help"?}}` (or the gates'
//! diagnostics for `check`).
//!
//! Resources: the handoff first (every session starts there), then the other artifacts, the
//! workspace metadata and the SMALL JSON Schemas.

// A failed tool call is an ordinary `CallToolResult` (a tool error), returned on a cold path.
#![allow(clippy::result_large_err)]

use std::path::{Path, PathBuf};

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ErrorData, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_handler, tool_router, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{json, Value};

use small_core::ops::gate::{self, GateOptions, GateRequest, JsonDiagnostic};
use small_core::ops::health::{self, HealthOptions};
use small_core::ops::resume::{self, GateMode, ResumeOptions};
use small_core::ops::runs;
use small_core::ops::secrets::{redact_json, redact_source};
use small_core::ops::state;

use small_core::ops::plan::PlanRequest as PlanOp;
use small_core::ops::reconstruct::ReconstructRequest as ReconstructOp;
use small_core::ops::record::RecordRequest as RecordOp;
use small_core::ops::session as v2w;
use small_core::ops::status::StatusRequest as StatusOp;
use small_core::ops::workspace::{self, Location};
use small_core::ops::{self, handoff::HandoffRequest as HandoffOp};

/// The server: one workspace directory (`--dir`, or the current directory).
#[derive(Clone)]
pub struct SmallMcp {
    dir: Option<PathBuf>,
}

type ToolResult = Result<CallToolResult, ErrorData>;

/// A tool error as a diagnostic.
fn diag(code: &str, message: impl Into<String>, help: Option<String>) -> CallToolResult {
    let message = message.into();
    let mut err = json!({"code": code, "message": message});
    if let Some(h) = &help {
        err["help"] = json!(h);
    }
    failed(json!({ "error": err }))
}

/// A successful result. Results quote the workspace (titles, notes, summaries, evidence):
/// any credential in them is masked, as the CLI masks what it prints.
fn ok(mut value: Value) -> ToolResult {
    redact_json(&mut value);
    Ok(CallToolResult::structured(value))
}

/// A tool error, masked the same way.
fn failed(mut value: Value) -> CallToolResult {
    redact_json(&mut value);
    CallToolResult::structured_error(value)
}

/// An operation's refusal as a tool error: its code, message and help, and the first finding
/// behind it.
fn op_error(e: &ops::OpError) -> CallToolResult {
    let mut d = (*e.diagnostic).clone();
    if let Some(first) = e.details.first() {
        d.message = format!(
            "{} ({} problem(s); first {}: {})",
            d.message,
            e.details.len(),
            first.code,
            first.message
        );
    }
    from_diagnostic(&d)
}

/// An operation's outcome as the tool's result: the command's `--json` document.
fn op_result<T: serde::Serialize>(r: ops::OpResult<T>) -> ToolResult {
    match r {
        Ok(v) => ok(serde_json::to_value(&v).unwrap_or_default()),
        Err(e) => Ok(op_error(&e)),
    }
}

/// An outcome's document with the warnings the CLI prints beside it (`warnings`, always
/// present, so that a tool result carries everything the command said).
fn with_warnings<T: serde::Serialize>(doc: &T, warnings: &[String]) -> Value {
    let mut v = serde_json::to_value(doc).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.insert("warnings".into(), json!(warnings));
    }
    v
}

/// A library diagnostic as a tool error: its own code, message and help.
fn from_diagnostic(d: &small_core::ops::diag::Diagnostic) -> CallToolResult {
    diag(&d.code, d.message.clone(), d.help.clone())
}

// ---------------------------------------------------------------------------------------
// Requests

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct ResumeRequest {
    /// Keep the Markdown within this many characters, dropping the least important parts first
    pub max_chars: Option<usize>,
    /// How many recent progress entries (default 5)
    pub recent: Option<usize>,
    /// Run the strict check even on a long progress log
    #[serde(default)]
    pub check: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct StatusRequest {
    /// How many recent progress entries (default 5)
    pub recent: Option<usize>,
    /// How many next actionable tasks (default 3)
    pub tasks: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct CheckRequest {
    /// Strict mode (default true): warnings of the strict rules are errors
    pub strict: Option<bool>,
    /// At most this many diagnostics in each list of the answer (default 100; 0 for all).
    /// `total_diagnostics` counts them all and `omitted` says how many were left out
    pub limit: Option<usize>,
}

/// Diagnostics a `check` answer lists when the caller names no limit: enough to act on, and
/// an answer an agent can read whole even when a log of 100 000 entries fails every one.
const CHECK_LIMIT: usize = 100;

/// One string, or a list of them.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    /// The strings, in order.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct PlanRequest {
    /// Add a task with this title
    pub add: Option<String>,
    /// With `add`: the new task's id (default: the next task-N); ids chosen per branch merge cleanly
    pub id: Option<String>,
    /// Mark this task completed
    pub done: Option<String>,
    /// Mark this task pending
    pub pending: Option<String>,
    /// Mark this task blocked
    pub blocked: Option<String>,
    /// Add a dependency, `TASK:DEP` (TASK depends on DEP), or several as a list (applied in
    /// order, in the same write)
    pub depends: Option<OneOrMany>,
    /// Tasks to cancel (kept in the plan with status `cancelled`)
    #[serde(default)]
    pub cancel: Vec<String>,
    /// With `done`: complete even though dependencies are not completed (recorded)
    #[serde(default)]
    pub force: bool,
    /// 2.0.0 workspaces: the session to record in (default: the active one)
    pub session: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ProgressAddRequest {
    /// The task id (or a `meta/...` id for bookkeeping)
    pub task: String,
    /// pending, in_progress, completed, blocked or cancelled
    pub status: String,
    /// What proves the work
    pub evidence: Option<String>,
    pub notes: Option<String>,
    /// 2.0.0 workspaces: the session to record in (default: the active one)
    pub session: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CheckpointRequest {
    /// The task to close (default: the task this checkout holds a lease on)
    pub task: Option<String>,
    /// completed or blocked
    pub status: String,
    /// What proves it (or why it is blocked)
    pub evidence: Option<String>,
    /// The command that proves it
    pub command: Option<String>,
    /// The test that proves it
    pub test: Option<String>,
    /// A commit that holds the work
    pub commit: Option<String>,
    pub notes: Option<String>,
    /// Complete even though dependencies are not completed (recorded in the entry)
    #[serde(default)]
    pub force: bool,
    /// 2.0.0 workspaces: the session to record in (default: the active one)
    pub session: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct HandoffRequest {
    /// The summary to write (default: keep a caller's summary while the state is unchanged,
    /// else generate one)
    pub summary: Option<String>,
    /// The end-of-run check: refuse while a task of this run is left open
    #[serde(default, rename = "final")]
    pub final_check: bool,
    /// 2.0.0 workspaces: the session to record in (default: the active one)
    pub session: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct ClaimRequest {
    /// The task (id or alias); leave out with `next`
    pub task: Option<String>,
    /// Take the next ready task that no live lease or done record holds
    #[serde(default)]
    pub next: bool,
    /// Take a task whose done record is older than its TTL while the remote's default
    /// branch still shows it open (a completion that was lost)
    #[serde(default)]
    pub reopen: bool,
    /// How long the lease lasts: 90s, 30m, 1h (default 30m)
    pub ttl: Option<String>,
    /// Who works here, as others see it (default: SMALL_AGENT, else user@host)
    #[serde(rename = "as")]
    pub label: Option<String>,
    /// The git remote the leases live on (default: origin)
    pub remote: Option<String>,
    /// Keep the leases in this repository's own refs (shared by its worktrees only)
    #[serde(default)]
    pub local: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct UnclaimRequest {
    /// The task (id or alias)
    pub task: String,
    /// The git remote the leases live on (default: origin)
    pub remote: Option<String>,
    /// The leases are in this repository's own refs
    #[serde(default)]
    pub local: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct ClaimsRequest {
    /// Remove the done records whose tasks the remote's default branch shows finished
    #[serde(default)]
    pub prune: bool,
    /// The git remote the leases live on (default: origin)
    pub remote: Option<String>,
    /// The leases are in this repository's own refs
    #[serde(default)]
    pub local: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct SyncRequest {
    /// Commit the pending changes under .small/ (only those) first
    #[serde(default)]
    pub commit: bool,
    /// That commit's message
    pub message: Option<String>,
    /// The remote (default: the branch's upstream remote, else origin)
    pub remote: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct SessionStartRequest {
    /// A label for the session
    pub label: Option<String>,
    /// Who works in it
    pub actor_label: Option<String>,
    /// The model, for an agent
    pub model_label: Option<String>,
    /// Solo mode: take over this active session (needs `reason`)
    pub takeover: Option<String>,
    /// Why the session is taken over
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct SessionCloseRequest {
    /// What was done and what is next (required)
    pub summary: String,
    /// The session to close (default: the active one)
    pub session: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct SessionShowRequest {
    /// The session id or a unique prefix (default: the active one)
    pub session: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ManifestRequest {
    /// The manifest request body (`{"manifest": {...}}`), as JSON
    pub request: Value,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct RunSnapshotRequest {
    /// Replace an existing snapshot of the same replay ID
    #[serde(default)]
    pub force: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct RunListRequest {
    /// At most this many runs, newest first (0 or absent: all)
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Default)]
pub struct ReconstructRequest {
    /// Only the entries of this task (and the task as the plan describes it)
    pub task: Option<String>,
    /// Only entries at or after this time (RFC 3339 with fractional seconds)
    pub since: Option<String>,
    /// The newest N matching entries (default 50; 0 for all)
    pub limit: Option<usize>,
    /// 2.0.0 workspaces: the most bytes of encoded events (default 65536; 0 for no cap)
    pub max_bytes: Option<usize>,
    /// 2.0.0 workspaces: the session whose events to show (with `resume`: the session to resume)
    pub session: Option<String>,
    /// 2.0.0 workspaces: the bounded resume packet of `session` (default: the active one)
    #[serde(default)]
    pub resume: bool,
}

// ---------------------------------------------------------------------------------------
// Tools

impl SmallMcp {
    pub fn new(dir: Option<PathBuf>) -> SmallMcp {
        SmallMcp { dir }
    }

    fn locate(&self) -> Result<Location, CallToolResult> {
        workspace::locate(self.dir.as_deref()).map_err(|e| {
            let d = e.to_diagnostic();
            diag(&d.code, d.message, d.help)
        })
    }

    /// Whether the workspace holds profile 2.0.0 (its resources differ).
    /// The workspace the operations run on (it must exist).
    fn workspace(&self) -> Result<ops::Workspace, CallToolResult> {
        self.locate().map(|l| ops::Workspace::at(l.root))
    }

    /// The workspace's state files (none when there is no workspace).
    fn state_files(&self) -> Vec<String> {
        self.workspace()
            .map(|ws| ws.state_files())
            .unwrap_or_default()
    }
}

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(r) => return Ok(r),
        }
    };
}

#[tool_router]
impl SmallMcp {
    #[tool(
        description = "What an agent resuming work must read: handoff summary and replayId, the next task with steps and dependencies, tasks in progress or blocked, constraints, recent progress, and whether the gates pass. Read this first."
    )]
    async fn resume(&self, Parameters(req): Parameters<ResumeRequest>) -> ToolResult {
        let loc = tri!(self.locate());
        let opts = ResumeOptions {
            recent: req.recent.unwrap_or(5),
            gates: if req.check {
                GateMode::Always
            } else {
                GateMode::Auto
            },
            ..ResumeOptions::default()
        };
        let r = small_core::ops::status::resume(&loc, &opts);
        let (r, markdown) = match req.max_chars {
            Some(max) => resume::fit(r, max, true, &resume::to_markdown),
            None => {
                let m = resume::to_markdown(&r);
                (r, m)
            }
        };
        let mut v = serde_json::to_value(&r).unwrap_or_default();
        v["markdown"] = json!(markdown);
        ok(v)
    }

    #[tool(
        description = "Project status: artifacts present, plan by status, next actionable tasks, current run, recent progress (same as `small status --json`)."
    )]
    async fn status(&self, Parameters(req): Parameters<StatusRequest>) -> ToolResult {
        let ws = tri!(self.workspace());
        let defaults = StatusOp::default();
        let r = StatusOp {
            recent: req.recent.unwrap_or(defaults.recent),
            tasks: req.tasks.unwrap_or(defaults.tasks),
            ..defaults
        };
        ok(serde_json::to_value(ops::status::status(&ws, &r)).unwrap_or_default())
    }

    #[tool(
        description = "Run the gates (validate, lint, verify; strict by default) and return the diagnostics with code, file, line, column and help (same as `small check --strict --json`). At most `limit` (default 100, 0 for all) per list; `total_diagnostics` counts them all and `omitted` says how many were left out."
    )]
    async fn check(&self, Parameters(req): Parameters<CheckRequest>) -> ToolResult {
        let loc = tri!(self.locate());
        let opts = GateOptions {
            strict: req.strict.unwrap_or(true),
            ..GateOptions::default()
        };
        let mut report = ops::check::check(&GateRequest {
            dir: Some(loc.root.clone()),
            spec_dir: None,
            options: opts,
        })
        .report;
        let limit = match req.limit.unwrap_or(CHECK_LIMIT) {
            0 => usize::MAX,
            n => n,
        };
        let total = report.diagnostics.len();
        let diagnostics: Vec<JsonDiagnostic> = report
            .diagnostics
            .iter()
            .take(limit)
            .map(|(_, d)| d.into())
            .collect();
        // Cut before serializing: the left-out part is never turned into JSON.
        for stage in [&mut report.validate, &mut report.lint, &mut report.verify] {
            stage.errors.truncate(limit);
            stage.warnings.truncate(limit);
        }
        let mut v = serde_json::to_value(&report).unwrap_or_default();
        v["passed"] = json!(report.exit_code == 0);
        v["total_diagnostics"] = json!(total);
        v["omitted"] = json!(total - diagnostics.len());
        v["diagnostics"] = serde_json::to_value(&diagnostics).unwrap_or_default();
        if report.exit_code == 0 {
            ok(v)
        } else {
            Ok(failed(v))
        }
    }

    #[tool(
        description = "Change the plan: add a task (optionally with its id), mark one done (it needs a completed progress entry with evidence: use checkpoint), pending or blocked, cancel tasks, or add dependencies TASK:DEP (one or a list). Each change is recorded in the progress log, in one write under the workspace lock (same as `small plan`)."
    )]
    async fn plan(&self, Parameters(req): Parameters<PlanRequest>) -> ToolResult {
        let r = PlanOp {
            add: req.add.into_iter().collect(),
            id: req.id,
            done: req.done,
            pending: req.pending,
            blocked: req.blocked,
            cancel: req.cancel,
            depends: req.depends.map(OneOrMany::into_vec).unwrap_or_default(),
            force: req.force,
            session: req.session,
            ..PlanOp::default()
        };
        let ws = tri!(self.workspace());
        op_result(ops::plan::plan(&ws, &r))
    }

    #[tool(
        description = "Append one entry to the append-only progress log; the task must be in the plan (or meta/...), and a completion needs evidence (same as `small progress add`)."
    )]
    async fn progress_add(&self, Parameters(req): Parameters<ProgressAddRequest>) -> ToolResult {
        let r = RecordOp {
            task: req.task,
            status: req.status,
            evidence: req
                .evidence
                .into_iter()
                .map(|e| ("evidence".to_string(), e))
                .collect(),
            notes: req.notes,
            session: req.session,
            ..RecordOp::default()
        };
        let ws = tri!(self.workspace());
        op_result(ops::record::progress_add(&ws, &r))
    }

    #[tool(
        description = "Close a task: set its status (completed or blocked) in the plan and append the matching progress entry with the caller's evidence, in one write (same as `small checkpoint`). Without `task`, the task this checkout holds a lease on. A completed checkpoint turns the lease into a done record that keeps other agents off the task until `sync` has published it."
    )]
    async fn checkpoint(&self, Parameters(req): Parameters<CheckpointRequest>) -> ToolResult {
        let evidence = [
            ("evidence", req.evidence),
            ("command", req.command),
            ("test", req.test),
            ("commit", req.commit),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect();
        let r = RecordOp {
            task: req.task.unwrap_or_default(),
            status: req.status,
            evidence,
            notes: req.notes,
            force: req.force,
            session: req.session,
            ..RecordOp::default()
        };
        let ws = tri!(self.workspace());
        op_result(ops::record::checkpoint(&ws, &r))
    }

    #[tool(
        description = "Write .small/handoff.small.yml, the resume point for the next session, recording the run as it is (mid-run handoffs are normal; `final` refuses while a task of this run is open) (same as `small handoff`)."
    )]
    async fn handoff(&self, Parameters(req): Parameters<HandoffRequest>) -> ToolResult {
        let r = HandoffOp {
            summary: req.summary,
            final_check: req.final_check,
            session: req.session,
            ..HandoffOp::default()
        };
        let ws = tri!(self.workspace());
        op_result(ops::handoff::handoff(&ws, &r))
    }

    #[tool(
        description = "Take the lease on a task before working on it (or `next`: the next ready task nobody holds), so no other agent, on any machine sharing the git remote, starts it too; renews a lease this checkout holds. Refused, naming the holder, when another agent holds it, and with code `done` when it was finished (same as `small claim --json`). The loop: claim (next), work, checkpoint (status completed), sync."
    )]
    async fn claim(&self, Parameters(req): Parameters<ClaimRequest>) -> ToolResult {
        let ttl = match req.ttl.as_deref() {
            None => ops::claims::DEFAULT_TTL,
            Some(t) => match small_core::ops::txn::parse_lock_timeout(t) {
                Some(d) => d,
                None => {
                    return Ok(diag(
                        "usage",
                        format!("not a duration: {t:?} (e.g. 30m)"),
                        None,
                    ))
                }
            },
        };
        let r = ops::claims::ClaimRequest {
            task: req.task,
            next: req.next,
            reopen: req.reopen,
            ttl,
            label: req.label,
            holder: None,
            where_: ops::claims::Where::from_flags(req.remote, req.local),
        };
        let ws = tri!(self.workspace());
        op_result(ops::claims::claim(&ws, &r))
    }

    #[tool(
        description = "Give back the lease this checkout holds on a task (same as `small unclaim --json`). A blocked checkpoint gives it back by itself; a completed one turns it into a done record."
    )]
    async fn unclaim(&self, Parameters(req): Parameters<UnclaimRequest>) -> ToolResult {
        let r = ops::claims::UnclaimRequest {
            task: req.task,
            holder: None,
            where_: ops::claims::Where::from_flags(req.remote, req.local),
        };
        let ws = tri!(self.workspace());
        op_result(ops::claims::unclaim(&ws, &r))
    }

    #[tool(
        description = "Every lease on this workspace's tasks with its state (held, expired, done, damaged): task, holder, label, host, taken, renewed, ends; `prune` removes done records the default branch shows (same as `small claims --json`)."
    )]
    async fn claims(&self, Parameters(req): Parameters<ClaimsRequest>) -> ToolResult {
        let ws = tri!(self.workspace());
        op_result(ops::claims::list(
            &ws,
            ops::claims::Where::from_flags(req.remote, req.local).as_ref(),
            req.prune,
        ))
    }

    #[tool(
        description = "Publish the work: fetch, rebase onto the remote branch through the SMALL merge driver, push, retrying when others pushed first; `commit` first commits the pending .small/ changes. Refuses, with the rebase aborted and the work kept, on a conflict it cannot resolve (same as `small sync --json`). Run it after every completed checkpoint."
    )]
    async fn sync(&self, Parameters(req): Parameters<SyncRequest>) -> ToolResult {
        let exe = std::env::current_exe().unwrap_or_else(|_| "small".into());
        let r = ops::sync::SyncRequest {
            commit: req.commit,
            message: req.message,
            remote: req.remote,
            attempts: None,
            driver_command: Some(ops::sync::driver_command_for(&exe)),
        };
        let ws = tri!(self.workspace());
        op_result(ops::sync::sync(&ws, &r))
    }

    #[tool(
        description = "SMALL 2.0.0 workspaces: start a session (solo mode allows one active session; take one over with `takeover` and `reason`). It becomes the active session the writing tools use (same as `small session start --json`)."
    )]
    async fn session_start(&self, Parameters(req): Parameters<SessionStartRequest>) -> ToolResult {
        let r = v2w::StartRequest {
            label: req.label,
            actor_label: req.actor_label,
            model_label: req.model_label,
            parent_session: None,
            from_handoff: None,
            takeover: req.takeover,
            reason: req.reason,
        };
        let ws = tri!(self.workspace());
        op_result(ops::session::start(&ws, &r, None))
    }

    #[tool(
        description = "SMALL 2.0.0 workspaces: record a handoff summary and close the session (default: the active one) (same as `small session close --json`)."
    )]
    async fn session_close(&self, Parameters(req): Parameters<SessionCloseRequest>) -> ToolResult {
        let ws = tri!(self.workspace());
        op_result(ops::session::close(
            &ws,
            req.session.as_deref(),
            &req.summary,
            None,
        ))
    }

    #[tool(
        description = "SMALL 2.0.0 workspaces: one session (default: the active one; an id or unique prefix): its record and status, event count, first and last event and kinds, the tasks its events name, the receipts they cite, and its handoff summary (same as `small session show --json`)."
    )]
    async fn session_show(&self, Parameters(req): Parameters<SessionShowRequest>) -> ToolResult {
        let ws = tri!(self.workspace());
        op_result(ops::session::show(&ws, req.session.as_deref()))
    }

    #[tool(
        description = "Validate an API manifest request ({\"manifest\": ...}) and compute its replay ID (same as `small manifest validate`)."
    )]
    async fn manifest_validate(&self, Parameters(req): Parameters<ManifestRequest>) -> ToolResult {
        let bytes = serde_json::to_vec(&req.request).unwrap_or_default();
        match small_core::ops::api::validate_request(&bytes) {
            Ok(outcome) => {
                let v: Value = serde_json::from_str(&outcome.to_json()).unwrap_or_default();
                if outcome.valid() {
                    // Our own replay ID, quoting nothing (43 base64url characters, which the
                    // random-token rule would mask).
                    Ok(CallToolResult::structured(v))
                } else {
                    Ok(failed(v))
                }
            }
            Err(e) => Ok(diag("json", format!("invalid JSON: {}", e.message), None)),
        }
    }

    #[tool(
        description = "The replay ID of a valid manifest request ({\"manifest\": ...}) (same as `small manifest replay-id`)."
    )]
    async fn manifest_replay_id(&self, Parameters(req): Parameters<ManifestRequest>) -> ToolResult {
        let bytes = serde_json::to_vec(&req.request).unwrap_or_default();
        match small_core::ops::api::validate_request(&bytes) {
            Ok(outcome) => match &outcome.replay_id {
                Some(id) => Ok(CallToolResult::structured(json!({"replayId": id.as_str()}))),
                None => {
                    let v: Value = serde_json::from_str(&outcome.to_json()).unwrap_or_default();
                    Ok(failed(v))
                }
            },
            Err(e) => Ok(diag("json", format!("invalid JSON: {}", e.message), None)),
        }
    }

    #[tool(
        description = "Save a snapshot of the current run in the run history (same as `small run snapshot`)."
    )]
    async fn run_snapshot(&self, Parameters(req): Parameters<RunSnapshotRequest>) -> ToolResult {
        let loc = tri!(self.locate());
        let store = runs::store_dir(&loc.root, None);
        match runs::snapshot::take(&loc.root, &store, req.force) {
            Ok(taken) => ok(with_warnings(&taken, &taken.warnings)),
            Err(e) => Ok(diag("run", e.message, e.help)),
        }
    }

    #[tool(
        description = "Reconstruct a task's or the run's evidence from progress, with the task from the plan and the handoff (same as `small reconstruct --json`): entries with index, time, task, status, evidence, notes, command summary and proof reference; `limit` keeps the newest (default 50, 0 for all)."
    )]
    async fn reconstruct(&self, Parameters(req): Parameters<ReconstructRequest>) -> ToolResult {
        let defaults = ReconstructOp::default();
        let r = ReconstructOp {
            task: req.task,
            since: req.since,
            limit: req.limit.unwrap_or(defaults.limit),
            max_bytes: req.max_bytes.unwrap_or(defaults.max_bytes),
            session: req.session,
            resume: req.resume,
            ..defaults
        };
        let ws = tri!(self.workspace());
        op_result(ops::reconstruct::reconstruct(&ws, &r))
    }

    #[tool(
        description = "SMALL 2.0.0 workspaces: check the evidence of every receipt now (verified, unavailable, failed, with the reason); an error when any is not verified (same as `small evidence verify --json`)."
    )]
    async fn evidence_verify(&self) -> ToolResult {
        let ws = tri!(self.workspace());
        let report = tri!(ops::evidence::verify(&ws).map_err(|e| op_error(&e)));
        match report.refusal() {
            None => ok(serde_json::to_value(&report).unwrap_or_default()),
            Some(e) => {
                let mut doc = serde_json::to_value(&report).unwrap_or_default();
                doc["error"] = json!({
                    "code": e.diagnostic.code,
                    "message": e.diagnostic.message,
                    "reference_code": e.reference_code(),
                });
                Ok(failed(doc))
            }
        }
    }

    #[tool(
        description = "Health of the workspace: strict verdict with its errors, current run, live artifact digest, run snapshots and whether the newest is stale, plan summary (same as `small health --json` for this workspace)."
    )]
    async fn health(&self) -> ToolResult {
        let loc = tri!(self.locate());
        let report = health::report(std::slice::from_ref(&loc.root), &HealthOptions::default());
        ok(serde_json::to_value(&report).unwrap_or_default())
    }

    #[tool(description = "List the run history, newest first (same as `small run list --json`).")]
    async fn run_list(&self, Parameters(req): Parameters<RunListRequest>) -> ToolResult {
        let loc = tri!(self.locate());
        let store = runs::store_dir(&loc.root, None);
        match runs::list::list(&loc.root, &store, req.limit.unwrap_or(0)) {
            Ok(listed) => ok(with_warnings(&listed, &listed.warnings)),
            Err(e) => Ok(diag("run", e.message, e.help)),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Resources

const SCHEME: &str = "small://";

/// The computed project state (either profile): `small://workspace/state.json`.
const STATE_RESOURCE: &str = "state.json";

/// The files of a 2.0.0 workspace served as resources (paths under `.small/`).
/// The resources: the workspace's state files, the resume point first and the project state
/// (`state.json`, computed from either profile) right after it, then the schemas:
/// `(uri, name, path relative to the root or schema name)`.
fn resource_list(files: &[String]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (i, rel) in files.iter().enumerate() {
        let f = rel.trim_start_matches(".small/");
        out.push((format!("{SCHEME}workspace/{f}"), f.to_string(), rel.clone()));
        if i == 0 {
            out.push((
                format!("{SCHEME}workspace/{STATE_RESOURCE}"),
                STATE_RESOURCE.to_string(),
                String::new(),
            ));
        }
    }
    for name in [
        "intent",
        "constraints",
        "plan",
        "progress",
        "handoff",
        "workspace",
    ]
    .map(|n| format!("{n}.schema.json"))
    {
        out.push((
            format!("{SCHEME}schemas/{name}"),
            name.to_string(),
            String::new(),
        ));
    }
    out
}

fn read_small_file(root: &Path, rel: &str) -> Result<String, ErrorData> {
    let path = root.join(rel);
    // Never follow a link out of the workspace.
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => std::fs::read_to_string(&path)
            .map_err(|e| ErrorData::internal_error(format!("cannot read {rel}: {e}"), None)),
        Ok(_) => Err(ErrorData::invalid_params(
            format!("{rel} is not a regular file"),
            None,
        )),
        Err(_) => Err(ErrorData::resource_not_found(
            format!("{rel} does not exist"),
            None,
        )),
    }
}

#[tool_handler]
impl ServerHandler for SmallMcp {
    /// Every tool call, through the tool router; a panic in a tool (a bug: no arguments may
    /// cause one) becomes a tool error for that call alone, and the server goes on serving.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        use futures_util::FutureExt as _;
        let name = request.name.clone();
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        match std::panic::AssertUnwindSafe(Self::tool_router().call(call))
            .catch_unwind()
            .await
        {
            Ok(result) => result,
            Err(_) => Ok(diag(
                "internal",
                format!("the `{name}` tool hit an internal error (a bug in small); nothing was half-written, and the server is still running"),
                Some("report it with the arguments you passed".into()),
            )
            .into()),
        }
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_instructions(
            "SMALL keeps durable project state in .small/. Start with the resume tool (or read small://workspace/handoff.small.yml), record work with progress_add or checkpoint, and hand off with handoff before you stop. When several agents share the git remote, work in the loop claim (next: true), work, checkpoint (status completed), sync. In a SMALL 2.0.0 workspace (.small/profile.json), start with session_start and end with session_close; the writing tools record events in the active session.",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let items = resource_list(&self.state_files())
            .into_iter()
            .map(|(uri, name, _)| {
                let mime = if uri.ends_with(".json") {
                    "application/json"
                } else {
                    "application/yaml"
                };
                Resource::new(uri, name).with_mime_type(mime)
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(items))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        let Some((_, name, rel)) = resource_list(&self.state_files())
            .into_iter()
            .find(|(u, _, _)| *u == uri)
        else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {uri}"),
                None,
            ));
        };
        let text = if name == STATE_RESOURCE {
            let loc = workspace::locate(self.dir.as_deref())
                .map_err(|e| ErrorData::invalid_params(e.to_diagnostic().message, None))?;
            let st = state::load(&loc, &state::LoadOptions::default());
            let mut v = serde_json::to_value(&st).unwrap_or_default();
            redact_json(&mut v);
            serde_json::to_string_pretty(&v).unwrap_or_default()
        } else if rel.is_empty() {
            gate::embedded_text(&name)
                .map(str::to_string)
                .ok_or_else(|| ErrorData::resource_not_found(format!("no schema {name}"), None))?
        } else {
            let loc = workspace::locate(self.dir.as_deref())
                .map_err(|e| ErrorData::invalid_params(e.to_diagnostic().message, None))?;
            // A credential pasted into an artifact is never handed back, not even in the
            // file itself.
            redact_source(&read_small_file(&loc.root, &rel)?).into_owned()
        };
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into())
    }
}

/// Serve MCP on stdin/stdout until the client closes the connection.
pub async fn serve_stdio(dir: Option<PathBuf>) -> Result<(), String> {
    let server = match SmallMcp::new(dir).serve(rmcp::transport::stdio()).await {
        Ok(s) => s,
        // The host went away before it said hello: nothing to serve, nothing wrong.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(format!("cannot start the MCP server: {e}")),
    };
    server
        .waiting()
        .await
        .map_err(|e| format!("MCP server stopped: {e}"))?;
    Ok(())
}
