//! `doctor`: what is wrong with a workspace and how to repair it (the rules live in `gates`).

pub use crate::gates::doctor::{diagnose, Level};
