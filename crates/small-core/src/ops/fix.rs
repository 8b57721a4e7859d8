//! `fix`: repair known, recoverable drift in a v1 workspace (version quoting, the legacy
//! runtime layout, orphan progress, the workspace metadata), each repair recorded in progress
//! when it changed something.

use serde::Serialize;

use crate::authoring::handoff::check_command_scope;
use crate::authoring::repair::{self, Repair};
use crate::ops::{OpResult, Workspace};
use crate::spec::model::WorkspaceKind;
use crate::workspace::Scope;

pub use crate::authoring::repair::FixRequest;

/// What was repaired: the `fix --json` document (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
pub struct Fixed {
    pub repairs: Vec<Repair>,
    /// The files the commit replaced, and those it appended to.
    pub written: Vec<String>,
    pub appended: Vec<String>,
}

/// Run the repairs `req` asks for on `ws`, within the workspace kinds of `scope`.
pub fn fix(ws: &Workspace, req: &FixRequest, scope: Scope) -> OpResult<Fixed> {
    let (_, mut txn) = ws.transaction(None)?;
    check_command_scope(&txn, scope, "fix", true)?;
    let repairs = repair::fix(&mut txn, req)?;
    let report = txn.commit()?;
    Ok(Fixed {
        repairs,
        written: report.written,
        appended: report.appended,
    })
}

/// `fix workspace`: create or repair `workspace.small.yml` (with `force`, also set its kind
/// and `updated_at`).
pub fn fix_workspace(ws: &Workspace, kind: WorkspaceKind, force: bool) -> OpResult<Fixed> {
    let (_, mut txn) = ws.transaction(None)?;
    let done = repair::fix_workspace(&mut txn, kind, force)?;
    let repairs = vec![Repair {
        repair: "workspace",
        lines: vec![done.describe()],
    }];
    let report = txn.commit()?;
    Ok(Fixed {
        repairs,
        written: report.written,
        appended: report.appended,
    })
}

impl crate::ops::report::Report for Fixed {
    /// Each repair's lines, the changes, and the check to run next.
    fn text(&self) -> String {
        use crate::ops::report::{files, outln};
        let mut o = String::new();
        for line in self.repairs.iter().flat_map(|r| &r.lines) {
            outln!(o, "{line}");
        }
        o.push_str(&files(&self.written, &self.appended));
        outln!(o, "Next: small check --strict");
        o
    }
}
