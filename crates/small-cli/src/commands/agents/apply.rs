//! `small agents apply`: create or update the SMALL harness block.

use crate::error::{CliError, CmdResult};
use crate::harness::{describe, display_name, ModeArg};
use crate::GlobalArgs;
use small_core::ops::agents::{self, Action, ApplyError, ApplyRequest, Request};
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
    let name = display_name(args.file.as_deref());
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
    let composed = &out.composed;
    if args.print {
        return g.data(&composed.text);
    }
    if !args.dry_run {
        g.info(describe(composed, &name, false));
    } else if composed.action == Action::Unchanged {
        g.info(describe(composed, &name, true));
    } else {
        g.info(format!(
            "Dry run: {} (nothing written)",
            describe(composed, &name, true)
        ));
        g.info_raw(unified_diff(
            out.existing.as_deref().unwrap_or(""),
            &composed.text,
            &name,
        ));
    }
    Ok(())
}

/// A unified diff of the change, with a few lines of context.
fn unified_diff(old: &str, new: &str, name: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = diff
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{name} (current)"),
            &format!("{name} (after apply)"),
        )
        .to_string();
    if !out.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    out
}
