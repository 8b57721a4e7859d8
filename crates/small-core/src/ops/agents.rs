//! The agents commands (`agents check`, `agents apply`, `agents install`): the SMALL block in
//! AGENTS.md and the harness hooks (built in `authoring::agents` and `authoring::hooks`).

pub use crate::authoring::agents::{
    apply, block_body, canonical_block, check, find_block, read_target, target_path, Action,
    ApplyError, ApplyRequest, CheckOptions, CheckReport, ComposeMode, Composed, Request,
};
pub use crate::authoring::hooks::{install, session_start_output, Host, InstallRequest};
