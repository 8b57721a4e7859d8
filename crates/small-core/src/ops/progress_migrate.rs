//! `progress migrate`: rewrite the v1 progress log's timestamps into canonical, strictly
//! increasing form (the only write that changes existing entries, and only their times).

use serde::Serialize;

use crate::authoring::handoff::check_command_scope;
use crate::ops::{OpResult, Workspace};
use crate::workspace::Scope;

/// What was done: the `progress migrate --json` document (docs/json-output.md).
#[derive(Debug, Clone, Serialize)]
pub struct Migrated {
    pub entries: usize,
    /// Timestamps rewritten.
    pub rewritten: usize,
    /// Whether the log changed; nothing is written when it did not.
    pub changed: bool,
    /// The files the commit replaced, and those it appended to (empty when nothing changed).
    pub written: Vec<String>,
    pub appended: Vec<String>,
}

/// Migrate the progress timestamps of `ws`, within the workspace kinds of `scope`.
pub fn migrate(ws: &Workspace, scope: Scope) -> OpResult<Migrated> {
    let (_, mut txn) = ws.transaction(None)?;
    check_command_scope(&txn, scope, "progress migrate", true)?;
    let out = crate::authoring::record::migrate_progress(&mut txn)?;
    let report = if out.changed {
        txn.commit()?
    } else {
        crate::workspace::txn::CommitReport::default()
    };
    Ok(Migrated {
        entries: out.entries,
        rewritten: out.rewritten,
        changed: out.changed,
        written: report.written,
        appended: report.appended,
    })
}
