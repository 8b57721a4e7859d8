//! `small manifest validate [FILE|-]`

use super::read_input;
use crate::error::{CliError, CmdResult, EXIT_INVALID, EXIT_OK, EXIT_USAGE};
use crate::GlobalArgs;
use small_core::ops::api::validate_request;
use std::io::Write;

/// Validate a validate-manifest request body and print the API's response.
///
/// Input: `{"protocolVersion"?: "1.0.0", "manifest": {...}}` from FILE or standard input.
/// Output: `{"valid":…,"replayId":…(when valid),"errors":[{"instancePath":…,"message":…}]}`.
/// Exit status: 0 valid, 1 invalid, 2 unreadable input or malformed JSON.
/// With --jsonl, each input line is one request and each output line one result (a line that
/// is not JSON gives an error object `{"error":"invalid_json","message":…,"line":N}`); the exit
/// status is the worst of all lines.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Request body file (`-` or nothing: standard input)
    pub file: Option<String>,
    /// One request per input line, one result per output line
    #[arg(long)]
    pub jsonl: bool,
}

pub fn run(args: Args, _g: &GlobalArgs) -> CmdResult {
    let (name, input) = read_input(args.file.as_deref())?;
    let mut out = std::io::BufWriter::new(crate::output::stdout());
    let write_err = |e: std::io::Error| CliError::usage(format!("cannot write output: {e}"));
    if !args.jsonl {
        return match validate_request(&input) {
            Ok(outcome) => {
                let mut buf = Vec::with_capacity(128);
                outcome.write_json(&mut buf);
                buf.push(b'\n');
                out.write_all(&buf)
                    .and_then(|_| out.flush())
                    .map_err(write_err)?;
                if outcome.valid() {
                    Ok(())
                } else {
                    Err(CliError::silent(EXIT_INVALID))
                }
            }
            Err(e) => Err(CliError::usage(format!(
                "{name}:{}:{}: invalid JSON: {}",
                e.line, e.column, e.message
            ))),
        };
    }
    let mut worst = EXIT_OK;
    let mut buf = Vec::with_capacity(256);
    for (i, line) in input.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        buf.clear();
        match validate_request(line) {
            Ok(outcome) => {
                outcome.write_json(&mut buf);
                if !outcome.valid() {
                    worst = worst.max(EXIT_INVALID);
                }
            }
            Err(e) => {
                let msg = format!("{name}:{}:{}: {}", i + 1, e.column, e.message);
                let mut o = String::from("{\"error\":\"invalid_json\",\"message\":");
                o.push_str(&serde_json::to_string(&msg).unwrap_or_else(|_| "\"\"".into()));
                o.push_str(&format!(",\"line\":{}}}", i + 1));
                buf.extend_from_slice(o.as_bytes());
                worst = EXIT_USAGE;
            }
        }
        buf.push(b'\n');
        out.write_all(&buf).map_err(write_err)?;
    }
    out.flush().map_err(write_err)?;
    if worst == EXIT_OK {
        Ok(())
    } else {
        Err(CliError::silent(worst))
    }
}
