//! `--dir`, the flag that says where the workspace is, shared by the commands that search
//! upward for it (one help text, one way to open the workspace it names).

use std::path::PathBuf;

use small_core::ops::Workspace;

// No doc comment here: clap would take it for the help of every command that flattens this.
#[derive(clap::Args, Debug, Clone)]
pub struct WorkspaceDir {
    /// Directory containing .small/ [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl WorkspaceDir {
    /// The workspace the flag names, else the nearest one upward from here.
    pub fn open(&self) -> Workspace {
        Workspace::find(self.dir.as_deref())
    }
}
