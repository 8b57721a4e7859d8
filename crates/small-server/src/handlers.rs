//! Request handlers.

use crate::body::read_json_body;
use crate::error::ApiError;
use crate::AppState;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use small_core::ops::api::replay;
use small_core::ops::api::{self, ManifestRequest, RequestError};
use small_core::ops::formats::ArtifactKind;
use small_store::replay::{ReplayRecord, ReplayStoreError};

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
fn artifact_schemas() -> impl Iterator<Item = &'static str> {
    ArtifactKind::ALL
        .into_iter()
        .map(ArtifactKind::name)
        .chain(["workspace"])
}

/// Every schema name served, in listing order.
pub fn schema_names() -> Vec<&'static str> {
    PRIMITIVE_SCHEMAS
        .iter()
        .map(|(n, _)| *n)
        .chain(artifact_schemas())
        .collect()
}

/// The JSON text of a served schema.
pub fn schema_text(name: &str) -> Option<&'static str> {
    let short = name.strip_suffix(".schema.json").unwrap_or(name);
    if let Some((_, text)) = PRIMITIVE_SCHEMAS.iter().find(|(n, _)| *n == short) {
        return Some(text);
    }
    if artifact_schemas().any(|n| n == short) {
        return small_core::ops::gate::embedded_text(short);
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
    json_response(StatusCode::OK, replay::protocol_document())
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
            api::BODY_NOT_OBJECT,
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
    let replayable = match replay::check(&req) {
        Ok(r) => r,
        Err(errors) => {
            let mut out = Vec::with_capacity(128);
            out.extend_from_slice(b"{\"valid\":false,\"errors\":");
            api::write_errors(&mut out, &errors);
            out.push(b'}');
            return json_response(StatusCode::UNPROCESSABLE_ENTITY, out);
        }
    };
    let Some(m) = req.manifest() else {
        return ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "valid manifest without a body",
        )
        .into_response();
    };
    let candidate = record(&replayable, replay::materialise(&replayable.replay_id, m));
    let stored = match store_replay(&state, candidate).await {
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

/// Stores a first replay (or reads the stored one). A store that queues writes (PostgreSQL's
/// group commit) answers through a channel, so the request waits without holding a thread;
/// the others run on a blocking thread.
async fn store_replay(
    state: &AppState,
    candidate: ReplayRecord,
) -> Result<Result<(ReplayRecord, bool), ReplayStoreError>, String> {
    let store = state.replay.clone();
    if store.queues_writes() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        store.get_or_insert_queued(
            candidate,
            Box::new(move |answer| {
                let _ = tx.send(answer);
            }),
        );
        return rx
            .await
            .map_err(|_| "the replay store dropped the request".to_string());
    }
    tokio::task::spawn_blocking(move || store.get_or_insert(candidate))
        .await
        .map_err(|e| e.to_string())
}

/// The store's record of a first replay.
pub fn record(r: &replay::Replayable, m: replay::Materialised) -> ReplayRecord {
    ReplayRecord {
        replay_id: r.replay_id.to_string(),
        protocol_version: r.protocol_version.to_owned(),
        lineage_json: m.lineage.to_json(),
        lifecycle_json: replay::lifecycle_json(&m.lifecycle),
        created_at: m.at,
    }
}
