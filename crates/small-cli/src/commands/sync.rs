//! `small sync`: publish this checkout's SMALL records: fetch, rebase through the merge
//! driver, push, retry (docs/agents.md, "The loop").

use std::path::PathBuf;

use small_core::ops::sync::{self, SyncRequest};

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Publish the work: fetch the remote branch, rebase this branch onto it (the SMALL records
/// merge entry by entry through `small merge-driver`, installed first if it is missing),
/// push, and when another agent pushed first, do it again with a bounded backoff.
///
/// With --commit, the pending changes under .small/ (only those) are committed first.
/// Other uncommitted changes to tracked files are refused, and so is a conflict the merge
/// driver cannot resolve or one in other files: the rebase is aborted, the commits are
/// kept, and the files are named. Leases this checkout holds on tasks it finished become
/// done records before the push, and name the pushed commit after.
///
/// Exit codes: 0 pushed or already up to date; 1 refused (uncommitted changes, a conflict,
/// every push rejected, a detached HEAD or an unfinished rebase); 2 bad flags, no
/// repository or remote, or git failing.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Commit the pending changes under .small/ (only those) first
    #[arg(long)]
    pub commit: bool,
    /// The message of that commit
    #[arg(long, short = 'm', value_name = "TEXT", requires = "commit")]
    pub message: Option<String>,
    /// The remote to publish to [default: the branch's upstream remote, else origin]
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// How many pushes to try before giving up
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub attempts: u32,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print what was done as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = args.at.open();
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("small"));
    let req = SyncRequest {
        commit: args.commit,
        message: args.message,
        remote: args.remote,
        attempts: Some(args.attempts),
        driver_command: Some(small_core::ops::sync::driver_command_for(&exe)),
    };
    g.op(args.json, sync::sync(&ws, &req))
}
