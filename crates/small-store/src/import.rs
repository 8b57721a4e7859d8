//! Importing a directory of JSON records: every `*.json` file under it (recursively), each
//! holding one record or an array of records whose kind is recognised by its fields. Records
//! are stored schemas first, then artifacts, lineage, lifecycle and manifests (each kind by
//! id, then version), so that references resolve; records already stored are left as they
//! are. A file or record that cannot be stored is reported and the others still imported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::{FieldError, PrimitiveStore, Put, StoreError};

/// Largest JSON input read (a file of an import, or one given to a `put` command): 64 MiB.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Parse JSON text (a leading byte-order mark is ignored); the error names `name`, the line
/// and the column.
pub fn parse_json(text: &str, name: &str) -> Result<Value, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(text)
        .map_err(|e| format!("{name}:{}:{}: not valid JSON: {e}", e.line(), e.column()))
}

/// The kinds of record, in the order they are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RecordKind {
    Schema,
    Artifact,
    Lineage,
    Lifecycle,
    Manifest,
}

impl RecordKind {
    pub fn noun(self) -> &'static str {
        match self {
            RecordKind::Schema => "schema",
            RecordKind::Artifact => "artifact",
            RecordKind::Lineage => "lineage",
            RecordKind::Lifecycle => "lifecycle",
            RecordKind::Manifest => "manifest",
        }
    }

    /// Recognise a record by its fields.
    pub fn classify(v: &Value) -> Option<RecordKind> {
        let has = |k: &str| v.get(k).is_some();
        if has("$id") || has("$schema") {
            Some(RecordKind::Schema)
        } else if has("artifactId") && has("events") {
            Some(RecordKind::Lifecycle)
        } else if has("artifactId") && has("derivedFrom") {
            Some(RecordKind::Lineage)
        } else if has("schemas") && has("artifacts") {
            Some(RecordKind::Manifest)
        } else if has("schemaId") || has("data") {
            Some(RecordKind::Artifact)
        } else {
            None
        }
    }
}

/// Records stored and left unchanged, of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub stored: usize,
    pub unchanged: usize,
}

/// A file or record that was not imported.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The file (`file[i]` for the i-th record of an array).
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// `unreadable`, `invalid_json`, `unknown_record`, or the store's error code.
    pub error: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
}

/// One record imported.
#[derive(Debug, Clone)]
pub struct Imported {
    pub kind: RecordKind,
    pub origin: String,
    /// Whether something new was stored (else it was already there).
    pub created: bool,
}

/// What an import did; serialized, the `store import --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct ImportOutcome {
    pub ok: bool,
    /// By kind (its noun).
    pub records: BTreeMap<&'static str, Counts>,
    pub failures: Vec<Failure>,
    /// The `.json` files read.
    #[serde(skip)]
    pub files: usize,
    /// The records imported, in the order they were stored.
    #[serde(skip)]
    pub imported: Vec<Imported>,
}

impl ImportOutcome {
    /// Records stored and records unchanged, all kinds together.
    pub fn totals(&self) -> Counts {
        self.records
            .values()
            .fold(Counts::default(), |a, c| Counts {
                stored: a.stored + c.stored,
                unchanged: a.unchanged + c.unchanged,
            })
    }
}

/// Why the import could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot read {}: {}", .0.display(), .1)]
    Unreadable(PathBuf, std::io::Error),
    /// The store itself failed (the import stops).
    #[error("{0}")]
    Backend(String),
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

fn unreadable(file: String, message: String) -> Failure {
    Failure {
        file,
        kind: None,
        error: "unreadable".into(),
        message,
        errors: None,
    }
}

/// The records read from a directory, before they are stored.
struct Read {
    /// The `.json` files read.
    files: usize,
    /// Kind, origin and record, in store order.
    items: Vec<(RecordKind, String, Value)>,
    failures: Vec<Failure>,
}

/// Read every record under `dir` (classified and in store order), with the failures met.
fn read_records(dir: &Path) -> Result<Read, ImportError> {
    if !dir.is_dir() {
        return Err(ImportError::NotADirectory(dir.to_path_buf()));
    }
    let mut files = Vec::new();
    let mut refused = Vec::new();
    collect(dir, &mut files, &mut refused)
        .map_err(|e| ImportError::Unreadable(dir.to_path_buf(), e))?;
    files.sort();
    refused.sort();
    let mut failures: Vec<Failure> = refused
        .iter()
        .map(|(p, why)| {
            unreadable(
                p.display().to_string(),
                format!("cannot read {}: {why}", p.display()),
            )
        })
        .collect();
    let mut items = Vec::new();
    for f in &files {
        let name = f.display().to_string();
        // Opened without following a link or blocking on a FIFO put there since the walk,
        // and never read past the input limit.
        let text = match small_core::ops::workspace::read_string_bounded(f, MAX_INPUT_BYTES) {
            Ok(t) => t,
            Err(e) => {
                failures.push(unreadable(name.clone(), format!("cannot read {name}: {e}")));
                continue;
            }
        };
        let v = match parse_json(&text, &name) {
            Ok(v) => v,
            Err(message) => {
                failures.push(Failure {
                    file: name,
                    kind: None,
                    error: "invalid_json".into(),
                    message,
                    errors: None,
                });
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
            match RecordKind::classify(&value) {
                Some(kind) => items.push((kind, origin, value)),
                None => failures.push(Failure {
                    file: origin,
                    kind: None,
                    error: "unknown_record".into(),
                    message: "not a schema, artifact, manifest, lineage or lifecycle record".into(),
                    errors: None,
                }),
            }
        }
    }
    items.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| order_key(&a.2).cmp(&order_key(&b.2)))
    });
    Ok(Read {
        files: files.len(),
        items,
        failures,
    })
}

/// Import every record under `dir` into `store`.
pub fn import_dir(store: &dyn PrimitiveStore, dir: &Path) -> Result<ImportOutcome, ImportError> {
    let Read {
        files,
        items,
        mut failures,
    } = read_records(dir)?;
    let mut records: BTreeMap<&'static str, Counts> = BTreeMap::new();
    let mut imported = Vec::new();
    for (kind, origin, value) in items {
        let result: Result<Vec<Put>, StoreError> = match kind {
            RecordKind::Schema => store.register_schema(&value).map(|p| vec![p]),
            RecordKind::Artifact => store.put_artifact(&value).map(|p| vec![p]),
            RecordKind::Manifest => store.put_manifest(&value).map(|p| vec![p]),
            RecordKind::Lineage => store.append_lineage(&value).map(|p| vec![p]),
            RecordKind::Lifecycle => store.put_lifecycle(&value),
        };
        match result {
            Ok(puts) => {
                let c = records.entry(kind.noun()).or_default();
                let created = puts.iter().filter(|p| p.created).count();
                c.stored += created;
                c.unchanged += puts.len() - created;
                imported.push(Imported {
                    kind,
                    origin,
                    created: created > 0,
                });
            }
            Err(StoreError::Backend(m)) => return Err(ImportError::Backend(m)),
            Err(e) => failures.push(Failure {
                file: origin,
                kind: Some(kind.noun()),
                error: e.code().into(),
                message: e.to_string(),
                errors: Some(e.errors().to_vec()),
            }),
        }
    }
    Ok(ImportOutcome {
        ok: failures.is_empty(),
        records,
        failures,
        files,
        imported,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store(dir: &Path) -> std::sync::Arc<dyn PrimitiveStore> {
        crate::open(dir.join("store.db").to_str().unwrap()).unwrap()
    }

    #[test]
    fn records_are_classified_by_their_fields() {
        assert_eq!(
            RecordKind::classify(&json!({"$id": "s"})),
            Some(RecordKind::Schema)
        );
        assert_eq!(
            RecordKind::classify(&json!({"artifactId": "a", "events": []})),
            Some(RecordKind::Lifecycle)
        );
        assert_eq!(
            RecordKind::classify(&json!({"artifactId": "a", "derivedFrom": []})),
            Some(RecordKind::Lineage)
        );
        assert_eq!(
            RecordKind::classify(&json!({"schemas": [], "artifacts": []})),
            Some(RecordKind::Manifest)
        );
        assert_eq!(
            RecordKind::classify(&json!({"data": {}})),
            Some(RecordKind::Artifact)
        );
        assert_eq!(RecordKind::classify(&json!({"x": 1})), None);
    }

    #[test]
    fn a_directory_is_imported_schemas_first_and_again_changes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir_all(data.join("nested")).unwrap();
        // The artifact sorts before the schema by file name: the import still stores the
        // schema first.
        std::fs::write(
            data.join("a.json"),
            json!({"id": "doc", "kind": "note", "schemaId": "urn:s", "data": {"n": 1}}).to_string(),
        )
        .unwrap();
        std::fs::write(
            data.join("nested/s.json"),
            json!({"$id": "urn:s", "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"})
                .to_string(),
        )
        .unwrap();
        std::fs::write(data.join("bad.json"), "{ not json").unwrap();
        std::fs::write(data.join("odd.json"), "[{\"x\": 1}]").unwrap();
        std::fs::write(data.join("skip.txt"), "ignored").unwrap();
        let s = store(tmp.path());
        let out = import_dir(&*s, &data).unwrap();
        assert_eq!(out.files, 4);
        assert!(!out.ok);
        assert_eq!(
            out.records["schema"],
            Counts {
                stored: 1,
                unchanged: 0
            }
        );
        assert_eq!(
            out.records["artifact"],
            Counts {
                stored: 1,
                unchanged: 0
            }
        );
        assert_eq!(out.imported[0].kind, RecordKind::Schema);
        let codes: Vec<&str> = out.failures.iter().map(|f| f.error.as_str()).collect();
        assert_eq!(codes, vec!["invalid_json", "unknown_record"]);
        assert!(out.failures[1].file.ends_with("odd.json[0]"));
        let again = import_dir(&*s, &data).unwrap();
        assert_eq!(
            again.totals(),
            Counts {
                stored: 0,
                unchanged: 2
            }
        );
    }

    #[test]
    fn links_are_refused_and_a_file_is_not_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(tmp.path().join("outside.json"), "{\"$id\": \"x\"}").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(tmp.path().join("outside.json"), data.join("l.json")).unwrap();
        let s = store(tmp.path());
        let out = import_dir(&*s, &data).unwrap();
        #[cfg(unix)]
        assert_eq!(out.failures[0].error, "unreadable");
        assert!(out.records.is_empty());
        assert!(matches!(
            import_dir(&*s, &tmp.path().join("outside.json")),
            Err(ImportError::NotADirectory(_))
        ));
    }
}
