//! The one error type of the write side. Every authoring operation that refuses says so with
//! the same [`Diagnostic`] the gates report through: a stable code (docs/rules.md,
//! "Authoring"), the file and position where one applies, and a help line with the fix.
//! Front ends only choose how to show it (and the CLI its exit code, from [`ErrorKind`]).

use std::fmt;

use crate::diag::{Diagnostic, Span};
use crate::spec::consts::ArtifactKind;

/// Codes of the authoring errors (documented in docs/rules.md).
pub mod code {
    /// A task id that is not in the plan.
    pub const UNKNOWN_TASK: &str = "unknown-task";
    /// An artifact the operation edits is not valid YAML or lacks the part it edits.
    pub const UNEDITABLE: &str = "uneditable";
    /// A request the protocol refuses (an empty title, a dependency cycle, a bad value).
    pub const REFUSED: &str = "refused";
    /// A progress entry that cannot be appended (no evidence, a bad status or timestamp).
    pub const ENTRY: &str = "entry";
    /// The progress log cannot be appended to as it is written (run `small progress migrate`).
    pub const PROGRESS_LOG: &str = "progress-log";
    /// An interrupted commit cannot be finished safely.
    pub const JOURNAL: &str = "journal";
    /// The workspace is locked by another process.
    pub const LOCK: &str = "lock";
    /// A file cannot be read or written.
    pub const IO: &str = "io";
    /// There is no workspace.
    pub const NO_WORKSPACE: &str = "no-workspace";
    /// `--workspace` does not allow this workspace's kind.
    pub const SCOPE: &str = "WS";
    /// A file the operation needs is missing.
    pub const MISSING: &str = "missing";
    /// Completing a task whose dependencies are not completed (without `force`).
    pub const OPEN_DEPENDENCIES: &str = "open-dependencies";
    /// A completion (or a block) without evidence supplied by the caller.
    pub const NO_EVIDENCE: &str = "no-evidence";
    /// A final handoff while tasks of the run are still open.
    pub const UNFINISHED: &str = "unfinished";
    /// A request whose parts do not fit together (flags that need another, an empty value).
    pub const USAGE: &str = "usage";
    /// The AGENTS.md harness block cannot be composed (a malformed block, no mode given).
    pub const AGENTS_BLOCK: &str = "agents-block";
    /// `small init` where a workspace already exists (without `force`).
    pub const EXISTS: &str = "exists";
}

/// Whether the workspace's state is the problem, or the system (lock, I/O, no workspace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request or the workspace's state is refused (the CLI exits 1).
    Invalid,
    /// The operation could not run (the CLI exits 2).
    System,
    /// The request itself is malformed (a bad value; the CLI exits 2).
    Usage,
}

/// Why an authoring operation refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub diagnostic: Box<Diagnostic>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A refusal with a code and a message.
    pub fn invalid(code: &str, message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Invalid,
            diagnostic: Box::new(Diagnostic::error(code, message)),
        }
    }

    /// A malformed request with a code and a message.
    pub fn usage(code: &str, message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Usage,
            diagnostic: Box::new(Diagnostic::error(code, message)),
        }
    }

    /// A failure of the system with a code and a message.
    pub fn system(code: &str, message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::System,
            diagnostic: Box::new(Diagnostic::error(code, message)),
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Error {
        self.diagnostic.help = Some(help.into());
        self
    }

    pub fn in_file(mut self, file: impl Into<String>) -> Error {
        self.diagnostic.file = Some(file.into());
        self
    }

    pub fn at(mut self, span: Option<Span>) -> Error {
        self.diagnostic.span = span;
        self
    }

    pub fn with_path(mut self, pointer: impl Into<String>) -> Error {
        self.diagnostic.path = Some(pointer.into());
        self
    }

    pub fn code(&self) -> &str {
        &self.diagnostic.code
    }

    pub fn message(&self) -> &str {
        &self.diagnostic.message
    }

    /// `id` is not a task of the plan whose ids are `known` (in plan order): the one
    /// unknown-task error of every operation. The help names the closest ids and how to add a
    /// task.
    pub fn unknown_task<S: AsRef<str>>(id: &str, known: &[S]) -> Error {
        let message = if known.is_empty() {
            format!("task {id} is not in plan.small.yml (the plan has no tasks)")
        } else {
            format!("task {id} is not in plan.small.yml")
        };
        let close = crate::spec::plan::closest_ids(id, known, 3);
        let help = if close.is_empty() {
            "add it with `small plan --add \"<title>\"`".to_string()
        } else {
            format!(
                "did you mean {}? Or add it with `small plan --add \"<title>\"`",
                close.join(", ")
            )
        };
        Error::invalid(code::UNKNOWN_TASK, message)
            .in_file(ArtifactKind::Plan.rel_path())
            .with_help(help)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::txn::TxnError;

    #[test]
    fn unknown_task_names_the_closest_ids_and_how_to_add_one() {
        let e = Error::unknown_task("task-99", &["task-1", "task-9", "docs"]);
        assert_eq!(e.code(), code::UNKNOWN_TASK);
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert_eq!(e.message(), "task task-99 is not in plan.small.yml");
        let help = e.diagnostic.help.as_deref().unwrap();
        assert!(help.starts_with("did you mean task-9, task-1?"), "{help}");
        assert!(help.contains("small plan --add"), "{help}");
        assert_eq!(e.diagnostic.file.as_deref(), Some(".small/plan.small.yml"));

        let none = Error::unknown_task::<&str>("x", &[]);
        assert!(none.message().contains("the plan has no tasks"));
        assert_eq!(
            none.diagnostic.help.as_deref(),
            Some("add it with `small plan --add \"<title>\"`")
        );
    }

    /// Every code an authoring operation reports is a row of docs/rules.md ("Authoring").
    #[test]
    fn every_code_is_documented_in_the_rules() {
        let rules = include_str!("../../../../docs/rules.md");
        let section = &rules[rules.find("## Authoring").expect("the Authoring section")..];
        let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
        for c in [
            code::UNKNOWN_TASK,
            code::UNEDITABLE,
            code::REFUSED,
            code::ENTRY,
            code::PROGRESS_LOG,
            code::JOURNAL,
            code::LOCK,
            code::IO,
            code::NO_WORKSPACE,
            code::SCOPE,
            code::MISSING,
            code::OPEN_DEPENDENCIES,
            code::NO_EVIDENCE,
            code::UNFINISHED,
            code::USAGE,
            code::AGENTS_BLOCK,
            code::EXISTS,
        ] {
            assert!(
                section.contains(&format!("| `{c}` |")),
                "authoring code {c} is not documented in docs/rules.md"
            );
        }
    }

    #[test]
    fn transaction_errors_keep_their_kind() {
        let e: Error = TxnError::NoWorkspace("/x".into()).into();
        assert_eq!((e.kind, e.code()), (ErrorKind::System, code::NO_WORKSPACE));
        let e: Error = TxnError::invalid(code::JOURNAL, "bad").into();
        assert_eq!((e.kind, e.code()), (ErrorKind::Invalid, code::JOURNAL));
        let e: Error = TxnError::LockTimeout {
            lock: "/x/.small-cache/lock".into(),
            waited: std::time::Duration::from_secs(1),
            env: "SMALL_LOCK_TIMEOUT",
        }
        .into();
        assert_eq!((e.kind, e.code()), (ErrorKind::System, code::LOCK));
        let e: Error = TxnError::Io {
            op: "read",
            path: "/x".into(),
            source: std::io::ErrorKind::NotFound.into(),
        }
        .into();
        assert_eq!((e.kind, e.code()), (ErrorKind::System, code::IO));
    }
}
