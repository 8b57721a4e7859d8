//! The one error type commands return, carrying the process exit code.
//! Exit codes: 0 ok, 1 invalid state, 2 usage or system error.

use std::fmt;

use small_core::ops::diag::Diagnostic;
use small_core::ops::txn::{Error as AuthoringError, ErrorKind};

pub const EXIT_OK: u8 = 0;
pub const EXIT_INVALID: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

#[derive(Debug)]
pub struct CliError {
    pub exit: u8,
    pub message: String,
    /// When the library refused with a diagnostic, it (printed like the gates' diagnostics,
    /// or as JSON with `--json`) instead of `message`.
    pub diagnostic: Option<Box<Diagnostic>>,
}

impl CliError {
    /// The workspace exists but its state is invalid (exit 1).
    pub fn invalid(message: impl Into<String>) -> Self {
        CliError {
            exit: EXIT_INVALID,
            message: message.into(),
            diagnostic: None,
        }
    }
    /// Bad command line, or a system error such as an unreadable file (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            exit: EXIT_USAGE,
            message: message.into(),
            diagnostic: None,
        }
    }
    /// An authoring error as a plain message (its diagnostic on one or two lines), exit 1
    /// for a refusal, 2 for a system or usage error.
    pub fn plain(e: AuthoringError) -> Self {
        let message = e.diagnostic.plain();
        match e.kind {
            ErrorKind::Invalid => CliError::invalid(message),
            ErrorKind::System | ErrorKind::Usage => CliError::usage(message),
        }
    }
    /// An authoring error as its bare message (no code), exit 1 for a refusal, 2 for a
    /// system or usage error.
    pub fn bare(e: AuthoringError) -> Self {
        let message = e.diagnostic.message.clone();
        match e.kind {
            ErrorKind::Invalid => CliError::invalid(message),
            ErrorKind::System | ErrorKind::Usage => CliError::usage(message),
        }
    }
    /// Exit with a code but print nothing more (the command already reported).
    pub fn silent(exit: u8) -> Self {
        CliError {
            exit,
            message: String::new(),
            diagnostic: None,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::usage(e.to_string())
    }
}

/// An authoring refusal exits 1, a system failure (lock, I/O, no workspace) exits 2.
impl From<AuthoringError> for CliError {
    fn from(e: AuthoringError) -> Self {
        CliError {
            exit: match e.kind {
                ErrorKind::Invalid => EXIT_INVALID,
                ErrorKind::System | ErrorKind::Usage => EXIT_USAGE,
            },
            message: e.diagnostic.message.clone(),
            diagnostic: Some(e.diagnostic),
        }
    }
}

pub type CmdResult = Result<(), CliError>;

/// The end of a command whose outcome carries a verdict: exit 0, 1 or 2 (already reported).
pub fn verdict(v: small_core::ops::gate::Verdict) -> CmdResult {
    match v.code() {
        0 => Ok(()),
        code => Err(CliError::silent(code)),
    }
}

/// The reference's error object.
#[derive(serde::Serialize)]
pub struct ErrorObject {
    pub code: &'static str,
    pub message: String,
}

impl CliError {
    /// The reference's error object of this error.
    pub fn error_object(&self) -> ErrorObject {
        let code = self.diagnostic.as_ref().map_or("invalid_request", |d| {
            small_core::ops::reference_code(&d.code)
        });
        ErrorObject {
            code,
            message: self.message.clone(),
        }
    }
}

/// An operation's refusal: its findings (damaged records) are printed first, on stderr.
pub fn from_op(e: small_core::ops::OpError, g: &crate::GlobalArgs) -> CliError {
    if !e.details.is_empty() {
        g.diagnostics(&e.details, |_| None, true);
    }
    CliError::from(AuthoringError {
        kind: e.kind,
        diagnostic: e.diagnostic,
    })
}
