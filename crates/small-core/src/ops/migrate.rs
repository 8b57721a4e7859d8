//! `migrate`: a v1 workspace to the 2.0.0 session profile (the migration itself is in
//! `migrate`); what the preview, the apply and a recovery say.

pub use crate::migrate::{
    apply, preview_with_mode, recover, MigrateError, Outcome, Plan, Recovery, PROFILE_VERSION,
};

use serde::Serialize;

use crate::ops::report::{outln, Report};

/// A recovery: the `migrate --recover --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct Recovered {
    pub recovered: bool,
    pub completed: Vec<String>,
    pub rolled_back: Vec<String>,
}

impl From<Recovery> for Recovered {
    fn from(r: Recovery) -> Recovered {
        Recovered {
            recovered: true,
            completed: r.completed,
            rolled_back: r.rolled_back,
        }
    }
}

impl Report for Recovered {
    /// Each interrupted migration completed or rolled back, then that recovery is done.
    fn text(&self) -> String {
        let mut o = String::new();
        for id in &self.completed {
            outln!(o, "Completed the interrupted migration {id}");
        }
        for id in &self.rolled_back {
            outln!(
                o,
                "Restored the v1 workspace of the interrupted migration {id}"
            );
        }
        outln!(o, "Migration recovery complete");
        o
    }
}

impl Report for Plan {
    /// The migration, its input digest and mode, its size, and how to apply it.
    fn text(&self) -> String {
        let mut o = String::new();
        outln!(
            o,
            "Migration {} -> {}; input {}; mode {}",
            self.import_id,
            self.to,
            self.expected_input_digest,
            self.mode
        );
        outln!(
            o,
            "{} file(s), {} task(s); apply with: small migrate --apply PLAN --expect-state {}",
            self.files.len(),
            self.tasks.as_ref().map_or(0, Vec::len),
            self.expected_input_digest
        );
        o
    }
}

impl Report for Outcome {
    /// The profile reached, the import and the frontier, and where the v1 tree is kept.
    fn text(&self) -> String {
        let mut o = String::new();
        let verb = if self.idempotent {
            "Already migrated"
        } else {
            "Migrated"
        };
        outln!(
            o,
            "{verb} to {PROFILE_VERSION}; import {}; frontier {}",
            self.import_id,
            self.frontier
        );
        if let (false, Some(b)) = (self.idempotent, &self.backup_path) {
            outln!(o, "The v1 tree is kept in {}", b.display());
        }
        o
    }
}
