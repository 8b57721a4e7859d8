//! `start`: open a v1 run. Missing artifacts are created from the templates, the handoff is
//! written for the run, and the result gets the strict check (with the recoverable repairs
//! when asked); 2.0.0 workspaces are refused (`small session start` opens their sessions).

use serde::Serialize;

use crate::authoring::handoff::{check_command_scope, handoff_rel};
use crate::authoring::session::{self, HandoffOutcome, StartRequest as SessionStart};
use crate::ops::{OpResult, V1Run, Workspace};
use crate::workspace::Scope;

/// What to start.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    /// The handoff's summary (default: computed from the run's state).
    pub summary: Option<String>,
    /// Repair recoverable drift when the strict check fails.
    pub fix: bool,
    /// The workspace kinds allowed.
    pub scope: Scope,
}

/// The handoff a writing command left, as its `--json` document shows it (shared by `start`).
#[derive(Debug, Clone, Serialize)]
pub struct HandoffDoc {
    pub handoff: String,
    pub summary: String,
    pub summary_source: session::SummarySource,
    pub replaced_summary: Option<String>,
    #[serde(rename = "replayId")]
    pub replay_id: crate::authoring::handoff::ReplayId,
    pub status: crate::authoring::handoff::RunStatus,
    pub current_task_id: Option<String>,
    pub next_steps: Vec<String>,
    pub in_progress: Vec<session::TaskRef>,
    pub blocked: Vec<session::TaskRef>,
    pub last_evidence: Option<crate::authoring::activity::LastEvidence>,
    pub open: Vec<session::TaskRef>,
    pub strict_ok: bool,
    pub strict_problem: String,
}

impl HandoffDoc {
    fn of(out: &HandoffOutcome) -> HandoffDoc {
        HandoffDoc {
            handoff: handoff_rel(),
            summary: out.summary.clone(),
            summary_source: out.summary_source,
            replaced_summary: out.replaced_summary.clone(),
            replay_id: out.replay_id.clone(),
            status: out.run.status,
            current_task_id: out.run.current_task_id.clone(),
            next_steps: out.run.next_steps.clone(),
            in_progress: out.run.in_progress.clone(),
            blocked: out.run.blocked.clone(),
            last_evidence: out.run.last_evidence.clone(),
            open: out.open.clone(),
            strict_ok: out.run.strict_ok,
            strict_problem: out.run.strict_problem.clone(),
        }
    }
}

/// A started run: the `start --json` document (docs/json-output.md); `strict_ok` and
/// `strict_problem` are the strict check of the result.
#[derive(Debug, Clone, Serialize)]
pub struct Started {
    #[serde(flatten)]
    pub handoff: HandoffDoc,
    /// Files created from the templates.
    pub created: Vec<String>,
    /// Whether a missing replayId was generated.
    pub self_healed: bool,
    /// What `fix` repaired when the strict check failed.
    pub repaired: Vec<String>,
    /// The files the start's commit replaced, and those it appended to.
    pub written: Vec<String>,
    pub appended: Vec<String>,
    /// The files the repairs replaced and appended to, when they ran.
    #[serde(skip)]
    pub fixed: Option<crate::workspace::txn::CommitReport>,
}

/// Start a v1 run in `ws`.
pub fn start(ws: &Workspace, req: &StartRequest) -> OpResult<Started> {
    ws.v1_root()?;
    ws.allow_v1_run(V1Run::Start)?;
    let (root, mut txn) = ws.transaction(None)?;
    // Missing files first, so that the scope check sees fresh metadata.
    let created = session::create_missing(&mut txn)?;
    check_command_scope(&txn, req.scope, "start", false)?;
    let out = session::start(
        &mut txn,
        &SessionStart {
            summary: req.summary.clone(),
        },
    )?;
    let report = txn.commit()?;
    let checked = session::check_started(&root, req.fix)?;
    let mut handoff = HandoffDoc::of(&out.handoff);
    handoff.strict_ok = checked.strict.ok;
    handoff.strict_problem = checked.strict.summary.clone();
    Ok(Started {
        handoff,
        created,
        self_healed: out.self_healed,
        repaired: checked.repaired,
        written: report.written,
        appended: report.appended,
        fixed: checked.fixed,
    })
}

impl Started {
    /// Why the strict check of the started run failed, with the fix (the command exits 1
    /// after its report).
    pub fn strict_failure(&self) -> Option<String> {
        (!self.handoff.strict_ok).then(|| {
            format!(
                "strict check failed: {}\n  help: run `small check --strict` for every problem; `small start --fix` repairs orphan progress and legacy runtime directories",
                self.handoff.strict_problem
            )
        })
    }
}

impl crate::ops::report::Report for Started {
    /// The repairs' changes, the files created, the handoff, the changes, what was repaired,
    /// and that the start is complete when the strict check passed.
    fn text(&self) -> String {
        use crate::ops::report::{files, outln, HandoffLines};
        let mut o = String::new();
        if let Some(fixed) = &self.fixed {
            o.push_str(&files(&fixed.written, &fixed.appended));
        }
        for c in &self.created {
            outln!(o, "Created {c} from the template");
        }
        let h = &self.handoff;
        let lines = HandoffLines {
            summary: &h.summary,
            current_task_id: h.current_task_id.as_deref(),
            next_steps: h.next_steps.len(),
            source: h.summary_source,
            replaced: h.replaced_summary.as_deref(),
            replay: &h.replay_id,
        };
        o.push_str(&lines.text("Handoff ready"));
        o.push_str(&files(&self.written, &self.appended));
        for r in &self.repaired {
            outln!(o, "{r}");
        }
        if h.strict_ok {
            outln!(o, "Strict check passed. Start complete.");
        }
        o
    }
}
