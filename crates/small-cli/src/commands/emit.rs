//! `small emit`: the workspace state as one JSON document, for tools and agents.

use std::path::PathBuf;

use small_core::ops::emit::{self, EmitError, EmitRequest, Section};
use small_core::ops::workspace::Scope;

use crate::error::{self, CliError, CmdResult};
use crate::GlobalArgs;

/// Print the workspace state as JSON on stdout (read-only).
///
/// Always: paths, status, progress (recent entries), intent and constraints summaries.
/// --include adds sections in full (comma-separated: status, intent, constraints, plan,
/// progress, paths, enforcement): intent and constraints add their artifact, progress all
/// entries, plan the plan's tasks, enforcement the check report. --check runs `small check`
/// and adds its report under "enforcement"; the exit code is then check's.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory containing .small/ (or the .small directory itself) [default: current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Workspace kinds accepted: root (kind repo-root), examples, or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Number of recent progress entries to include
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub recent: usize,
    /// Number of next actionable tasks to include
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub tasks: usize,
    /// Sections to include, comma-separated
    #[arg(long, value_name = "LIST")]
    pub include: Option<String>,
    /// Run `small check` and include its report (exit code follows check)
    #[arg(long)]
    pub check: bool,
}

fn parse_include(s: Option<&str>) -> Result<Vec<Section>, CliError> {
    let parts = s.unwrap_or("").split(',').filter(|p| !p.trim().is_empty());
    parts
        .map(|p| {
            Section::parse(p).ok_or_else(|| {
                let names: Vec<&str> = Section::ALL.iter().map(|s| s.name()).collect();
                CliError::usage(format!(
                    "unknown --include section `{}`; choose from {}",
                    p.trim().to_ascii_lowercase(),
                    names.join(", ")
                ))
            })
        })
        .collect()
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let out = emit::emit(&EmitRequest {
        sections: parse_include(args.include.as_deref())?,
        dir: args.dir,
        scope: args.workspace,
        recent: args.recent,
        tasks: args.tasks,
        check: args.check,
    })
    .map_err(|e| match e {
        EmitError::NoWorkspace(e) => CliError::usage(e.to_string()),
        EmitError::OutOfScope(m) => CliError::invalid(m),
    })?;
    g.json(&out.document)?;
    out.check.map_or(Ok(()), error::verdict)
}
