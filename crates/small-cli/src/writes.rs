//! What the writing commands share of their flags: finding the workspace (`merge-driver`),
//! the `--workspace` scope (`draft`, `accept`, `apply`), and the flags `checkpoint` and
//! `progress add` share.

use std::path::{Path, PathBuf};

use small_core::ops::workspace::{self, Scope};

use crate::error::CliError;

/// The root of the workspace named by `--dir` (or the current directory); exit 2 if none,
/// reported as the diagnostic (`no-workspace`, with the fix) like every other error.
pub fn root(dir: Option<&Path>) -> Result<PathBuf, CliError> {
    workspace::locate(dir).map(|l| l.root).map_err(|e| {
        let d = e.to_diagnostic();
        CliError {
            exit: crate::error::EXIT_USAGE,
            message: d.message.clone(),
            diagnostic: Some(Box::new(d)),
        }
    })
}

/// Locate the workspace and enforce `--workspace` without locking it (`draft`, `accept`,
/// `apply`); errors are one or two plain lines.
pub fn open_scoped(dir: Option<&Path>, scope: Scope) -> Result<PathBuf, CliError> {
    small_core::ops::draft::open_scoped(dir, scope).map_err(CliError::plain)
}

/// Where the workspace is and which kinds a command accepts: the flag group of `draft`,
/// `accept` and `progress migrate`.
#[derive(clap::Args, Debug, Clone)]
pub struct TargetArgs {
    /// Directory containing .small/ (default: search upward from the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
}

/// The flags `checkpoint` and `progress add` share: the evidence, the timestamp, `--force`
/// and where the workspace is.
#[derive(clap::Args, Debug)]
pub struct RecordFlags {
    /// What shows the work was done (or, for a blocked task, why it is blocked)
    #[arg(long, value_name = "TEXT")]
    pub evidence: Option<String>,
    /// Evidence: the command that was run
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// Evidence: the test that was run
    #[arg(long, value_name = "TEST")]
    pub test: Option<String>,
    /// Evidence: a URI of external evidence
    #[arg(long, value_name = "URI")]
    pub link: Option<String>,
    /// Evidence: a git commit hash (7 to 40 lower-case hex digits)
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    /// Evidence: how the work was verified
    #[arg(long, value_name = "TEXT")]
    pub verification: Option<String>,
    /// Free-form notes
    #[arg(long, value_name = "TEXT")]
    pub notes: Option<String>,
    /// Complete a task whose dependencies are not completed (recorded in the entry's notes)
    #[arg(long)]
    pub force: bool,
    /// Use exactly this RFC 3339 timestamp (with fractional seconds); it must be after the last entry
    #[arg(long, value_name = "TIME", conflicts_with = "after")]
    pub at: Option<String>,
    /// Use a timestamp just after this RFC 3339 time (and after the last entry)
    #[arg(long, value_name = "TIME")]
    pub after: Option<String>,
    /// Directory containing .small/ (default: search upward from the current directory)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Workspace scope: root, examples or any
    #[arg(long, value_name = "SCOPE", default_value = "root", value_parser = Scope::parse)]
    pub workspace: Scope,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

impl RecordFlags {
    /// The operation's request for `task` and `status`, recorded in the session of `v2` on a
    /// 2.0.0 workspace.
    pub fn request(
        &self,
        task: &str,
        status: &str,
        v2: &crate::v2writes::SessionFlags,
    ) -> Result<small_core::ops::record::RecordRequest, CliError> {
        let evidence = [
            ("evidence", &self.evidence),
            ("command", &self.command),
            ("test", &self.test),
            ("link", &self.link),
            ("commit", &self.commit),
            ("verification", &self.verification),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.to_string(), v)))
        .collect();
        Ok(small_core::ops::record::RecordRequest {
            task: task.to_string(),
            status: status.to_string(),
            evidence,
            notes: self.notes.clone(),
            at: self.at.clone(),
            after: self.after.clone(),
            force: self.force,
            scope: self.workspace,
            session: v2.session.clone(),
            lock_timeout: v2.lock()?,
        })
    }
}
