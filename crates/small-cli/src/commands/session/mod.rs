//! `small session`: the sessions of a 2.0.0 workspace (docs/v2.md).

pub mod close;
pub mod list;
pub mod show;
pub mod start;

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Start, list, show and close the sessions of a SMALL 2.0.0 workspace.
///
/// A session is one agent's or person's run of work: its record in `.small/sessions/` and its
/// events in `.small/events/<session>/`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Start(start::Args),
    List(list::Args),
    Show(show::Args),
    Close(close::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Sub::Start(a) => start::run(a, g),
        Sub::List(a) => list::run(a, g),
        Sub::Show(a) => show::run(a, g),
        Sub::Close(a) => close::run(a, g),
    }
}
