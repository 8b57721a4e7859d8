//! `small run show`

use super::{print_json, to_cli, Context};
use crate::error::{CliError, CmdResult};
use crate::outln;
use crate::GlobalArgs;
use small_core::ops::runs;

/// Show one snapshot: when and where it was taken, its files and the handoff it carries.
///
/// Also checks the files against the hashes recorded when the snapshot was taken and exits
/// with 1 if any changed or disappeared.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replay ID of the snapshot, or any prefix that names only one
    #[arg(value_name = "REPLAY_ID")]
    pub replay_id: String,
    /// Print the snapshot as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Out<'a> {
    #[serde(rename = "replayId")]
    replay_id: &'a str,
    /// The reference's copy of `meta.artifact_digest`.
    artifact_digest: &'a str,
    snapshot: &'a str,
    generation: u32,
    meta: &'a runs::Meta,
    artifacts: Vec<String>,
    #[serde(skip_serializing_if = "str::is_empty")]
    summary: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    next_steps: &'a [String],
    dir: String,
    intact: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    problems: &'a [String],
}

pub fn run(args: Args, ctx: &Context, g: &GlobalArgs) -> CmdResult {
    super::buffered(g, |o| body(args, ctx, g, o))
}

fn body(args: Args, ctx: &Context, g: &GlobalArgs, o: &mut String) -> CmdResult {
    let s = runs::find(&ctx.store, &args.replay_id).map_err(to_cli)?;
    let damaged = || {
        CliError::invalid(format!(
            "snapshot {} is damaged: {}",
            runs::short_name(&s.name, 16),
            s.problems.join("; ")
        ))
    };
    if args.json {
        let mut artifacts = vec![s.dir.join(runs::META_FILE).display().to_string()];
        artifacts.extend(
            s.artifacts
                .iter()
                .map(|a| s.dir.join(a).display().to_string()),
        );
        print_json(&Out {
            replay_id: &s.replay_id,
            artifact_digest: &s.meta.artifact_digest,
            snapshot: &s.name,
            generation: s.generation,
            meta: &s.meta,
            artifacts,
            summary: &s.summary,
            next_steps: &s.next_steps,
            dir: s.dir.display().to_string(),
            intact: s.problems.is_empty(),
            problems: &s.problems,
        })?;
        return if s.problems.is_empty() {
            Ok(())
        } else {
            Err(damaged())
        };
    }
    if !g.quiet() {
        let m = &s.meta;
        let or_dash = |v: &str| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.to_string()
            }
        };
        outln!(o, "replayId:       {}", s.replay_id);
        if s.generation > 1 {
            outln!(o, "generation:     {} (address {})", s.generation, s.name);
        }
        outln!(o, "created at:     {}", or_dash(&m.created_at));
        outln!(o, "snapshot dir:   {}", s.dir.display());
        outln!(o, "tool version:   {}", or_dash(&m.cli_version));
        outln!(o, "workspace kind: {}", or_dash(&m.workspace_kind));
        if !m.source_dir.is_empty() {
            outln!(o, "source dir:     {}", m.source_dir);
        }
        if m.git_sha.is_empty() && m.branch.is_empty() {
            outln!(o, "git:            -");
        } else {
            let dirty = if m.git_dirty {
                ", uncommitted changes"
            } else {
                ", clean"
            };
            let branch = if m.branch.is_empty() {
                String::new()
            } else {
                format!(" on {}", m.branch)
            };
            outln!(
                o,
                "git:            {}{branch}{dirty}",
                or_dash(&runs::short_id(&m.git_sha, 12))
            );
        }
        outln!(o, "files:");
        for a in &s.artifacts {
            outln!(o, "  - {a}");
        }
        if !s.problems.is_empty() {
            outln!(o, "integrity:      DAMAGED");
            for p in &s.problems {
                outln!(o, "  - {p}");
            }
        } else if m.files.is_empty() {
            outln!(
                o,
                "integrity:      not recorded (snapshot has no file hashes)"
            );
        } else {
            outln!(
                o,
                "integrity:      intact (all {} files match their recorded hashes)",
                m.files.len()
            );
        }
        outln!(o, "summary:        {}", or_dash(&s.summary));
        if s.next_steps.is_empty() {
            outln!(o, "next steps:     none");
        } else {
            outln!(o, "next steps:");
            for step in &s.next_steps {
                outln!(o, "  - {step}");
            }
        }
    }
    if s.problems.is_empty() {
        Ok(())
    } else {
        Err(damaged())
    }
}
