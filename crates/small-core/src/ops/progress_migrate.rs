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

impl crate::ops::report::Report for Migrated {
    /// How many timestamps were rewritten (or that none needed it), and the changes.
    fn text(&self) -> String {
        use crate::ops::report::{files, outln};
        let mut o = String::new();
        let rel = crate::authoring::progress::progress_rel();
        if !self.changed {
            outln!(
                o,
                "{rel} already has canonical, strictly increasing timestamps ({} entries); nothing to do",
                self.entries
            );
            return o;
        }
        outln!(
            o,
            "Rewrote {} of {} progress timestamps in {rel}",
            self.rewritten,
            self.entries
        );
        o.push_str(&files(&self.written, &self.appended));
        o
    }
}
