//! The flags of the commands that write to a SMALL 2.0.0 workspace (docs/v2.md): `--session`
//! and `--lock-timeout`, parsed here so every command reads them the same way.

use small_core::ops::txn;

use crate::error::CliError;

/// `--session` and `--lock-timeout`, for the commands that write 2.0.0 events.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SessionFlags {
    /// 2.0.0 workspaces: the session to record in [default: the active one, in .small-cache/active-session]
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    #[command(flatten)]
    pub wait: LockWait,
}

// No doc comment here: clap would take it for the help of every command that flattens this.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LockWait {
    /// How long to wait for the workspace lock (seconds, or 90s, 2m) [default: SMALL_LOCK_TIMEOUT, else 60s]
    #[arg(long, value_name = "DURATION")]
    pub lock_timeout: Option<String>,
}

impl LockWait {
    /// The lock wait: `--lock-timeout`, else `SMALL_LOCK_TIMEOUT`, else 60 s.
    pub fn timeout(&self) -> Result<std::time::Duration, CliError> {
        lock_timeout(self.lock_timeout.as_deref())
    }

    /// The lock wait `--lock-timeout` asks for (`None`: the operation's default, which
    /// reads `SMALL_LOCK_TIMEOUT`).
    pub fn lock(&self) -> Result<Option<std::time::Duration>, CliError> {
        self.lock_timeout
            .as_ref()
            .map(|_| self.timeout())
            .transpose()
    }
}

impl SessionFlags {
    /// See [`LockWait::timeout`].
    pub fn timeout(&self) -> Result<std::time::Duration, CliError> {
        self.wait.timeout()
    }

    /// See [`LockWait::lock`].
    pub fn lock(&self) -> Result<Option<std::time::Duration>, CliError> {
        self.wait.lock()
    }
}

/// Parse a `--lock-timeout` value (`None`: `SMALL_LOCK_TIMEOUT`, else 60 s).
fn lock_timeout(flag: Option<&str>) -> Result<std::time::Duration, CliError> {
    match flag {
        None => Ok(txn::lock_timeout_from_env()),
        Some(s) => txn::parse_lock_timeout(s).ok_or_else(|| {
            CliError::usage(format!(
                "--lock-timeout {s:?}: give seconds (30, 0.5) or a duration (90s, 2m)"
            ))
        }),
    }
}
