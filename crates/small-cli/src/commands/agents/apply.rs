//! `small agents apply`: create or update the SMALL harness block.

use crate::error::{CliError, CmdResult};
use crate::harness::ModeArg;
use crate::GlobalArgs;
use small_core::ops::agents::{self, ApplyError, ApplyRequest, Request};
use small_core::ops::report::Report;
use std::path::PathBuf;

/// Write or update the SMALL harness block in AGENTS.md
///
/// - no file: it is created with the block;
/// - a file with a block: the block is replaced in place (no flag needed);
/// - a file with content but no block: say where the block goes with `--agents-mode
///   append|prepend`, or replace the whole file with `--force`/`--overwrite-agents`;
/// - malformed markers (two blocks, a lone marker, versions that disagree): an error, and
///   nothing is written.
///
/// Content outside the block is never changed. `.small/` is never touched.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
#[command(
    after_help = "Examples:\n  small agents apply\n  small agents apply --agents-mode append\n  \
small agents apply --dry-run\n  small agents apply --file CLAUDE.md --agents-mode prepend"
)]
pub struct Args {
    /// Directory holding the file (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// File to manage, relative to --dir (default: AGENTS.md)
    #[arg(long, value_name = "NAME")]
    pub file: Option<String>,
    /// Where to add the block in a file that has content but no block
    #[arg(long, value_enum, ignore_case = true, conflicts_with_all = ["overwrite_agents", "force"])]
    pub agents_mode: Option<ModeArg>,
    /// Replace the whole file with the block
    #[arg(long)]
    pub overwrite_agents: bool,
    /// Same as --overwrite-agents
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Show what would change (a diff) without writing
    #[arg(long)]
    pub dry_run: bool,
    /// Print the resulting file to stdout without writing (implies --dry-run)
    #[arg(long)]
    pub print: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let request = if args.force || args.overwrite_agents {
        Request::Overwrite
    } else if let Some(m) = args.agents_mode {
        Request::Mode(m.into())
    } else {
        Request::Default
    };
    let out = agents::apply(&ApplyRequest {
        dir: args.dir.as_deref(),
        file: args.file.as_deref(),
        request,
        dry_run: args.dry_run || args.print,
    })
    .map_err(|e| match e {
        ApplyError::Compose(e) => CliError::from(e),
        ApplyError::File(e) => CliError::bare(e),
    })?;
    if args.print {
        return g.data(&out.composed.text);
    }
    g.info_raw(out.text());
    Ok(())
}
