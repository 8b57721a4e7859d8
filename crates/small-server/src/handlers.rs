//! Request handlers.

use crate::body::read_json_body;
use crate::error::ApiError;
use crate::AppState;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use small_core::api::manifest::{self, ManifestError, ManifestRequest, RequestError};
use small_core::json::canonical::{self, JsString, Value};
use small_store::replay::ReplayRecord;

/// The protocol contract, exactly as seed 001 shows it.
pub const PROTOCOL_DOCUMENT: &str = r#"{"protocol":"SMALL","version":"1.0.0","primitives":["Schema","Manifest","Artifact","Lineage","Lifecycle"],"rules":{"materializationRequiresValidation":true,"artifactsAreImmutable":true,"lineageIsAppendOnly":true,"lifecycleIsEventBased":true,"explicitContractsOnly":true},"schemas":{"schema":"/schemas/small/v1/schema.schema.json","manifest":"/schemas/small/v1/manifest.schema.json","artifact":"/schemas/small/v1/artifact.schema.json","lineage":"/schemas/small/v1/lineage.schema.json","lifecycle":"/schemas/small/v1/lifecycle.schema.json"}}"#;

/// Primitive schemas served under `/schemas/small/v1/`.
const PRIMITIVE_SCHEMAS: [(&str, &str); 5] = [
    ("schema", include_str!("../schemas/schema.schema.json")),
    ("manifest", include_str!("../schemas/manifest.schema.json")),
    ("artifact", include_str!("../schemas/artifact.schema.json")),
    ("lineage", include_str!("../schemas/lineage.schema.json")),
    (
        "lifecycle",
        include_str!("../schemas/lifecycle.schema.json"),
    ),
];

/// The `.small/` artifact schemas the CLI validates with, from the same embedded set.
const ARTIFACT_SCHEMAS: [&str; 6] = [
    "intent",
    "constraints",
    "plan",
    "progress",
    "handoff",
    "workspace",
];

/// Every schema name served, in listing order.
pub fn schema_names() -> Vec<&'static str> {
    PRIMITIVE_SCHEMAS
        .iter()
        .map(|(n, _)| *n)
        .chain(ARTIFACT_SCHEMAS)
        .collect()
}

/// The JSON text of a served schema.
pub fn schema_text(name: &str) -> Option<&'static str> {
    let short = name.strip_suffix(".schema.json").unwrap_or(name);
    if let Some((_, text)) = PRIMITIVE_SCHEMAS.iter().find(|(n, _)| *n == short) {
        return Some(text);
    }
    if ARTIFACT_SCHEMAS.contains(&short) {
        return small_core::gates::schemas::embedded_text(short);
    }
    None
}

fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut resp = (status, body.into()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

pub async fn protocol() -> Response {
    json_response(StatusCode::OK, PROTOCOL_DOCUMENT)
}

pub async fn healthz() -> Response {
    json_response(StatusCode::OK, r#"{"status":"ok"}"#)
}

pub async fn openapi() -> Response {
    let mut resp = (StatusCode::OK, crate::openapi::document()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/yaml"),
    );
    resp
}

pub async fn schema(Path(name): Path<String>) -> Response {
    match schema_text(&name) {
        Some(text) => {
            let mut resp = json_response(StatusCode::OK, text);
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/schema+json"),
            );
            resp
        }
        None => ApiError::not_found(format!(
            "no schema named `{name}`; available: {}",
            schema_names().join(", ")
        ))
        .into_response(),
    }
}

pub async fn not_found(uri: Uri) -> Response {
    ApiError::not_found(format!("no route for {}", uri.path())).into_response()
}

/// Parse a request body into a manifest request, or the error response.
fn parse_request(bytes: &[u8]) -> Result<ManifestRequest, ApiError> {
    ManifestRequest::parse(bytes).map_err(|e| match e {
        RequestError::Json(pe) => ApiError::from_parse(&pe),
        RequestError::BodyNotObject => ApiError::new(
            StatusCode::BAD_REQUEST,
            "body_not_object",
            manifest::BODY_NOT_OBJECT,
        ),
    })
}

pub async fn validate_manifest(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let bytes = match read_json_body(&headers, body, state.body_limit).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let req = match parse_request(&bytes) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let outcome = req.validate();
    let mut out = Vec::with_capacity(128);
    outcome.write_json(&mut out);
    json_response(StatusCode::OK, out)
}

/// `POST /small/v1/replay`: validate, then return the replay's lineage and lifecycle,
/// materialised once per replay ID and identical on every later replay.
pub async fn replay(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let bytes = match read_json_body(&headers, body, state.body_limit).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let req = match parse_request(&bytes) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let mut outcome = req.validate();
    if outcome.valid() && req.protocol_version_raw().is_none() {
        outcome.replay_id = None;
        outcome.errors.push(ManifestError {
            instance_path: String::new(),
            message: JsString::from("must have required property 'protocolVersion'"),
        });
    }
    let (Some(replay_id), Some(m)) = (outcome.replay_id.clone(), req.manifest()) else {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(b"{\"valid\":false,\"errors\":");
        manifest::write_errors(&mut out, &outcome.errors);
        out.push(b'}');
        return json_response(StatusCode::UNPROCESSABLE_ENTITY, out);
    };
    let pv = req
        .protocol_version()
        .unwrap_or(manifest::SUPPORTED_PROTOCOL_VERSION);
    let candidate = materialise(replay_id.as_str(), pv, m);
    let store = state.replay.clone();
    let stored = match tokio::task::spawn_blocking(move || store.get_or_insert(candidate)).await {
        Ok(Ok((record, _created))) => record,
        Ok(Err(e)) => {
            tracing::error!(target: "small::server", error = %e, "replay store failed");
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                e.to_string(),
            )
            .into_response();
        }
        Err(e) => {
            return ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                e.to_string(),
            )
            .into_response()
        }
    };
    let mut out = Vec::with_capacity(256 + stored.lineage_json.len() + stored.lifecycle_json.len());
    out.extend_from_slice(b"{\"replayId\":\"");
    out.extend_from_slice(stored.replay_id.as_bytes());
    out.extend_from_slice(b"\",\"valid\":true,\"errors\":[],\"lineage\":");
    out.extend_from_slice(stored.lineage_json.as_bytes());
    out.extend_from_slice(b",\"lifecycle\":");
    out.extend_from_slice(stored.lifecycle_json.as_bytes());
    out.push(b'}');
    json_response(StatusCode::OK, out)
}

/// The records a first replay materialises, stamped with the current time.
pub fn materialise(replay_id: &str, protocol_version: &str, m: &Value) -> ReplayRecord {
    let at = now_rfc3339();
    let text = |key: &str| -> Vec<u8> {
        let mut out = Vec::new();
        match m.get(key) {
            Some(Value::String(s)) => canonical::write_json_string_bytes(&mut out, s),
            _ => out.extend_from_slice(b"null"),
        }
        out
    };
    let artifact = String::from_utf8(text("artifact")).unwrap_or_default();
    let schema = String::from_utf8(text("schema")).unwrap_or_default();
    let lineage_json = format!(
        r#"{{"artifact":{artifact},"derivedFrom":{schema},"generatedAt":"{at}","replayId":"{replay_id}"}}"#
    );
    let lifecycle_json = format!(
        r#"[{{"type":"validated","at":"{at}","replayId":"{replay_id}"}},{{"type":"materialized","at":"{at}","replayId":"{replay_id}"}}]"#
    );
    ReplayRecord {
        replay_id: replay_id.to_owned(),
        protocol_version: protocol_version.to_owned(),
        lineage_json,
        lifecycle_json,
        created_at: at,
    }
}

/// The current UTC time as RFC 3339 with milliseconds (`2026-01-01T00:00:00.000Z`).
fn now_rfc3339() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}
