//! `small progress`: append to the progress log, or migrate its timestamps.

pub mod add;
pub mod migrate;
/// Re-exports `crate::writes` for the commands that import it from here.
use crate::error::CmdResult;
use crate::GlobalArgs;

/// Record work in progress.small.yml (append-only), or repair its timestamps.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Sub {
    Add(Box<add::Args>),
    Migrate(migrate::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Sub::Add(a) => add::run(*a, g),
        Sub::Migrate(a) => migrate::run(a, g),
    }
}
