//! `small resume`: the context an agent reads when it starts or resumes a session.

use std::path::PathBuf;

use small_core::ops::agents;
use small_core::ops::resume::{self, GateMode, ResumeOptions};
use small_core::ops::workspace;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// Print what an agent resuming work must read, and nothing more: the handoff (summary,
/// replayId, next steps), the next task with its steps and dependencies, tasks in progress
/// or blocked, the constraints, the last progress entries, and whether the gates pass.
///
/// Compact Markdown for session-start hooks (docs/agents.md); --json for programs. It reads
/// only the end of the progress log, so it is as fast as `small status`. The strict check
/// runs when the log is short (up to 1 MiB); on a longer log the last verdict is reused while
/// no artifact changed, else the gates are reported as not checked (--check runs them).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the context as JSON
    #[arg(long, conflicts_with = "hook")]
    pub json: bool,
    /// Print the context as a SessionStart hook's JSON output (hookSpecificOutput.additionalContext),
    /// the shape Claude Code, Gemini CLI and Codex read (see `small agents hooks`)
    #[arg(long)]
    pub hook: bool,
    /// Keep the output within N characters, dropping the least important parts first
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
    /// Number of recent progress entries
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub recent: usize,
    /// Run the strict check even on a long progress log
    #[arg(long, conflicts_with = "no_check")]
    pub check: bool,
    /// Do not run the strict check (a verdict cached since the last change is still shown)
    #[arg(long)]
    pub no_check: bool,
    /// 2.0.0: read every record, not the state cached in .small-cache/ (the cache is used
    /// only when no file under .small/ changed since it was written)
    #[arg(long)]
    pub no_cache: bool,
    /// Directory containing .small/ (default: the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    // A hook must print its JSON even with --quiet, and nothing else.
    let hook = |text: &str| g.data(format!("{}\n", agents::session_start_output(text)));
    let loc = match workspace::locate(args.dir.as_deref()) {
        Ok(l) => l,
        // A session-start hook in a project without a workspace says so and lets the
        // session start.
        Err(e) if args.hook => {
            let d = e.to_diagnostic();
            let help = d.help.unwrap_or_default();
            return hook(&format!("SMALL: {} ({help})", d.message));
        }
        Err(e) => {
            let d = e.to_diagnostic();
            return Err(match d.help {
                Some(h) => CliError::usage(format!("{}\n  help: {h}", d.message)),
                None => CliError::usage(d.message),
            });
        }
    };
    let gates = match (args.check, args.no_check) {
        (true, _) => GateMode::Always,
        (_, true) => GateMode::Never,
        _ => GateMode::Auto,
    };
    let r = small_core::ops::status::resume(
        &loc,
        &ResumeOptions {
            recent: args.recent,
            gates,
            cache: !args.no_cache,
            ..ResumeOptions::default()
        },
    );
    let json = |r: &resume::Resume| serde_json::to_string_pretty(r).unwrap_or_default();
    let text = match (args.json, args.max_chars) {
        (true, Some(max)) => resume::fit(r, max, false, &json).1,
        (true, None) => json(&r),
        (false, Some(max)) => resume::fit(r, max, true, &resume::to_markdown).1,
        (false, None) => resume::to_markdown(&r),
    };
    if args.hook {
        hook(text.trim_end())
    } else if args.json {
        g.data(format!("{}\n", text.trim_end()))
    } else {
        g.info(text.trim_end());
        Ok(())
    }
}
