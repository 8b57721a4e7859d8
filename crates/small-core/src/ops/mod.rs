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

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::diag::Diagnostic;
use crate::spec::consts::SMALL_DIR;
use crate::v2;
use crate::workspace::error::{Error as AuthoringError, ErrorKind};

/// A workspace as the operations see it: where it is, and which profile it holds.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The directory that holds `.small/`.
    pub root: PathBuf,
    pub small_dir: PathBuf,
    backend: &'static dyn backend::Backend,
}

/// The two profiles of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// v1.0.0: five YAML artifacts and an append-only progress log.
    V1,
    /// SMALL 2.0.0: sessions, immutable events and evidence receipts.
    V2,
}

impl Workspace {
    /// The workspace at `dir` (the directory holding `.small/`, or `.small` itself), else the
    /// nearest one upward from the current directory. A directory without `.small/` is a v1
    /// workspace that is missing; operations report that in their own terms.
    pub fn find(dir: Option<&Path>) -> Workspace {
        Workspace::at(crate::workspace::discover_root(dir))
    }

    /// The workspace whose `.small` directory is `small_dir` (its parent is the root).
    pub fn from_small_dir(small_dir: PathBuf) -> Workspace {
        let root = small_dir
            .parent()
            .map_or_else(|| small_dir.clone(), Path::to_path_buf);
        Workspace::at(root)
    }

    /// The workspace whose root is `root`.
    pub fn at(root: PathBuf) -> Workspace {
        let small_dir = root.join(SMALL_DIR);
        Workspace {
            backend: backend::of(&small_dir),
            root,
            small_dir,
        }
    }

    /// The workspace's profile.
    pub fn profile(&self) -> Profile {
        self.backend.profile()
    }

    /// The back end of the workspace's profile.
    pub(crate) fn backend(&self) -> &'static dyn backend::Backend {
        self.backend
    }

    /// The files that hold the workspace's state, relative to the root, the one a session
    /// resumes from first: v1's handoff, artifacts and metadata; 2.0.0's profile and policy
    /// (its sessions and events are read through the operations).
    pub fn state_files(&self) -> Vec<String> {
        self.backend
            .state_files()
            .into_iter()
            .map(|f| format!("{SMALL_DIR}/{f}"))
            .collect()
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

    /// Lock a v1 workspace for writing, waiting `lock` (default: `SMALL_LOCK_TIMEOUT`, else
    /// 60 s): its root and the transaction. A workspace that changed profile while the lock
    /// was awaited (a migration finished) is refused, with nothing written.
    pub(crate) fn transaction(
        &self,
        lock: Option<Duration>,
    ) -> OpResult<(PathBuf, crate::workspace::txn::Transaction)> {
        use crate::workspace::txn::Transaction;
        let root = self.v1_root()?;
        let txn = match lock {
            Some(t) => Transaction::begin_with_timeout(&root, t)?,
            None => Transaction::begin(&root)?,
        };
        if backend::changed(self.backend, &root.join(SMALL_DIR)) {
            return Err(OpError::invalid(
                crate::workspace::error::code::REFUSED,
                "the workspace changed profile while this command waited for its lock (a \
                 migration finished)",
            )
            .with_help("nothing was changed; run the command again"));
        }
        Ok((root, txn))
    }

    /// Lock a 2.0.0 workspace for writing and read its records, waiting `lock` (default:
    /// `SMALL_LOCK_TIMEOUT`, else 60 s); refused on a v1 workspace.
    pub(crate) fn writer(&self, lock: Option<Duration>) -> OpResult<v2::write::Writer> {
        let wait = lock.unwrap_or_else(crate::workspace::txn::lock_timeout_from_env);
        self.backend.writer(&self.root, wait)
    }

    /// Refuse a command that writes a v1 run on a workspace whose profile has none.
    pub(crate) fn allow_v1_run(&self, run: backend::V1Run) -> OpResult<()> {
        Ok(self.backend.allow_v1_run(run)?)
    }

    /// The profile's version string, as the documents name it.
    pub fn profile_version(&self) -> &'static str {
        self.backend.version()
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
    ws.backend.require_sessions(what)
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
