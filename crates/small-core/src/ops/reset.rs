//! `reset`: begin a new v1 run. Plan and handoff (and the intent unless kept) start again
//! from the templates, progress and constraints stay, and a `meta/reset` entry opens the run;
//! a 2.0.0 history is never reset.

use serde::Serialize;

use crate::authoring::handoff::check_command_scope;
use crate::authoring::session::{self, ResetRequest as SessionReset};
use crate::ops::{OpResult, V1Run, Workspace};
use crate::workspace::Scope;

/// What to reset.
#[derive(Debug, Clone, Default)]
pub struct ResetRequest {
    /// Keep the intent.
    pub keep_intent: bool,
    /// The workspace kinds allowed.
    pub scope: Scope,
}

/// A reset: the `reset --json` document (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
pub struct Reset {
    /// Artifact file names reset from the templates, and those kept.
    pub reset: Vec<String>,
    pub kept: Vec<String>,
    pub replay_id: String,
    pub previous_replay_id: Option<String>,
    pub summary: String,
    /// The files the commit replaced, and those it appended to.
    pub written: Vec<String>,
    pub appended: Vec<String>,
}

/// Refuse a workspace whose history cannot be reset (2.0.0), before anyone is asked.
pub fn check(ws: &Workspace) -> OpResult<()> {
    ws.v1_root()?;
    ws.allow_v1_run(V1Run::Reset)
}

/// Reset the run of `ws`.
pub fn reset(ws: &Workspace, req: &ResetRequest) -> OpResult<Reset> {
    check(ws)?;
    let (_, mut txn) = ws.transaction(None)?;
    check_command_scope(&txn, req.scope, "reset", false)?;
    let out = session::reset(
        &mut txn,
        &SessionReset {
            keep_intent: req.keep_intent,
        },
    )?;
    let report = txn.commit()?;
    Ok(Reset {
        reset: out.reset,
        kept: out.kept,
        replay_id: out.replay_id,
        previous_replay_id: out.previous_replay_id,
        summary: out.summary,
        written: report.written,
        appended: report.appended,
    })
}

impl crate::ops::report::Report for Reset {
    /// The files reset, the new run and the one before, what was kept, the changes.
    fn text(&self) -> String {
        use crate::ops::report::{files, outln};
        let mut o = String::new();
        for f in &self.reset {
            outln!(o, "Reset {f}");
        }
        outln!(
            o,
            "New run: replayId {} (previous: {})",
            self.replay_id,
            self.previous_replay_id.as_deref().unwrap_or("none")
        );
        outln!(o, "Kept {}", self.kept.join(", "));
        o.push_str(&files(&self.written, &self.appended));
        o
    }
}
