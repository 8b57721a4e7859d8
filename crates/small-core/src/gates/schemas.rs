//! JSON Schemas (draft 2020-12) of the SMALL v1.0.0 artifacts, and validation against them.
//!
//! The schemas in `schemas/*.schema.json` are our own and are embedded in the binary. They
//! accept and reject the same documents as the v1.0.0 contract, with one deliberate
//! difference: `format` is asserted (`uri`, `date-time`), so a link that is not a URI or a
//! timestamp that is not RFC 3339 fails validation. A sixth schema covers the workspace
//! metadata file `workspace.small.yml`.
//!
//! # Where schemas come from
//! [`SchemaSet::resolve`] picks, in order: an explicit directory (the `--spec-dir` flag), the
//! `SMALL_SPEC_DIR` environment variable, then the embedded set. Nothing else: no directory
//! is searched for a `spec/` folder, so a workspace cannot swap the schemas it is checked
//! against. A schema directory may hold the files directly (`DIR/intent.schema.json`) or in
//! the layout of the protocol repository (`DIR/small/v1.0.0/schemas/` or
//! `DIR/spec/small/v1.0.0/schemas/`). The five artifact schemas must all be there; the
//! workspace schema is taken from the embedded set when the directory has none.
//!
//! The embedded set is compiled once per process ([`SchemaSet::embedded`]).
//!
//! # Validating
//! [`SchemaSet::validate`] checks one JSON value against one [`Target`] and returns
//! [`Violation`]s: JSON pointer, keyword, a clear message and, where we can say, a fix.
//! Progress logs can be checked entry by entry: [`SchemaSet::validate_progress_header`]
//! checks the document without looking inside `entries`, and
//! [`SchemaSet::validate_progress_entry`] checks one entry (pointers are reported as
//! `/entries/<index>/...`). Mapping violations to file positions is done by
//! [`crate::gates::validate`].
//!
//! # Raw schema text
//! [`EMBEDDED`] and [`embedded_text`] give the JSON text of the embedded schemas, for serving
//! them over HTTP or writing them out.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::Value;

use crate::spec::consts::ArtifactKind;

/// File name of the workspace metadata schema.
pub const WORKSPACE_SCHEMA_FILE: &str = "workspace.schema.json";

/// Environment variable naming a schema directory (used when no `--spec-dir` is given).
pub const SPEC_DIR_ENV: &str = "SMALL_SPEC_DIR";

/// The embedded schemas: `(file name, JSON text)`, artifacts in the spec's order, then the
/// workspace metadata schema.
pub const EMBEDDED: [(&str, &str); 6] = [
    (
        "intent.schema.json",
        include_str!("schemas/intent.schema.json"),
    ),
    (
        "constraints.schema.json",
        include_str!("schemas/constraints.schema.json"),
    ),
    ("plan.schema.json", include_str!("schemas/plan.schema.json")),
    (
        "progress.schema.json",
        include_str!("schemas/progress.schema.json"),
    ),
    (
        "handoff.schema.json",
        include_str!("schemas/handoff.schema.json"),
    ),
    (
        WORKSPACE_SCHEMA_FILE,
        include_str!("schemas/workspace.schema.json"),
    ),
];

/// JSON text of an embedded schema, by file name (`plan.schema.json`) or short name (`plan`,
/// `workspace`).
pub fn embedded_text(name: &str) -> Option<&'static str> {
    let file = if name.ends_with(".schema.json") {
        name.to_string()
    } else {
        format!("{name}.schema.json")
    };
    EMBEDDED.iter().find(|(n, _)| *n == file).map(|(_, t)| *t)
}

/// What a document is validated as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    Artifact(ArtifactKind),
    /// `.small/workspace.small.yml`
    Workspace,
}

impl Target {
    pub fn schema_file(self) -> &'static str {
        match self {
            Target::Artifact(k) => k.schema_file(),
            Target::Workspace => WORKSPACE_SCHEMA_FILE,
        }
    }

    fn index(self) -> usize {
        match self {
            Target::Artifact(k) => k as usize,
            Target::Workspace => 5,
        }
    }
}

impl From<ArtifactKind> for Target {
    fn from(k: ArtifactKind) -> Self {
        Target::Artifact(k)
    }
}

/// Where a schema set was loaded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaSource {
    Embedded,
    /// From `--spec-dir`; the path is the directory holding the schema files.
    SpecDir(PathBuf),
    /// From `SMALL_SPEC_DIR`; the path is the directory holding the schema files.
    Env(PathBuf),
}

impl std::fmt::Display for SchemaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaSource::Embedded => write!(f, "embedded SMALL v1.0.0 schemas"),
            SchemaSource::SpecDir(p) => write!(f, "schemas from --spec-dir {}", p.display()),
            SchemaSource::Env(p) => write!(f, "schemas from ${SPEC_DIR_ENV} {}", p.display()),
        }
    }
}

/// A schema set could not be loaded (a system or usage problem, not an invalid workspace).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaLoadError {
    #[error("no SMALL schemas in {dir} (looked for intent.schema.json in it, in small/v1.0.0/schemas/ and in spec/small/v1.0.0/schemas/)")]
    NotFound { dir: PathBuf },
    #[error("cannot read schema {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("schema {path} is not valid JSON: {reason}")]
    NotJson { path: PathBuf, reason: String },
    #[error("schema {path} is not a usable JSON Schema: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

/// One schema violation, independent of any file position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer of the offending value; for a missing field, where it belongs
    /// (`/tasks/0/title`).
    pub pointer: String,
    /// JSON pointer of the existing node to point at (the value itself, or the mapping that
    /// lacks a field).
    pub anchor: String,
    /// Point at the key named by the last token of `pointer` rather than at its value
    /// (unknown fields).
    pub at_key: bool,
    /// The JSON Schema keyword that failed (`required`, `type`, `format`, ...).
    pub keyword: String,
    pub message: String,
    pub help: Option<String>,
}

struct Compiled {
    schema: Value,
    validator: Validator,
}

impl Compiled {
    fn new(schema: Value, origin: &Path) -> Result<Compiled, SchemaLoadError> {
        let validator = build_validator(&schema).map_err(|reason| SchemaLoadError::Invalid {
            path: origin.to_path_buf(),
            reason,
        })?;
        Ok(Compiled { schema, validator })
    }

    fn check(&self, instance: &Value, prefix: &str, out: &mut Vec<Violation>) {
        if self.validator.is_valid(instance) {
            return;
        }
        let mut found = Vec::new();
        for err in self.validator.iter_errors(instance) {
            explain(&err, &self.schema, prefix, &mut found);
        }
        // A value of the wrong type also fails `const`, `enum`, ... on it; the type error
        // alone says what is wrong.
        let typed: Vec<String> = found
            .iter()
            .filter(|v| v.keyword == "type")
            .map(|v| v.pointer.clone())
            .collect();
        found.retain(|v| v.keyword == "type" || !typed.contains(&v.pointer));
        out.extend(found);
    }
}

/// `pattern` keywords run on the `regex` crate (linear time, and several times faster per
/// entry than the backtracking engine); a schema from `--spec-dir` whose patterns need
/// look-around or back-references is compiled with the backtracking engine instead.
fn build_validator(schema: &Value) -> Result<Validator, String> {
    let options = || {
        let opts = jsonschema::options().should_validate_formats(true);
        match schema.get("$schema") {
            None => opts.with_draft(Draft::Draft202012),
            Some(_) => opts,
        }
    };
    options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .or_else(|_| options().build(schema))
        .map_err(|e| e.to_string())
}

/// The compiled schemas of one source.
pub struct SchemaSet {
    source: SchemaSource,
    /// Indexed by `Target::index`.
    compiled: Vec<Compiled>,
    /// Progress split for entry-by-entry validation, when the progress schema allows it.
    progress_split: Option<(Compiled, Compiled)>,
}

impl std::fmt::Debug for SchemaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaSet")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl SchemaSet {
    /// The embedded schemas, compiled on first use.
    pub fn embedded() -> Arc<SchemaSet> {
        static EMBEDDED_SET: OnceLock<Arc<SchemaSet>> = OnceLock::new();
        EMBEDDED_SET
            .get_or_init(|| {
                // The embedded schemas are part of this crate and covered by tests; failing to
                // compile them is a build defect, not a user error.
                let texts: Vec<(PathBuf, String)> = EMBEDDED
                    .iter()
                    .map(|(name, text)| {
                        (
                            PathBuf::from(format!("<embedded>/{name}")),
                            text.to_string(),
                        )
                    })
                    .collect();
                match SchemaSet::from_texts(SchemaSource::Embedded, texts) {
                    Ok(set) => Arc::new(set),
                    Err(e) => panic!("embedded schemas do not compile: {e}"),
                }
            })
            .clone()
    }

    /// Pick the schemas: `spec_dir` (the `--spec-dir` flag) if given, else `SMALL_SPEC_DIR`
    /// if set and not empty, else the embedded set.
    pub fn resolve(spec_dir: Option<&Path>) -> Result<Arc<SchemaSet>, SchemaLoadError> {
        let env = std::env::var_os(SPEC_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Self::resolve_with(spec_dir, env.as_deref())
    }

    /// [`SchemaSet::resolve`] with the environment value passed in (for tests and servers).
    pub fn resolve_with(
        spec_dir: Option<&Path>,
        env_dir: Option<&Path>,
    ) -> Result<Arc<SchemaSet>, SchemaLoadError> {
        if let Some(dir) = spec_dir {
            let dir = schema_dir(dir)?;
            return Ok(Arc::new(SchemaSet::from_dir(
                &dir,
                SchemaSource::SpecDir(dir.clone()),
            )?));
        }
        if let Some(dir) = env_dir {
            let dir = schema_dir(dir)?;
            return Ok(Arc::new(SchemaSet::from_dir(
                &dir,
                SchemaSource::Env(dir.clone()),
            )?));
        }
        Ok(SchemaSet::embedded())
    }

    /// Load and compile the schemas in `dir` (which holds the `*.schema.json` files).
    pub fn from_dir(dir: &Path, source: SchemaSource) -> Result<SchemaSet, SchemaLoadError> {
        let mut texts = Vec::with_capacity(6);
        for (name, embedded) in EMBEDDED {
            let path = dir.join(name);
            match crate::fsio::read_string_bounded(&path, crate::fsio::MAX_READ_BYTES) {
                Ok(text) => texts.push((path, text)),
                Err(e)
                    if name == WORKSPACE_SCHEMA_FILE
                        && e.kind() == std::io::ErrorKind::NotFound =>
                {
                    texts.push((
                        PathBuf::from(format!("<embedded>/{name}")),
                        embedded.to_string(),
                    ))
                }
                Err(e) => {
                    return Err(SchemaLoadError::Unreadable {
                        path,
                        reason: e.to_string(),
                    })
                }
            }
        }
        SchemaSet::from_texts(source, texts)
    }

    fn from_texts(
        source: SchemaSource,
        texts: Vec<(PathBuf, String)>,
    ) -> Result<SchemaSet, SchemaLoadError> {
        let mut compiled = Vec::with_capacity(texts.len());
        let mut progress_split = None;
        for (i, (path, text)) in texts.into_iter().enumerate() {
            let schema: Value =
                serde_json::from_str(&text).map_err(|e| SchemaLoadError::NotJson {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
            if i == ArtifactKind::Progress as usize {
                progress_split = split_progress(&schema, &path)?;
            }
            compiled.push(Compiled::new(schema, &path)?);
        }
        Ok(SchemaSet {
            source,
            compiled,
            progress_split,
        })
    }

    pub fn source(&self) -> &SchemaSource {
        &self.source
    }

    /// The schema document used for `target`.
    pub fn schema(&self, target: Target) -> &Value {
        &self.compiled[target.index()].schema
    }

    /// Check `instance` against the schema of `target`. Violations come in the validator's
    /// order; callers sort them by position.
    pub fn validate(&self, target: Target, instance: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        self.compiled[target.index()].check(instance, "", &mut out);
        out
    }

    /// Whether progress can be checked entry by entry (always true for the embedded set; for
    /// a schema directory, when its progress schema describes entries inline without `$ref`).
    pub fn progress_splits(&self) -> bool {
        self.progress_split.is_some()
    }

    /// Check a progress document except the contents of `entries` (its type is still
    /// checked). Falls back to checking the whole document when the schema cannot be split.
    pub fn validate_progress_header(&self, instance: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        match &self.progress_split {
            Some((header, _)) => header.check(instance, "", &mut out),
            None => self.compiled[ArtifactKind::Progress as usize].check(instance, "", &mut out),
        }
        out
    }

    /// Check one progress entry; pointers are reported as `/entries/<index>/...`. Returns no
    /// violations when the schema cannot be split (then the header check covered entries).
    pub fn validate_progress_entry(&self, index: usize, entry: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        if let Some((_, item)) = &self.progress_split {
            item.check(entry, &format!("/entries/{index}"), &mut out);
        }
        out
    }

    /// Whether one progress entry is valid (fast path, no messages).
    pub fn progress_entry_is_valid(&self, entry: &Value) -> bool {
        match &self.progress_split {
            Some((_, item)) => item.validator.is_valid(entry),
            None => true,
        }
    }
}

/// Find the directory holding the schema files under a `--spec-dir` argument.
fn schema_dir(dir: &Path) -> Result<PathBuf, SchemaLoadError> {
    let candidates = [
        dir.to_path_buf(),
        dir.join("small/v1.0.0/schemas"),
        dir.join("spec/small/v1.0.0/schemas"),
    ];
    candidates
        .into_iter()
        .find(|c| c.join(ArtifactKind::Intent.schema_file()).is_file())
        .ok_or_else(|| SchemaLoadError::NotFound {
            dir: dir.to_path_buf(),
        })
}

/// Split a progress schema into a header schema (entries' items unconstrained) and the entry
/// schema, when entries are described inline and nothing uses `$ref`.
fn split_progress(
    schema: &Value,
    path: &Path,
) -> Result<Option<(Compiled, Compiled)>, SchemaLoadError> {
    fn has_ref(v: &Value) -> bool {
        match v {
            Value::Object(m) => m
                .iter()
                .any(|(k, v)| k == "$ref" || k == "$dynamicRef" || has_ref(v)),
            Value::Array(a) => a.iter().any(has_ref),
            _ => false,
        }
    }
    if has_ref(schema) {
        return Ok(None);
    }
    let Some(items) = schema.pointer("/properties/entries/items") else {
        return Ok(None);
    };
    let mut entry = items.clone();
    if let (Value::Object(e), Some(draft)) = (&mut entry, schema.get("$schema")) {
        e.insert("$schema".into(), draft.clone());
    }
    let mut header = schema.clone();
    if let Some(slot) = header.pointer_mut("/properties/entries/items") {
        *slot = Value::Bool(true);
    }
    Ok(Some((
        Compiled::new(header, path)?,
        Compiled::new(entry, path)?,
    )))
}

// ---------------------------------------------------------------------------------------------
// Messages

/// Human form of a JSON pointer: `tasks[2].title`; the root is `the document`.
pub fn display_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "the document".to_string();
    }
    let mut out = String::new();
    for token in crate::yaml::pointer_tokens(pointer) {
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(&token);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

fn subject(pointer: &str) -> String {
    if pointer.is_empty() {
        "the document".to_string()
    } else {
        format!("`{}`", display_path(pointer))
    }
}

fn escape_token(t: &str) -> String {
    t.replace('~', "~0").replace('/', "~1")
}

/// Describe a value for "found ..." phrases.
pub fn describe_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.is_empty() => "an empty string".to_string(),
        Value::String(s) => {
            let shown: String = s.chars().take(60).collect();
            let ellipsis = if s.chars().count() > 60 { "..." } else { "" };
            format!("\"{}{ellipsis}\"", shown.escape_debug())
        }
        Value::Array(a) if a.is_empty() => "an empty list".to_string(),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}

fn type_phrase(t: &str) -> &'static str {
    match t {
        "string" => "a string",
        "object" => "a mapping",
        "array" => "a list",
        "null" => "null",
        "boolean" => "true or false",
        "integer" => "an integer",
        "number" => "a number",
        _ => "a value of another type",
    }
}

/// Describe what a subschema accepts: `a non-empty string`, `a mapping`, `null`, ...
fn describe_schema(s: &Value) -> String {
    if let Some(c) = s.get("const") {
        return c.to_string();
    }
    if let Some(Value::Array(opts)) = s.get("enum") {
        return format!("one of {}", list_values(opts));
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => type_phrase(t).to_string(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(type_phrase)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "a value".to_string(),
    };
    if ty == "a string" && s.get("minLength").and_then(Value::as_u64) == Some(1) {
        return "a non-empty string".to_string();
    }
    ty
}

fn list_values(vals: &[Value]) -> String {
    vals.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The subschema holding the failing keyword: the schema path minus its last segment.
fn parent_schema<'s>(root: &'s Value, schema_path: &str) -> Option<&'s Value> {
    let cut = schema_path.rfind('/')?;
    root.pointer(&schema_path[..cut])
}

fn explain(err: &ValidationError<'_>, root: &Value, prefix: &str, out: &mut Vec<Violation>) {
    let pointer = format!("{prefix}{}", err.instance_path().as_str());
    let schema_path = err.schema_path().as_str();
    let here = parent_schema(root, schema_path);
    let instance: &Value = err.instance();
    let keyword = err.kind().keyword().to_string();
    let what = subject(&pointer);
    let found = describe_value(instance);
    let description = here
        .and_then(|s| s.get("description"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let simple = |message: String, help: Option<String>| Violation {
        pointer: pointer.clone(),
        anchor: pointer.clone(),
        at_key: false,
        keyword: keyword.clone(),
        message,
        help,
    };
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            let field_ptr = format!("{pointer}/{}", escape_token(&name));
            let field_desc = here
                .and_then(|s| s.pointer(&format!("/properties/{}", escape_token(&name))))
                .map(describe_schema);
            let in_what = if pointer.is_empty() {
                String::new()
            } else {
                format!(" in {what}")
            };
            out.push(Violation {
                pointer: field_ptr,
                anchor: pointer.clone(),
                at_key: false,
                keyword,
                message: format!("missing required field `{name}`{in_what}"),
                help: Some(match field_desc {
                    Some(d) => format!("add `{name}:` with {d}"),
                    None => format!("add `{name}:`"),
                }),
            });
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let allowed: Vec<String> = here
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            let in_what = if pointer.is_empty() {
                String::new()
            } else {
                format!(" in {what}")
            };
            for name in unexpected {
                out.push(Violation {
                    pointer: format!("{pointer}/{}", escape_token(name)),
                    anchor: format!("{pointer}/{}", escape_token(name)),
                    at_key: true,
                    keyword: keyword.clone(),
                    message: format!("unknown field `{name}`{in_what}"),
                    help: Some(if allowed.is_empty() {
                        "remove it".to_string()
                    } else {
                        format!(
                            "remove it, or use one of the allowed fields: {}",
                            allowed.join(", ")
                        )
                    }),
                });
            }
        }
        ValidationErrorKind::Type { .. } => {
            let expected = here
                .map(describe_schema)
                .unwrap_or_else(|| "another type".into());
            out.push(simple(
                format!("{what} must be {expected}, found {found}"),
                type_help(&pointer, instance),
            ));
        }
        ValidationErrorKind::Constant { expected_value } => {
            let help = if pointer.ends_with("/small_version") || pointer == "/small_version" {
                Some(format!(
                    "write `small_version: {expected_value}` (quoted, so YAML keeps it a string)"
                ))
            } else {
                Some(format!("set it to {expected_value}"))
            };
            out.push(simple(
                format!("{what} must be {expected_value}, found {found}"),
                help,
            ));
        }
        ValidationErrorKind::Enum { options } => {
            let opts = options
                .as_array()
                .map(|a| list_values(a))
                .unwrap_or_else(|| options.to_string());
            out.push(simple(
                format!("{what} must be one of {opts}, found {found}"),
                None,
            ));
        }
        ValidationErrorKind::MinLength { limit } => {
            let msg = if *limit == 1 {
                format!("{what} must not be empty")
            } else {
                format!("{what} must be at least {limit} characters long")
            };
            out.push(simple(msg, description));
        }
        ValidationErrorKind::MinItems { limit } => {
            let n = instance.as_array().map_or(0, Vec::len);
            let items = if *limit == 1 {
                "item".to_string()
            } else {
                "items".to_string()
            };
            out.push(simple(
                format!("{what} must have at least {limit} {items}, found {n}"),
                description,
            ));
        }
        ValidationErrorKind::Pattern { pattern } => {
            out.push(simple(
                format!("{what} has the wrong form: {found} does not match {pattern}"),
                description.map(|d| format!("expected: {}", d.trim_end_matches('.'))),
            ));
        }
        ValidationErrorKind::Format { format } => {
            let (name, help) = match format.as_str() {
                "uri" => ("an absolute URI", "write a full URI with a scheme, such as https://example.com/page"),
                "date-time" => (
                    "an RFC 3339 date-time",
                    "write a date-time such as 2026-01-02T15:04:05.123456Z (with `T` and a time zone)",
                ),
                _ => ("in the required format", "see the schema"),
            };
            let name = if name == "in the required format" {
                format!("in the `{format}` format")
            } else {
                name.to_string()
            };
            out.push(simple(
                format!("{what} must be {name}, found {found}"),
                Some(help.to_string()),
            ));
        }
        ValidationErrorKind::OneOfNotValid { .. } | ValidationErrorKind::AnyOf { .. } => {
            let alts = here
                .and_then(|s| s.get(&keyword))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(describe_schema)
                        .collect::<Vec<_>>()
                        .join(" or ")
                })
                .unwrap_or_else(|| "one of the allowed forms".to_string());
            let help = if alts.contains("a mapping") && alts.contains("string") {
                "write a short text, or a mapping of details".to_string()
            } else {
                format!("use {alts}")
            };
            out.push(simple(
                format!("{what} must be {alts}, found {found}"),
                Some(help),
            ));
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            out.push(simple(
                format!("{what} matches more than one of the allowed forms"),
                description,
            ));
        }
        _ => out.push(simple(format!("{what}: {err}"), description)),
    }
}

fn type_help(pointer: &str, instance: &Value) -> Option<String> {
    if pointer.ends_with("/small_version") {
        return Some("write `small_version: \"1.0.0\"` (quoted, so YAML keeps it a string)".into());
    }
    match instance {
        Value::Number(_) | Value::Bool(_) => Some("quote the value to make it a string".into()),
        Value::Null => Some("give it a value, or remove the key if it is optional".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid_progress() -> Value {
        json!({
            "small_version": "1.0.0",
            "owner": "agent",
            "entries": [
                {"task_id": "task-1", "timestamp": "2026-01-02T03:04:05.123Z", "evidence": "ran tests",
                 "commit": "abcdef1", "link": "https://example.com/x"}
            ]
        })
    }

    #[test]
    fn embedded_schemas_compile_and_are_draft_2020_12() {
        let set = SchemaSet::embedded();
        for (name, text) in EMBEDDED {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                v["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{name}"
            );
        }
        assert!(set.progress_splits());
        assert_eq!(set.source(), &SchemaSource::Embedded);
    }

    #[test]
    fn embedded_text_by_name() {
        assert!(embedded_text("plan").unwrap().contains("\"tasks\""));
        assert!(embedded_text("workspace.schema.json").is_some());
        assert!(embedded_text("nope").is_none());
    }

    #[test]
    fn minimal_documents_pass() {
        let set = SchemaSet::embedded();
        let docs = [
            (
                ArtifactKind::Intent,
                json!({"small_version":"1.0.0","owner":"human","intent":"x","scope":{"include":[],"exclude":[]},"success_criteria":[]}),
            ),
            (
                ArtifactKind::Constraints,
                json!({"small_version":"1.0.0","owner":"human","constraints":[{"id":"c","rule":"r","severity":"warn"}]}),
            ),
            (
                ArtifactKind::Plan,
                json!({"small_version":"1.0.0","owner":"agent","tasks":[{"id":"t","title":"T","status":"whatever"}]}),
            ),
            (
                ArtifactKind::Handoff,
                json!({"small_version":"1.0.0","owner":"agent","summary":"s","resume":{"next_steps":[],"current_task_id":null},"links":[],"replayId":{"value":"a".repeat(64),"source":"auto"}}),
            ),
        ];
        for (kind, doc) in docs {
            assert_eq!(set.validate(kind.into(), &doc), vec![], "{kind:?}");
        }
        assert_eq!(
            set.validate(ArtifactKind::Progress.into(), &valid_progress()),
            vec![]
        );
        assert_eq!(
            set.validate(Target::Workspace, &json!({"kind": "repo-root"})),
            vec![]
        );
    }

    #[test]
    fn version_as_number_is_a_type_error_with_help() {
        let set = SchemaSet::embedded();
        let doc =
            json!({"small_version": 1.0, "owner": "agent", "tasks": [{"id": "t", "title": "T"}]});
        let v = set.validate(ArtifactKind::Plan.into(), &doc);
        assert_eq!(v.len(), 1, "only the type error: {v:?}");
        assert!(v.iter().all(|x| x.pointer == "/small_version"), "{v:?}");
        assert!(
            v.iter().any(|x| x.message.contains("found the number 1.0")),
            "{v:?}"
        );
    }

    #[test]
    fn missing_and_unknown_fields() {
        let set = SchemaSet::embedded();
        let doc =
            json!({"small_version": "1.0.0", "owner": "agent", "tasks": [{"id": "t"}], "extra": 1});
        let v = set.validate(ArtifactKind::Plan.into(), &doc);
        let missing = v.iter().find(|x| x.keyword == "required").unwrap();
        assert_eq!(missing.pointer, "/tasks/0/title");
        assert_eq!(missing.anchor, "/tasks/0");
        assert_eq!(
            missing.message,
            "missing required field `title` in `tasks[0]`"
        );
        let unknown = v
            .iter()
            .find(|x| x.keyword == "additionalProperties")
            .unwrap();
        assert_eq!(unknown.pointer, "/extra");
        assert!(unknown.at_key);
        assert!(unknown
            .help
            .as_deref()
            .unwrap()
            .contains("small_version, owner, tasks"));
    }

    #[test]
    fn formats_are_asserted() {
        let set = SchemaSet::embedded();
        let mut doc = valid_progress();
        doc["entries"][0]["link"] = json!("not a uri");
        doc["entries"][0]["timestamp"] = json!("2026-04-14 09:30:45.991802");
        let v = set.validate(ArtifactKind::Progress.into(), &doc);
        let ptrs: Vec<_> = v.iter().map(|x| x.pointer.as_str()).collect();
        assert!(ptrs.contains(&"/entries/0/link"), "{v:?}");
        assert!(ptrs.contains(&"/entries/0/timestamp"), "{v:?}");
        let hv = json!({"small_version":"1.0.0","owner":"agent","summary":"s","resume":{"next_steps":[]},
            "links":[{"url":"see docs"}],"replayId":{"value":"a".repeat(64),"source":"auto"},
            "run":{"created_at":"yesterday"}});
        let v = set.validate(ArtifactKind::Handoff.into(), &hv);
        assert_eq!(v.len(), 2, "{v:?}");
    }

    #[test]
    fn one_of_message_lists_the_forms() {
        let set = SchemaSet::embedded();
        let mut doc = valid_progress();
        doc["entries"][0]["evidence"] = Value::Null;
        let v = set.validate(ArtifactKind::Progress.into(), &doc);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(
            v[0].message,
            "`entries[0].evidence` must be a non-empty string or a mapping, found null"
        );
    }

    #[test]
    fn entry_by_entry_equals_whole_document() {
        let set = SchemaSet::embedded();
        let mut doc = valid_progress();
        doc["entries"]
            .as_array_mut()
            .unwrap()
            .push(json!({"task_id": "", "commit": "ABC", "extra": true}));
        let whole = set.validate(ArtifactKind::Progress.into(), &doc);
        let mut split = set.validate_progress_header(&doc);
        for (i, e) in doc["entries"].as_array().unwrap().iter().enumerate() {
            split.extend(set.validate_progress_entry(i, e));
        }
        let key = |v: &Vec<Violation>| {
            let mut k: Vec<_> = v
                .iter()
                .map(|x| (x.pointer.clone(), x.message.clone()))
                .collect();
            k.sort();
            k
        };
        assert_eq!(key(&whole), key(&split));
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert!(!set.progress_entry_is_valid(&doc["entries"][1]));
        assert!(set.progress_entry_is_valid(&doc["entries"][0]));
    }

    #[test]
    fn header_check_still_requires_entries_list() {
        let set = SchemaSet::embedded();
        let doc = json!({"small_version":"1.0.0","owner":"agent","entries":"none"});
        let v = set.validate_progress_header(&doc);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].pointer, "/entries");
    }

    #[test]
    fn workspace_metadata_schema() {
        let set = SchemaSet::embedded();
        let bad = [
            json!({"kind": "sandbox"}),
            json!({"kind": "repo-root", "small_version": "0.1"}),
            json!({"kind": "repo-root", "run": "current"}),
            json!({"kind": "repo-root", "run": {"replay_id": "xyz"}}),
            json!({"small_version": "1.0.0"}),
            json!(null),
            json!([{"kind": "repo-root"}]),
        ];
        for doc in bad {
            assert!(!set.validate(Target::Workspace, &doc).is_empty(), "{doc}");
        }
        let good = json!({"small_version":"1.0.0","owner":"agent","kind":"examples",
            "created_at":"2026-05-06T14:00:00.231118Z","updated_at":"2026-05-06T17:45:31.880442Z",
            "run":{"replay_id":"b".repeat(64)}});
        assert_eq!(set.validate(Target::Workspace, &good), vec![]);
    }

    #[test]
    fn spec_dir_layouts_and_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let nested = tmp.path().join("spec/small/v1.0.0/schemas");
        std::fs::create_dir_all(&nested).unwrap();
        // A relaxed plan schema: anything goes.
        for (name, text) in EMBEDDED.iter().take(5) {
            let body = if *name == "plan.schema.json" {
                "{}"
            } else {
                text
            };
            std::fs::write(nested.join(name), body).unwrap();
        }
        let set = SchemaSet::resolve_with(Some(tmp.path()), None).unwrap();
        assert_eq!(set.source(), &SchemaSource::SpecDir(nested.clone()));
        assert!(set
            .validate(ArtifactKind::Plan.into(), &json!(42))
            .is_empty());
        // The flag wins over the environment.
        let empty = tempfile::tempdir().unwrap();
        let set = SchemaSet::resolve_with(Some(tmp.path()), Some(empty.path())).unwrap();
        assert!(matches!(set.source(), SchemaSource::SpecDir(_)));
        // A directory without schemas is an error, not a silent fallback.
        let err = SchemaSet::resolve_with(None, Some(empty.path())).unwrap_err();
        assert!(matches!(err, SchemaLoadError::NotFound { .. }));
        // An incomplete set is an error.
        std::fs::remove_file(nested.join("handoff.schema.json")).unwrap();
        let err = SchemaSet::resolve_with(Some(&nested), None).unwrap_err();
        assert!(matches!(err, SchemaLoadError::Unreadable { .. }), "{err}");
        // Broken JSON is reported.
        std::fs::write(nested.join("handoff.schema.json"), "{").unwrap();
        let err = SchemaSet::resolve_with(Some(&nested), None).unwrap_err();
        assert!(matches!(err, SchemaLoadError::NotJson { .. }), "{err}");
    }

    #[test]
    fn display_paths() {
        assert_eq!(display_path(""), "the document");
        assert_eq!(display_path("/tasks/2/title"), "tasks[2].title");
        assert_eq!(display_path("/a~1b"), "a/b");
    }
}
