//! `small agents check`: read-only check of the harness block.

use crate::error::{CliError, CmdResult, EXIT_INVALID};
use crate::harness::display_name;
use crate::GlobalArgs;
use small_core::ops::agents::{check, read_target, target_path, CheckOptions};
use small_core::ops::report::Report;
use std::path::PathBuf;

/// Check the SMALL harness block in AGENTS.md (read-only; writes nothing)
///
/// Fails (exit 1) when the file is missing (unless --allow-missing), when the markers are
/// malformed (two blocks, a lone marker, versions that disagree), when the block's version is
/// not this protocol version, or when the block is empty. With --strict it also fails when
/// the file has no block, or when the block differs from the one `small agents apply`
/// writes (drift). Exit 2 for a bad command line or an unreadable file.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Directory holding the file (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// File to check, relative to --dir (default: AGENTS.md)
    #[arg(long, value_name = "NAME")]
    pub file: Option<String>,
    /// A missing file passes
    #[arg(long)]
    pub allow_missing: bool,
    /// Also fail when the file has no block or the block has drifted
    #[arg(long)]
    pub strict: bool,
    /// Output format
    #[arg(long, value_enum, default_value = "text", ignore_case = true)]
    pub format: Format,
    /// Same as --format json
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let path = target_path(args.dir.as_deref(), args.file.as_deref()).map_err(CliError::bare)?;
    let name = display_name(args.file.as_deref());
    let content = read_target(&path).map_err(CliError::bare)?;
    let report = check(
        content.as_deref(),
        &name,
        &path.display().to_string(),
        CheckOptions {
            allow_missing: args.allow_missing,
            strict: args.strict,
        },
    );
    if args.json || args.format == Format::Json {
        g.json(&report)?;
    } else if report.failed {
        g.error(report.text().trim_end());
    } else {
        g.info(report.text().trim_end());
    }
    if report.failed {
        Err(CliError::silent(EXIT_INVALID))
    } else {
        Ok(())
    }
}
