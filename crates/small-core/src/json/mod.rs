//! JSON forms the protocol defines (canonical serialisation for replay IDs) and JSON
//! pointers.

pub mod canonical;
pub mod pointer;

/// Whether `n` is zero: for `#[serde(skip_serializing_if = "crate::json::is_zero")]` on a
/// count or number left out of the output when zero.
pub(crate) fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}
