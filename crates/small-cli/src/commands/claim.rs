//! `small claim`: take the lease on a task (or the next free one) so that no other agent
//! starts it (docs/agents.md, "Claims: one agent per task").

use std::time::Duration;

use small_core::ops::claims::{self, ClaimRequest, Where};

use crate::error::CmdResult;
use crate::GlobalArgs;

/// Claim a task: a lease held as a git ref (refs/small/claims/<project>/<task>) on the
/// remote, taken by compare-and-swap, so that two agents never start the same task. Claiming
/// a task this checkout already holds renews the lease.
///
/// A completed or cancelled checkpoint turns the lease into a done record: the task stays
/// held until the remote's default branch shows the completion, so agents that have not
/// pulled never start it again (claiming it exits 1 with code `done`). A completion that
/// never reaches the remote is taken back explicitly with --reopen, once the record is
/// older than its TTL.
///
/// The lease ends after --ttl by this machine's clock; other checkouts treat it as held until
/// that end plus SMALL_CLAIM_SKEW (default 30s), then may take it over. Each git command is
/// bounded by SMALL_CLAIM_TIMEOUT (default 30s). Nothing is written under .small/.
///
/// Exit codes: 0 held; 1 another live holder has it, it is done, no ready task is free
/// (--next), or an unknown task; 2 bad flags, no repository or remote, or the remote cannot
/// be reached.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The task (id or alias)
    #[arg(
        value_name = "TASK",
        required_unless_present = "next",
        conflicts_with = "next"
    )]
    pub task: Option<String>,
    /// Take the next ready task (status's order) that no live lease or done record holds
    #[arg(long)]
    pub next: bool,
    /// Take a task whose done record is older than its TTL while the remote's default
    /// branch still shows it open (a completion that was lost); recorded in the new lease
    #[arg(long, requires = "task")]
    pub reopen: bool,
    /// How long the lease lasts (90s, 30m, 1h)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::units::parse_duration)]
    pub ttl: Duration,
    /// Who works here, as others see it [default: SMALL_AGENT, else $USER@host]
    #[arg(long = "as", value_name = "NAME")]
    pub label: Option<String>,
    #[command(flatten)]
    pub place: Place,
    #[command(flatten)]
    pub at: crate::workspace_dir::WorkspaceDir,
    /// Print the lease as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
}

/// `--remote NAME` or `--local`, shared by claim, unclaim and claims.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Place {
    /// The remote that holds the leases [default: origin]
    #[arg(long, value_name = "NAME", conflicts_with = "local")]
    pub remote: Option<String>,
    /// Keep the leases in this repository's refs (shared by its worktrees, not by clones)
    #[arg(long)]
    pub local: bool,
}

impl Place {
    /// The place the flags name (`None`: the operation's default, origin).
    pub fn where_(&self) -> Option<Where> {
        Where::from_flags(self.remote.clone(), self.local)
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let ws = args.at.open();
    let req = ClaimRequest {
        task: args.task,
        next: args.next,
        reopen: args.reopen,
        ttl: args.ttl,
        label: args.label,
        holder: None,
        where_: args.place.where_(),
    };
    g.op(args.json, claims::claim(&ws, &req))
}
