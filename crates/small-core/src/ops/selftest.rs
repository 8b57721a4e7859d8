//! `selftest`: the scripted loop on a scratch workspace (built in `authoring::selftest`).

pub use crate::authoring::selftest::{prepare, run, scenario, Step, StepOp, StepResult};
