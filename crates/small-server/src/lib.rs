//! The SMALL v1 HTTP API (seed 001), served for real.
//!
//! - `GET /protocol/small/v1`: the protocol contract
//! - `GET /schemas/small/v1/{name}` (`{name}.schema.json` too): primitive and artifact schemas
//! - `POST /small/v1/validate-manifest`, `POST /small/v1/replay`
//! - `GET /openapi/small.v1.yaml`: the OpenAPI document describing all of it
//! - `GET /healthz`
//!
//! Every error is one JSON shape (see [`error`]). [`router`] builds the application;
//! [`bind`] + [`Server::run`] (or [`serve`]) run it with timeouts, access logs and graceful
//! shutdown.

pub mod body;
mod cache;
pub mod conn;
pub mod error;
mod handlers;
pub mod logging;
pub mod openapi;
pub mod primitives;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use small_store::replay::{MemoryReplayStore, ReplayStore, SqliteReplayStore};
use small_store::PrimitiveStore;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use error::ApiError;
pub use logging::{init_logging, LogFormat};

/// Default listen address (the one seed 001 uses).
pub const DEFAULT_ADDR: &str = "127.0.0.1:5173";
/// Default request body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;
/// Default time a request may take, body included.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default store file (shared with the primitives store).
pub use small_store::DEFAULT_STORE_PATH;

/// Where replay records and primitives are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A throwaway store: replay records in memory, primitives in a temporary SQLite file
    /// removed when the server stops.
    Memory,
    /// An SQLite file (created with its directory when missing), shared by both stores.
    Sqlite(PathBuf),
    /// A PostgreSQL database (`postgres://…`) for the primitives store.
    Postgres(String),
}

impl StoreLocation {
    /// `memory`, a `postgres://` / `postgresql://` URL, or a file path.
    pub fn parse(s: &str) -> StoreLocation {
        if s == "memory" || s == ":memory:" {
            StoreLocation::Memory
        } else if small_store::is_postgres_url(s) {
            StoreLocation::Postgres(s.to_owned())
        } else {
            StoreLocation::Sqlite(PathBuf::from(s))
        }
    }

    /// Open the replay store at this location.
    pub fn open_replay_store(&self) -> Result<Arc<dyn ReplayStore>, String> {
        match self {
            StoreLocation::Memory => Ok(Arc::new(MemoryReplayStore::new())),
            StoreLocation::Sqlite(path) => SqliteReplayStore::open(path)
                .map(|s| Arc::new(s) as Arc<dyn ReplayStore>)
                .map_err(|e| format!("cannot open the store {}: {e}", path.display())),
            StoreLocation::Postgres(url) => small_store::pg::PgReplayStore::connect(url)
                .map(|s| Arc::new(s) as Arc<dyn ReplayStore>)
                .map_err(|e| format!("cannot open the PostgreSQL store: {e}")),
        }
    }

    /// Open both stores. The returned guard keeps a temporary directory alive (memory store).
    pub fn open_all(&self) -> Result<OpenStores, String> {
        let replay = self.open_replay_store()?;
        let (primitives, tmp) = match self {
            StoreLocation::Memory => {
                let dir = tempfile::tempdir()
                    .map_err(|e| format!("cannot create a temporary store: {e}"))?;
                let path = dir.path().join("primitives.db");
                let store =
                    small_store::open(&path.to_string_lossy()).map_err(|e| e.to_string())?;
                (store, Some(dir))
            }
            StoreLocation::Sqlite(path) => (
                small_store::open(&path.to_string_lossy()).map_err(|e| e.to_string())?,
                None,
            ),
            StoreLocation::Postgres(url) => {
                (small_store::open(url).map_err(|e| e.to_string())?, None)
            }
        };
        Ok(OpenStores {
            replay,
            primitives,
            _tmp: tmp,
        })
    }
}

/// The opened stores of a server.
pub struct OpenStores {
    pub replay: Arc<dyn ReplayStore>,
    pub primitives: Arc<dyn PrimitiveStore>,
    _tmp: Option<tempfile::TempDir>,
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub addr: String,
    pub store: StoreLocation,
    pub body_limit: usize,
    pub request_timeout: Duration,
    /// Connection limits: header and idle timeouts, connection cap, header size, shutdown
    /// deadline.
    pub limits: conn::Limits,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: DEFAULT_ADDR.into(),
            store: StoreLocation::Sqlite(PathBuf::from(DEFAULT_STORE_PATH)),
            body_limit: DEFAULT_BODY_LIMIT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            limits: conn::Limits::default(),
        }
    }
}

/// Shared state of the application.
#[derive(Clone)]
pub struct AppState {
    pub replay: Arc<dyn ReplayStore>,
    /// The primitives store; its routes are served when present.
    pub primitives: Option<Arc<dyn PrimitiveStore>>,
    pub body_limit: usize,
    pub request_timeout: Duration,
    /// Replay responses already served (records never change once stored).
    pub replay_cache: Arc<cache::ReplayCache>,
}

impl AppState {
    pub fn new(replay: Arc<dyn ReplayStore>) -> Self {
        AppState {
            replay,
            primitives: None,
            body_limit: DEFAULT_BODY_LIMIT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            replay_cache: Arc::default(),
        }
    }
}

/// The whole application: routes, JSON errors, request timeout and access log.
pub fn router(state: AppState) -> Router {
    let timeout = state.request_timeout;
    let prims = state
        .primitives
        .clone()
        .map(|p| primitives::router_with_limit(p, state.body_limit));
    let mut api = Router::new()
        .route("/protocol/small/v1", get(handlers::protocol))
        .route("/schemas/small/v1/{name}", get(handlers::schema))
        .route(
            "/small/v1/validate-manifest",
            post(handlers::validate_manifest),
        )
        .route("/small/v1/replay", post(handlers::replay))
        .route("/openapi/small.v1.yaml", get(handlers::openapi))
        .route("/healthz", get(handlers::healthz))
        .fallback(handlers::not_found)
        .with_state(state);
    if let Some(p) = prims {
        api = api.merge(p);
    }
    framed(api, timeout)
}

/// `api` inside the frame every request goes through. The frame wraps the whole router (not
/// each route), so it sees responses as the client will, `Allow` header of a 405 included.
/// Inside it, a panic in a handler (a bug: no request may cause one) becomes a JSON 500 for
/// that request alone; the server goes on.
pub fn framed(api: Router, timeout: Duration) -> Router {
    Router::new()
        .fallback_service(api)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            panic_response,
        ))
        .layer(middleware::from_fn_with_state(timeout, frame))
}

/// The response to a request whose handler panicked. The panic's message is logged, never
/// sent: it may quote the request.
fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(
        target: "small::server",
        panic = %small_core::ops::secrets::redact(&message),
        "a request handler panicked (a bug in small)"
    );
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        "the server hit an internal error while handling this request; it is still running",
    )
    .into_response()
}

/// The one middleware around every request: the request timeout (JSON 408), the JSON error
/// shape for errors produced outside our handlers (405 from routing keeps its `Allow`), and
/// one access log line.
async fn frame(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let resp = match tokio::time::timeout(limit, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!("the request took longer than {} ms", limit.as_millis()),
        )
        .into_response(),
    };
    let resp = json_error_shape(resp, &method, &path);
    tracing::info!(
        target: "small::access",
        method = %method,
        path = %small_core::ops::secrets::redact(&path),
        status = resp.status().as_u16(),
        micros = start.elapsed().as_micros() as u64,
        "request"
    );
    resp
}

/// Give an error response that is not JSON the one JSON error shape, keeping its headers.
fn json_error_shape(resp: Response, method: &axum::http::Method, path: &str) -> Response {
    let status = resp.status();
    if status.as_u16() < 400 {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return resp;
    }
    let (mut parts, _) = resp.into_parts();
    let message = match status {
        StatusCode::METHOD_NOT_ALLOWED => {
            let allow = parts
                .headers
                .get(header::ALLOW)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            format!("{method} is not allowed on {path}; allowed: {allow}")
        }
        _ => status.canonical_reason().unwrap_or("error").to_owned(),
    };
    let body = error::error_body(status, error::code_for_status(status), &message, None);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// A bound, not yet running server.
pub struct Server {
    listener: tokio::net::TcpListener,
    app: Router,
    store: String,
    limits: conn::Limits,
    _stores: OpenStores,
}

impl Server {
    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve until `shutdown` completes, then finish the requests in flight.
    pub async fn run<F>(self, shutdown: F) -> std::io::Result<()>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        tracing::info!(target: "small::server", addr = %self.listener.local_addr()?, store = %self.store, "listening");
        conn::run(self.listener, self.app, self.limits, shutdown).await;
        tracing::info!(target: "small::server", "stopped");
        Ok(())
    }
}

/// Open the store and bind the listener.
pub async fn bind(config: &ServerConfig) -> Result<Server, String> {
    let stores = config.store.open_all()?;
    let store = stores.replay.describe();
    let state = AppState {
        replay: stores.replay.clone(),
        primitives: Some(stores.primitives.clone()),
        body_limit: config.body_limit,
        request_timeout: config.request_timeout,
        replay_cache: Arc::default(),
    };
    let app = router(state);
    let listener = tokio::net::TcpListener::bind(&config.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    Ok(Server {
        listener,
        app,
        store,
        limits: config.limits,
        _stores: stores,
    })
}

/// Bind and serve until SIGINT or SIGTERM.
pub async fn serve(config: ServerConfig) -> Result<(), String> {
    let server = bind(&config).await?;
    server
        .run(shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!(target: "small::server", "shutdown signal received; finishing requests in flight");
}
