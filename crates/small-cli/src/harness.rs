//! The `--agents-mode` values `small init` and `small agents apply` accept, and the name a
//! target file is shown by.

use small_core::ops::agents::ComposeMode;
use small_core::ops::formats::AGENTS_FILE;

/// `--agents-mode` values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    /// Add the block after the existing content
    Append,
    /// Add the block before the existing content
    Prepend,
}

impl From<ModeArg> for ComposeMode {
    fn from(m: ModeArg) -> ComposeMode {
        match m {
            ModeArg::Append => ComposeMode::Append,
            ModeArg::Prepend => ComposeMode::Prepend,
        }
    }
}

/// The display name of a target: the `--file` value or AGENTS.md.
pub(crate) fn display_name(file: Option<&str>) -> String {
    file.unwrap_or(AGENTS_FILE).to_string()
}
