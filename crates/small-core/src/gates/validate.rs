//! Schema validation of loaded YAML documents, reported as [`Diagnostic`]s with code
//! `schema`, the file, the span of the offending value (or of the mapping that lacks a
//! field, or of an unknown key), the JSON pointer, a message and a fix.
//!
//! - [`validate_document`] checks one document against one [`Target`];
//! - [`validate_artifact`] checks one [`LoadedArtifact`];
//! - [`validate_metadata`] checks `workspace.small.yml`;
//! - [`validate_workspace`] checks everything loaded in a [`Workspace`] (artifacts and metadata),
//!   sorted in the stable report order (file, then position).
//!
//! Progress documents are checked entry by entry (the header once, then each entry against
//! the entry schema), converting one entry at a time to JSON, so a 100 000-entry log needs no
//! second full-size copy in memory.

use crate::diag::{self, Diagnostic};
use crate::gates::schemas::{SchemaSet, Target, Violation};
use crate::spec::consts::ArtifactKind;
use crate::workspace::{LoadedArtifact, Workspace, WorkspaceMeta};
use crate::yaml::{self, Document, Node};

/// Diagnostic code of every schema violation.
pub const CODE_SCHEMA: &str = "schema";

/// Validate one document. `file` is the name diagnostics carry (`.small/plan.small.yml`).
pub fn validate_document(
    schemas: &SchemaSet,
    target: Target,
    file: &str,
    doc: &Document,
) -> Vec<Diagnostic> {
    if is_deep(&doc.root) {
        return on_big_stack(|| validate_document_here(schemas, target, file, doc));
    }
    validate_document_here(schemas, target, file, doc)
}

/// Nesting past which validation moves to a thread with a large stack: the JSON Schema
/// validator recurses once per level (several frames each), and documents may nest up to
/// [`crate::yaml::Limits::max_depth`] levels, far more than a 2 MiB thread stack holds.
const SHALLOW: usize = 64;
/// Stack reserved for validating a deep document (address space; only what is used is
/// touched): enough for the loader's deepest document with a wide margin.
const BIG_STACK: usize = 1 << 30;

/// Whether `node` nests deeper than [`SHALLOW`] (iterative; stops at the first deep branch).
fn is_deep(node: &Node) -> bool {
    let mut stack: Vec<(&Node, usize)> = vec![(node, 0)];
    while let Some((n, d)) = stack.pop() {
        if d > SHALLOW {
            return true;
        }
        match &n.value {
            yaml::Value::Seq(items) => stack.extend(items.iter().map(|c| (c, d + 1))),
            yaml::Value::Map(entries) => stack.extend(entries.iter().map(|e| (&e.value, d + 1))),
            _ => {}
        }
    }
    false
}

/// Run `f` on a thread with a [`BIG_STACK`] stack (inline if no thread can be started).
fn on_big_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let cell = std::sync::Mutex::new(Some(f));
    let take = || cell.lock().unwrap_or_else(|e| e.into_inner()).take();
    let spawned = std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("small-deep-validate".into())
            .stack_size(BIG_STACK)
            .spawn_scoped(s, || take().map(|f| f()))
            .ok()?;
        match h.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        }
    });
    match spawned {
        Some(r) => r,
        // No thread could be started: run here.
        None => take().map(|f| f()).expect("the closure has not run"),
    }
}

fn validate_document_here(
    schemas: &SchemaSet,
    target: Target,
    file: &str,
    doc: &Document,
) -> Vec<Diagnostic> {
    let violations =
        if target == Target::Artifact(ArtifactKind::Progress) && schemas.progress_splits() {
            progress_violations(schemas, &doc.root)
        } else {
            schemas.validate(target, &doc.root.to_json())
        };
    let mut out: Vec<Diagnostic> = violations
        .into_iter()
        .map(|v| to_diagnostic(v, file, &doc.root))
        .collect();
    diag::sort(&mut out);
    out.dedup();
    out
}

fn progress_violations(schemas: &SchemaSet, root: &Node) -> Vec<Violation> {
    // Header: the document with `entries` emptied (when it is a list), so the entries are not
    // converted twice.
    let entries = root.get("entries").and_then(Node::as_seq);
    let header = match (&root.value, entries) {
        (yaml::Value::Map(fields), Some(_)) => {
            let mut map = serde_json::Map::with_capacity(fields.len());
            for e in fields {
                let v = if e.key == "entries" {
                    serde_json::Value::Array(Vec::new())
                } else {
                    e.value.to_json()
                };
                map.insert(e.key.to_string(), v);
            }
            serde_json::Value::Object(map)
        }
        _ => root.to_json(),
    };
    let mut out = schemas.validate_progress_header(&header);
    if let Some(entries) = entries {
        for (i, entry) in entries.iter().enumerate() {
            let json = entry.to_json();
            if !schemas.progress_entry_is_valid(&json) {
                out.extend(schemas.validate_progress_entry(i, &json));
            }
        }
    }
    out
}

/// Validate one progress entry node on its own (for streaming a long log with
/// [`crate::yaml::parse_streaming`]): `index` is its position in `entries`, `file` the name
/// diagnostics carry. Spans come from the entry node, which keeps its place in the file.
/// Pair it with a header check of the document (`validate_document` on the streamed root,
/// whose `entries` is left empty, covers the header).
pub fn validate_progress_entry_node(
    schemas: &SchemaSet,
    file: &str,
    index: usize,
    entry: &Node,
) -> Vec<Diagnostic> {
    if is_deep(entry) {
        return on_big_stack(|| validate_entry_here(schemas, file, index, entry));
    }
    validate_entry_here(schemas, file, index, entry)
}

fn validate_entry_here(
    schemas: &SchemaSet,
    file: &str,
    index: usize,
    entry: &Node,
) -> Vec<Diagnostic> {
    let json = entry.to_json();
    if schemas.progress_entry_is_valid(&json) {
        return Vec::new();
    }
    let prefix = format!("/entries/{index}");
    let mut out: Vec<Diagnostic> = schemas
        .validate_progress_entry(index, &json)
        .into_iter()
        .map(|mut v| {
            // Locate relative to the entry node, report the full pointer.
            let full = v.pointer.clone();
            v.pointer = v.pointer.strip_prefix(&prefix).unwrap_or("").to_string();
            v.anchor = v.anchor.strip_prefix(&prefix).unwrap_or("").to_string();
            let mut d = to_diagnostic(v, file, entry);
            d.path = Some(full);
            d
        })
        .collect();
    diag::sort(&mut out);
    out.dedup();
    out
}

fn to_diagnostic(v: Violation, file: &str, root: &Node) -> Diagnostic {
    let span = if v.at_key {
        root.locate_key(&v.pointer)
    } else {
        None
    }
    .unwrap_or_else(|| root.locate(&v.anchor));
    // A missing field has no text of its own: point at the start of the mapping that lacks
    // it rather than underlining the mapping's first line.
    let span = if v.anchor != v.pointer && !v.at_key {
        crate::diag::Span {
            start: span.start,
            end: span.start,
        }
    } else {
        span
    };
    let mut d = Diagnostic::error(CODE_SCHEMA, v.message)
        .in_file(file)
        .at(Some(span))
        .with_path(v.pointer);
    if let Some(h) = v.help {
        d = d.with_help(h);
    }
    d
}

/// Validate one loaded artifact against its schema.
pub fn validate_artifact(schemas: &SchemaSet, artifact: &LoadedArtifact) -> Vec<Diagnostic> {
    validate_document(
        schemas,
        Target::Artifact(artifact.kind),
        &artifact.rel_path,
        &artifact.document,
    )
}

/// Validate `workspace.small.yml` (kind, small_version, dates, run.replay_id). Fields the
/// schema does not know (`notes:`, `labels:`, written by people and other tools) are not
/// errors: the reference accepts them, and every edit keeps them. See
/// [`unknown_metadata_fields`] for the warnings `--strict` gives about them.
pub fn validate_metadata(schemas: &SchemaSet, meta: &WorkspaceMeta) -> Vec<Diagnostic> {
    metadata_violations(schemas, meta)
        .into_iter()
        .filter(|(unknown, _)| !unknown)
        .map(|(_, d)| d)
        .collect()
}

/// Warnings for the fields of `workspace.small.yml` that the schema does not know (shown by
/// `verify --strict` and `check --strict`; never errors).
pub fn unknown_metadata_fields(schemas: &SchemaSet, meta: &WorkspaceMeta) -> Vec<Diagnostic> {
    metadata_violations(schemas, meta)
        .into_iter()
        .filter(|(unknown, _)| *unknown)
        .map(|(_, mut d)| {
            d.severity = crate::diag::Severity::Warning;
            d.help = Some(
                "kept as written; small itself does not read it (remove it, or ignore this warning)"
                    .into(),
            );
            d
        })
        .collect()
}

/// Schema violations of the metadata, each marked true when it is an unknown field.
fn metadata_violations(schemas: &SchemaSet, meta: &WorkspaceMeta) -> Vec<(bool, Diagnostic)> {
    let root = &meta.document.root;
    let violations = if is_deep(root) {
        on_big_stack(|| schemas.validate(Target::Workspace, &root.to_json()))
    } else {
        schemas.validate(Target::Workspace, &root.to_json())
    };
    let mut out: Vec<(bool, Diagnostic)> = violations
        .into_iter()
        .map(|v| {
            (
                v.keyword == "additionalProperties",
                to_diagnostic(v, &meta.rel_path, root),
            )
        })
        .collect();
    out.sort_by(|a, b| a.1.sort_key().cmp(&b.1.sort_key()));
    out.dedup();
    out
}

/// Validate everything that was loaded: the artifacts and, when loaded, the metadata. Load
/// problems (missing files, YAML errors) are not repeated here; they are in
/// `ws.diagnostics`.
pub fn validate_workspace(schemas: &SchemaSet, ws: &Workspace) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for a in ws.artifacts() {
        out.extend(validate_artifact(schemas, a));
    }
    if let Some(meta) = &ws.metadata {
        out.extend(validate_metadata(schemas, meta));
    }
    diag::sort(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{parse_str, Limits};

    fn check(kind: ArtifactKind, src: &str) -> Vec<Diagnostic> {
        let doc = parse_str(src, &Limits::default()).unwrap();
        validate_document(&SchemaSet::embedded(), kind.into(), "f.yml", &doc)
    }

    #[test]
    fn spans_point_at_the_value() {
        let src = "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: a\n    title: \"\"\n";
        let d = check(ArtifactKind::Plan, src);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].path.as_deref(), Some("/tasks/0/title"));
        let s = d[0].span.unwrap();
        assert_eq!((s.start.line, s.start.column), (5, 12));
        assert_eq!(d[0].file.as_deref(), Some("f.yml"));
        assert_eq!(d[0].code, CODE_SCHEMA);
    }

    #[test]
    fn unknown_key_points_at_the_key_and_missing_at_the_mapping() {
        let src =
            "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: a\n    bogus: 1\nextra: 2\n";
        let d = check(ArtifactKind::Plan, src);
        assert_eq!(d.len(), 2, "{d:?}");
        // Sorted by position: the missing title (anchored at the task mapping, line 4) first.
        assert!(d[0].message.contains("missing required field `title`"));
        assert_eq!(d[0].span.unwrap().start.line, 4);
        assert!(d[1].message.contains("unknown field `extra`"));
        assert_eq!(
            (
                d[1].span.unwrap().start.line,
                d[1].span.unwrap().start.column
            ),
            (6, 1)
        );
    }

    #[test]
    fn progress_entries_are_checked_one_by_one() {
        let mut src = String::from("small_version: \"1.0.0\"\nowner: agent\nentries:\n");
        for i in 0..5 {
            src.push_str(&format!("  - task_id: t{i}\n    evidence: ok\n"));
        }
        src.push_str("  - task_id: t9\n    commit: NOTHEX\n");
        let d = check(ArtifactKind::Progress, &src);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].path.as_deref(), Some("/entries/5/commit"));
        assert_eq!(d[0].span.unwrap().start.line, 15);
        let d = check(
            ArtifactKind::Progress,
            "small_version: \"1.0.0\"\nowner: agent\nentries: {}\n",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].path.as_deref(), Some("/entries"));
    }

    #[test]
    fn small_version_number_gets_quoting_help() {
        let d = check(
            ArtifactKind::Constraints,
            "small_version: 1.0\nowner: human\nconstraints: [{id: a, rule: b, severity: warn}]\n",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].help.as_deref().unwrap().contains("quoted"));
    }

    #[test]
    fn a_streamed_entry_is_located_in_the_file() {
        let src = "small_version: \"1.0.0\"\nowner: agent\nentries:\n  - task_id: a\n    evidence: x\n  - task_id: b\n    status: done\n";
        let set = SchemaSet::embedded();
        let mut diags = Vec::new();
        let root =
            crate::yaml::parse_streaming(src, &Limits::default(), "entries", &mut |i, node| {
                diags.extend(validate_progress_entry_node(&set, "p.yml", i, &node));
            })
            .unwrap();
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].path.as_deref(), Some("/entries/1/status"));
        let s = diags[0].span.unwrap();
        assert_eq!((s.start.line, s.start.column), (7, 13));
        let doc = Document {
            root,
            source: src.to_string(),
        };
        assert!(validate_document(&set, ArtifactKind::Progress.into(), "p.yml", &doc).is_empty());
    }
}
