//! `small agents check`: read-only check of the harness block.

use crate::error::{CliError, CmdResult, EXIT_INVALID};
use crate::harness::display_name;
use crate::GlobalArgs;
use small_core::ops::agents::{check, read_target, target_path, CheckOptions, CheckReport};
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
        g.error(render_text(&report).trim_end());
    } else {
        g.info(render_text(&report).trim_end());
    }
    if report.failed {
        Err(CliError::silent(EXIT_INVALID))
    } else {
        Ok(())
    }
}

fn render_text(r: &CheckReport) -> String {
    let mut out = String::new();
    let status = if r.has_file { "exists" } else { "missing" };
    out.push_str(&format!("file:      {} ({status})\n", r.file_path));
    if r.has_block {
        let lines = r
            .block_lines
            .map(|[a, b]| format!(", lines {a}-{b}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "block:     v{}{lines}\n",
            r.block_version.as_deref().unwrap_or("?")
        ));
        out.push_str(&format!(
            "structure: {}\n",
            if r.block_valid { "valid" } else { "invalid" }
        ));
        out.push_str(&format!(
            "drift:     {}\n",
            if r.has_drift {
                "yes, the block differs from the canonical one"
            } else {
                "none"
            }
        ));
    } else if r.has_file {
        out.push_str("block:     none\n");
    }
    if let Some(e) = &r.error {
        out.push_str(&format!("error:     {e}\n"));
    }
    if let Some(h) = &r.recommendation {
        out.push_str(&format!("help:      {h}\n"));
    }
    out.push_str(if r.failed {
        "result:    FAILED\n"
    } else {
        "result:    ok\n"
    });
    out
}
