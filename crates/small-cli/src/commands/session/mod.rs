//! `small session`: the sessions of a 2.0.0 workspace (docs/v2.md).

pub mod list;

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Inspect the sessions of a SMALL 2.0.0 workspace.
///
/// A session is one agent's or person's run of work: its record in `.small/sessions/` and its
/// events in `.small/events/<session>/`. Read-only.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    List(list::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Sub::List(a) => list::run(a, g),
    }
}
