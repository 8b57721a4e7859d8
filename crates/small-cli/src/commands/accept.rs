//! `small accept intent|constraints`: a human accepts a draft into the canonical file.

use crate::error::{CliError, CmdResult};
use crate::writes::{open_scoped, TargetArgs};
use crate::GlobalArgs;
use small_core::ops::draft::{self, AcceptError, AcceptRequest};
use small_core::ops::formats::ArtifactKind;
use small_core::ops::txn::ErrorKind;

/// Accept a draft (from `small draft`) into .small/intent.small.yml or constraints.small.yml.
///
/// This is the human's step: it replaces the canonical file with the reviewed draft and
/// records a `meta/accept-intent` / `meta/accept-constraints` progress entry. A draft that is
/// not a valid artifact is refused and nothing changes.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub kind: AcceptKind,
}

#[derive(clap::Subcommand, Debug)]
pub enum AcceptKind {
    /// Accept .small-cache/drafts/intent.small.yml
    Intent(AcceptArgs),
    /// Accept .small-cache/drafts/constraints.small.yml
    Constraints(AcceptArgs),
}

#[derive(clap::Args, Debug)]
pub struct AcceptArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Show the change as a diff and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was done as JSON: {draft, target, changed, dry_run, diff?, progress_entry?}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let (kind, a) = match args.kind {
        AcceptKind::Intent(a) => (ArtifactKind::Intent, a),
        AcceptKind::Constraints(a) => (ArtifactKind::Constraints, a),
    };
    let root = open_scoped(a.target.dir.as_deref(), a.target.workspace)?;
    let out = draft::accept(&AcceptRequest {
        root: &root,
        kind,
        dry_run: a.dry_run,
    })
    .map_err(|e| refusal(e, kind))?;
    g.outcome(a.json, &out)
}

/// Why the draft was not accepted, in words.
fn refusal(e: AcceptError, kind: ArtifactKind) -> CliError {
    if let AcceptError::Authoring(e) = e {
        return CliError::from(e);
    }
    match e.words(kind) {
        Some((ErrorKind::Invalid, m)) => CliError::invalid(m),
        Some((_, m)) => CliError::usage(m),
        None => CliError::invalid("the draft was not accepted"),
    }
}
