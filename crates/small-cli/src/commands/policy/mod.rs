//! `small policy`: the policy of a 2.0.0 workspace (docs/v2.md).

pub mod revise;
pub mod show;

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Show or revise the policy of a SMALL 2.0.0 workspace (`.small/policy/intent.small.yml`,
/// `.small/policy/constraints.small.yml`): it changes only with a policy_changed event.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Show(show::Args),
    Revise(revise::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Sub::Show(a) => show::run(a, g),
        Sub::Revise(a) => revise::run(a, g),
    }
}
