//! `small draft intent|constraints`: propose a new human-owned artifact for review.

use crate::error::{CliError, CmdResult};
use crate::writes::{open_scoped, TargetArgs};
use crate::GlobalArgs;
use small_core::ops::draft::{self, DraftRequest};
use small_core::ops::formats::ArtifactKind;
use std::io::Read;

/// Propose a new intent.small.yml or constraints.small.yml for a human to review.
///
/// Agents must not edit the human-owned files. Instead they write a draft, which is kept in
/// `.small-cache/drafts/` (outside `.small/`), and a human accepts it with `small accept`.
/// The draft is checked against the artifact's schema; problems are reported (and would
/// stop `small accept`), but the draft is saved so it can be reviewed and fixed.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub kind: DraftKind,
}

#[derive(clap::Subcommand, Debug)]
pub enum DraftKind {
    /// Draft a new intent.small.yml
    Intent(DraftArgs),
    /// Draft a new constraints.small.yml
    Constraints(DraftArgs),
}

#[derive(clap::Args, Debug)]
pub struct DraftArgs {
    /// File with the proposed content, or `-` / `stdin` to read standard input
    #[arg(long, value_name = "PATH|-")]
    pub from: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print what was saved as JSON: {draft, target, bytes, replaced, valid, problems}
    #[arg(long)]
    pub json: bool,
}

fn read_source(from: &str) -> Result<Vec<u8>, CliError> {
    let v = from.trim();
    if v == "-" || v.eq_ignore_ascii_case("stdin") {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
        if buf.iter().all(u8::is_ascii_whitespace) {
            return Err(CliError::usage(
                "standard input is empty; there is no draft to save",
            ));
        }
        return Ok(buf);
    }
    let bytes = small_core::ops::workspace::read_user_input(
        std::path::Path::new(v),
        small_core::ops::workspace::MAX_READ_BYTES,
    )
    .map_err(|e| CliError::usage(format!("cannot read {v}: {e}")))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(CliError::usage(format!(
            "{v} is empty; there is no draft to save"
        )));
    }
    Ok(bytes)
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let (kind, a) = match args.kind {
        DraftKind::Intent(a) => (ArtifactKind::Intent, a),
        DraftKind::Constraints(a) => (ArtifactKind::Constraints, a),
    };
    let root = open_scoped(a.target.dir.as_deref(), a.target.workspace)?;
    let content = read_source(&a.from)?;
    let out = draft::draft(&DraftRequest {
        root: &root,
        kind,
        content: &content,
    })
    .map_err(CliError::plain)?;
    g.outcome(a.json, &out)?;
    if !a.json {
        for line in out.problem_lines() {
            g.warn(line);
        }
    }
    Ok(())
}
