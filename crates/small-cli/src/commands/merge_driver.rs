//! `small merge-driver`: git's merge driver for the agent-owned artifacts, and its install.

use std::path::PathBuf;

use small_core::authoring::merge::{self, MergeKind};

use crate::commands::progress::shared;
use crate::error::{CliError, CmdResult};
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
        let root = shared::root(args.dir.as_deref())?;
        let exe = std::env::current_exe()
            .map_err(|e| CliError::usage(format!("cannot find the small binary: {e}")))?;
        let report = merge::install(&root, &merge::driver_command_for(&exe))
            .map_err(|e| CliError::usage(e.to_string()))?;
        g.info(format!(
            "Merge driver for SMALL artifacts in {}",
            report.repo.display()
        ));
        for line in report.lines() {
            g.info(format!("  {line}"));
        }
        return Ok(());
    }
    let (Some(base), Some(ours), Some(theirs)) = (args.base, args.ours, args.theirs) else {
        return Err(CliError::usage(
            "give BASE OURS THEIRS [PATH] (%O %A %B %P), or --install",
        ));
    };
    let name = args
        .path
        .clone()
        .unwrap_or_else(|| ours.to_string_lossy().into_owned());
    let Some(kind) = MergeKind::for_path(&name) else {
        return Err(CliError::usage(format!(
            "{name}: not a file small merges (only {})",
            MergeKind::FILES.join(", ")
        )));
    };
    let read = |p: &PathBuf| {
        small_core::workspace::fsio::read_bounded(p, small_core::workspace::fsio::MAX_READ_BYTES)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| CliError::usage(format!("cannot read {}: {e}", p.display())))
    };
    let (b, o, t) = (read(&base)?, read(&ours)?, read(&theirs)?);
    match merge::merge(kind, &b, &o, &t) {
        Ok(m) => {
            std::fs::write(&ours, m.text.as_bytes())
                .map_err(|e| CliError::usage(format!("cannot write {}: {e}", ours.display())))?;
            for n in &m.notes {
                g.warn(format!("small merge-driver: {name}: {n}"));
            }
            Ok(())
        }
        Err(c) => {
            for line in &c.conflicts {
                g.error(format!("small merge-driver: {name}: conflict: {line}"));
            }
            g.error(format!(
                "small merge-driver: {name}: left git's conflict markers; resolve, then `small check --strict`"
            ));
            // Leave the usual text-merge markers in %A for a human to resolve.
            let _ = std::process::Command::new("git")
                .args(["merge-file", "-L", "ours", "-L", "base", "-L", "theirs"])
                .arg(&ours)
                .arg(&base)
                .arg(&theirs)
                .status();
            Err(CliError::silent(1))
        }
    }
}
