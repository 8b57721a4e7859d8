//! `small agents`: manage the SMALL harness block in AGENTS.md (never touches `.small/`).

pub mod apply;
pub mod check;
pub mod hooks;
pub mod print;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::authoring::agents::{find_block, Action, ComposeMode, Composed};
use small_core::spec::consts::AGENTS_FILE;
use small_core::workspace::fsio;
use std::path::{Path, PathBuf};

/// Manage the SMALL harness block in AGENTS.md.
///
/// The block is the part of AGENTS.md between
/// `<!-- BEGIN SMALL HARNESS v1.0.0 -->` and `<!-- END SMALL HARNESS v1.0.0 -->`. These
/// commands change only that block (or create the file); everything outside it is left
/// byte-for-byte as it was. They never read or write `.small/`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Apply(apply::Args),
    Check(check::Args),
    Hooks(hooks::Args),
    Print(print::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Sub::Apply(a) => apply::run(a, g),
        Sub::Check(a) => check::run(a, g),
        Sub::Hooks(a) => hooks::run(a, g),
        Sub::Print(a) => print::run(a, g),
    }
}

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

/// The file to work on: `dir` (default: current directory; its parent when it is `.small`)
/// joined with `file` (default AGENTS.md; an absolute `file` is used as is). A symbolic link is followed, so writing
/// replaces the file it points to instead of the link.
pub(crate) fn target_path(dir: Option<&Path>, file: Option<&str>) -> Result<PathBuf, CliError> {
    let base = match dir {
        Some(d) if !d.is_dir() => {
            return Err(CliError::usage(format!(
                "{} is not a directory",
                d.display()
            )))
        }
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?,
    };
    // AGENTS.md lives at the repository root, never inside `.small/` (seed 000): from inside
    // `.small/`, the file next to it is meant.
    let base = match base.file_name() {
        Some(n) if n == small_core::spec::consts::SMALL_DIR => {
            base.parent().map(Path::to_path_buf).unwrap_or(base)
        }
        _ => base,
    };
    let path = base.join(file.unwrap_or(AGENTS_FILE));
    let resolved = match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(&path) {
            Ok(real) => real,
            // A dangling link: write where it points if we can tell, else at the link.
            Err(_) => match std::fs::read_link(&path) {
                Ok(t) if t.is_absolute() => t,
                Ok(t) => path.parent().map(|p| p.join(&t)).unwrap_or(t),
                Err(_) => path.clone(),
            },
        },
        _ => return Ok(path),
    };
    // A link is followed only to a place inside the directory it sits in (AGENTS.md ->
    // CLAUDE.md): a cloned repository must not make small write outside it.
    let inside = |p: &Path| {
        let dir = p.parent().unwrap_or(p);
        match (
            std::fs::canonicalize(&base),
            small_core::history::runs::safe::canonical_or_planned(dir),
        ) {
            (Ok(b), d) => d.starts_with(b),
            _ => false,
        }
    };
    if !inside(&resolved) {
        return Err(CliError::usage(format!(
            "{} is a symbolic link to {}, outside {}; small does not follow links out of the workspace",
            path.display(),
            resolved.display(),
            base.display()
        )));
    }
    Ok(resolved)
}

/// Reads the target: `Ok(None)` if it does not exist.
pub(crate) fn read_target(path: &Path) -> Result<Option<String>, CliError> {
    // A regular file only (the link, if any, is resolved by `target_path`), read without
    // blocking on a FIFO and with a bounded size.
    match fsio::read_bounded(path, fsio::MAX_READ_BYTES) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            CliError::invalid(format!(
                "{} is not valid UTF-8 text; SMALL will not edit it",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => Err(CliError::usage(format!(
            "{} is a directory, not a file",
            path.display()
        ))),
        Err(e) => Err(CliError::usage(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// One line saying what composing did to the file (past tense, or conditional for dry runs).
pub(crate) fn describe(composed: &Composed, file_name: &str, dry_run: bool) -> String {
    let lines = find_block(&composed.text)
        .ok()
        .flatten()
        .map(|b| format!(" (lines {}-{})", b.begin_line, b.end_line))
        .unwrap_or_default();
    let version = small_core::spec::consts::PROTOCOL_VERSION;
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
