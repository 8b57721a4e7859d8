//! `small start` (under construction).

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// (under construction)
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args, _g: &GlobalArgs) -> CmdResult {
    Err(CliError::usage("`small start` is not implemented yet"))
}
