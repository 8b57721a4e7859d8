//! `small sync`: publish this checkout's SMALL records: fetch, rebase through the merge
//! driver, push, retry (docs/agents.md, "The loop").

use std::path::PathBuf;

use small_core::ops::sync::{self, SyncOutcome, SyncRequest};

use crate::error::{from_op, CmdResult};
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
    let out = sync::sync(&ws, &req).map_err(|e| from_op(e, g))?;
    if args.json {
        return g.json(&out);
    }
    g.info(crate::render::escape_controls(&summary(&out)));
    Ok(())
}

/// `pushed 3f2a9c1 to origin/main (rebased, 2 attempts); committed …`.
fn summary(out: &SyncOutcome) -> String {
    let short = |s: &str| s[..s.len().min(12)].to_string();
    let mut s = match out.status {
        "up-to-date" => format!("{}/{} is up to date", out.remote, out.branch),
        _ => format!(
            "pushed {} to {}/{}",
            short(&out.head),
            out.remote,
            out.branch
        ),
    };
    let mut notes = Vec::new();
    if let Some(c) = &out.committed {
        notes.push(format!("committed .small/ as {}", short(c)));
    }
    if out.rebased {
        notes.push("rebased onto the others' work".to_string());
    }
    if out.attempts > 1 {
        notes.push(format!("{} attempts", out.attempts));
    }
    if out.installed_merge_driver {
        notes.push("installed the merge driver".to_string());
    }
    for l in &out.finished {
        notes.push(format!("{} done", l.task));
    }
    if !notes.is_empty() {
        s.push_str(&format!(" ({})", notes.join("; ")));
    }
    s
}
