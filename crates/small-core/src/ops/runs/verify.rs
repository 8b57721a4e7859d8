//! `run verify`: recompute a snapshot's digests and compare them with those it recorded.

use crate::history::runs::digest::{SnapshotVerification, VerifyStatus};
use crate::history::runs::RunError;
use crate::ops::report::{outln, Report};

/// What a verification that is not `ok` means: the refusal, or with `allow_unverifiable` the
/// warning an unverifiable snapshot gets instead.
pub fn verdict(
    v: &SnapshotVerification,
    allow_unverifiable: bool,
) -> Result<Option<String>, RunError> {
    match v.status {
        VerifyStatus::Ok => Ok(None),
        VerifyStatus::Unverifiable if allow_unverifiable => Ok(Some(format!(
            "warning: snapshot {} records no digests; its files were not checked",
            v.snapshot
        ))),
        VerifyStatus::Unverifiable => Err(RunError::invalid(format!(
            "snapshot {} records no digests, so its files cannot be checked",
            v.snapshot
        ))
        .with_help(
            "take a new snapshot with `small run snapshot`, or pass --allow-unverifiable to \
             accept it unchecked",
        )),
        VerifyStatus::Mismatch => Err(RunError::invalid(format!(
            "snapshot {} does not match the digests recorded when it was taken",
            v.snapshot
        ))),
    }
}

impl Report for SnapshotVerification {
    /// The snapshot, the verdict, both digests and each file that differs.
    fn text(&self) -> String {
        let mut o = String::new();
        outln!(o, "ReplayId: {}", self.replay_id);
        if self.snapshot != self.replay_id {
            outln!(o, "Snapshot: {}", self.snapshot);
        }
        match self.status {
            VerifyStatus::Ok => outln!(o, "Status: ok (artifacts match recorded digest)"),
            VerifyStatus::Mismatch => outln!(
                o,
                "Status: MISMATCH (snapshot artifacts differ from recorded digest)"
            ),
            VerifyStatus::Unverifiable => outln!(
                o,
                "Status: unverifiable (snapshot predates digest recording)"
            ),
        }
        if let Some(r) = &self.recorded_digest {
            outln!(o, "Recorded digest: {r}");
        }
        outln!(o, "Computed digest: {}", self.computed_digest);
        for m in &self.mismatches {
            outln!(o, "  - {}: {}", m.filename, m.reason.as_str());
        }
        o
    }
}
