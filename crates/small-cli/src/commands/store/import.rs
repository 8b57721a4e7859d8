//! `small store import DIR`: every `*.json` file of a directory in one command.

use super::{parse_json, Out};
use crate::error::{CliError, CmdResult};
use serde_json::{json, Value};
use small_store::{PrimitiveStore, Put, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory holding the JSON files (searched recursively). A file holds one record or
    /// an array of records; each record's kind is recognised by its fields
    pub dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Schema,
    Artifact,
    Lineage,
    Lifecycle,
    Manifest,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Schema => "schema",
            Kind::Artifact => "artifact",
            Kind::Lineage => "lineage",
            Kind::Lifecycle => "lifecycle",
            Kind::Manifest => "manifest",
        }
    }
}

/// Recognises a record by its fields.
fn classify(v: &Value) -> Option<Kind> {
    let has = |k: &str| v.get(k).is_some();
    if has("$id") || has("$schema") {
        Some(Kind::Schema)
    } else if has("artifactId") && has("events") {
        Some(Kind::Lifecycle)
    } else if has("artifactId") && has("derivedFrom") {
        Some(Kind::Lineage)
    } else if has("schemas") && has("artifacts") {
        Some(Kind::Manifest)
    } else if has("schemaId") || has("data") {
        Some(Kind::Artifact)
    } else {
        None
    }
}

/// The `.json` files under `dir`. Links are never followed (neither to directories, which
/// could loop, nor to files); a link or special file named `*.json` is reported, not read.
fn collect(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    refused: &mut Vec<(PathBuf, &'static str)>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let t = entry.file_type()?;
        let json = path.extension().is_some_and(|e| e == "json");
        if t.is_dir() {
            collect(&path, files, refused)?;
        } else if t.is_symlink() {
            if json {
                refused.push((
                    path,
                    "it is a symbolic link; store import does not follow links",
                ));
            }
        } else if !json {
        } else if t.is_file() {
            files.push(path);
        } else {
            refused.push((path, "it is not a regular file"));
        }
    }
    Ok(())
}

struct Item {
    kind: Kind,
    origin: String,
    value: Value,
}

/// Sort key inside a kind: id then version, so versions are stored in order.
fn order_key(v: &Value) -> (String, u64) {
    let id = v
        .get("id")
        .or_else(|| v.get("$id"))
        .or_else(|| v.get("artifactId"));
    let id = id.and_then(Value::as_str).unwrap_or("").to_string();
    (
        id,
        v.get("version").and_then(Value::as_u64).unwrap_or(u64::MAX),
    )
}

pub fn run(args: Args, store: &dyn PrimitiveStore, out: &Out) -> CmdResult {
    if !args.dir.is_dir() {
        return Err(CliError::usage(format!(
            "{} is not a directory",
            args.dir.display()
        )));
    }
    let mut files = Vec::new();
    let mut refused = Vec::new();
    collect(&args.dir, &mut files, &mut refused)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", args.dir.display())))?;
    files.sort();
    refused.sort();
    let mut items = Vec::new();
    let mut failures: Vec<Value> = refused
        .iter()
        .map(|(p, why)| {
            json!({"file": p.display().to_string(), "error": "unreadable",
                   "message": format!("cannot read {}: {why}", p.display())})
        })
        .collect();
    for f in &files {
        let name = f.display().to_string();
        // Opened without following a link or blocking on a FIFO put there since the walk,
        // and never read past the input limit.
        let text = match small_core::workspace::fsio::read_string_bounded(f, super::MAX_INPUT_BYTES)
        {
            Ok(t) => t,
            Err(e) => {
                failures.push(json!({"file": name, "error": "unreadable",
                                     "message": format!("cannot read {name}: {e}")}));
                continue;
            }
        };
        let v = match parse_json(&text, &name) {
            Ok(v) => v,
            Err(e) => {
                failures.push(json!({"file": name, "error": "invalid_json", "message": e.message}));
                continue;
            }
        };
        let records = match v {
            Value::Array(a) => a
                .into_iter()
                .enumerate()
                .map(|(i, v)| (format!("{name}[{i}]"), v))
                .collect(),
            other => vec![(name.clone(), other)],
        };
        for (origin, value) in records {
            match classify(&value) {
                Some(kind) => items.push(Item {
                    kind,
                    origin,
                    value,
                }),
                None => failures.push(json!({
                    "file": origin, "error": "unknown_record",
                    "message": "not a schema, artifact, manifest, lineage or lifecycle record"
                })),
            }
        }
    }
    items.sort_by(|a, b| {
        a.kind
            .cmp(&b.kind)
            .then_with(|| order_key(&a.value).cmp(&order_key(&b.value)))
    });

    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for item in &items {
        let result: Result<Vec<Put>, StoreError> = match item.kind {
            Kind::Schema => store.register_schema(&item.value).map(|p| vec![p]),
            Kind::Artifact => store.put_artifact(&item.value).map(|p| vec![p]),
            Kind::Manifest => store.put_manifest(&item.value).map(|p| vec![p]),
            Kind::Lineage => store.append_lineage(&item.value).map(|p| vec![p]),
            Kind::Lifecycle => store.put_lifecycle(&item.value),
        };
        match result {
            Ok(puts) => {
                let c = counts.entry(item.kind.noun()).or_default();
                let created = puts.iter().filter(|p| p.created).count();
                c.0 += created;
                c.1 += puts.len() - created;
                if !out.json {
                    let verb = if created > 0 { "stored" } else { "unchanged" };
                    out.line(format!("{verb} {} from {}", item.kind.noun(), item.origin));
                }
            }
            Err(StoreError::Backend(m)) => return Err(CliError::usage(m)),
            Err(e) => failures.push(json!({
                "file": item.origin, "kind": item.kind.noun(), "error": e.code(),
                "message": e.to_string(), "errors": e.errors()
            })),
        }
    }
    if out.json {
        let counts: serde_json::Map<String, Value> = counts
            .iter()
            .map(|(k, (c, u))| (k.to_string(), json!({"stored": c, "unchanged": u})))
            .collect();
        out.value(&json!({"ok": failures.is_empty(), "records": counts, "failures": failures}));
    } else {
        for f in &failures {
            out.g.error(format!(
                "error: {}: {}",
                f["file"].as_str().unwrap_or(""),
                f["message"].as_str().unwrap_or("")
            ));
        }
        let total: usize = counts.values().map(|(c, _)| c).sum();
        let same: usize = counts.values().map(|(_, u)| u).sum();
        out.line(format!(
            "imported {} files: {total} records stored, {same} unchanged, {} failed",
            files.len(),
            failures.len()
        ));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CliError::silent(1))
    }
}
