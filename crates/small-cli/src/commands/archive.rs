//! `small archive`: keep a run's artifacts with hashes that prove they are intact, and
//! `small archive verify` to check them later.

use std::path::PathBuf;

use crate::commands::run::{to_cli, warn_all};
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::ops::runs::{self, ArchiveOptions};

/// Archive the current run for lineage retention, or verify an archive.
///
/// `small archive` copies the canonical artifacts and workspace.small.yml from .small/ into
/// `.small-archive/<replayId>/` (or --out) together with `archive.small.yml`, which records
/// the protocol version, the time, the source directory, the replay ID and the SHA-256 of
/// every file. The handoff must carry a replayId (run `small handoff` first). Archives are
/// written in one step and never modified: archiving the same state again changes nothing,
/// and a different archive at the same place is replaced only with --force.
///
/// On a 2.0.0 workspace the archive is the whole .small/ tree, copied to
/// `.small-archive/<frontier>/state/.small/` (the tree must pass the strict check); the
/// manifest's replayId is the frontier and each file is named by its path inside .small/.
/// --include is not accepted there.
///
/// `small archive verify <PATH>` re-hashes an archive and reports every file that changed,
/// is missing, or is not in the manifest (exit code 1 if any).
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Sub>,
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Output directory [default: .small-archive/<replayId>]
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Files of .small/ to include, comma-separated or repeated [default: all canonical
    /// artifacts and workspace.small.yml]
    #[arg(long, value_delimiter = ',', value_name = "FILES")]
    pub include: Vec<String>,
    /// Replace an existing, different archive at the output directory
    #[arg(long)]
    pub force: bool,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    Verify(VerifyArgs),
}

/// Re-hash an archive and report any file that changed, is missing or was added.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// The archive directory (the one holding archive.small.yml)
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    match args.command {
        Some(Sub::Verify(v)) => verify(v, g),
        None => create(args, g),
    }
}

fn create(args: Args, g: &GlobalArgs) -> CmdResult {
    if args.out.as_ref().is_some_and(|o| o.as_os_str().is_empty()) {
        return Err(CliError::usage("--out needs a directory path"));
    }
    let root = small_core::ops::Workspace::find(args.dir.as_deref()).root;
    let opts = ArchiveOptions {
        out: args.out,
        include: if args.include.is_empty() {
            None
        } else {
            Some(args.include)
        },
        force: args.force,
    };
    let r = runs::create_archive(&root, &opts).map_err(to_cli)?;
    warn_all(g, &r.warnings);
    g.outcome(args.json, &r)
}

fn verify(v: VerifyArgs, g: &GlobalArgs) -> CmdResult {
    let r = runs::verify_archive(&v.path).map_err(to_cli)?;
    if g.quiet() && !v.json {
        g.data(crate::render::escape_controls(&r.lines(true)))?;
    } else {
        g.listing(v.json, &r)?;
    }
    r.refusal().map_or(Ok(()), |e| Err(to_cli(e)))
}
