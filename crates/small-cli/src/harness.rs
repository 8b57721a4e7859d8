//! Human wording of the harness-block outcomes (AGENTS.md), shared by `small init` and
//! `small agents`, and the `--agents-mode` values both accept.

use small_core::ops::agents::{find_block, Action, ComposeMode, Composed};
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

/// One line saying what composing did to the file (past tense, or conditional for dry runs).
pub(crate) fn describe(composed: &Composed, file_name: &str, dry_run: bool) -> String {
    let lines = find_block(&composed.text)
        .ok()
        .flatten()
        .map(|b| format!(" (lines {}-{})", b.begin_line, b.end_line))
        .unwrap_or_default();
    let version = small_core::ops::formats::PROTOCOL_VERSION;
    let (verb_done, verb_would) = match composed.action {
        Action::Created => ("Created", "Would create"),
        Action::Replaced => ("Replaced", "Would replace"),
        Action::Unchanged => ("", ""),
        Action::Appended => ("Appended", "Would append"),
        Action::Prepended => ("Prepended", "Would prepend"),
        Action::Overwritten => ("Overwrote", "Would overwrite"),
    };
    let verb = if dry_run { verb_would } else { verb_done };
    match composed.action {
        Action::Created => format!("{verb} {file_name} with the SMALL harness block v{version}{lines}"),
        Action::Replaced => {
            let upgrade = match composed.previous_version.as_deref() {
                Some(v) if v != version => format!(", upgrading it from v{v} to v{version}"),
                _ => String::new(),
            };
            format!(
                "{verb} the SMALL harness block in {file_name}{lines}{upgrade}; content outside the block is unchanged"
            )
        }
        Action::Unchanged => format!("{file_name} already has the current SMALL harness block; nothing to change"),
        Action::Appended => format!(
            "{verb} the SMALL harness block to {file_name}{lines}, after the existing content (which is unchanged)"
        ),
        Action::Prepended => format!(
            "{verb} the SMALL harness block to {file_name}{lines}, before the existing content (which is unchanged)"
        ),
        Action::Overwritten => format!(
            "{verb} {file_name}: the whole file is now the SMALL harness block v{version}"
        ),
    }
}

/// The display name of a target: the `--file` value or AGENTS.md.
pub(crate) fn display_name(file: Option<&str>) -> String {
    file.unwrap_or(AGENTS_FILE).to_string()
}
