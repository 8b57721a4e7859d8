//! `small merge-driver`: git's merge driver for the agent-owned artifacts, and its install.

use std::path::PathBuf;

use small_core::ops::merge::{self, MergeFilesError, MergeFilesRequest, MergeKind};

use crate::error::{CliError, CmdResult};
use crate::writes;
use crate::GlobalArgs;

/// Merge SMALL artifacts entry by entry (git calls this), or install it in a repository.
///
/// git runs `small merge-driver %O %A %B %P` for the files `.gitattributes` marks
/// `merge=small`: progress entries of both branches are all kept once, in timestamp order;
/// plan tasks merge field by field; handoff and workspace metadata keep one side (see
/// docs/agents.md). The result is written to the second file (%A); exit 0 means merged,
/// exit 1 a conflict, explained on stderr, with git's usual conflict markers left in the file.
///
/// `small merge-driver --install` sets it up in the repository holding the workspace (a
/// fresh clone must run it once: git never takes merge drivers from a repository).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Add the .gitattributes lines and set merge.small.driver in the local git config
    #[arg(long, conflicts_with_all = ["base", "ours", "theirs"])]
    pub install: bool,
    /// Directory containing .small/ (with --install; default: the current directory)
    #[arg(long, value_name = "PATH", requires = "install")]
    pub dir: Option<PathBuf>,
    /// The common ancestor's version (%O)
    #[arg(required_unless_present = "install")]
    pub base: Option<PathBuf>,
    /// Our version (%A); the merged result is written here
    #[arg(required_unless_present = "install")]
    pub ours: Option<PathBuf>,
    /// Their version (%B)
    #[arg(required_unless_present = "install")]
    pub theirs: Option<PathBuf>,
    /// The path of the file in the repository (%P); chooses the merge
    pub path: Option<String>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    if args.install {
        let root = writes::root(args.dir.as_deref())?;
        let exe = std::env::current_exe()
            .map_err(|e| CliError::usage(format!("cannot find the small binary: {e}")))?;
        let report = merge::install(&root, &merge::driver_command_for(&exe))
            .map_err(|e| CliError::usage(e.to_string()))?;
        return g.outcome(false, &report);
    }
    let (Some(base), Some(ours), Some(theirs)) = (args.base, args.ours, args.theirs) else {
        return Err(CliError::usage(
            "give BASE OURS THEIRS [PATH] (%O %A %B %P), or --install",
        ));
    };
    let req = MergeFilesRequest {
        base: &base,
        ours: &ours,
        theirs: &theirs,
        path: args.path.as_deref(),
    };
    match merge::merge_files(&req) {
        Ok((name, m)) => {
            for n in &m.notes {
                g.warn(format!("small merge-driver: {name}: {n}"));
            }
            Ok(())
        }
        Err(MergeFilesError::NotMerged { name }) => Err(CliError::usage(format!(
            "{name}: not a file small merges (only {})",
            MergeKind::FILES.join(", ")
        ))),
        Err(MergeFilesError::Io(m)) => Err(CliError::usage(m)),
        Err(MergeFilesError::Conflict { name, conflicts }) => {
            for line in &conflicts {
                g.error(format!("small merge-driver: {name}: conflict: {line}"));
            }
            g.error(format!(
                "small merge-driver: {name}: left git's conflict markers; resolve, then `small check --strict`"
            ));
            Err(CliError::silent(1))
        }
    }
}
