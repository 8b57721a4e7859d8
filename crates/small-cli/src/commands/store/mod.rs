//! `small store`: the primitives store (schemas, artifacts, manifests, lineage, lifecycle) from
//! the command line, on an embedded SQLite file or a PostgreSQL database.

mod import;
mod lifecycle;
mod lineage;
mod schema;
mod versioned;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use serde_json::{json, Value};
use small_store::{Listing, Page, PrimitiveStore, Put, Record, StoreError};
use std::path::Path;
use std::sync::Arc;

/// Store and query SMALL primitives: schemas, artifacts, manifests, lineage and lifecycle
///
/// Records are validated before they are stored (artifacts against their registered schema),
/// versions are immutable, lineage and lifecycle are append-only. Stored records print back
/// byte for byte as stored (canonical JSON).
///
/// The store is an SQLite file (default .small-cache/store.db, created when missing) or a
/// PostgreSQL database given as postgres://user:password@host/db.
///
/// Exit codes: 0 ok; 1 refused, conflicting or not found; 2 usage or store error.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store: an SQLite file path or a postgres:// URL
    #[arg(long, global = true, env = "SMALL_STORE", default_value = small_store::DEFAULT_STORE_PATH)]
    pub store: String,
    /// Print JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Register, show and list JSON Schemas
    #[command(subcommand)]
    Schema(schema::Command),
    /// Materialise, show and list artifact versions
    #[command(
        subcommand,
        mut_subcommand("put", |c| c.about("Materialise artifact versions `{id, version?, kind, data, schemaId}` from JSON files; `data` is validated against the registered schema first. Without `version`, the next version is assigned")),
        mut_subcommand("get", |c| c.about("Print an artifact version as stored (the latest unless --version)")),
        mut_subcommand("list", |c| c.about("List artifacts (latest version of each)")),
        mut_subcommand("versions", |c| c.about("List the versions of an artifact")),
    )]
    Artifact(versioned::Command),
    /// Store, show and list manifests
    #[command(
        subcommand,
        mut_subcommand("put", |c| c.about("Store manifest versions `{id, version?, schemas, artifacts, policies}` from JSON files. Every referenced schema and artifact (`id` or `id@version`) must exist; the policies deterministic, appendOnly and validationRequired are enforced")),
        mut_subcommand("get", |c| c.about("Print a manifest version as stored (the latest unless --version)")),
        mut_subcommand("list", |c| c.about("List manifests (latest version of each)")),
        mut_subcommand("versions", |c| c.about("List the versions of a manifest")),
    )]
    Manifest(versioned::Command),
    /// Append and query lineage (provenance) records
    #[command(subcommand)]
    Lineage(lineage::Command),
    /// Append and show lifecycle events
    #[command(subcommand)]
    Lifecycle(lifecycle::Command),
    /// Import every *.json file of a directory (schemas first, then artifacts, lineage,
    /// lifecycle, manifests); already stored records are left as they are
    Import(import::Args),
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let out = Out {
        json: args.json,
        g: g.clone(),
    };
    let store = open(&args.store)?;
    match args.command {
        Command::Schema(c) => schema::run(c, &*store, &out),
        Command::Artifact(c) => versioned::run(versioned::Kind::Artifact, c, &*store, &out),
        Command::Manifest(c) => versioned::run(versioned::Kind::Manifest, c, &*store, &out),
        Command::Lineage(c) => lineage::run(c, &*store, &out),
        Command::Lifecycle(c) => lifecycle::run(c, &*store, &out),
        Command::Import(a) => import::run(a, &*store, &out),
    }
}

fn open(location: &str) -> Result<Arc<dyn PrimitiveStore>, CliError> {
    small_store::open(location).map_err(|e| CliError::usage(e.to_string()))
}

/// Output settings shared by the subcommands.
pub(crate) struct Out {
    pub json: bool,
    /// Everything is printed through the output helper.
    pub g: GlobalArgs,
}

impl Out {
    /// A human line on stdout (hidden by --quiet).
    pub fn line(&self, text: impl AsRef<str>) {
        self.g.info(text);
    }

    /// Data on stdout, one line (printed even under --quiet).
    pub fn data_line(&self, text: impl AsRef<str>) {
        let _ = self.g.data(format!("{}\n", text.as_ref()));
    }

    pub fn value(&self, v: &Value) {
        let _ = self.g.json(v);
    }

    /// A store error: printed as JSON on stdout with `--json`, then the exit code.
    pub fn fail(&self, e: StoreError) -> CliError {
        let exit = match e {
            StoreError::Backend(_) => 2,
            _ => 1,
        };
        if self.json {
            self.value(&json!({"error": e.code(), "message": e.to_string(), "errors": e.errors()}));
            CliError::silent(exit)
        } else if exit == 2 {
            CliError::usage(e.to_string())
        } else {
            CliError::invalid(e.to_string())
        }
    }

    /// A stored record: its JSON exactly as stored.
    pub fn record(&self, rec: &Record) {
        self.data_line(&rec.json);
    }

    pub fn put(&self, noun: &str, put: &Put) {
        if self.json {
            let mut v = summary(&put.record);
            v["created"] = json!(put.created);
            self.value(&v);
        } else {
            let verb = if put.created { "stored" } else { "unchanged" };
            self.line(format!(
                "{verb} {noun} {} v{} (sha256 {})",
                put.record.id,
                put.record.version,
                &put.record.sha256[..12.min(put.record.sha256.len())]
            ));
        }
    }

    pub fn listing(&self, l: &Listing) {
        if self.json {
            let items: Vec<Value> = l.items.iter().map(summary).collect();
            let mut v = json!({ "items": items });
            if let Some(n) = &l.next {
                v["next"] = json!(n);
            }
            self.value(&v);
        } else {
            for r in &l.items {
                self.data_line(format!(
                    "{}\tv{}\t{}\t{}",
                    r.id,
                    r.version,
                    &r.sha256[..12.min(r.sha256.len())],
                    r.stored_at
                ));
            }
            if let Some(n) = &l.next {
                self.g.warn(format!("more: --after {n}"));
            }
        }
    }
}

pub(crate) fn summary(rec: &Record) -> Value {
    let mut v = json!({"id": rec.id, "version": rec.version, "sha256": rec.sha256, "storedAt": rec.stored_at});
    if let Some(r) = rec
        .resolved
        .as_deref()
        .and_then(|r| serde_json::from_str::<Value>(r).ok())
    {
        v["resolved"] = r;
    }
    v
}

/// Paging flags of the list commands.
#[derive(clap::Args, Debug, Clone)]
pub struct PageArgs {
    /// Start after this cursor (an id, or a version number for version listings)
    #[arg(long)]
    pub after: Option<String>,
    /// Largest number of items (1..=1000)
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
}

/// `put FILE...`: the JSON files to store (`-` for standard input).
#[derive(clap::Args, Debug)]
pub struct PutArgs {
    #[arg(required = true)]
    pub files: Vec<String>,
}

/// `get ID [--version N]`.
#[derive(clap::Args, Debug)]
pub struct GetArgs {
    pub id: String,
    #[arg(long)]
    pub version: Option<u64>,
}

/// `versions ID [--after CURSOR] [--limit N]`.
#[derive(clap::Args, Debug)]
pub struct VersionsArgs {
    pub id: String,
    #[command(flatten)]
    pub page: PageArgs,
}

impl PageArgs {
    pub fn page(&self) -> Page {
        Page {
            after: self.after.clone(),
            limit: Some(self.limit),
        }
    }
}

/// Reads a JSON document from a file, or from standard input for `-`.
pub(crate) fn read_json(path: &str) -> Result<Value, CliError> {
    let limit = small_store::import::MAX_INPUT_BYTES;
    let bytes =
        small_core::ops::workspace::read_user_input(Path::new(path), limit).map_err(|e| {
            let name = if path == "-" { "standard input" } else { path };
            CliError::usage(format!("cannot read {name}: {e}"))
        })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::usage(format!("cannot read {path}: it is not valid UTF-8")))?;
    parse_json(&text, path)
}

fn parse_json(text: &str, name: &str) -> Result<Value, CliError> {
    small_store::import::parse_json(text, name).map_err(CliError::invalid)
}
