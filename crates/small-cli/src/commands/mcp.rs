//! `small mcp`: serve the workspace to an agent host over the Model Context Protocol.

use std::path::PathBuf;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// Serve the workspace over MCP on stdin/stdout, for agent hosts without a shell.
///
/// An agent host starts it as `small mcp --dir <project>`. Tools: resume, status, check,
/// plan, progress_add, checkpoint, handoff, manifest_validate, manifest_replay_id,
/// run_snapshot, run_list; each does what the command of the same name does, and writes take
/// the workspace lock like every command. Resources: the handoff first, the other artifacts,
/// the workspace metadata and the SMALL schemas. See docs/agents.md for host configuration.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, _g: &GlobalArgs) -> CmdResult {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::usage(format!("cannot start the runtime: {e}")))?;
    rt.block_on(small_mcp::serve_stdio(args.dir))
        .map_err(CliError::usage)
}
