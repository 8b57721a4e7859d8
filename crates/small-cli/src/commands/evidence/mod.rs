//! `small evidence`: evidence blobs and receipts of a 2.0.0 workspace (docs/v2.md).

pub mod declare_unavailable;
pub mod save;
pub mod verify;

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Save, verify, or declare unavailable the evidence of a SMALL 2.0.0 workspace.
///
/// Evidence bytes live in `.small/evidence/blobs/sha256/<digest>`; a receipt in
/// `.small/receipts/sha256/<digest>.json` says what they prove (strength: narrative_assertion,
/// cli_captured, verified_artifact; availability: verified, unavailable, ...).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Save(save::Args),
    Verify(verify::Args),
    DeclareUnavailable(declare_unavailable::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Sub::Save(a) => save::run(a, g),
        Sub::Verify(a) => verify::run(a, g),
        Sub::DeclareUnavailable(a) => declare_unavailable::run(a, g),
    }
}
