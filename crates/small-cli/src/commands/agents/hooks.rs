//! `small agents hooks`: make an agent host inject `small resume` at session start.

use std::path::PathBuf;

use small_core::ops::agents::{self, Host, InstallRequest};
use small_core::ops::merge;
use small_core::ops::report::Report;

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
    let small = std::env::current_exe()
        .map(|e| merge::driver_command_for(&e))
        .unwrap_or_else(|_| "small".into());
    let out = agents::install(&InstallRequest {
        dir: args.dir.as_deref(),
        host,
        small: &small,
        dry_run: args.dry_run,
    })
    .map_err(CliError::bare)?;
    if args.dry_run && !out.unchanged() {
        return g.data(out.diff());
    }
    g.info_raw(out.text());
    Ok(())
}
