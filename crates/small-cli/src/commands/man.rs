//! `small man`: manual pages generated from the command-line definition.

use std::path::PathBuf;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// Print or install the manual pages of small
///
/// With no argument, prints the page of `small` itself (roff) on standard output:
///
///   small man | man -l -
///
/// With --out DIR, writes one page per command (small.1, small-init.1, small-run-list.1, ...)
/// into DIR, for example a directory on your MANPATH:
///
///   small man --out ~/.local/share/man/man1
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Write every page into this directory (created if missing) instead of printing one
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The command whose page to print, e.g. `run list` [default: small itself]
    #[arg(value_name = "COMMAND", conflicts_with = "out")]
    pub command: Vec<String>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let cmd = crate::cli_command()
        .disable_help_subcommand(true)
        .version(small_core::ops::formats::TOOL_VERSION)
        .propagate_version(true);
    if let Some(dir) = args.out {
        std::fs::create_dir_all(&dir)
            .map_err(|e| CliError::usage(format!("cannot create {}: {e}", dir.display())))?;
        clap_mangen::generate_to(cmd, &dir).map_err(|e| {
            CliError::usage(format!(
                "cannot write the pages into {}: {e}",
                dir.display()
            ))
        })?;
        g.info(format!("wrote the manual pages into {}", dir.display()));
        return Ok(());
    }
    let mut cmd = cmd;
    cmd.build();
    let mut page = cmd;
    for name in &args.command {
        page = page
            .find_subcommand(name)
            .cloned()
            .ok_or_else(|| CliError::usage(format!("no command `{}`", args.command.join(" "))))?;
    }
    let mut buf: Vec<u8> = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut buf)
        .map_err(|e| CliError::usage(format!("cannot render the page: {e}")))?;
    g.data(String::from_utf8_lossy(&buf))
}
