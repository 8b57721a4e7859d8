//! `small mode`: the collaboration mode of a 2.0.0 workspace (docs/v2.md).

pub mod set;
pub mod show;

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Show or set the mode of a SMALL 2.0.0 workspace: solo (one active session) or
/// collaborative (several).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Show(show::Args),
    Set(set::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Sub::Show(a) => show::run(a, g),
        Sub::Set(a) => set::run(a, g),
    }
}
