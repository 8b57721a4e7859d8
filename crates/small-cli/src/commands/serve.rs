//! `small serve`: the SMALL v1 HTTP API.

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use small_server::{LogFormat, ServerConfig, StoreLocation};
use std::time::Duration;

/// Serve the SMALL v1 HTTP API (protocol, schemas, validate-manifest, replay, OpenAPI)
///
/// Prints `listening on http://ADDR` on standard output once bound (use `--addr 127.0.0.1:0`
/// for an ephemeral port), logs one line per request on standard error, and shuts down
/// gracefully on SIGINT or SIGTERM, finishing requests in flight.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on
    #[arg(long, default_value = small_server::DEFAULT_ADDR)]
    pub addr: String,
    /// Store for the primitives and replay records: an SQLite file path, a
    /// `postgres://user:password@host:port/db` URL, or `memory` for a throwaway store
    #[arg(long, env = "SMALL_STORE", default_value = small_server::DEFAULT_STORE_PATH)]
    pub store: String,
    /// Largest accepted request body (e.g. 1048576, 512KiB, 1MiB, 1MB)
    #[arg(long, default_value = "1MiB", value_parser = crate::units::parse_size)]
    pub body_limit: usize,
    /// Longest time a request may take (e.g. 500ms, 30s, 1m; a bare number is seconds)
    #[arg(long, default_value = "30s", value_parser = crate::units::parse_duration)]
    pub request_timeout: Duration,
    /// Longest time a client may take to send a request's head (line and headers), from its
    /// first byte; then the connection is closed
    #[arg(long, default_value = "10s", value_parser = crate::units::parse_duration)]
    pub header_timeout: Duration,
    /// Close a keep-alive connection after this long without a request
    #[arg(long, default_value = "60s", value_parser = crate::units::parse_duration)]
    pub idle_timeout: Duration,
    /// Most connections served at once; beyond it a few more get 503 (GET /healthz still
    /// answers) and the rest are closed
    #[arg(long, default_value_t = small_server::conn::DEFAULT_MAX_CONNECTIONS, value_parser = parse_count)]
    pub max_connections: usize,
    /// Largest request head (request line and headers; bytes, suffixes K, KiB; at least 8KiB)
    #[arg(long, default_value = "64KiB", value_parser = crate::units::parse_size)]
    pub max_header_bytes: usize,
    /// On SIGINT/SIGTERM, how long requests in flight may take to finish before the server
    /// stops anyway
    #[arg(long, default_value = "10s", value_parser = crate::units::parse_duration)]
    pub shutdown_timeout: Duration,
    /// Log format on standard error: text or json (level from RUST_LOG, default info)
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

fn parse_count(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{s}` is not a positive whole number"))
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let format: LogFormat = args.log_format.parse().map_err(CliError::usage)?;
    small_server::init_logging(format);
    // Each connection is an open file, as are the store's: what a full server needs.
    let wanted = args.max_connections as u64 + small_server::conn::OVERFLOW_SLOTS as u64 + 64;
    if let Some(limit) = raise_open_file_limit() {
        if limit < wanted {
            tracing::warn!(
                target: "small::server",
                limit,
                max_connections = args.max_connections,
                "the open-file limit is below what --max-connections needs; raise it (ulimit -n) or lower --max-connections"
            );
        }
    }
    let config = ServerConfig {
        addr: args.addr,
        store: StoreLocation::parse(&args.store),
        body_limit: args.body_limit,
        request_timeout: args.request_timeout,
        limits: small_server::conn::Limits {
            header_timeout: args.header_timeout,
            idle_timeout: args.idle_timeout,
            max_connections: args.max_connections,
            max_header_bytes: args.max_header_bytes,
            shutdown_timeout: args.shutdown_timeout,
        },
    };
    crate::output::ignore_sigpipe();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::usage(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let server = small_server::bind(&config).await.map_err(CliError::usage)?;
        let addr = server
            .local_addr()
            .map_err(|e| CliError::usage(e.to_string()))?;
        g.data(format!("listening on http://{addr}\n"))?;
        server
            .run(small_server::shutdown_signal())
            .await
            .map_err(|e| CliError::usage(e.to_string()))
    })
}

/// Raise the soft limit on open files to the hard limit, as servers do (Go's runtime does
/// it for every program): the common default of 1024 is below the default
/// `--max-connections` once the store and the overflow connections are counted, and an
/// accept that fails for want of a descriptor cannot even answer 503. Returns the soft limit
/// in force afterwards; `None` where it cannot be read.
#[cfg(unix)]
// `rlim_t` is not `u64` on every Unix.
#[allow(clippy::unnecessary_cast)]
fn raise_open_file_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given, which lives on this stack.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    // An unlimited hard limit is not a number the kernel accepts for open files.
    let target = lim.rlim_max.min(1 << 20);
    if lim.rlim_cur < target {
        let raised = libc::rlimit {
            rlim_cur: target,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit only reads the struct; a refusal leaves the limit as it was.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Some(target as u64);
        }
    }
    Some(lim.rlim_cur as u64)
}

#[cfg(not(unix))]
fn raise_open_file_limit() -> Option<u64> {
    None
}
