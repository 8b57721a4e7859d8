//! `small agents print`: print the canonical harness block.

use crate::error::CmdResult;
use crate::GlobalArgs;
use small_core::ops::agents::{block_body, canonical_block};

/// Print the canonical SMALL harness block to stdout (reads and writes no file).
///
/// Useful to paste the block somewhere by hand or to compare it with a file.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Include the BEGIN/END marker lines (`--with-markers=false` prints the text only)
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub with_markers: bool,
    /// Output format: `md` (Markdown as written) or `plain` (headings, bold and code marks removed;
    /// implies no markers)
    #[arg(long, value_enum, default_value = "md", ignore_case = true)]
    pub format: PrintFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintFormat {
    Md,
    Plain,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let text = match (args.format, args.with_markers) {
        (PrintFormat::Plain, _) => plain(block_body()),
        (PrintFormat::Md, true) => canonical_block(),
        (PrintFormat::Md, false) => block_body().to_string(),
    };
    g.data(text)
}

/// Strips Markdown marks that read badly as plain text.
fn plain(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    for line in md.lines() {
        let line = line.trim_start_matches('#').trim_start();
        out.push_str(&line.replace("**", "").replace('`', ""));
        out.push('\n');
    }
    out
}
