//! The one diagnostic shape every rule and operation reports through, for front ends that
//! print or serve it.

pub use crate::diag::{Diagnostic, Pos, Severity, Span};
