//! JSON forms the protocol defines (canonical serialisation for replay IDs) and JSON
//! pointers.

pub mod canonical;
pub mod pointer;
