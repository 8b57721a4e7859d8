//! The user's `git`, run as a child process with a bounded time: claims are git refs, and
//! only git knows how to reach the user's remotes (their URLs, helpers, credentials).
//!
//! Input is written on a thread of its own while the output is read, so a command that
//! answers as it reads (`cat-file --batch` over thousands of refs) never waits on us while
//! we wait on it; a watchdog kills the command's whole process group at the bound, which
//! ends every read.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::ops::{OpError, OpResult};
use crate::workspace::error::Error as AuthoringError;

use super::code;

/// The variable that bounds each git command (seconds, or `30s`, `2m`).
pub const TIMEOUT_ENV: &str = "SMALL_CLAIM_TIMEOUT";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What a finished git command printed, and how it ended.
pub(crate) struct Output {
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
pub(crate) struct Git {
    pub dir: PathBuf,
    timeout: Duration,
}

impl Git {
    /// git run in `dir`, bounded by `SMALL_CLAIM_TIMEOUT` (default 30 s); a value that is
    /// not a positive duration is a usage error.
    pub fn new(dir: &Path) -> OpResult<Git> {
        Ok(Git {
            dir: dir.to_path_buf(),
            timeout: super::env_duration(TIMEOUT_ENV, false)?.unwrap_or(DEFAULT_TIMEOUT),
        })
    }

    /// The bound on each command.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Run `git args` (with `input` on its stdin); a git that cannot start or runs past the
    /// bound is a system error, any exit status is returned.
    pub fn run(&self, args: &[&str], input: Option<&[u8]>) -> OpResult<Output> {
        let (stdout, success, stderr) = self.stream(args, input, |out| {
            let mut buf = Vec::new();
            let _ = out.take(MAX_OUTPUT_BYTES).read_to_end(&mut buf);
            Ok(String::from_utf8_lossy(&buf).into_owned())
        })?;
        Ok(Output {
            success,
            stdout,
            stderr,
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

    /// Run `git args` and hand its stdout, as it comes, to `read`; what `read` returns,
    /// whether git succeeded, and its stderr. Whatever `read` leaves unread is drained, so
    /// git never blocks on a full pipe; past the bound the command is killed and this is a
    /// system error.
    pub fn stream<T>(
        &self,
        args: &[&str],
        input: Option<&[u8]>,
        read: impl FnOnce(&mut BufReader<ChildStdout>) -> OpResult<T>,
    ) -> OpResult<(T, bool, String)> {
        let mut child = self.spawn(args, input.is_some())?;
        let feeder = input.and_then(|bytes| {
            let mut stdin = child.stdin.take()?;
            let bytes = bytes.to_vec();
            // A git that exits early closes its end; the status reports it.
            Some(std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            }))
        });
        let err = drain_to_string(child.stderr.take());
        let _running = Running::add(child.id());
        let watchdog = Watchdog::start(&child, self.timeout);
        let mut out = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| system("git: no stdout"))?,
        );
        let value = read(&mut out);
        let _ = std::io::copy(&mut out, &mut std::io::sink());
        let status = child.wait().map_err(|e| system(format!("git: {e}")));
        let timed_out = watchdog.stop();
        if let Some(f) = feeder {
            let _ = f.join();
        }
        let stderr = err.join().unwrap_or_default();
        if timed_out {
            return Err(system(format!(
                "`git {}` ran longer than {}s and was stopped",
                args.join(" "),
                self.timeout.as_secs_f64()
            ))
            .with_help(format!(
                "is the remote reachable? {TIMEOUT_ENV} sets the bound (e.g. 2m)"
            )));
        }
        Ok((value?, status?.success(), stderr))
    }

    fn spawn(&self, args: &[&str], piped_input: bool) -> OpResult<Child> {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(&self.dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(if piped_input {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        own_process_group(&mut cmd);
        cmd.spawn().map_err(|e| {
            system(format!("cannot run git: {e}"))
                .with_help("claims need git on the PATH (https://git-scm.com)")
        })
    }
}

/// A claim that cannot be recorded because of the system (git, the repository, the remote).
pub(crate) fn system(message: impl Into<String>) -> OpError {
    AuthoringError::system(code::STORE, message).into()
}

/// The most of a git command's output [`Git::run`] keeps: far beyond what any of its
/// commands print for a plan, and a bound on what a hostile remote can cost (the rest is
/// drained). Readers of records stream instead ([`Git::stream`]).
const MAX_OUTPUT_BYTES: u64 = 32 << 20;
/// The most of git's stderr kept for a message.
const MAX_STDERR_BYTES: u64 = 64 << 10;

fn drain_to_string<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut r) = r {
            let _ = r.by_ref().take(MAX_STDERR_BYTES).read_to_end(&mut buf);
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Kills a command's process group once its time is up, unless stopped first.
struct Watchdog {
    done: Arc<(Mutex<bool>, Condvar)>,
    fired: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Watchdog {
    fn start(child: &Child, timeout: Duration) -> Watchdog {
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let fired = Arc::new(AtomicBool::new(false));
        let pid = child.id();
        let (d, f) = (Arc::clone(&done), Arc::clone(&fired));
        let thread = std::thread::spawn(move || {
            // A bound past what the clock can count (`SMALL_CLAIM_TIMEOUT` in the
            // quintillions of seconds) is no bound.
            let deadline = Instant::now().checked_add(timeout);
            let (lock, cvar) = &*d;
            let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
            while !*stopped {
                let Some(deadline) = deadline else {
                    stopped = cvar.wait(stopped).unwrap_or_else(|e| e.into_inner());
                    continue;
                };
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    f.store(true, Ordering::SeqCst);
                    kill_group(pid);
                    return;
                }
                stopped = cvar
                    .wait_timeout(stopped, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        });
        Watchdog {
            done,
            fired,
            thread,
        }
    }

    /// Stop watching; whether the time ran out first.
    fn stop(self) -> bool {
        let (lock, cvar) = &*self.done;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cvar.notify_all();
        let _ = self.thread.join();
        self.fired.load(Ordering::SeqCst)
    }
}

/// One line of a byte stream (without its `\n`), at most `max` bytes kept; `None` at the
/// end. A longer line is read to its end and cut.
pub(crate) fn read_line(r: &mut impl BufRead, max: usize) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut any = false;
    loop {
        let buf = r.fill_buf().ok()?;
        if buf.is_empty() {
            return any.then_some(line);
        }
        any = true;
        let (chunk, used, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        r.consume(used);
        if end {
            return Some(line);
        }
    }
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

/// The git commands running now (their process ids, each its group's id), so that a
/// process that stops (a server asked to shut down) can end them: its watchdogs end with
/// it, and a git waiting on a silent remote would outlive it.
static RUNNING: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// A running command, listed in [`RUNNING`] until it is dropped.
struct Running(u32);

impl Running {
    fn add(pid: u32) -> Running {
        RUNNING.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
        Running(pid)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| *p != self.0);
    }
}

/// Kill every git command this process runs now (with its process group). For a process
/// about to exit: the commands' callers get a failure, as at their time bound.
pub fn stop_running() {
    let pids = std::mem::take(&mut *RUNNING.lock().unwrap_or_else(|e| e.into_inner()));
    for pid in pids {
        kill_group(pid);
    }
}

#[cfg(unix)]
fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: signals the process group `spawn` created for the child
        // (`process_group(0)` made its id the group's id); no memory is involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(pid: u32) {
    let _ = Command::new("taskkill")
        .args(["/T", "/F", "/PID", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_at_the_bound_and_read_to_their_end() {
        let mut r = BufReader::with_capacity(4, &b"abcdefgh\nxy\nlast"[..]);
        assert_eq!(read_line(&mut r, 3).unwrap(), b"abc");
        assert_eq!(read_line(&mut r, 3).unwrap(), b"xy");
        assert_eq!(read_line(&mut r, 3).unwrap(), b"las");
        assert!(read_line(&mut r, 3).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_command_that_reads_and_answers_at_once_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::new(dir.path()).unwrap();
        assert!(git.run(&["init", "-q"], None).unwrap().success);
        // `cat-file --batch-check` answers each line as it reads: 200 000 lines of input
        // are far more than a pipe holds in either direction.
        let input: String = (0..200_000).map(|_| "HEAD\n").collect();
        let (n, _, _) = git
            .stream(
                &["cat-file", "--batch-check"],
                Some(input.as_bytes()),
                |r| {
                    let mut n = 0;
                    while read_line(r, 100).is_some() {
                        n += 1;
                    }
                    Ok(n)
                },
            )
            .unwrap();
        assert_eq!(n, 200_000);
    }
}
