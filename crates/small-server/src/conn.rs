//! The accept loop: every connection is bounded in time and memory, the number of connections
//! is capped, and shutdown has a deadline.
//!
//! * **Request heads** must arrive whole within [`Limits::header_timeout`] of their first
//!   byte, and be at most [`Limits::max_header_bytes`] (larger heads get 431).
//! * **Idle connections** (no request in progress) are closed after [`Limits::idle_timeout`]
//!   without traffic.
//! * **At most [`Limits::max_connections`]** are served at once. Beyond that, up to
//!   [`OVERFLOW_SLOTS`] more are answered one request each with `503 too_many_connections`
//!   (`Retry-After: 1`), except `GET /healthz`, which is always answered, and then closed;
//!   connections beyond those are closed at once.
//! * **Shutdown**: new connections stop; idle connections close; requests in flight get
//!   [`Limits::shutdown_timeout`] to finish, after which the server stops anyway.
//! * A client that half-closes its side after pipelining requests still gets every answer.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// Connections beyond the cap that still get an answer (503, or /healthz) before closing.
pub const OVERFLOW_SLOTS: usize = 64;

/// Connection limits of a server (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub max_header_bytes: usize,
    pub shutdown_timeout: Duration,
}

pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// hyper's smallest read buffer.
const MIN_HEADER_BYTES: usize = 8192;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }
}

const NONE: u64 = u64::MAX;

/// What one connection is doing, for its watchdog.
struct Activity {
    start: Instant,
    /// Milliseconds since `start` of the last byte read or response finished.
    last_io: AtomicU64,
    /// When the first byte of a request head arrived (NONE: no head in progress).
    head_started: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Arc<Self> {
        Arc::new(Activity {
            start: Instant::now(),
            last_io: AtomicU64::new(0),
            head_started: AtomicU64::new(NONE),
            in_flight: AtomicUsize::new(0),
        })
    }
    fn now(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }
    fn on_read(&self) {
        let now = self.now();
        self.last_io.store(now, Ordering::Relaxed);
        if self.in_flight.load(Ordering::Relaxed) == 0 {
            let _ =
                self.head_started
                    .compare_exchange(NONE, now, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
    fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.head_started.store(NONE, Ordering::Relaxed);
    }
    fn request_finished(&self) {
        self.last_io.store(self.now(), Ordering::Relaxed);
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
    /// Why the connection must close now, if it must.
    fn expired(&self, limits: &Limits) -> Option<&'static str> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let now = self.now();
        let head = self.head_started.load(Ordering::Relaxed);
        if head != NONE {
            (now.saturating_sub(head) > limits.header_timeout.as_millis() as u64)
                .then_some("request head not received in time")
        } else {
            let last = self.last_io.load(Ordering::Relaxed);
            (now.saturating_sub(last) > limits.idle_timeout.as_millis() as u64).then_some("idle")
        }
    }
}

/// A TCP stream that reports reads to its [`Activity`].
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.on_read();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

fn http1(limits: &Limits) -> hyper::server::conn::http1::Builder {
    let mut b = hyper::server::conn::http1::Builder::new();
    b.timer(TokioTimer::new())
        .keep_alive(true)
        // A client that shuts down its side after its last request still gets the answer.
        .half_close(true)
        // Head and idle timeouts are ours (see `Activity`): hyper's own header timer (30 s by
        // default once a timer is set) would also end idle keep-alive connections.
        .header_read_timeout(None)
        .max_header_size(limits.max_header_bytes.max(MIN_HEADER_BYTES))
        .max_buf_size(limits.max_header_bytes.max(MIN_HEADER_BYTES));
    b
}

/// Serve one connection within the cap.
async fn serve_one(
    tcp: TcpStream,
    app: Router,
    limits: Limits,
    watcher: hyper_util::server::graceful::Watcher,
) {
    let activity = Activity::new();
    let io = TokioIo::new(Watched {
        inner: tcp,
        activity: activity.clone(),
    });
    let act = activity.clone();
    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
        let app = app.clone();
        let act = act.clone();
        act.request_started();
        async move {
            let resp = app.oneshot(req.map(Body::new)).await;
            act.request_finished();
            resp
        }
    });
    let conn = watcher.watch(http1(&limits).serve_connection(io, svc));
    let tick = (limits.header_timeout.min(limits.idle_timeout) / 4)
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    let watchdog = async {
        loop {
            tokio::time::sleep(tick).await;
            if let Some(why) = activity.expired(&limits) {
                return why;
            }
        }
    };
    tokio::select! {
        r = conn => {
            if let Err(e) = r {
                tracing::debug!(target: "small::server", error = %e, "connection ended with an error");
            }
        }
        why = watchdog => {
            tracing::debug!(target: "small::server", reason = why, "connection closed");
        }
    }
}

/// Answer one request on a connection beyond the cap: /healthz as usual, else 503.
async fn serve_overflow(tcp: TcpStream, app: Router, limits: Limits) {
    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
        let app = app.clone();
        async move {
            if req.uri().path() == "/healthz" {
                return app.oneshot(req.map(Body::new)).await;
            }
            let body = crate::error::error_body(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_connections",
                "the server is at its connection limit; retry shortly",
                None,
            );
            let mut r = Response::new(Body::from(body));
            *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            Ok::<_, Infallible>(r)
        }
    });
    let mut b = http1(&limits);
    b.keep_alive(false)
        .header_read_timeout(limits.header_timeout.min(Duration::from_secs(2)));
    let conn = b.serve_connection(TokioIo::new(tcp), svc);
    let _ = tokio::time::timeout(limits.header_timeout + Duration::from_secs(1), conn).await;
}

/// Accept and serve until `shutdown` completes, then drain within the deadline.
pub async fn run<F>(listener: TcpListener, app: Router, limits: Limits, shutdown: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let overflow = Arc::new(Semaphore::new(OVERFLOW_SLOTS));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, _peer) = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little, keep serving.
                    tracing::warn!(target: "small::server", error = %e, "accept error");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let app = app.clone();
        if let Ok(permit) = slots.clone().try_acquire_owned() {
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                serve_one(tcp, app, limits, watcher).await;
                drop(permit);
            });
        } else if let Ok(permit) = overflow.clone().try_acquire_owned() {
            tokio::spawn(async move {
                serve_overflow(tcp, app, limits).await;
                drop(permit);
            });
        } else {
            drop(tcp);
        }
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            target: "small::server",
            deadline_ms = limits.shutdown_timeout.as_millis() as u64,
            "shutdown deadline passed; closing the remaining connections"
        );
    }
}
