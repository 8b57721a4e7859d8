//! `init`: create a workspace from the templates (built in `authoring::init`).

pub use crate::authoring::init::{
    init, init_workspace, workspace_root, FileAction, InitRequest, InitWorkspaceOutcome,
    InitWorkspaceRequest, MergeDriverOutcome,
};
pub use crate::authoring::templates::{base_artifacts, bootstrap_handoff, workspace};
