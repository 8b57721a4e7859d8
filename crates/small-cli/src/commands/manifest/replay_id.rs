//! `small manifest replay-id [FILE|-]`

use super::read_input;
use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_core::ops::api::validate_request;

/// Print the replay ID of a validate-manifest request body.
///
/// The ID is base64url (no padding) of sha256("SMALL|" + protocolVersion + "|" +
/// canonicalJson(manifest)). An invalid manifest or protocol version prints the errors on
/// standard error and exits 1; unreadable input or malformed JSON exits 2.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Request body file (`-` or nothing: standard input)
    pub file: Option<String>,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let (name, input) = read_input(args.file.as_deref())?;
    let outcome = validate_request(&input).map_err(|e| {
        CliError::usage(format!(
            "{name}:{}:{}: invalid JSON: {}",
            e.line, e.column, e.message
        ))
    })?;
    match &outcome.replay_id {
        Some(id) => g.data(format!("{id}\n")),
        None => {
            let lines: Vec<String> = outcome
                .errors
                .iter()
                .map(|e| {
                    let at = if e.instance_path.is_empty() {
                        "manifest".to_owned()
                    } else {
                        format!("manifest{}", e.instance_path)
                    };
                    format!("{name}: {at}: {}", e.message.to_string_lossy())
                })
                .collect();
            Err(CliError::invalid(format!(
                "the manifest has no replay ID:\n  {}",
                lines.join("\n  ")
            )))
        }
    }
}
