//! One module per command (see STYLE: one command, one file).

/// A command made of subcommands, one module each: its arguments (`Args`, the doc comments
/// given being its help), the `Sub` enum clap parses, and the `run` that hands the
/// arguments to the chosen module's own `run`.
macro_rules! subcommands {
    ($(#[$meta:meta])* $($variant:ident => $module:ident),+ $(,)?) => {
        $(#[$meta])*
        #[derive(clap::Args, Debug)]
        pub struct Args {
            #[command(subcommand)]
            pub command: Sub,
        }

        #[derive(clap::Subcommand, Debug)]
        pub enum Sub {
            $($variant($module::Args),)+
        }

        pub fn run(args: Args, g: &$crate::GlobalArgs) -> $crate::error::CmdResult {
            match args.command {
                $(Sub::$variant(a) => $module::run(a, g),)+
            }
        }
    };
}

pub mod accept;
pub mod agents;
pub mod apply;
pub mod archive;
pub mod check;
pub mod checkpoint;
pub mod claim;
pub mod claims;
pub mod completion;
pub mod doctor;
pub mod draft;
pub mod emit;
pub mod evidence;
pub mod fix;
pub mod handoff;
pub mod health;
pub mod init;
pub mod lint;
pub mod man;
pub mod manifest;
pub mod mcp;
pub mod merge_driver;
pub mod migrate;
pub mod mode;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod reconcile;
pub mod reconstruct;
pub mod reset;
pub mod resume;
pub mod run;
pub mod selftest;
pub mod serve;
pub mod session;
pub mod start;
pub mod status;
pub mod store;
pub mod sync;
pub mod ui;
pub mod unclaim;
pub mod validate;
pub mod verify;
pub mod version;
