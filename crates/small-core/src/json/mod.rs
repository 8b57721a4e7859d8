//! JSON forms the protocol defines (canonical serialisation for replay IDs).

pub mod canonical;
