//! `small accept intent|constraints`: a human accepts a draft into the canonical file.

use crate::error::{CliError, CmdResult};
use crate::render::render_plain;
use crate::writes::{open_scoped, TargetArgs};
use crate::GlobalArgs;
use small_core::ops::draft::{self, AcceptError, AcceptRequest};
use small_core::ops::formats::ArtifactKind;

/// Accept a draft (from `small draft`) into .small/intent.small.yml or constraints.small.yml.
///
/// This is the human's step: it replaces the canonical file with the reviewed draft and
/// records a `meta/accept-intent` / `meta/accept-constraints` progress entry. A draft that is
/// not a valid artifact is refused and nothing changes.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub kind: AcceptKind,
}

#[derive(clap::Subcommand, Debug)]
pub enum AcceptKind {
    /// Accept .small-cache/drafts/intent.small.yml
    Intent(AcceptArgs),
    /// Accept .small-cache/drafts/constraints.small.yml
    Constraints(AcceptArgs),
}

#[derive(clap::Args, Debug)]
pub struct AcceptArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Show the change as a diff and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was done as JSON: {draft, target, changed, dry_run, diff?, progress_entry?}
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let (kind, a) = match args.kind {
        AcceptKind::Intent(a) => (ArtifactKind::Intent, a),
        AcceptKind::Constraints(a) => (ArtifactKind::Constraints, a),
    };
    let root = open_scoped(a.target.dir.as_deref(), a.target.workspace)?;
    let out = draft::accept(&AcceptRequest {
        root: &root,
        kind,
        dry_run: a.dry_run,
    })
    .map_err(|e| refusal(e, kind))?;
    if a.json {
        return g.json(&out);
    }
    let (d, t) = (&out.draft, &out.target);
    if !out.changed {
        g.info(format!("{t} already matches {d}; nothing to accept"));
    } else if let Some(diff) = &out.diff {
        g.info(format!(
            "Dry run: accepting {d} would change {t} (nothing written):"
        ));
        g.info_raw(diff);
    } else {
        g.info(match out.old_lines {
            Some(n) => format!(
                "Accepted {d} into {t} (replaced {n} lines with {})",
                out.new_lines
            ),
            None => format!("Accepted {d} into {t} (new file, {} lines)", out.new_lines),
        });
        g.info(format!(
            "Recorded progress entry meta/accept-{} at {}",
            kind.name(),
            out.timestamp.as_deref().unwrap_or_default()
        ));
    }
    Ok(())
}

/// Why the draft was not accepted, in words.
fn refusal(e: AcceptError, kind: ArtifactKind) -> CliError {
    match e {
        AcceptError::NoDraft { draft } => CliError::invalid(format!(
            "there is no draft to accept: {draft} does not exist\n  help: write one with `small draft {} --from <file>`",
            kind.name()
        )),
        AcceptError::Unreadable { draft, error } => {
            CliError::usage(format!("cannot read {draft}: {error}"))
        }
        AcceptError::Invalid { draft, errors } => {
            let list: Vec<String> = errors
                .iter()
                .map(|d| format!("  {}", render_plain(d).replace('\n', "\n  ")))
                .collect();
            CliError::invalid(format!(
                "the draft {draft} is not a valid {}; nothing was changed:\n{}\n  help: fix the draft (or write a new one with `small draft {}`), then accept again",
                kind.file_name(),
                list.join("\n"),
                kind.name()
            ))
        }
        AcceptError::Authoring(e) => CliError::from(e),
    }
}
