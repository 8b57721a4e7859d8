//! `small manifest`: validate API manifests and compute their replay IDs, offline.
//!
//! Input is the body of the API's validate-manifest request, `{protocolVersion?, manifest}`,
//! and output is the API's response, so scripts get exactly what `small serve` answers.

mod replay_id;
mod validate;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use std::io::Read;

/// Validate API manifests and compute replay IDs (the logic `small serve` uses)
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Validate(validate::Args),
    ReplayId(replay_id::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Sub::Validate(a) => validate::run(a, g),
        Sub::ReplayId(a) => replay_id::run(a, g),
    }
}

/// Read a file, or standard input for `-` or no file.
fn read_input(file: Option<&str>) -> Result<(String, Vec<u8>), CliError> {
    match file {
        None | Some("-") => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
            Ok(("<stdin>".into(), buf))
        }
        Some(path) => {
            let buf = std::fs::read(path)
                .map_err(|e| CliError::usage(format!("cannot read {path}: {e}")))?;
            Ok((path.to_owned(), buf))
        }
    }
}
