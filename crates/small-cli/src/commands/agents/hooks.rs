//! `small agents hooks`: make an agent host inject `small resume` at session start.

use std::path::PathBuf;

use small_core::authoring::hooks::{self, Host};
use small_core::authoring::merge;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// The hosts `--tool` accepts.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolArg {
    /// Claude Code: .claude/settings.json
    Claude,
    /// Gemini CLI: .gemini/settings.json
    Gemini,
    /// Codex: .codex/hooks.json
    Codex,
}

/// Write the host's project settings so that `small resume` is injected into every session
/// at start (and, for Claude Code and Codex, again after the context is compacted).
///
/// The settings file is merged, not replaced: other settings and hooks are kept, and running
/// this again changes nothing. --dry-run prints the change as a diff and writes nothing.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The agent host
    #[arg(long, value_enum)]
    pub tool: ToolArg,
    /// Show the change as a diff; write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Project directory (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let host = match args.tool {
        ToolArg::Claude => Host::Claude,
        ToolArg::Gemini => Host::Gemini,
        ToolArg::Codex => Host::Codex,
    };
    let dir = super::target_path(args.dir.as_deref(), Some("."))?;
    let path = dir.join(host.settings_rel());
    let old = match std::fs::read_to_string(&path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(CliError::usage(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    };
    let small = std::env::current_exe()
        .map(|e| merge::driver_command_for(&e))
        .unwrap_or_else(|_| "small".into());
    let new = hooks::merge_settings(old.as_deref(), host, &hooks::hook_command(&small))
        .map_err(CliError::invalid)?;
    let rel = host.settings_rel();
    if old.as_deref() == Some(new.as_str()) {
        if !g.quiet {
            println!("{rel}: the SessionStart hook is already installed; nothing to change");
        }
        return Ok(());
    }
    if args.dry_run {
        let diff = similar::TextDiff::from_lines(old.as_deref().unwrap_or(""), &new);
        print!(
            "{}",
            diff.unified_diff()
                .header(&format!("a/{rel}"), &format!("b/{rel}"))
        );
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::usage(format!("cannot create {}: {e}", parent.display())))?;
    }
    small_core::authoring::txn::atomic_write(&path, new.as_bytes())
        .map_err(|e| CliError::usage(format!("cannot write {}: {e}", path.display())))?;
    if !g.quiet {
        println!(
            "{} {rel}: SessionStart hook runs `{}`",
            if old.is_some() { "Updated" } else { "Created" },
            hooks::hook_command(&small)
        );
    }
    Ok(())
}
