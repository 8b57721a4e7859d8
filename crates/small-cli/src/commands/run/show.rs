//! `small run show`

use super::{print_json, to_cli, Context};
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::runs;

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
    let s = runs::find(&ctx.store, &args.replay_id).map_err(to_cli)?;
    let damaged = || {
        CliError::invalid(format!(
            "snapshot {} is damaged: {}",
            runs::short_id(&s.replay_id, 16),
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
    if !g.quiet {
        let m = &s.meta;
        let or_dash = |v: &str| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.to_string()
            }
        };
        println!("replayId:       {}", s.replay_id);
        println!("created at:     {}", or_dash(&m.created_at));
        println!("snapshot dir:   {}", s.dir.display());
        println!("tool version:   {}", or_dash(&m.cli_version));
        println!("workspace kind: {}", or_dash(&m.workspace_kind));
        if !m.source_dir.is_empty() {
            println!("source dir:     {}", m.source_dir);
        }
        if m.git_sha.is_empty() && m.branch.is_empty() {
            println!("git:            -");
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
            println!(
                "git:            {}{branch}{dirty}",
                or_dash(&runs::short_id(&m.git_sha, 12))
            );
        }
        println!("files:");
        for a in &s.artifacts {
            println!("  - {a}");
        }
        if !s.problems.is_empty() {
            println!("integrity:      DAMAGED");
            for p in &s.problems {
                println!("  - {p}");
            }
        } else if m.files.is_empty() {
            println!("integrity:      not recorded (snapshot has no file hashes)");
        } else {
            println!(
                "integrity:      intact (all {} files match their recorded hashes)",
                m.files.len()
            );
        }
        println!("summary:        {}", or_dash(&s.summary));
        if s.next_steps.is_empty() {
            println!("next steps:     none");
        } else {
            println!("next steps:");
            for step in &s.next_steps {
                println!("  - {step}");
            }
        }
    }
    if s.problems.is_empty() {
        Ok(())
    } else {
        Err(damaged())
    }
}
