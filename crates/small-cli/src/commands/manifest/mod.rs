//! `small manifest`: validate API manifests and compute their replay IDs, offline.
//!
//! Input is the body of the API's validate-manifest request, `{protocolVersion?, manifest}`,
//! and output is the API's response, so scripts get exactly what `small serve` answers.

mod replay_id;
mod validate;

use crate::error::CliError;

subcommands! {
    /// Validate API manifests and compute replay IDs (the logic `small serve` uses)
    Validate => validate,
    ReplayId => replay_id,
}

/// Read a file, or standard input for `-` or no file.
fn read_input(file: Option<&str>) -> Result<(String, Vec<u8>), CliError> {
    let (name, path) = match file {
        None | Some("-") => ("<stdin>".to_owned(), "-"),
        Some(p) => (p.to_owned(), p),
    };
    let buf = small_core::ops::workspace::read_user_input(
        std::path::Path::new(path),
        small_core::ops::workspace::MAX_READ_BYTES,
    )
    .map_err(|e| {
        let what = if path == "-" { "standard input" } else { path };
        CliError::usage(format!("cannot read {what}: {e}"))
    })?;
    Ok((name, buf))
}
