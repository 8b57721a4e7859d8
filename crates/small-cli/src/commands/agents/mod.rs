//! `small agents`: manage the SMALL harness block in AGENTS.md (never touches `.small/`).

pub mod apply;
pub mod check;
pub mod hooks;
pub mod print;

use crate::error::CmdResult;
use crate::GlobalArgs;

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
