//! `resume`: what the next session needs to pick the work up (built in `authoring::resume`).

pub use crate::authoring::resume::{fit, to_markdown, GateMode, Resume, ResumeOptions};
