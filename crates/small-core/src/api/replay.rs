//! What a replay means (seed 001): a manifest that validates, with an explicit
//! `protocolVersion`, materialises one lineage record and two lifecycle events (`validated`,
//! `materialized`), stamped with the time of the first replay and identical on every later
//! replay of the same replay ID. The HTTP server stores and serves these values; it does
//! not decide what they are.

use crate::api::manifest::{ManifestError, ManifestRequest, ValidationOutcome};
use crate::json::canonical::{self, JsString, Value};
use crate::spec::consts::PROTOCOL_VERSION;
use crate::spec::model::ManifestReplayId;
use crate::spec::timestamp;

/// The protocol contract served at `/small/v1/protocol`, exactly as seed 001 shows it.
pub fn protocol_document() -> String {
    PROTOCOL_DOCUMENT_TEMPLATE.replace("{VERSION}", PROTOCOL_VERSION)
}

const PROTOCOL_DOCUMENT_TEMPLATE: &str = r#"{"protocol":"SMALL","version":"{VERSION}","primitives":["Schema","Manifest","Artifact","Lineage","Lifecycle"],"rules":{"materializationRequiresValidation":true,"artifactsAreImmutable":true,"lineageIsAppendOnly":true,"lifecycleIsEventBased":true,"explicitContractsOnly":true},"schemas":{"schema":"/schemas/small/v1/schema.schema.json","manifest":"/schemas/small/v1/manifest.schema.json","artifact":"/schemas/small/v1/artifact.schema.json","lineage":"/schemas/small/v1/lineage.schema.json","lifecycle":"/schemas/small/v1/lifecycle.schema.json"}}"#;

/// A request that may be replayed: its replay ID and protocol version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replayable {
    pub replay_id: ManifestReplayId,
    pub protocol_version: &'static str,
}

/// Validate a replay request. Unlike validation alone, a replay needs `protocolVersion`
/// given explicitly (seed 001: materialisation requires an explicit contract).
pub fn check(req: &ManifestRequest) -> Result<Replayable, Vec<ManifestError>> {
    let ValidationOutcome { replay_id, errors } = req.validate();
    if !errors.is_empty() {
        return Err(errors);
    }
    if req.protocol_version_raw().is_none() {
        return Err(vec![ManifestError {
            instance_path: String::new(),
            message: JsString::from("must have required property 'protocolVersion'"),
        }]);
    }
    match (replay_id, req.protocol_version()) {
        (Some(replay_id), Ok(protocol_version)) => Ok(Replayable {
            replay_id,
            protocol_version,
        }),
        (_, Err(e)) => Err(vec![e]),
        (None, Ok(_)) => Err(vec![ManifestError {
            instance_path: String::new(),
            message: JsString::from("must have required property 'manifest'"),
        }]),
    }
}

/// The lineage record of a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Lineage {
    /// The manifest's `artifact`, when it is a string.
    pub artifact: Option<JsString>,
    /// The manifest's `schema`, when it is a string.
    pub derived_from: Option<JsString>,
    pub generated_at: String,
    pub replay_id: ManifestReplayId,
}

/// The kinds of lifecycle event a replay records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Validated,
    Materialized,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Validated => "validated",
            EventKind::Materialized => "materialized",
        }
    }
}

/// One lifecycle event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleEvent {
    pub kind: EventKind,
    pub at: String,
    pub replay_id: ManifestReplayId,
}

/// What a first replay materialises.
#[derive(Debug, Clone, PartialEq)]
pub struct Materialised {
    pub lineage: Lineage,
    pub lifecycle: Vec<LifecycleEvent>,
    /// When it was materialised (RFC 3339 UTC, milliseconds).
    pub at: String,
}

/// The records a first replay of `manifest` materialises, stamped with `at`.
pub fn materialise_at(replay_id: &ManifestReplayId, manifest: &Value, at: String) -> Materialised {
    let text = |key: &str| match manifest.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    let event = |kind| LifecycleEvent {
        kind,
        at: at.clone(),
        replay_id: replay_id.clone(),
    };
    Materialised {
        lineage: Lineage {
            artifact: text("artifact"),
            derived_from: text("schema"),
            generated_at: at.clone(),
            replay_id: replay_id.clone(),
        },
        lifecycle: vec![event(EventKind::Validated), event(EventKind::Materialized)],
        at,
    }
}

/// [`materialise_at`] now.
pub fn materialise(replay_id: &ManifestReplayId, manifest: &Value) -> Materialised {
    materialise_at(
        replay_id,
        manifest,
        timestamp::format_utc_digits(timestamp::now(), 3),
    )
}

fn write_opt_string(out: &mut Vec<u8>, s: Option<&JsString>) {
    match s {
        Some(s) => canonical::write_json_string_bytes(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    canonical::write_json_string_bytes(out, &JsString::from(s));
}

impl Lineage {
    /// `{"artifact":…,"derivedFrom":…,"generatedAt":…,"replayId":…}` (the served form).
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(160);
        out.extend_from_slice(b"{\"artifact\":");
        write_opt_string(&mut out, self.artifact.as_ref());
        out.extend_from_slice(b",\"derivedFrom\":");
        write_opt_string(&mut out, self.derived_from.as_ref());
        out.extend_from_slice(b",\"generatedAt\":");
        write_str(&mut out, &self.generated_at);
        out.extend_from_slice(b",\"replayId\":");
        write_str(&mut out, self.replay_id.as_str());
        out.push(b'}');
        String::from_utf8_lossy(&out).into_owned()
    }
}

impl LifecycleEvent {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":");
        write_str(out, self.kind.as_str());
        out.extend_from_slice(b",\"at\":");
        write_str(out, &self.at);
        out.extend_from_slice(b",\"replayId\":");
        write_str(out, self.replay_id.as_str());
        out.push(b'}');
    }
}

/// The lifecycle events as the served JSON array.
pub fn lifecycle_json(events: &[LifecycleEvent]) -> String {
    let mut out = Vec::with_capacity(96 * events.len() + 2);
    out.push(b'[');
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        e.write(&mut out);
    }
    out.push(b']');
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: &str) -> ManifestRequest {
        ManifestRequest::parse(body.as_bytes()).unwrap()
    }

    #[test]
    fn a_replay_needs_an_explicit_protocol_version() {
        let without = request(r#"{"manifest":{"artifact":"a","schema":"s","version":1}}"#);
        let errs = check(&without).unwrap_err();
        assert_eq!(
            errs[0].message.to_string_lossy(),
            "must have required property 'protocolVersion'"
        );
        let with = request(
            r#"{"protocolVersion":"1.0.0","manifest":{"artifact":"a","schema":"s","version":1}}"#,
        );
        let ok = check(&with).unwrap();
        assert_eq!(ok.protocol_version, PROTOCOL_VERSION);
        assert_eq!(ok.replay_id.as_str().len(), ManifestReplayId::LEN);
    }

    #[test]
    fn materialised_records_have_the_served_shape() {
        let req = request(
            r#"{"protocolVersion":"1.0.0","manifest":{"artifact":"track \"1\"","schema":"s","version":1}}"#,
        );
        let ok = check(&req).unwrap();
        let m = materialise_at(
            &ok.replay_id,
            req.manifest().unwrap(),
            "2026-01-01T00:00:00.000Z".into(),
        );
        let id = ok.replay_id.as_str();
        assert_eq!(
            m.lineage.to_json(),
            format!(
                r#"{{"artifact":"track \"1\"","derivedFrom":"s","generatedAt":"2026-01-01T00:00:00.000Z","replayId":"{id}"}}"#
            )
        );
        assert_eq!(
            lifecycle_json(&m.lifecycle),
            format!(
                r#"[{{"type":"validated","at":"2026-01-01T00:00:00.000Z","replayId":"{id}"}},{{"type":"materialized","at":"2026-01-01T00:00:00.000Z","replayId":"{id}"}}]"#
            )
        );
    }

    #[test]
    fn the_protocol_document_carries_the_protocol_version() {
        let doc: serde_json::Value = serde_json::from_str(&protocol_document()).unwrap();
        assert_eq!(doc["version"], PROTOCOL_VERSION);
        assert_eq!(doc["primitives"].as_array().unwrap().len(), 5);
    }
}
