//! Helpers shared by the commands that write to a SMALL 2.0.0 workspace (docs/v2.md):
//! finding it, `--session` and `--lock-timeout`, opening the locked writer, and printing
//! records as the reference prints them (Go's indented JSON, objects in record order).

use std::path::{Path, PathBuf};

use small_core::authoring::txn;
use small_core::history::runs;
use small_core::v2;
use small_core::v2::gojson::{self, GoValue};
use small_core::v2::write::{self, Writer};

use crate::error::{CliError, CmdResult};

/// `--session` and `--lock-timeout`, for the commands that write 2.0.0 events.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SessionFlags {
    /// 2.0.0 workspaces: the session to record in [default: the active one, in .small-cache/active-session]
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// How long to wait for the workspace lock (seconds, or 90s, 2m) [default: SMALL_LOCK_TIMEOUT, else 60s]
    #[arg(long, value_name = "DURATION")]
    pub lock_timeout: Option<String>,
}

impl SessionFlags {
    /// On a v1 workspace: refuse `--session` (sessions are 2.0.0), and make `--lock-timeout`
    /// the wait of every transaction the command begins.
    pub fn refuse_on_v1(&self) -> Result<(), CliError> {
        if self.session.is_some() {
            return Err(CliError::usage(
                "--session applies to SMALL 2.0.0 workspaces; this one is v1",
            ));
        }
        if self.lock_timeout.is_some() {
            txn::set_lock_timeout(self.timeout()?);
        }
        Ok(())
    }

    /// The lock wait: `--lock-timeout`, else `SMALL_LOCK_TIMEOUT`, else 60 s.
    pub fn timeout(&self) -> Result<std::time::Duration, CliError> {
        lock_timeout(self.lock_timeout.as_deref())
    }

    /// Lock the workspace for writing, waiting as asked.
    pub fn open(&self, root: &Path) -> Result<Writer, CliError> {
        Ok(Writer::open(root, self.timeout()?)?)
    }

    /// The session named, else the active one.
    pub fn session(&self, root: &Path) -> Result<String, CliError> {
        Ok(write::resolve_session(root, self.session.as_deref())?)
    }
}

/// Parse a `--lock-timeout` value (`None`: `SMALL_LOCK_TIMEOUT`, else 60 s).
pub fn lock_timeout(flag: Option<&str>) -> Result<std::time::Duration, CliError> {
    match flag {
        None => Ok(txn::lock_timeout_from_env()),
        Some(s) => txn::parse_lock_timeout(s).ok_or_else(|| {
            CliError::usage(format!(
                "--lock-timeout {s:?}: give seconds (30, 0.5) or a duration (90s, 2m)"
            ))
        }),
    }
}

/// The workspace root when `dir` (or the current directory) holds a 2.0.0 workspace.
pub fn v2_root(dir: Option<&Path>) -> Option<PathBuf> {
    let root = runs::discover_root(dir);
    (v2::detect(&root.join(small_core::spec::consts::SMALL_DIR)) == v2::Profile::V2).then_some(root)
}

pub fn s(v: &str) -> GoValue {
    GoValue::str(v)
}

/// Print `v` as the reference prints `--json` (indented, final newline). A top-level
/// object built with [`GoValue::map`] has its keys sorted, as the reference's maps do.
pub fn print(v: &GoValue) -> CmdResult {
    crate::output::data(&format!("{}\n", gojson::indented(v)))
}
