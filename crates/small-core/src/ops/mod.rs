//! The operation layer: one function per protocol command, taking the workspace and a typed
//! request and returning a typed outcome that serialises to the command's `--json` document.
//!
//! The profile (v1 files or 2.0.0 sessions) is decided once, when a workspace is opened, by
//! the profile back end (`backend`); no operation and no front end asks. The CLI parses flags into a request and prints the outcome,
//! the MCP server returns the same outcome as its tool result, so the rules and the documents
//! are the same from every front end (cargo's `ops` module is the model).
//!
//! Refusals are one [`OpError`]: a diagnostic (code, message, help), whether the request or
//! the system failed, the reference's error code for the `{"error":{"code","message"}}`
//! document, and the findings behind it when there are several.

pub mod agents;
pub mod apply;
pub mod archive;
mod backend;
pub mod check;
pub mod claims;
pub mod doctor;
pub mod draft;
pub mod emit;
pub mod evidence;
pub mod fix;
pub mod gate;
pub mod handoff;
pub mod health;
pub mod init;
pub mod lint;
pub mod merge;
pub mod migrate;
pub mod mode;
pub mod next;
pub mod plan;
pub mod policy;
pub mod progress_migrate;
pub mod reconcile;
pub mod reconstruct;
pub mod record;
pub mod report;
pub mod reset;
pub mod runs;
pub mod session;
pub mod start;
pub mod status;
pub mod sync;
pub mod validate;
pub mod verify;

// What the front ends need of the lower layers besides the commands, named item by item:
// the formats and limits the protocol fixes, the HTTP API's rules, the diagnostic, the v1
// write side's handoff words, the resume context, masking, the self-test's scenario, the
// project state, the timeline, the lock wait, locating a workspace.
pub mod api;
pub mod diag;
pub mod formats;
pub mod lifecycle;
pub mod resume;
pub mod secrets;
pub mod selftest;
pub mod state;
pub mod timeline;
pub mod txn;
pub mod workspace;

use std::path::PathBuf;

use crate::diag::Diagnostic;
use crate::v2;
use crate::workspace::error::{Error as AuthoringError, ErrorKind};

/// A workspace as the operations see it: where it is, and which profile it holds. It is
/// opened by the profile back end (`Workspace::find`, `at`, `from_small_dir` are there), which
/// decides the profile once; the operations ask it for each step through
/// `Workspace::backend`.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The directory that holds `.small/`.
    pub root: PathBuf,
    pub small_dir: PathBuf,
    profile: Profile,
}

/// The two profiles of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// v1.0.0: five YAML artifacts and an append-only progress log.
    V1,
    /// SMALL 2.0.0: sessions, immutable events and evidence receipts.
    V2,
}

/// The stored formats of runs and archives, as the profile back end tells them apart (its
/// methods are written there): what `history` is handed where a stored directory's format
/// decides what is done.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stored;

/// The commands that write a v1 run from the templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum V1Run {
    Start,
    Reset,
    Reinit,
}

impl Workspace {
    /// The workspace's profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The root of a v1 workspace that must exist (`no-workspace` otherwise, a system error).
    pub(crate) fn v1_root(&self) -> OpResult<PathBuf> {
        crate::workspace::locate(Some(&self.root))
            .map(|l| l.root)
            .map_err(|e| OpError {
                kind: ErrorKind::System,
                diagnostic: Box::new(e.to_diagnostic()),
                details: Vec::new(),
            })
    }
}

/// Why an operation refused or could not run.
#[derive(Debug, Clone)]
pub struct OpError {
    pub kind: ErrorKind,
    pub diagnostic: Box<Diagnostic>,
    /// The findings behind a refusal that has several (damaged records), for the front end to
    /// show before the diagnostic.
    pub details: Vec<Diagnostic>,
}

pub type OpResult<T> = Result<T, OpError>;

impl OpError {
    /// The request or the workspace's state is refused.
    pub fn invalid(code: &str, message: impl Into<String>) -> OpError {
        AuthoringError::invalid(code, message).into()
    }

    /// The request itself is malformed.
    pub fn usage(code: &str, message: impl Into<String>) -> OpError {
        AuthoringError::usage(code, message).into()
    }

    /// The same refusal with a help line (the fix).
    pub fn with_help(mut self, help: impl Into<String>) -> OpError {
        self.diagnostic.help = Some(help.into());
        self
    }

    /// A refusal with the findings behind it.
    pub fn with_details(mut self, details: Vec<Diagnostic>) -> OpError {
        self.details = details;
        self
    }

    /// The reference's error code for the `{"error":{"code","message"}}` document:
    /// `stale_state` when an expected frontier or state is not the current one,
    /// `ambiguous_session` when no session was named and none is active, else
    /// `invalid_request`.
    pub fn reference_code(&self) -> &'static str {
        reference_code(&self.diagnostic.code)
    }
}

/// A record's members as a JSON object, in record order.
pub fn members_json(m: &crate::v2::record::Members) -> serde_json::Value {
    let text = crate::v2::gojson::compact(&crate::v2::gojson::GoValue::Obj(m.clone()));
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

/// Refuse a 2.0.0-only operation (`what`) on a v1 workspace.
pub fn require_v2(ws: &Workspace, what: &str) -> OpResult<()> {
    ws.backend().require_sessions(what)
}

/// The reference's error code for a refusal with the diagnostic code `code`.
pub fn reference_code(code: &str) -> &'static str {
    match code {
        v2::write::code::STALE => "stale_state",
        v2::write::code::NO_SESSION => "ambiguous_session",
        _ => "invalid_request",
    }
}

impl From<AuthoringError> for OpError {
    fn from(e: AuthoringError) -> OpError {
        OpError {
            kind: e.kind,
            diagnostic: e.diagnostic,
            details: Vec::new(),
        }
    }
}

impl From<crate::workspace::txn::TxnError> for OpError {
    fn from(e: crate::workspace::txn::TxnError) -> OpError {
        AuthoringError::from(e).into()
    }
}

impl From<crate::history::runs::RunError> for OpError {
    fn from(e: crate::history::runs::RunError) -> OpError {
        let mut d = Diagnostic::error("reconstruct", e.message.clone());
        if let Some(h) = &e.help {
            d = d.with_help(h.clone());
        }
        OpError {
            kind: match e.kind {
                crate::history::runs::ErrorKind::Usage => ErrorKind::Usage,
                crate::history::runs::ErrorKind::Invalid => ErrorKind::Invalid,
            },
            diagnostic: Box::new(d),
            details: Vec::new(),
        }
    }
}
