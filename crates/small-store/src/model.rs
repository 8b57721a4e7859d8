//! The primitives of seed 003 as the store sees them: public record types, canonical JSON and
//! content hashes, shape checks for each primitive, and the lifecycle transition rules.

use crate::error::{FieldError, Result, StoreError};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The JSON Schema dialect every registered schema uses.
pub const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";
/// Longest id accepted for any primitive.
pub const MAX_ID_LEN: usize = 256;
/// Default and largest page size of list operations.
pub const DEFAULT_PAGE: u32 = 100;
pub const MAX_PAGE: u32 = 1000;
/// Deepest lineage graph query (`depth` is clamped to this).
pub const MAX_DEPTH: u32 = 1000;

/// One stored record: the canonical JSON text exactly as stored, with its address and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Schema id, artifact id, manifest id, or the artifact id a lineage or lifecycle record
    /// belongs to.
    pub id: String,
    /// Artifact and manifest version; lineage: global sequence number; lifecycle: position of
    /// the event in its stream (1-based); schemas: always 1.
    pub version: u64,
    /// Lowercase hex SHA-256 of `json`.
    pub sha256: String,
    /// When the store accepted the record (RFC 3339, UTC).
    #[serde(rename = "storedAt")]
    pub stored_at: String,
    /// The record as canonical JSON text (sorted keys, no insignificant whitespace).
    #[serde(skip)]
    pub json: String,
    /// Manifests only: the references resolved when the manifest was stored (canonical JSON).
    #[serde(skip)]
    pub resolved: Option<String>,
}

impl Record {
    /// The stored JSON parsed back into a value.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }
}

/// Result of a write: the record as stored and whether this call created it (`false`: an
/// identical record already existed, and the call changed nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Put {
    pub record: Record,
    pub created: bool,
}

/// A page request: at most `limit` items after the cursor `after` (exclusive).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub after: Option<String>,
    pub limit: Option<u32>,
}

impl Page {
    pub fn limit(&self) -> u32 {
        self.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE)
    }
}

/// One page of records; `next` is the cursor for the following page, if there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub items: Vec<Record>,
    pub next: Option<String>,
}

/// Which way a lineage graph query walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Towards what an artifact was derived from.
    Ancestors,
    /// Towards what was derived from an artifact.
    Descendants,
}

/// A node of a lineage graph with its distance (in edges) from the queried artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphNode {
    pub id: String,
    pub depth: u32,
}

/// A derivation edge: `from` was derived from `to` (`to` is the parent).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
}

/// The result of an ancestors or descendants query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Graph {
    #[serde(rename = "artifactId")]
    pub artifact_id: String,
    pub direction: Direction,
    pub depth: u32,
    /// Every node reached within `depth`, nearest first, then by id.
    pub nodes: Vec<GraphNode>,
    /// Every edge walked, sorted.
    pub edges: Vec<GraphEdge>,
}

// ---------------------------------------------------------------------------------------------
// Canonical JSON and hashes

pub use crate::canonical::exact_canonical_json;

/// Lowercase hex SHA-256 of a text.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The current time, RFC 3339 UTC with second precision (`2025-01-15T10:00:00Z`).
pub fn now_rfc3339() -> String {
    use small_core::ops::formats::timestamp;
    timestamp::format_utc_digits(timestamp::now(), 0)
}

/// Parses an RFC 3339 timestamp.
pub fn parse_time(text: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
}

// ---------------------------------------------------------------------------------------------
// Shape checks

/// Collects field errors for one record.
#[derive(Default)]
pub(crate) struct Checker {
    pub errors: Vec<FieldError>,
}

impl Checker {
    pub fn err(&mut self, path: impl Into<String>, msg: impl Into<String>) {
        self.errors.push(FieldError::new(path, msg));
    }

    pub fn finish(self, what: &str) -> Result<()> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            let n = self.errors.len();
            let msg = if n == 1 {
                format!("{what} refused: {}", self.errors[0].message)
            } else {
                format!("{what} refused: {n} problems")
            };
            Err(StoreError::invalid(msg, self.errors))
        }
    }

    /// An object whose keys are all in `allowed`.
    pub fn object<'a>(
        &mut self,
        v: &'a Value,
        what: &str,
        allowed: &[&str],
    ) -> Option<&'a Map<String, Value>> {
        match v.as_object() {
            Some(m) => {
                for k in m.keys() {
                    if !allowed.contains(&k.as_str()) {
                        self.err(
                            format!("/{}", escape_pointer(k)),
                            format!(
                                "unknown field `{k}` in {what} (allowed: {})",
                                allowed.join(", ")
                            ),
                        );
                    }
                }
                Some(m)
            }
            None => {
                self.err("", format!("{what} must be a JSON object"));
                None
            }
        }
    }

    /// A required id: non-empty string without whitespace or control characters.
    pub fn id<'a>(&mut self, m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
        match m.get(key) {
            None => {
                self.err(format!("/{key}"), format!("`{key}` is required"));
                None
            }
            Some(v) => self.id_value(v, &format!("/{key}"), key),
        }
    }

    pub fn id_value<'a>(&mut self, v: &'a Value, path: &str, name: &str) -> Option<&'a str> {
        match v.as_str() {
            Some(s) if valid_id(s) => Some(s),
            Some(_) => {
                self.err(
                    path,
                    format!(
                        "`{name}` must be 1 to {MAX_ID_LEN} characters without whitespace or control characters"
                    ),
                );
                None
            }
            None => {
                self.err(path, format!("`{name}` must be a string"));
                None
            }
        }
    }

    /// An optional version: integer >= 1.
    pub fn version(&mut self, m: &Map<String, Value>) -> Option<Option<u64>> {
        match m.get("version") {
            None => Some(None),
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 && n <= i64::MAX as u64 => Some(Some(n)),
                _ => {
                    self.err("/version", "`version` must be an integer >= 1");
                    None
                }
            },
        }
    }

    /// An optional RFC 3339 timestamp.
    pub fn time<'a>(
        &mut self,
        m: &'a Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Option<&'a str> {
        match m.get(key) {
            None => None,
            Some(Value::String(s)) if parse_time(s).is_some() => Some(s),
            Some(_) => {
                self.err(
                    path,
                    format!("`{key}` must be an RFC 3339 date-time such as 2025-01-15T10:00:00Z"),
                );
                None
            }
        }
    }

    pub fn string<'a>(
        &mut self,
        m: &'a Map<String, Value>,
        key: &str,
        path: &str,
        required: bool,
    ) -> Option<&'a str> {
        match m.get(key) {
            None => {
                if required {
                    self.err(path, format!("`{key}` is required"));
                }
                None
            }
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
            Some(_) => {
                self.err(path, format!("`{key}` must be a non-empty string"));
                None
            }
        }
    }
}

pub fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars().count() <= MAX_ID_LEN
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

pub use small_core::ops::formats::json_pointer_escape as escape_pointer;

/// A checked artifact: its fields, with `version` possibly still unassigned.
pub(crate) struct ArtifactIn {
    pub id: String,
    pub version: Option<u64>,
    pub schema_id: String,
    pub value: Map<String, Value>,
}

pub(crate) fn check_artifact(v: &Value) -> Result<ArtifactIn> {
    let mut c = Checker::default();
    let mut out = None;
    if let Some(m) = c.object(
        v,
        "artifact",
        &["id", "version", "kind", "data", "schemaId"],
    ) {
        let id = c.id(m, "id");
        let version = c.version(m);
        let kind = c.id(m, "kind");
        let schema_id = c.id(m, "schemaId");
        if !m.contains_key("data") {
            c.err("/data", "`data` is required");
        }
        if let (Some(id), Some(version), Some(_), Some(schema_id)) = (id, version, kind, schema_id)
        {
            out = Some(ArtifactIn {
                id: id.to_string(),
                version,
                schema_id: schema_id.to_string(),
                value: m.clone(),
            });
        }
    }
    c.finish("artifact")?;
    out.ok_or_else(|| StoreError::field("", "artifact refused"))
}

/// A reference from a manifest to an artifact: `id` (latest version) or `id@version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArtifactRef {
    pub id: String,
    pub version: Option<u64>,
}

pub(crate) fn parse_artifact_ref(s: &str) -> Option<ArtifactRef> {
    if let Some((id, v)) = s.rsplit_once('@') {
        if let Ok(n) = v.parse::<u64>() {
            if n >= 1 && valid_id(id) && !v.starts_with('+') && !v.starts_with('0') {
                return Some(ArtifactRef {
                    id: id.to_string(),
                    version: Some(n),
                });
            }
        }
    }
    if valid_id(s) {
        Some(ArtifactRef {
            id: s.to_string(),
            version: None,
        })
    } else {
        None
    }
}

pub(crate) struct ManifestIn {
    pub id: String,
    pub version: Option<u64>,
    pub schemas: Vec<String>,
    pub artifacts: Vec<ArtifactRef>,
    pub deterministic: bool,
    pub append_only: bool,
    pub validation_required: bool,
    pub value: Map<String, Value>,
}

pub(crate) fn check_manifest(v: &Value) -> Result<ManifestIn> {
    let mut c = Checker::default();
    let mut out = None;
    if let Some(m) = c.object(
        v,
        "manifest",
        &["id", "version", "schemas", "artifacts", "policies"],
    ) {
        let id = c.id(m, "id");
        let version = c.version(m);
        let mut schemas = Vec::new();
        match m.get("schemas") {
            Some(Value::Array(items)) => {
                for (i, s) in items.iter().enumerate() {
                    if let Some(s) = c.id_value(s, &format!("/schemas/{i}"), "schemas[]") {
                        if schemas.iter().any(|x| x == s) {
                            c.err(
                                format!("/schemas/{i}"),
                                format!("schema `{s}` is listed twice"),
                            );
                        }
                        schemas.push(s.to_string());
                    }
                }
            }
            Some(_) => c.err("/schemas", "`schemas` must be an array of schema ids"),
            None => c.err("/schemas", "`schemas` is required"),
        }
        let mut artifacts: Vec<ArtifactRef> = Vec::new();
        match m.get("artifacts") {
            Some(Value::Array(items)) => {
                for (i, s) in items.iter().enumerate() {
                    match s.as_str().and_then(parse_artifact_ref) {
                        Some(r) => {
                            if artifacts.iter().any(|x| x.id == r.id) {
                                c.err(
                                    format!("/artifacts/{i}"),
                                    format!("artifact `{}` is listed twice", r.id),
                                );
                            }
                            artifacts.push(r);
                        }
                        None => c.err(
                            format!("/artifacts/{i}"),
                            "artifact references are `id` (latest version) or `id@version`",
                        ),
                    }
                }
            }
            Some(_) => c.err("/artifacts", "`artifacts` must be an array of artifact ids"),
            None => c.err("/artifacts", "`artifacts` is required"),
        }
        let mut flags = [false; 3];
        match m.get("policies") {
            Some(Value::Object(p)) => {
                let names = ["deterministic", "appendOnly", "validationRequired"];
                for k in p.keys() {
                    if !names.contains(&k.as_str()) {
                        c.err(
                            format!("/policies/{}", escape_pointer(k)),
                            format!("unknown policy `{k}` (known: {})", names.join(", ")),
                        );
                    }
                }
                for (i, name) in names.iter().enumerate() {
                    match p.get(*name) {
                        Some(Value::Bool(b)) => flags[i] = *b,
                        Some(_) => c.err(
                            format!("/policies/{name}"),
                            format!("`{name}` must be true or false"),
                        ),
                        None => c.err(
                            format!("/policies/{name}"),
                            format!("policy `{name}` is required"),
                        ),
                    }
                }
            }
            Some(_) => c.err("/policies", "`policies` must be an object"),
            None => c.err("/policies", "`policies` is required"),
        }
        if let (Some(id), Some(version)) = (id, version) {
            out = Some(ManifestIn {
                id: id.to_string(),
                version,
                schemas,
                artifacts,
                deterministic: flags[0],
                append_only: flags[1],
                validation_required: flags[2],
                value: m.clone(),
            });
        }
    }
    c.finish("manifest")?;
    out.ok_or_else(|| StoreError::field("", "manifest refused"))
}

pub(crate) struct LineageIn {
    pub artifact_id: String,
    pub parents: Vec<String>,
    pub value: Map<String, Value>,
}

pub(crate) fn check_lineage(v: &Value) -> Result<LineageIn> {
    let mut c = Checker::default();
    let mut out = None;
    if let Some(m) = c.object(
        v,
        "lineage record",
        &["artifactId", "derivedFrom", "producedBy", "at"],
    ) {
        let id = c.id(m, "artifactId");
        let mut parents: Vec<String> = Vec::new();
        match m.get("derivedFrom") {
            Some(Value::Array(items)) => {
                for (i, p) in items.iter().enumerate() {
                    if let Some(p) = c.id_value(p, &format!("/derivedFrom/{i}"), "derivedFrom[]") {
                        if Some(p) == id {
                            c.err(
                                format!("/derivedFrom/{i}"),
                                "an artifact cannot be derived from itself",
                            );
                        } else if parents.iter().any(|x| x == p) {
                            c.err(
                                format!("/derivedFrom/{i}"),
                                format!("`{p}` is listed twice"),
                            );
                        } else {
                            parents.push(p.to_string());
                        }
                    }
                }
            }
            Some(_) => c.err(
                "/derivedFrom",
                "`derivedFrom` must be an array of artifact ids",
            ),
            None => c.err(
                "/derivedFrom",
                "`derivedFrom` is required (use [] for an original)",
            ),
        }
        match m.get("producedBy") {
            Some(Value::Object(p)) => {
                for k in p.keys() {
                    if !["actor", "name", "runId"].contains(&k.as_str()) {
                        c.err(
                            format!("/producedBy/{}", escape_pointer(k)),
                            format!(
                                "unknown field `{k}` in producedBy (allowed: actor, name, runId)"
                            ),
                        );
                    }
                }
                c.string(p, "actor", "/producedBy/actor", true);
                c.string(p, "name", "/producedBy/name", true);
                c.string(p, "runId", "/producedBy/runId", false);
            }
            Some(_) => c.err(
                "/producedBy",
                "`producedBy` must be an object {actor, name, runId}",
            ),
            None => c.err("/producedBy", "`producedBy` is required"),
        }
        c.time(m, "at", "/at");
        if let Some(id) = id {
            let mut value = m.clone();
            if !value.contains_key("at") {
                value.insert("at".into(), Value::String(now_rfc3339()));
            }
            out = Some(LineageIn {
                artifact_id: id.to_string(),
                parents,
                value,
            });
        }
    }
    c.finish("lineage record")?;
    out.ok_or_else(|| StoreError::field("", "lineage record refused"))
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

/// The lifecycle event types the store knows, in their usual order.
pub const EVENT_TYPES: &[&str] = &[
    "created",
    "validated",
    "materialized",
    "published",
    "deprecated",
    "archived",
];

pub(crate) struct EventIn {
    pub kind: String,
    pub schema: Option<String>,
    pub at: String,
    pub value: Map<String, Value>,
}

pub(crate) fn check_event(v: &Value, base: &str) -> Result<EventIn> {
    let mut c = Checker::default();
    let mut out = None;
    let allowed = ["type", "at", "schema", "note"];
    match v.as_object() {
        None => c.err(
            base,
            "a lifecycle event must be a JSON object {type, at, schema?, note?}",
        ),
        Some(m) => {
            for k in m.keys() {
                if !allowed.contains(&k.as_str()) {
                    c.err(
                        format!("{base}/{}", escape_pointer(k)),
                        format!(
                            "unknown field `{k}` in lifecycle event (allowed: {})",
                            allowed.join(", ")
                        ),
                    );
                }
            }
            let kind = match m.get("type") {
                Some(Value::String(s)) if EVENT_TYPES.contains(&s.as_str()) => Some(s.clone()),
                Some(Value::String(s)) => {
                    c.err(
                        format!("{base}/type"),
                        format!(
                            "unknown lifecycle event type `{s}` (known: {})",
                            EVENT_TYPES.join(", ")
                        ),
                    );
                    None
                }
                _ => {
                    c.err(
                        format!("{base}/type"),
                        "`type` is required and must be a string",
                    );
                    None
                }
            };
            let at = c.time(m, "at", &format!("{base}/at")).map(str::to_string);
            let schema = match m.get("schema") {
                None => None,
                Some(s) => c
                    .id_value(s, &format!("{base}/schema"), "schema")
                    .map(str::to_string),
            };
            if let Some(Value::String(_)) | None = m.get("note") {
            } else {
                c.err(format!("{base}/note"), "`note` must be a string");
            }
            if let Some(kind) = kind {
                let mut value = m.clone();
                let at = match at {
                    Some(a) => a,
                    None => {
                        let now = now_rfc3339();
                        value.insert("at".into(), Value::String(now.clone()));
                        now
                    }
                };
                out = Some(EventIn {
                    kind,
                    schema,
                    at,
                    value,
                });
            }
        }
    }
    c.finish("lifecycle event")?;
    out.ok_or_else(|| StoreError::field(base, "lifecycle event refused"))
}

/// Decides whether `next` may follow the events already in the stream (their types and times,
/// oldest first). Returns the reason when it may not.
pub fn transition_allowed(
    previous: &[(String, String)],
    next: &str,
    at: &str,
) -> std::result::Result<(), String> {
    let has = |t: &str| previous.iter().any(|(k, _)| k == t);
    if let Some((last_kind, last_at)) = previous.last() {
        if last_kind == "archived" {
            return Err("the artifact is archived: no event may follow `archived`".into());
        }
        if let (Some(a), Some(b)) = (parse_time(last_at), parse_time(at)) {
            if b < a {
                return Err(format!("event time {at} is earlier than the previous event ({last_at}); events are ordered"));
            }
        }
    }
    match next {
        "created" if !previous.is_empty() => Err("`created` can only be the first event".into()),
        "created" => Ok(()),
        _ if previous.is_empty() => Err(format!("the first event must be `created`, not `{next}`")),
        "validated" | "archived" => Ok(()),
        "materialized" | "published" if !has("validated") => Err(format!(
            "`{next}` requires an earlier `validated` event (validation comes first)"
        )),
        "materialized" | "published" => Ok(()),
        "deprecated" if !has("published") => {
            Err("`deprecated` requires an earlier `published` event".into())
        }
        "deprecated" => Ok(()),
        other => Err(format!("unknown lifecycle event type `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(kinds: &[&str]) -> Vec<(String, String)> {
        kinds
            .iter()
            .map(|k| (k.to_string(), "2025-01-15T09:00:00Z".to_string()))
            .collect()
    }

    #[test]
    fn transitions_table() {
        let at = "2025-01-15T10:00:00Z";
        let ok = |prev: &[&str], next: &str| transition_allowed(&stream(prev), next, at).is_ok();
        assert!(ok(&[], "created"));
        for k in [
            "validated",
            "materialized",
            "published",
            "deprecated",
            "archived",
        ] {
            assert!(!ok(&[], k), "{k} cannot come first");
        }
        assert!(!ok(&["created"], "created"));
        assert!(ok(&["created"], "validated"));
        assert!(ok(&["created"], "archived"));
        assert!(!ok(&["created"], "materialized"));
        assert!(!ok(&["created"], "published"));
        assert!(ok(&["created", "validated"], "materialized"));
        assert!(ok(&["created", "validated"], "published"));
        assert!(!ok(&["created", "validated"], "deprecated"));
        assert!(ok(&["created", "validated", "published"], "deprecated"));
        assert!(ok(
            &["created", "validated", "published", "deprecated"],
            "archived"
        ));
        for k in EVENT_TYPES {
            assert!(
                !ok(&["created", "archived"], k),
                "nothing after archived ({k})"
            );
        }
        assert!(!ok(&["created"], "exploded"));
        let earlier =
            transition_allowed(&stream(&["created"]), "validated", "2025-01-15T08:00:00Z");
        assert!(earlier.unwrap_err().contains("earlier"));
    }

    #[test]
    fn canonical_json_sorts_keys_by_utf16_and_keeps_numbers() {
        let v: Value = serde_json::from_str(r#"{"b":1,"a":{"y":[1.5,-0.0,12345678901234567890],"x":"\u00e9\ud83d\ude00"},"\ue000":0,"\ud83d\ude00":0}"#).unwrap();
        assert_eq!(
            exact_canonical_json(&v),
            "{\"a\":{\"x\":\"é😀\",\"y\":[1.5,-0.0,12345678901234567890]},\"b\":1,\"😀\":0,\"\u{e000}\":0}"
        );
    }

    #[test]
    fn artifact_references() {
        assert_eq!(
            parse_artifact_ref("a:1"),
            Some(ArtifactRef {
                id: "a:1".into(),
                version: None
            })
        );
        assert_eq!(
            parse_artifact_ref("a:1@3"),
            Some(ArtifactRef {
                id: "a:1".into(),
                version: Some(3)
            })
        );
        assert_eq!(
            parse_artifact_ref("a@0"),
            Some(ArtifactRef {
                id: "a@0".into(),
                version: None
            })
        );
        assert_eq!(parse_artifact_ref("a b"), None);
        assert_eq!(parse_artifact_ref(""), None);
    }
}
