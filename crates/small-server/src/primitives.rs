//! HTTP routes of the primitives store (seed 003) under `/small/v1/…`.
//!
//! | method | path | what |
//! |---|---|---|
//! | POST | /small/v1/schemas | register a JSON Schema (id = its `$id`) |
//! | GET | /small/v1/schemas | list (paginated: `after`, `limit`) |
//! | GET | /small/v1/schemas/{id} | the schema as stored |
//! | POST | /small/v1/artifacts | materialise a version (`version` optional: next one) |
//! | GET | /small/v1/artifacts | latest version of each artifact (paginated) |
//! | GET | /small/v1/artifacts/{id} | latest version as stored |
//! | GET | /small/v1/artifacts/{id}/versions | versions (paginated) |
//! | GET, PUT | /small/v1/artifacts/{id}/versions/{version} | one version |
//! | POST | /small/v1/manifests | store a manifest version |
//! | GET | /small/v1/manifests, /{id}, /{id}/versions, /{id}/versions/{version} | as artifacts |
//! | PUT | /small/v1/manifests/{id}/versions/{version} | one version |
//! | POST | /small/v1/lineage | append a lineage record |
//! | GET | /small/v1/lineage/{id} | the lineage records of an artifact |
//! | GET | /small/v1/lineage/{id}/ancestors, /descendants | graph query (`depth`) |
//! | POST | /small/v1/lifecycle | store a whole stream `{artifactId, events}` (prefix rule) |
//! | GET | /small/v1/lifecycle/{id} | the stream as `{artifactId, events}` |
//! | POST | /small/v1/lifecycle/{id}/events | append one event |
//!
//! Stored records are returned byte for byte as stored (canonical JSON), with their hash in
//! `ETag` and `X-Small-Sha256`. Writes answer 201 when they created something and 200 when an
//! identical record already existed. Errors use the server's one JSON error shape; refused
//! records (422) add `errors: [{path, message}]`.

use crate::body::read_json_body;
use crate::error::{error_body, ApiError};
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};
use small_store::{Direction, Listing, Page, PrimitiveStore, Put, Record, StoreError};
use std::sync::Arc;

#[derive(Clone)]
struct Ctx {
    store: Arc<dyn PrimitiveStore>,
    body_limit: usize,
}

/// The primitives routes with the server's default body limit.
pub fn router(store: Arc<dyn PrimitiveStore>) -> Router {
    router_with_limit(store, crate::DEFAULT_BODY_LIMIT)
}

/// The primitives routes, reading request bodies of at most `body_limit` bytes.
pub fn router_with_limit(store: Arc<dyn PrimitiveStore>, body_limit: usize) -> Router {
    let ctx = Ctx { store, body_limit };
    Router::new()
        .route("/small/v1/schemas", post(register_schema).get(list_schemas))
        .route("/small/v1/schemas/{id}", get(get_schema))
        .route(
            "/small/v1/artifacts",
            post(post_artifact).get(list_artifacts),
        )
        .route("/small/v1/artifacts/{id}", get(get_artifact))
        .route(
            "/small/v1/artifacts/{id}/versions",
            get(list_artifact_versions),
        )
        .route(
            "/small/v1/artifacts/{id}/versions/{version}",
            get(get_artifact_version).put(put_artifact_version),
        )
        .route(
            "/small/v1/manifests",
            post(post_manifest).get(list_manifests),
        )
        .route("/small/v1/manifests/{id}", get(get_manifest))
        .route(
            "/small/v1/manifests/{id}/versions",
            get(list_manifest_versions),
        )
        .route(
            "/small/v1/manifests/{id}/versions/{version}",
            get(get_manifest_version).put(put_manifest_version),
        )
        .route("/small/v1/lineage", post(post_lineage))
        .route("/small/v1/lineage/{id}", get(get_lineage))
        .route("/small/v1/lineage/{id}/ancestors", get(ancestors))
        .route("/small/v1/lineage/{id}/descendants", get(descendants))
        .route("/small/v1/lifecycle", post(post_lifecycle))
        .route("/small/v1/lifecycle/{id}", get(get_lifecycle))
        .route("/small/v1/lifecycle/{id}/events", post(post_event))
        .with_state(ctx)
}

// ---------------------------------------------------------------------------------------------
// Plumbing

/// An error response: the server's error shape, plus `errors` for refused records.
struct Failure(Box<Response>);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        *self.0
    }
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure(Box::new(e.into_response()))
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        let status = match &e {
            StoreError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            StoreError::NotFound(_) => StatusCode::NOT_FOUND,
            StoreError::Conflict(_) => StatusCode::CONFLICT,
            StoreError::Backend(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        let code = match &e {
            StoreError::Backend(_) => "store_unavailable",
            other => other.code(),
        };
        let message = match &e {
            StoreError::Invalid { message, .. } => message.clone(),
            other => other.to_string(),
        };
        if let StoreError::Backend(m) = &e {
            tracing::error!(target: "small::store", error = %m, "store operation failed");
        }
        let mut body = error_body(status, code, &message, None);
        if let StoreError::Invalid { errors, .. } = &e {
            body.pop();
            body.push_str(",\"errors\":");
            // Schema errors quote the submitted values: masked like every quoted text.
            let mut list = serde_json::to_value(errors).unwrap_or_default();
            small_core::ops::secrets::redact_json(&mut list);
            body.push_str(&serde_json::to_string(&list).unwrap_or_else(|_| "[]".into()));
            body.push('}');
        }
        Failure(Box::new(json_response(status, body)))
    }
}

type Reply = Result<Response, Failure>;

fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut resp = (status, body.into()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// Runs a blocking store call off the async workers.
async fn blocking<R: Send + 'static>(
    ctx: &Ctx,
    f: impl FnOnce(&dyn PrimitiveStore) -> Result<R, StoreError> + Send + 'static,
) -> Result<R, Failure> {
    let store = ctx.store.clone();
    match tokio::task::spawn_blocking(move || f(&*store)).await {
        Ok(r) => r.map_err(Failure::from),
        Err(e) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            format!("store task failed: {e}"),
        )
        .into()),
    }
}

async fn read_body(ctx: &Ctx, headers: &HeaderMap, body: Body) -> Result<Value, Failure> {
    let bytes = read_json_body(headers, body, ctx.body_limit).await?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => Ok(v),
        Err(serde_err) => match small_core::ops::formats::canonical::parse(&bytes) {
            Err(e) => Err(ApiError::from_parse(&e).into()),
            Ok(_) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("request body cannot be stored: {serde_err}"),
            )
            .into()),
        },
    }
}

/// A stored record, byte for byte, with its hash and version in headers.
fn record_response(rec: &Record) -> Response {
    let mut resp = json_response(StatusCode::OK, rec.json.clone());
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!("\"sha256:{}\"", rec.sha256)) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&rec.sha256) {
        h.insert("x-small-sha256", v);
    }
    if let Ok(v) = HeaderValue::from_str(&rec.version.to_string()) {
        h.insert("x-small-version", v);
    }
    resp
}

fn summary(rec: &Record) -> Value {
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

fn put_response(put: &Put) -> Response {
    let mut v = summary(&put.record);
    v["created"] = json!(put.created);
    let status = if put.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    json_response(status, v.to_string())
}

fn listing_response(l: &Listing) -> Response {
    let items: Vec<Value> = l.items.iter().map(summary).collect();
    let mut v = json!({ "items": items });
    if let Some(n) = &l.next {
        v["next"] = json!(n);
    }
    json_response(StatusCode::OK, v.to_string())
}

#[derive(Deserialize)]
struct PageQuery {
    after: Option<String>,
    limit: Option<String>,
}

impl PageQuery {
    fn page(&self) -> Result<Page, Failure> {
        let limit = match &self.limit {
            None => None,
            Some(s) => match s.parse::<u32>() {
                Ok(n) if (1..=small_store::model::MAX_PAGE).contains(&n) => Some(n),
                _ => {
                    return Err(ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "bad_request",
                        format!(
                            "`limit` must be an integer from 1 to {}",
                            small_store::model::MAX_PAGE
                        ),
                    )
                    .into())
                }
            },
        };
        if let Some(a) = &self.after {
            if !small_store::model::valid_id(a) {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    "`after` must be the `next` cursor of a previous page",
                )
                .into());
            }
        }
        Ok(Page {
            after: self.after.clone(),
            limit,
        })
    }
}

fn parse_version(s: &str) -> Result<u64, Failure> {
    match s.parse::<u64>() {
        Ok(n) if n >= 1 && n <= i64::MAX as u64 => Ok(n),
        _ => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("`{s}` is not a version (an integer >= 1)"),
        )
        .into()),
    }
}

fn not_found(what: String) -> Failure {
    ApiError::not_found(what).into()
}

// ---------------------------------------------------------------------------------------------
// Schemas

async fn register_schema(State(ctx): State<Ctx>, headers: HeaderMap, body: Body) -> Reply {
    let v = read_body(&ctx, &headers, body).await?;
    let put = blocking(&ctx, move |s| s.register_schema(&v)).await?;
    Ok(put_response(&put))
}

async fn list_schemas(State(ctx): State<Ctx>, Query(q): Query<PageQuery>) -> Reply {
    let page = q.page()?;
    let l = blocking(&ctx, move |s| s.list_schemas(&page)).await?;
    Ok(listing_response(&l))
}

async fn get_schema(State(ctx): State<Ctx>, Path(id): Path<String>) -> Reply {
    let key = id.clone();
    match blocking(&ctx, move |s| s.get_schema(&key)).await? {
        Some(rec) => Ok(record_response(&rec)),
        None => Err(not_found(format!("schema `{id}` is not registered"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Artifacts and manifests

#[derive(Clone, Copy)]
enum Kind {
    Artifact,
    Manifest,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Artifact => "artifact",
            Kind::Manifest => "manifest",
        }
    }
}

fn put_kind(s: &dyn PrimitiveStore, kind: Kind, v: &Value) -> Result<Put, StoreError> {
    match kind {
        Kind::Artifact => s.put_artifact(v),
        Kind::Manifest => s.put_manifest(v),
    }
}

fn get_kind(
    s: &dyn PrimitiveStore,
    kind: Kind,
    id: &str,
    version: Option<u64>,
) -> Result<Option<Record>, StoreError> {
    match kind {
        Kind::Artifact => s.get_artifact(id, version),
        Kind::Manifest => s.get_manifest(id, version),
    }
}

async fn post_kind(ctx: Ctx, kind: Kind, headers: HeaderMap, body: Body) -> Reply {
    let v = read_body(&ctx, &headers, body).await?;
    let put = blocking(&ctx, move |s| put_kind(s, kind, &v)).await?;
    Ok(put_response(&put))
}

async fn put_version(
    ctx: Ctx,
    kind: Kind,
    id: String,
    version: String,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    let version = parse_version(&version)?;
    let mut v = read_body(&ctx, &headers, body).await?;
    if let Some(m) = v.as_object_mut() {
        match m.get("id") {
            None => {
                m.insert("id".into(), json!(id));
            }
            Some(Value::String(s)) if *s == id => {}
            Some(_) => {
                return Err(
                    StoreError::field("/id", format!("`id` must match the path (`{id}`)")).into(),
                )
            }
        }
        match m.get("version") {
            None => {
                m.insert("version".into(), json!(version));
            }
            Some(x) if x.as_u64() == Some(version) => {}
            Some(_) => {
                return Err(StoreError::field(
                    "/version",
                    format!("`version` must match the path ({version})"),
                )
                .into())
            }
        }
    }
    let put = blocking(&ctx, move |s| put_kind(s, kind, &v)).await?;
    Ok(put_response(&put))
}

async fn get_one(ctx: Ctx, kind: Kind, id: String, version: Option<u64>) -> Reply {
    let key = id.clone();
    match blocking(&ctx, move |s| get_kind(s, kind, &key, version)).await? {
        Some(rec) => Ok(record_response(&rec)),
        None => Err(not_found(match version {
            Some(v) => format!("{} `{id}` has no version {v}", kind.noun()),
            None => format!("{} `{id}` does not exist", kind.noun()),
        })),
    }
}

async fn list_kind(ctx: Ctx, kind: Kind, q: PageQuery) -> Reply {
    let page = q.page()?;
    let l = blocking(&ctx, move |s| match kind {
        Kind::Artifact => s.list_artifacts(&page),
        Kind::Manifest => s.list_manifests(&page),
    })
    .await?;
    Ok(listing_response(&l))
}

async fn list_versions(ctx: Ctx, kind: Kind, id: String, q: PageQuery) -> Reply {
    let page = q.page()?;
    if let Some(a) = &page.after {
        parse_version(a).or_else(|f| if a == "0" { Ok(0) } else { Err(f) })?;
    }
    let l = blocking(&ctx, move |s| match kind {
        Kind::Artifact => s.list_artifact_versions(&id, &page),
        Kind::Manifest => s.list_manifest_versions(&id, &page),
    })
    .await?;
    Ok(listing_response(&l))
}

async fn post_artifact(State(ctx): State<Ctx>, headers: HeaderMap, body: Body) -> Reply {
    post_kind(ctx, Kind::Artifact, headers, body).await
}
async fn list_artifacts(State(ctx): State<Ctx>, Query(q): Query<PageQuery>) -> Reply {
    list_kind(ctx, Kind::Artifact, q).await
}
async fn get_artifact(State(ctx): State<Ctx>, Path(id): Path<String>) -> Reply {
    get_one(ctx, Kind::Artifact, id, None).await
}
async fn list_artifact_versions(
    State(ctx): State<Ctx>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Reply {
    list_versions(ctx, Kind::Artifact, id, q).await
}
async fn get_artifact_version(
    State(ctx): State<Ctx>,
    Path((id, version)): Path<(String, String)>,
) -> Reply {
    let v = parse_version(&version)?;
    get_one(ctx, Kind::Artifact, id, Some(v)).await
}
async fn put_artifact_version(
    State(ctx): State<Ctx>,
    Path((id, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    put_version(ctx, Kind::Artifact, id, version, headers, body).await
}
async fn post_manifest(State(ctx): State<Ctx>, headers: HeaderMap, body: Body) -> Reply {
    post_kind(ctx, Kind::Manifest, headers, body).await
}
async fn list_manifests(State(ctx): State<Ctx>, Query(q): Query<PageQuery>) -> Reply {
    list_kind(ctx, Kind::Manifest, q).await
}
async fn get_manifest(State(ctx): State<Ctx>, Path(id): Path<String>) -> Reply {
    get_one(ctx, Kind::Manifest, id, None).await
}
async fn list_manifest_versions(
    State(ctx): State<Ctx>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Reply {
    list_versions(ctx, Kind::Manifest, id, q).await
}
async fn get_manifest_version(
    State(ctx): State<Ctx>,
    Path((id, version)): Path<(String, String)>,
) -> Reply {
    let v = parse_version(&version)?;
    get_one(ctx, Kind::Manifest, id, Some(v)).await
}
async fn put_manifest_version(
    State(ctx): State<Ctx>,
    Path((id, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    put_version(ctx, Kind::Manifest, id, version, headers, body).await
}

// ---------------------------------------------------------------------------------------------
// Lineage

async fn post_lineage(State(ctx): State<Ctx>, headers: HeaderMap, body: Body) -> Reply {
    let v = read_body(&ctx, &headers, body).await?;
    let put = blocking(&ctx, move |s| s.append_lineage(&v)).await?;
    let v = json!({
        "artifactId": put.record.id, "seq": put.record.version, "sha256": put.record.sha256,
        "storedAt": put.record.stored_at, "created": put.created
    });
    Ok(json_response(
        if put.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        v.to_string(),
    ))
}

async fn get_lineage(State(ctx): State<Ctx>, Path(id): Path<String>) -> Reply {
    let key = id.clone();
    let records = blocking(&ctx, move |s| s.get_lineage(&key)).await?;
    if records.is_empty() {
        return Err(not_found(format!("no lineage is recorded for `{id}`")));
    }
    let mut out = String::from("{\"artifactId\":");
    out.push_str(&serde_json::to_string(&id).unwrap_or_default());
    out.push_str(",\"records\":[");
    for (i, r) in records.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&r.json);
    }
    out.push_str("]}");
    Ok(json_response(StatusCode::OK, out))
}

#[derive(Deserialize)]
struct DepthQuery {
    depth: Option<String>,
}

async fn graph(ctx: Ctx, id: String, direction: Direction, q: DepthQuery) -> Reply {
    let max = small_store::model::MAX_DEPTH;
    let depth = match q.depth.as_deref() {
        None => 10,
        Some(s) => match s.parse::<u32>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    format!("`depth` must be an integer from 1 to {max}"),
                )
                .into())
            }
        },
    };
    let g = blocking(&ctx, move |s| s.lineage_graph(&id, direction, depth)).await?;
    Ok(json_response(
        StatusCode::OK,
        serde_json::to_string(&g).unwrap_or_default(),
    ))
}

async fn ancestors(
    State(ctx): State<Ctx>,
    Path(id): Path<String>,
    Query(q): Query<DepthQuery>,
) -> Reply {
    graph(ctx, id, Direction::Ancestors, q).await
}
async fn descendants(
    State(ctx): State<Ctx>,
    Path(id): Path<String>,
    Query(q): Query<DepthQuery>,
) -> Reply {
    graph(ctx, id, Direction::Descendants, q).await
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

fn event_put(put: &Put) -> Value {
    json!({
        "artifactId": put.record.id, "seq": put.record.version, "sha256": put.record.sha256,
        "storedAt": put.record.stored_at, "created": put.created
    })
}

async fn post_event(
    State(ctx): State<Ctx>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    let v = read_body(&ctx, &headers, body).await?;
    let put = blocking(&ctx, move |s| s.append_lifecycle(&id, &v)).await?;
    Ok(json_response(
        if put.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        event_put(&put).to_string(),
    ))
}

async fn post_lifecycle(State(ctx): State<Ctx>, headers: HeaderMap, body: Body) -> Reply {
    let v = read_body(&ctx, &headers, body).await?;
    let puts = blocking(&ctx, move |s| s.put_lifecycle(&v)).await?;
    let appended = puts.iter().filter(|p| p.created).count();
    let id = puts
        .first()
        .map(|p| p.record.id.clone())
        .unwrap_or_default();
    let events: Vec<Value> = puts.iter().map(event_put).collect();
    let status = if appended > 0 {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(
        status,
        json!({"artifactId": id, "appended": appended, "events": events}).to_string(),
    ))
}

async fn get_lifecycle(State(ctx): State<Ctx>, Path(id): Path<String>) -> Reply {
    let key = id.clone();
    let events = blocking(&ctx, move |s| s.get_lifecycle(&key)).await?;
    if events.is_empty() {
        return Err(not_found(format!(
            "no lifecycle events are recorded for `{id}`"
        )));
    }
    Ok(json_response(
        StatusCode::OK,
        small_store::lifecycle_document(&id, &events),
    ))
}
