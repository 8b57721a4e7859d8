//! `small store import DIR`: every `*.json` file of a directory in one command.

use super::Out;
use crate::error::{CliError, CmdResult};
use small_store::import::{self, ImportError};
use small_store::PrimitiveStore;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory holding the JSON files (searched recursively). A file holds one record or
    /// an array of records; each record's kind is recognised by its fields
    pub dir: PathBuf,
}

pub fn run(args: Args, store: &dyn PrimitiveStore, out: &Out) -> CmdResult {
    let result = import::import_dir(store, &args.dir).map_err(|e| match e {
        ImportError::NotADirectory(_) | ImportError::Unreadable(..) => {
            CliError::usage(e.to_string())
        }
        ImportError::Backend(m) => CliError::usage(m),
    })?;
    if out.json {
        out.value(&serde_json::to_value(&result).unwrap_or_default());
    } else {
        for i in &result.imported {
            let verb = if i.created { "stored" } else { "unchanged" };
            out.line(format!("{verb} {} from {}", i.kind.noun(), i.origin));
        }
        for f in &result.failures {
            out.g.error(format!("error: {}: {}", f.file, f.message));
        }
        let t = result.totals();
        out.line(format!(
            "imported {} files: {} records stored, {} unchanged, {} failed",
            result.files,
            t.stored,
            t.unchanged,
            result.failures.len()
        ));
    }
    if result.ok {
        Ok(())
    } else {
        Err(CliError::silent(1))
    }
}
