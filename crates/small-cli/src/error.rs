//! The one error type commands return, carrying the process exit code.
//! Exit codes: 0 ok, 1 invalid state, 2 usage or system error.

use std::fmt;

pub const EXIT_OK: u8 = 0;
pub const EXIT_INVALID: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

#[derive(Debug)]
pub struct CliError {
    pub exit: u8,
    pub message: String,
}

impl CliError {
    /// The workspace exists but its state is invalid (exit 1).
    pub fn invalid(message: impl Into<String>) -> Self {
        CliError {
            exit: EXIT_INVALID,
            message: message.into(),
        }
    }
    /// Bad command line, or a system error such as an unreadable file (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            exit: EXIT_USAGE,
            message: message.into(),
        }
    }
    /// Exit with a code but print nothing more (the command already reported).
    pub fn silent(exit: u8) -> Self {
        CliError {
            exit,
            message: String::new(),
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

pub type CmdResult = Result<(), CliError>;
