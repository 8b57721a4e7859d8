//! Masking of secrets: every front end masks what it prints or serves with the same detectors
//! the gates use.

pub use crate::secrets::{
    redact, redact_json, redact_line, redact_source, scan_all, scan_document, SecretValues,
};
