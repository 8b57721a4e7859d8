//! The one error type of the store.

use serde::Serialize;
use std::fmt;

/// One problem found in a submitted record, located by a JSON Pointer into that record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// JSON Pointer of the offending value (`""` is the whole record).
    pub path: String,
    pub message: String,
}

impl FieldError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// What can go wrong in a store operation. Each kind maps onto one HTTP status and one CLI exit
/// code: `Invalid` 422 / exit 1, `NotFound` 404 / exit 1, `Conflict` 409 / exit 1,
/// `Backend` 500 / exit 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The record was refused: malformed, fails its schema, breaks a rule.
    Invalid {
        message: String,
        errors: Vec<FieldError>,
    },
    /// Something the operation needs does not exist.
    NotFound(String),
    /// The record contradicts what is stored (immutable versions, version gaps, lifecycle order).
    Conflict(String),
    /// The database failed (connection, I/O, corrupt file).
    Backend(String),
}

impl StoreError {
    pub fn invalid(message: impl Into<String>, errors: Vec<FieldError>) -> Self {
        StoreError::Invalid {
            message: message.into(),
            errors,
        }
    }
    pub fn field(path: impl Into<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        StoreError::Invalid {
            message: message.clone(),
            errors: vec![FieldError::new(path, message)],
        }
    }
    /// A short machine-readable code for the kind of error.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Invalid { .. } => "invalid",
            StoreError::NotFound(_) => "not_found",
            StoreError::Conflict(_) => "conflict",
            StoreError::Backend(_) => "store_error",
        }
    }
    /// The per-field errors (empty except for `Invalid`).
    pub fn errors(&self) -> &[FieldError] {
        match self {
            StoreError::Invalid { errors, .. } => errors,
            _ => &[],
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Invalid { message, errors } => {
                f.write_str(message)?;
                for e in errors {
                    if e.message != *message {
                        let path = if e.path.is_empty() { "/" } else { &e.path };
                        write!(f, "\n  {path}: {}", e.message)?;
                    }
                }
                Ok(())
            }
            StoreError::NotFound(m) | StoreError::Conflict(m) | StoreError::Backend(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Backend(format!("sqlite: {e}"))
    }
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        StoreError::Backend(format!("postgres: {e}"))
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
