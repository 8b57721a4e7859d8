//! `small session list`: every session of a 2.0.0 workspace.

use std::path::PathBuf;

use small_core::history::runs;
use small_core::v2::{self, read};

use crate::error::{CliError, CmdResult};
use crate::outln;
use crate::GlobalArgs;

/// List the sessions: id, label, status (active; closed by a session_closed event; or
/// superseded, taken over by another session), when
/// it was created, the frontier it observed and how many events it holds.
///
/// Exit codes: 0 listed; 1 a v1 workspace (no sessions; `small migrate` makes it 2.0.0) or
/// damaged 2.0.0 records; 2 bad flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the list as JSON (docs/json-output.md)
    #[arg(long)]
    pub json: bool,
    /// Directory containing .small/ (or the .small directory itself) [default: search upward from the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let root = runs::discover_root(args.dir.as_deref());
    let small_dir = root.join(small_core::spec::consts::SMALL_DIR);
    if v2::detect(&small_dir) != v2::Profile::V2 {
        return Err(CliError::invalid(
            "sessions are part of SMALL 2.0.0; this is not a 2.0.0 workspace (`small migrate` converts a v1 one)",
        ));
    }
    match read::session_list(&root, &small_dir) {
        Ok(l) if args.json => g.json(&l),
        Ok(l) => crate::output::data(&crate::render::escape_controls(&render(&l))),
        Err(diags) => {
            g.diagnostics(&diags, |_| None, true);
            Err(CliError::invalid(
                "the 2.0.0 records are damaged (see `small check --strict`)",
            ))
        }
    }
}

fn render(l: &read::SessionList) -> String {
    let mut o = String::new();
    outln!(o, "Sessions: {} ({} mode)", l.sessions.len(), l.mode);
    for s in &l.sessions {
        let label = if s.label.is_empty() { "-" } else { &s.label };
        outln!(
            o,
            "  {}  {:<10}  {:>4} events  {}  {label}",
            s.session_id,
            s.status,
            s.events,
            s.created_at
        );
    }
    o
}
