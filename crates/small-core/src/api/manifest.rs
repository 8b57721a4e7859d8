//! API manifests (seed 001): validation, replay IDs, and the validate-manifest response.
//!
//! The rules follow the reference's own validator exactly (see the API vectors): manifest
//! schema errors in a fixed order, then the protocol version check, and the replay ID
//! `base64url-nopad(sha256("SMALL|" + protocolVersion + "|" + canonicalJson(manifest)))`
//! over the whole manifest.

use crate::json::canonical::{self, JsString, Value};
use crate::spec::model::ManifestReplayId;
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The only protocol version this implementation speaks.
pub const SUPPORTED_PROTOCOL_VERSION: &str = crate::spec::consts::PROTOCOL_VERSION;

/// One validation error, as the API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// JSON pointer into the manifest (`""` for the manifest itself).
    pub instance_path: String,
    /// The message; may hold unpaired surrogates when it quotes the request.
    pub message: JsString,
}

impl ManifestError {
    fn new(path: &str, message: impl Into<JsString>) -> Self {
        ManifestError {
            instance_path: path.to_owned(),
            message: message.into(),
        }
    }
}

/// The outcome of validating one request body.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationOutcome {
    /// Present exactly when the manifest is valid and the protocol version supported.
    pub replay_id: Option<ManifestReplayId>,
    pub errors: Vec<ManifestError>,
}

impl ValidationOutcome {
    pub fn valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// The validate-manifest response body:
    /// `{"valid":…,"replayId":…(when valid),"errors":[{"instancePath":…,"message":…}]}`.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(128);
        self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if self.valid() {
            b"{\"valid\":true"
        } else {
            b"{\"valid\":false"
        });
        if let Some(id) = &self.replay_id {
            out.extend_from_slice(b",\"replayId\":\"");
            out.extend_from_slice(id.as_str().as_bytes());
            out.push(b'"');
        }
        out.extend_from_slice(b",\"errors\":");
        write_errors(out, &self.errors);
        out.push(b'}');
    }
}

/// Write `[{"instancePath":…,"message":…},…]`.
pub fn write_errors(out: &mut Vec<u8>, errors: &[ManifestError]) {
    out.push(b'[');
    for (i, e) in errors.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"instancePath\":");
        canonical::write_json_string_bytes(out, &JsString::from(e.instance_path.as_str()));
        out.extend_from_slice(b",\"message\":");
        canonical::write_json_string_bytes(out, &masked(&e.message));
        out.push(b'}');
    }
    out.push(b']');
}

/// A message that quotes the request (an unsupported `protocolVersion`) with any secret in
/// it masked, as every front end shows quoted text.
fn masked(message: &JsString) -> std::borrow::Cow<'_, JsString> {
    use std::borrow::Cow;
    let lossy;
    let text = match message.as_str() {
        Some(s) => s,
        None => {
            lossy = message.to_string_lossy();
            &lossy
        }
    };
    match crate::secrets::redact(text) {
        Cow::Borrowed(_) => Cow::Borrowed(message),
        Cow::Owned(m) => Cow::Owned(JsString::from(m)),
    }
}

/// Why a request body could not be validated at all.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// Not JSON (or not UTF-8, or nested too deep).
    Json(canonical::ParseError),
    /// JSON, but not an object.
    BodyNotObject,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Json(e) => write!(f, "invalid JSON: {e}"),
            RequestError::BodyNotObject => f.write_str(BODY_NOT_OBJECT),
        }
    }
}

/// The message for a request body that is JSON but not an object.
pub const BODY_NOT_OBJECT: &str = "request body must be a JSON object";

/// A parsed request `{protocolVersion?, manifest}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestRequest {
    body: Value,
}

impl ManifestRequest {
    /// Parse a request body (JSON.parse semantics, default depth limit).
    pub fn parse(bytes: &[u8]) -> Result<ManifestRequest, RequestError> {
        let body = canonical::parse(bytes).map_err(RequestError::Json)?;
        ManifestRequest::from_value(body)
    }

    pub fn from_value(body: Value) -> Result<ManifestRequest, RequestError> {
        if !body.is_object() {
            return Err(RequestError::BodyNotObject);
        }
        Ok(ManifestRequest { body })
    }

    /// The manifest, if present.
    pub fn manifest(&self) -> Option<&Value> {
        self.body.get("manifest")
    }

    /// The raw `protocolVersion` member (absent and `null` both mean the default).
    pub fn protocol_version_raw(&self) -> Option<&Value> {
        match self.body.get("protocolVersion") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    /// Validate: schema errors first (in the reference's order), then the protocol version.
    pub fn validate(&self) -> ValidationOutcome {
        let errors = validate_manifest(self.manifest());
        if !errors.is_empty() {
            return ValidationOutcome {
                replay_id: None,
                errors,
            };
        }
        match self.protocol_version() {
            Ok(pv) => {
                // Schema-valid implies the manifest is present.
                let id = self.manifest().map(|m| replay_id(pv, m));
                ValidationOutcome {
                    replay_id: id,
                    errors: Vec::new(),
                }
            }
            Err(e) => ValidationOutcome {
                replay_id: None,
                errors: vec![e],
            },
        }
    }

    /// The protocol version to use, or the unsupported-version error.
    pub fn protocol_version(&self) -> Result<&'static str, ManifestError> {
        match self.protocol_version_raw() {
            None => Ok(SUPPORTED_PROTOCOL_VERSION),
            Some(Value::String(s)) if s.as_str() == Some(SUPPORTED_PROTOCOL_VERSION) => {
                Ok(SUPPORTED_PROTOCOL_VERSION)
            }
            Some(v) => Err(unsupported_version(v)),
        }
    }
}

fn unsupported_version(v: &Value) -> ManifestError {
    let mut msg = JsString::from("Unsupported protocol version: ");
    msg.push_js(&v.js_to_string());
    msg.push_str(". Supported versions: ");
    msg.push_str(SUPPORTED_PROTOCOL_VERSION);
    ManifestError {
        instance_path: String::new(),
        message: msg,
    }
}

/// Validate a manifest against the v1 manifest schema, errors in the reference's order.
pub fn validate_manifest(manifest: Option<&Value>) -> Vec<ManifestError> {
    let Some(m @ Value::Object(_)) = manifest else {
        return vec![ManifestError::new("", "must be object")];
    };
    let mut errors = Vec::new();
    for name in ["artifact", "schema", "version"] {
        if m.get(name).is_none() {
            errors.push(ManifestError::new(
                "",
                format!("must have required property '{name}'"),
            ));
        }
    }
    for name in ["artifact", "schema"] {
        if let Some(v) = m.get(name) {
            if !matches!(v, Value::String(_)) {
                errors.push(ManifestError::new(&format!("/{name}"), "must be string"));
            }
        }
    }
    if let Some(v) = m.get("version") {
        if !matches!(v, Value::Number(n) if n.is_finite()) {
            errors.push(ManifestError::new("/version", "must be number"));
        }
    }
    if let Some(v) = m.get("metadata") {
        if !v.is_object() {
            errors.push(ManifestError::new("/metadata", "must be object"));
        }
    }
    errors
}

/// The manifest replay ID (43 characters, base64url without padding).
pub fn replay_id(protocol_version: &str, manifest: &Value) -> ManifestReplayId {
    let mut buf = Vec::with_capacity(160);
    buf.extend_from_slice(b"SMALL|");
    buf.extend_from_slice(protocol_version.as_bytes());
    buf.push(b'|');
    canonical::write_canonical(&mut buf, manifest);
    let digest = Sha256::digest(&buf);
    ManifestReplayId::from_encoded(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest))
}

/// Validate a raw request body: the response the API gives for it.
/// Bodies that are JSON but not objects give one error at `""`.
pub fn validate_request(bytes: &[u8]) -> Result<ValidationOutcome, canonical::ParseError> {
    match ManifestRequest::parse(bytes) {
        Ok(req) => Ok(req.validate()),
        Err(RequestError::BodyNotObject) => Ok(ValidationOutcome {
            replay_id: None,
            errors: vec![ManifestError::new("", BODY_NOT_OBJECT)],
        }),
        Err(RequestError::Json(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_example() {
        let out = validate_request(
            br#"{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":1}}"#,
        )
        .unwrap();
        assert_eq!(
            out.replay_id.as_ref().map(|r| r.as_str()),
            Some("LhKhb9nluL3hYsKIjYUQox1aLPTfL_-oefVbJLnA0XU")
        );
        assert_eq!(
            out.to_json(),
            r#"{"valid":true,"replayId":"LhKhb9nluL3hYsKIjYUQox1aLPTfL_-oefVbJLnA0XU","errors":[]}"#
        );
    }

    #[test]
    fn version_is_hashed() {
        let a =
            validate_request(br#"{"manifest":{"artifact":"a","schema":"s","version":1}}"#).unwrap();
        let b =
            validate_request(br#"{"manifest":{"artifact":"a","schema":"s","version":2}}"#).unwrap();
        assert_ne!(a.replay_id, b.replay_id);
    }

    #[test]
    fn error_order_and_version_coercion() {
        let out = validate_request(
            br#"{"protocolVersion":[1,[2]],"manifest":{"version":"1","metadata":[]}}"#,
        )
        .unwrap();
        let msgs: Vec<String> = out
            .errors
            .iter()
            .map(|e| format!("{}:{}", e.instance_path, e.message.to_string_lossy()))
            .collect();
        assert_eq!(
            msgs,
            [
                ":must have required property 'artifact'",
                ":must have required property 'schema'",
                "/version:must be number",
                "/metadata:must be object"
            ]
        );
        let out = validate_request(
            br#"{"protocolVersion":[1,[2]],"manifest":{"artifact":"a","schema":"s","version":1}}"#,
        )
        .unwrap();
        assert_eq!(
            out.errors[0].message.as_str(),
            Some("Unsupported protocol version: 1,2. Supported versions: 1.0.0")
        );
        assert!(out.replay_id.is_none());
    }
}
