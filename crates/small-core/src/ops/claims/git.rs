//! The user's `git`, run as a child process with a bounded time: claims are git refs, and
//! only git knows how to reach the user's remotes (their URLs, helpers, credentials).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::authoring::Error as AuthoringError;
use crate::ops::{OpError, OpResult};

use super::code;

/// The variable that bounds each git command (seconds, or `30s`, `2m`).
pub const TIMEOUT_ENV: &str = "SMALL_CLAIM_TIMEOUT";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What a finished git command printed, and how it ended.
pub(super) struct Output {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// git's reason, for a message: its first `fatal:` or `error:` line, else the last
    /// line it wrote on stderr.
    pub fn reason(&self) -> String {
        let lines = || self.stderr.lines().map(str::trim).filter(|l| !l.is_empty());
        lines()
            .find_map(|l| {
                l.strip_prefix("fatal: ")
                    .or_else(|| l.strip_prefix("error: "))
            })
            .or_else(|| lines().next_back())
            .unwrap_or("no message")
            .to_string()
    }
}

/// git in one directory (the workspace's root), each command killed after `timeout`.
#[derive(Debug, Clone)]
pub(super) struct Git {
    pub dir: PathBuf,
    timeout: Duration,
}

impl Git {
    /// git run in `dir`, bounded by `SMALL_CLAIM_TIMEOUT` (default 30 s).
    pub fn new(dir: &Path) -> Git {
        let timeout = std::env::var(TIMEOUT_ENV)
            .ok()
            .and_then(|s| crate::authoring::txn::parse_lock_timeout(&s))
            .filter(|d| !d.is_zero())
            .unwrap_or(DEFAULT_TIMEOUT);
        Git {
            dir: dir.to_path_buf(),
            timeout,
        }
    }

    /// Run `git args` (with `input` on its stdin); a git that cannot start or runs past the
    /// bound is a system error, any exit status is returned.
    pub fn run(&self, args: &[&str], input: Option<&[u8]>) -> OpResult<Output> {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(&self.dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        own_process_group(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| {
            system(format!("cannot run git: {e}"))
                .with_help("claims need git on the PATH (https://git-scm.com)")
        })?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            // A git that exits early closes its end; the wait below reports it.
            let _ = stdin.write_all(bytes);
        }
        let out = reader(child.stdout.take());
        let err = reader(child.stderr.take());
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().map_err(|e| system(format!("git: {e}")))? {
                break s;
            }
            if started.elapsed() > self.timeout {
                kill(&mut child);
                return Err(system(format!(
                    "`git {}` ran longer than {}s and was stopped",
                    args.join(" "),
                    self.timeout.as_secs_f64()
                ))
                .with_help(format!(
                    "is the remote reachable? {TIMEOUT_ENV} sets the bound (e.g. 2m)"
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Ok(Output {
            success: status.success(),
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        })
    }

    /// Run `git args`, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str], input: Option<&[u8]>) -> OpResult<String> {
        let out = self.run(args, input)?;
        if out.success {
            return Ok(out.stdout);
        }
        Err(system(format!(
            "`git {}` failed: {}",
            args.join(" "),
            out.reason()
        )))
    }
}

/// A claim that cannot be recorded because of the system (git, the repository, the remote).
pub(super) fn system(message: impl Into<String>) -> OpError {
    AuthoringError::system(code::STORE, message).into()
}

/// The most of a git command's output kept: far beyond the leases of any plan, and a bound
/// on what a hostile remote's huge blob at a claim ref can cost (the rest is drained, so git
/// never blocks; a cut record reads as unreadable, an ended lease).
const MAX_OUTPUT_BYTES: u64 = 32 << 20;

fn reader<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut r) = r {
            let _ = r.by_ref().take(MAX_OUTPUT_BYTES).read_to_end(&mut buf);
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// git starts helpers (ssh, remote helpers, a local receive-pack): in a group of their own,
/// a timeout stops them all.
#[cfg(unix)]
fn own_process_group(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

#[cfg(not(unix))]
fn own_process_group(_cmd: &mut Command) {}

fn kill(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signals the process group this function's caller created for the child
        // (`process_group(0)` made its id the group's id); no memory is involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
