//! `evidence save`, `evidence declare-unavailable`, `evidence verify`: the evidence receipts
//! of a 2.0.0 workspace, written and checked (a v1 workspace has none; the operations refuse
//! it).

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::ops::members_json;
use crate::ops::{OpError, OpResult, Workspace};
use crate::v2::write::{self as v2w, Verified};

/// A file to save as evidence.
#[derive(Debug, Clone, Default)]
pub struct SaveRequest {
    /// The evidence file (read without following a symlink, bounded).
    pub file: PathBuf,
    /// The task it is evidence for (id or alias; `None`: the receipt names no task).
    pub task: Option<String>,
    /// What validated it.
    pub validator: String,
    /// The outcome it shows (blank: `passed`).
    pub outcome: String,
    pub lock_timeout: Option<Duration>,
}

/// A saved evidence file: its receipt is the document (the reference prints the receipt).
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct EvidenceSaved {
    pub receipt: serde_json::Value,
    /// The receipt's digest, the blob's path and its size (for the human line).
    #[serde(skip)]
    pub digest: String,
    #[serde(skip)]
    pub blob: String,
    #[serde(skip)]
    pub size: u64,
}

/// Evidence declared unavailable, and why.
#[derive(Debug, Clone, Default)]
pub struct DeclareRequest {
    /// The task (id or alias; `None`: the receipt names no task).
    pub task: Option<String>,
    /// Why the evidence is unavailable (required).
    pub reason: String,
    pub lock_timeout: Option<Duration>,
}

/// The `unavailable` receipt written: the receipt is the document.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct EvidenceDeclared {
    pub receipt: serde_json::Value,
    /// The receipt's digest (for the human line).
    #[serde(skip)]
    pub digest: String,
}

/// Save a file as evidence: its bytes as a blob and a `verified_artifact` receipt.
pub fn save(ws: &Workspace, req: &SaveRequest) -> OpResult<EvidenceSaved> {
    crate::ops::require_v2(ws, "evidence")?;
    let mut w = ws.writer(req.lock_timeout)?;
    let saved = v2w::save_evidence(
        &mut w,
        &req.file,
        req.task.as_deref().unwrap_or(""),
        &req.validator,
        &req.outcome,
    )?;
    Ok(EvidenceSaved {
        receipt: members_json(&saved.receipt.members),
        digest: saved.receipt.digest,
        blob: saved.blob,
        size: saved.size,
    })
}

/// Record that a task's evidence is unavailable: a `narrative_assertion` receipt with
/// availability `unavailable` and the reason. It proves nothing; it says what is missing.
pub fn declare_unavailable(ws: &Workspace, req: &DeclareRequest) -> OpResult<EvidenceDeclared> {
    crate::ops::require_v2(ws, "evidence")?;
    let mut w = ws.writer(req.lock_timeout)?;
    let r = v2w::declare_unavailable(&mut w, req.task.as_deref().unwrap_or(""), &req.reason)?;
    Ok(EvidenceDeclared {
        receipt: members_json(&r.members),
        digest: r.digest,
    })
}

/// Every receipt with its check; `all_verified` when each one is verified.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceReport {
    pub all_verified: bool,
    pub profile: &'static str,
    pub receipts: Vec<Verified>,
}

impl EvidenceReport {
    /// The refusal a report that is not all verified carries (the command exits 1 after
    /// printing it): unavailable evidence is never treated as verified.
    pub fn refusal(&self) -> Option<OpError> {
        (!self.all_verified).then(|| {
            let bad = self.receipts.iter().filter(|r| !r.is_verified()).count();
            OpError::invalid(
                crate::v2::write::code::EVIDENCE,
                format!(
                    "one or more evidence receipts are unavailable or invalid ({bad} of {})",
                    self.receipts.len()
                ),
            )
        })
    }
}

/// Check the evidence of every receipt. Read-only; damaged records are refused, but a blob
/// whose bytes or file are wrong is what the report is for: its receipt is `failed`.
pub fn verify(ws: &Workspace) -> OpResult<EvidenceReport> {
    crate::ops::require_v2(ws, "evidence verify")?;
    let (checked, store) = crate::v2::check_store(&ws.root, &ws.small_dir);
    let damaged: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && crate::v2::stage_of(&d.code) != crate::v2::Stage::State)
        .filter(|d| !is_blob_finding(d))
        .cloned()
        .collect();
    if !damaged.is_empty() {
        return Err(crate::ops::session::damaged(damaged));
    }
    let receipts = crate::v2::write::verify_evidence(&store, &ws.root);
    Ok(EvidenceReport {
        all_verified: receipts.iter().all(Verified::is_verified),
        profile: crate::v2::PROFILE_VERSION,
        receipts,
    })
}

/// A finding about evidence, which verify exists to report rather than stop at: about a blob
/// itself (its bytes do not hash to its name, it is too large, a link or not a regular file),
/// or about what a receipt says of its blob (`V2-EVIDENCE`: missing, another size, a path
/// outside the blob store). [`crate::v2::write::verify_evidence`] reports each receipt's blob
/// from what the read found (a blob that hashed to its name is not hashed again), else
/// `unavailable` (missing, as the reference) or `failed`.
fn is_blob_finding(d: &crate::diag::Diagnostic) -> bool {
    const BLOB_CODES: &[&str] = &["V2-BLOB", "V2-SIZE", "V2-NOT-FILE", "V2-SYMLINK"];
    let in_store = d
        .file
        .as_deref()
        .and_then(|f| f.strip_prefix(".small/evidence/blobs/sha256/"))
        .is_some_and(|name| name.len() == 64 && !name.contains('/'));
    let about_a_receipts_blob = d.code == "V2-EVIDENCE"
        && d.file
            .as_deref()
            .is_some_and(|f| f.starts_with(".small/receipts/"));
    (in_store && BLOB_CODES.contains(&d.code.as_str())) || about_a_receipts_blob
}

impl crate::ops::report::Report for EvidenceReport {
    /// One line a receipt (its digest, status and why), then whether all are verified.
    fn text(&self) -> String {
        use crate::ops::report::outln;
        let mut o = String::new();
        for v in &self.receipts {
            let reason = if v.reason.is_empty() {
                String::new()
            } else {
                format!(" ({})", v.reason)
            };
            outln!(o, "{}  {}{reason}", v.receipt_digest, v.status);
        }
        outln!(
            o,
            "{} receipt(s); {}",
            self.receipts.len(),
            if self.all_verified {
                "all verified"
            } else {
                "not all verified"
            }
        );
        o
    }
}

impl crate::ops::report::Report for EvidenceSaved {
    fn text(&self) -> String {
        format!(
            "Saved evidence {} ({} bytes); receipt {}\n",
            self.blob, self.size, self.digest
        )
    }
}

impl crate::ops::report::Report for EvidenceDeclared {
    fn text(&self) -> String {
        format!("Declared evidence unavailable; receipt {}\n", self.digest)
    }
}
