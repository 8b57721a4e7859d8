//! `small ui`: a live, read-only web page of one or several SMALL workspaces.
//!
//! The page is rendered on the server from templates (minijinja, HTML auto-escaping) with
//! data mapped from small-core's own operations in [`view`]; the only script is a small
//! embedded file that listens to server-sent events (`GET /events`) and swaps in the HTML
//! fragments that changed. A file watcher on `.small/` (and `.small-runs/`) names what
//! changed; the progress timeline is an index that extends itself on append
//! ([`small_core::ops::timeline`]), so a new entry costs what was appended.
//!
//! Security (the page shows text that agents wrote): every string is escaped by the template
//! engine, secrets are masked, a Content-Security-Policy forbids inline script and style, only
//! GET and HEAD are answered (405 otherwise), and a request whose `Host` is not the listening
//! address (or localhost with its port) is refused (DNS rebinding). Connections are bounded
//! by the HTTP server's accept loop (`small_server::conn`), requests by a timeout, and event
//! streams by a cap on concurrent clients.

mod demo;
mod routes;
pub mod store;
mod templates;
pub mod view;
mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use small_core::ops::formats::ArtifactKind;
use small_core::ops::timeline::Timeline;
use small_core::ops::workspace::Location;
use tokio::sync::{broadcast, watch as tokio_watch, Semaphore};

pub use demo::generate as generate_demo;

/// The default listening address: loopback, any free port.
pub const DEFAULT_ADDR: &str = "127.0.0.1:0";
/// Default cap on concurrent live-update clients.
pub const DEFAULT_MAX_EVENT_CLIENTS: usize = 64;
/// How often the leases are fetched from the remote by default.
pub const DEFAULT_LEASE_REFRESH: Duration = Duration::from_secs(10);

/// What to serve, and how.
#[derive(Debug, Clone)]
pub struct UiConfig {
    /// The workspaces (directories at or below which a `.small/` is found); empty: the one
    /// found from the current directory.
    pub dirs: Vec<PathBuf>,
    pub addr: String,
    /// Longest time a page may take (event streams excepted).
    pub request_timeout: Duration,
    /// Most live-update (event stream) clients at once; beyond it, 503.
    pub max_event_clients: usize,
    /// Connection limits of the accept loop.
    pub limits: small_server::conn::Limits,
    /// A primitives store to show (an SQLite path or a `postgres://` URL), opened read-only.
    pub store: Option<String>,
    /// How often the leases are fetched from the remote (`small claims` reads them the same
    /// way) while a workspace sits in a git repository with one; zero: never.
    pub lease_refresh: Duration,
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            dirs: Vec::new(),
            addr: DEFAULT_ADDR.into(),
            request_timeout: Duration::from_secs(30),
            max_event_clients: DEFAULT_MAX_EVENT_CLIENTS,
            limits: small_server::conn::Limits::default(),
            store: None,
            lease_refresh: DEFAULT_LEASE_REFRESH,
        }
    }
}

/// A change the watcher saw: which workspace (or the store), and which parts of its page to
/// refresh.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Change {
    pub ws: Scope,
    pub parts: Vec<&'static str>,
}

/// What a change is about: a workspace by index (`0`), or the primitives store (`"store"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Scope {
    Ws(usize),
    Store(&'static str),
}

/// The scope of the primitives store's changes.
pub const STORE_SCOPE: Scope = Scope::Store("store");

/// The primitives store shown with `--store`.
pub(crate) struct StoreHandle {
    pub store: Arc<dyn small_store::PrimitiveStore>,
    /// The location as given (a PostgreSQL URL keeps its password here, never on the page).
    pub location: String,
    /// The SQLite file, watched for changes.
    pub file: Option<PathBuf>,
}

/// One served workspace.
pub(crate) struct WsHandle {
    pub loc: Location,
    pub timeline: Mutex<Timeline>,
    pub checks: Mutex<Option<Arc<view::Checks>>>,
    pub recheck: Mutex<std::sync::mpsc::Sender<()>>,
}

impl WsHandle {
    pub fn timeline(&self) -> std::sync::MutexGuard<'_, Timeline> {
        self.timeline.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn checks(&self) -> Option<Arc<view::Checks>> {
        self.checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn request_check(&self) {
        let _ = self
            .recheck
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(());
    }
}

/// The shared state of the application.
pub(crate) struct App {
    pub workspaces: Vec<WsHandle>,
    pub templates: templates::Templates,
    pub events: broadcast::Sender<Change>,
    pub allowed_hosts: Vec<String>,
    pub event_clients: Arc<Semaphore>,
    pub shutdown: tokio_watch::Receiver<bool>,
    pub request_timeout: Duration,
    pub store: Option<StoreHandle>,
}

/// A bound, not yet running page server.
pub struct Ui {
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: small_server::conn::Limits,
    shutdown_tx: tokio_watch::Sender<bool>,
    _watcher: Option<watch::Watcher>,
}

/// Find the workspaces of `dirs` (or the one from the current directory).
pub fn locate(dirs: &[PathBuf]) -> Result<Vec<Location>, String> {
    let describe = |d: &small_core::ops::diag::Diagnostic| match &d.help {
        Some(h) => format!("{} ({h})", d.message),
        None => d.message.clone(),
    };
    if dirs.is_empty() {
        return small_core::ops::gate::locate(None)
            .map(|l| vec![l])
            .map_err(|d| describe(&d));
    }
    let mut out: Vec<Location> = Vec::new();
    for d in dirs {
        let loc = small_core::ops::gate::locate(Some(d)).map_err(|e| describe(&e))?;
        if !out.iter().any(|l| l.small_dir == loc.small_dir) {
            out.push(loc);
        }
    }
    Ok(out)
}

impl Ui {
    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve until `shutdown` completes; live-update streams end at once, other requests get
    /// the shutdown deadline of the accept loop.
    pub async fn run<F>(self, shutdown: F) -> std::io::Result<()>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let tx = self.shutdown_tx;
        let signal = async move {
            shutdown.await;
            let _ = tx.send(true);
            // A lease refresh waiting on a silent remote must not outlive the server.
            small_core::ops::claims::stop_git();
        };
        small_server::conn::run(self.listener, self.app, self.limits, signal).await;
        Ok(())
    }
}

/// Locate the workspaces, bind the listener, index the progress logs and start the watcher.
pub async fn bind(config: &UiConfig) -> Result<Ui, String> {
    // With a store and no DIR, a workspace is shown when one is found from here; the store
    // alone otherwise.
    let locations = match locate(&config.dirs) {
        Err(_) if config.store.is_some() && config.dirs.is_empty() => Vec::new(),
        other => other?,
    };
    let store = match config.store.clone() {
        None => None,
        Some(location) => {
            let loc = location.clone();
            let store = tokio::task::spawn_blocking(move || small_store::open_read_only(&loc))
                .await
                .map_err(|e| format!("cannot open the store: {e}"))?
                .map_err(|e| small_core::ops::secrets::redact(&e.to_string()).into_owned())?;
            let file = (!small_store::is_postgres_url(&location))
                .then(|| std::fs::canonicalize(&location).ok())
                .flatten();
            Some(StoreHandle {
                store,
                location,
                file,
            })
        }
    };
    let listener = tokio::net::TcpListener::bind(&config.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let (events, _) = broadcast::channel(1024);
    let (shutdown_tx, shutdown_rx) = tokio_watch::channel(false);
    let mut receivers = Vec::new();
    let workspaces: Vec<WsHandle> = tokio::task::spawn_blocking(move || {
        locations
            .into_iter()
            .map(|loc| {
                let progress = loc.small_dir.join(ArtifactKind::Progress.file_name());
                let timeline = Timeline::open(&loc.root, &progress);
                let (tx, rx) = std::sync::mpsc::channel();
                (
                    WsHandle {
                        loc,
                        timeline: Mutex::new(timeline),
                        checks: Mutex::new(None),
                        recheck: Mutex::new(tx),
                    },
                    rx,
                )
            })
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| format!("cannot index the workspaces: {e}"))?
    .into_iter()
    .map(|(w, rx)| {
        receivers.push(rx);
        w
    })
    .collect();
    let app = Arc::new(App {
        workspaces,
        templates: templates::Templates::new(store.is_some())?,
        events,
        allowed_hosts: allowed_hosts(addr, &config.addr),
        event_clients: Arc::new(Semaphore::new(config.max_event_clients.max(1))),
        shutdown: shutdown_rx,
        request_timeout: config.request_timeout,
        store,
    });
    for (i, rx) in receivers.into_iter().enumerate() {
        watch::start_checker(app.clone(), i, rx);
        app.workspaces[i].request_check();
    }
    if !config.lease_refresh.is_zero() {
        for i in 0..app.workspaces.len() {
            watch::start_lease_refresh(app.clone(), i, config.lease_refresh);
        }
    }
    let watcher = match watch::start(app.clone()) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(target: "small::ui", "live updates are off: cannot watch the workspace files: {e}");
            None
        }
    };
    Ok(Ui {
        listener,
        app: routes::router(app),
        limits: config.limits,
        shutdown_tx,
        _watcher: watcher,
    })
}

/// The `Host` values answered: the bound address, the address as given, and the loopback
/// names with the bound port.
fn allowed_hosts(addr: SocketAddr, given: &str) -> Vec<String> {
    let port = addr.port();
    let mut v = vec![
        addr.to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ];
    if let Some((host, p)) = given.rsplit_once(':') {
        if p == port.to_string() && !host.is_empty() {
            v.push(format!("{host}:{port}"));
        }
    }
    v.iter_mut().for_each(|h| *h = h.to_ascii_lowercase());
    v.sort();
    v.dedup();
    v
}

/// Bind and serve until SIGINT or SIGTERM, calling `on_bound` with the address first.
pub async fn serve(config: UiConfig, on_bound: impl FnOnce(SocketAddr)) -> Result<(), String> {
    let ui = bind(&config).await?;
    let addr = ui.local_addr().map_err(|e| e.to_string())?;
    on_bound(addr);
    ui.run(small_server::shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowed_hosts_are_the_address_and_loopback_names() {
        let a: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let h = allowed_hosts(a, "127.0.0.1:0");
        assert!(h.contains(&"localhost:4000".to_string()));
        assert!(h.contains(&"127.0.0.1:4000".to_string()));
        assert!(h.contains(&"[::1]:4000".to_string()));
        assert!(!h.iter().any(|x| x.contains("evil")));
        let h = allowed_hosts("0.0.0.0:80".parse().unwrap(), "myhost:80");
        assert!(h.contains(&"myhost:80".to_string()));
    }
}
