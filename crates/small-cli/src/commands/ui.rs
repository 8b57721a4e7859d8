//! `small ui`: the live, read-only web page of one or several workspaces.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;

/// Serve a live, read-only web page of the workspace (intent, plan graph and board, tasks,
/// progress timeline, handoff, gate diagnostics, run snapshots)
///
/// Prints `listening on http://HOST:PORT/` as the first line on standard output, then serves
/// until Ctrl-C or SIGTERM. The page updates itself within a second when the workspace files
/// change. Several DIRs give an overview of each workspace. Listens on loopback unless --addr
/// names another address; only GET and HEAD are answered.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Workspaces to show (each found at or above DIR); default: the one found from the
    /// current directory
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Address to listen on (port 0: any free port)
    #[arg(long, default_value = small_ui::DEFAULT_ADDR)]
    pub addr: String,
    /// Open the page in the default browser once listening
    #[arg(long)]
    pub open: bool,
    /// Serve a generated sample workspace (in a temporary directory removed at exit)
    #[arg(long, conflicts_with = "dirs")]
    pub demo: bool,
    /// A primitives store to show too (an SQLite file or a postgres:// URL), opened
    /// read-only: its artifacts, their lineage graph and lifecycle events
    #[arg(long, value_name = "PATH|URL", conflicts_with = "demo")]
    pub store: Option<String>,
    /// Longest time a page may take (e.g. 500ms, 30s)
    #[arg(long, default_value = "30s", value_parser = crate::units::parse_duration)]
    pub request_timeout: Duration,
    /// How often to fetch the leases (`small claim`) from the remote while the workspace is
    /// in a git repository with one, so that a lease taken on another clone appears (e.g.
    /// 10s, 2s; 0 turns it off; each fetch is bounded by SMALL_CLAIM_TIMEOUT)
    #[arg(long, value_name = "SECS", default_value = "10s", value_parser = lease_refresh)]
    pub lease_refresh: Duration,
}

/// A refresh interval: a duration (`10s`, `500ms`) or whole seconds (`10`, `0`, `0s`).
fn lease_refresh(s: &str) -> Result<Duration, String> {
    match s.trim().trim_end_matches('s').parse::<u64>() {
        Ok(n) => Ok(Duration::from_secs(n)),
        Err(_) => crate::units::parse_duration(s),
    }
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    crate::output::ignore_sigpipe();
    small_server::init_logging(small_server::LogFormat::Text);
    let demo = if args.demo {
        let dir = tempfile::Builder::new()
            .prefix("small-ui-demo-")
            .tempdir()
            .map_err(|e| CliError::usage(format!("cannot create a temporary directory: {e}")))?;
        let root = dir.path().join("sample-project");
        std::fs::create_dir(&root)
            .and_then(|_| std::fs::canonicalize(&root))
            .map_err(|e| CliError::usage(format!("cannot create a temporary directory: {e}")))
            .and_then(|root| {
                small_ui::generate_demo(&root)
                    .map_err(|e| CliError::usage(format!("cannot write the sample workspace: {e}")))
            })?;
        Some(dir)
    } else {
        None
    };
    let dirs = match &demo {
        Some(d) => vec![d.path().join("sample-project")],
        None => args.dirs.clone(),
    };
    let config = small_ui::UiConfig {
        dirs,
        addr: args.addr.clone(),
        request_timeout: args.request_timeout,
        store: args.store.clone(),
        lease_refresh: args.lease_refresh,
        ..small_ui::UiConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::usage(format!("cannot start the runtime: {e}")))?;
    let result = runtime.block_on(async move {
        let ui = small_ui::bind(&config).await.map_err(CliError::usage)?;
        let addr = ui
            .local_addr()
            .map_err(|e| CliError::usage(e.to_string()))?;
        let url = format!("http://{addr}/");
        g.data(format!("listening on {url}\n"))?;
        if args.open {
            open_browser(&url, g);
        }
        ui.run(small_server::shutdown_signal())
            .await
            .map_err(|e| CliError::usage(e.to_string()))
    });
    drop(demo);
    result
}

/// Start the desktop's browser on `url`; a failure is a warning (the URL is printed anyway).
fn open_browser(url: &str, g: &GlobalArgs) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        g.warn(format!(
            "cannot open a browser ({opener}: {e}); open {url} yourself"
        ));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_refresh_interval_is_seconds_or_a_duration_and_zero_turns_it_off() {
        use std::time::Duration;
        assert_eq!(super::lease_refresh("10"), Ok(Duration::from_secs(10)));
        assert_eq!(super::lease_refresh("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(super::lease_refresh("0"), Ok(Duration::ZERO));
        assert_eq!(super::lease_refresh("0s"), Ok(Duration::ZERO));
        assert_eq!(
            super::lease_refresh("500ms"),
            Ok(Duration::from_millis(500))
        );
        assert!(super::lease_refresh("soon").is_err());
    }
}
