//! Kept for the commands that still import the writing commands' helpers from here; they
//! live in `crate::writes`.

pub use crate::writes::*;
