//! The child shell of `apply`: `sh -lc <command>` in the workspace root. Its output goes to
//! the watcher as it comes (when shown), whole into the output log, and its tail into memory
//! for the evidence; while it runs, the first Ctrl-C reaches only the child ([`Shield`]), so
//! that the interrupted run can still be recorded.

use std::fs::File;
use std::io::{Error, ErrorKind, Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;

use super::Watch;
use crate::authoring::apply::{RunResult, RunSpec, EVIDENCE_OUTPUT_CAP};

pub(super) use interrupt::Shield;

/// Runs the spec's command, its output shown to `watch` when `show`, and waits for it.
/// Returns the exit code (128 + signal when killed) and the tail of the output. The caller
/// raises the [`Shield`] first.
pub(super) fn run(spec: &RunSpec, watch: Option<&dyn Watch>, show: bool) -> RunResult {
    let mut child = spawn(spec)?;
    let log = open_log(&spec.output_log, watch);
    let sink = Sink {
        shown: watch.filter(|_| show),
        log: log.as_ref(),
        tail: Mutex::new(Vec::new()),
    };
    let status = pump_until_exit(&mut child, &sink)?;
    if let Some(Ok(f)) = log.as_ref().map(Mutex::lock) {
        let _ = f.sync_all();
    }
    let tail = sink.tail.into_inner().unwrap_or_default();
    Ok((exit_code(status), tail))
}

fn spawn(spec: &RunSpec) -> std::io::Result<Child> {
    Command::new("sh")
        .arg("-lc")
        .arg(&spec.command)
        .current_dir(&spec.root)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::new(e.kind(), format!("cannot start `sh -lc`: {e}")))
}

/// Copies the child's two streams into `sink` (a thread each) until it exits and they close.
fn pump_until_exit(child: &mut Child, sink: &Sink) -> std::io::Result<ExitStatus> {
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    std::thread::scope(|s| {
        let pumps = [
            std::thread::Builder::new().spawn_scoped(s, move || sink.pump(stdout, false)),
            std::thread::Builder::new().spawn_scoped(s, move || sink.pump(stderr, true)),
        ];
        let mut joined = Vec::new();
        for pump in pumps {
            match pump {
                Ok(p) => joined.push(p),
                Err(e) => {
                    // Without a reader its output would fill the pipe and stop it: stop it now.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(Error::new(
                        e.kind(),
                        format!("cannot start a thread to read the command's output: {e}"),
                    ));
                }
            }
        }
        let status = child
            .wait()
            .map_err(|e| Error::new(e.kind(), format!("waiting for the command failed: {e}")))?;
        for p in joined {
            let _ = p.join();
        }
        Ok(status)
    })
}

/// Where the child's output goes.
struct Sink<'a> {
    /// Who is shown the output as it comes.
    shown: Option<&'a dyn Watch>,
    /// The output log, whole.
    log: Option<&'a Mutex<File>>,
    /// The tail, for the evidence.
    tail: Mutex<Vec<u8>>,
}

impl Sink<'_> {
    /// Copies one stream of the child until it closes.
    fn pump(&self, mut stream: impl Read, stderr: bool) {
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.take(&buf[..n], stderr),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }

    fn take(&self, chunk: &[u8], stderr: bool) {
        if let Some(w) = self.shown {
            w.output(chunk, stderr);
        }
        if let Ok(mut tail) = self.tail.lock() {
            keep_tail(&mut tail, chunk);
        }
        if let Some(Ok(mut f)) = self.log.map(Mutex::lock) {
            let _ = f.write_all(chunk);
        }
    }
}

/// Appends `chunk`, keeping memory bounded: the evidence needs only the tail (at least
/// [`EVIDENCE_OUTPUT_CAP`] bytes of it).
fn keep_tail(tail: &mut Vec<u8>, chunk: &[u8]) {
    tail.extend_from_slice(chunk);
    let cap = EVIDENCE_OUTPUT_CAP * 4;
    if tail.len() > cap * 2 {
        let cut = tail.len() - cap;
        tail.drain(..cut);
    }
}

/// A fresh regular file for the output log (never through a link planted at its name), or
/// `None` with a warning.
fn open_log(path: &Path, watch: Option<&dyn Watch>) -> Option<Mutex<File>> {
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = crate::fsio::regular_metadata(path).map(|m| m.map(|_| std::fs::remove_file(path)));
    match crate::fsio::create_new(path, None) {
        Ok(f) => Some(Mutex::new(f)),
        Err(e) => {
            if let Some(w) = watch {
                w.warning(&format!(
                    "cannot keep the output in {}: {e}",
                    path.display()
                ));
            }
            None
        }
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    if let Some(c) = status.code() {
        return c;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        1
    }
}

/// While a command runs, the first SIGINT (Ctrl-C reaches the whole foreground process
/// group, the command included) does not stop this process, so that the interrupted run is
/// still recorded; a second one stops it with exit code 130. The disposition in force before
/// is restored when the last [`Shield`] is dropped. Best effort: when the handler cannot be
/// installed, the default behaviour stays.
#[cfg(unix)]
mod interrupt {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, MutexGuard};

    /// SIGINTs received since the shield went up.
    static RECEIVED: AtomicUsize = AtomicUsize::new(0);
    /// How many shields are up, and the disposition to restore when none is.
    static RAISED: Mutex<(usize, Option<libc::sigaction>)> = Mutex::new((0, None));

    /// The shield is up while a value lives.
    pub struct Shield(());

    impl Shield {
        pub fn raise() -> Shield {
            let mut raised = lock();
            if raised.0 == 0 {
                RECEIVED.store(0, Ordering::SeqCst);
                raised.1 = install();
            }
            raised.0 += 1;
            Shield(())
        }
    }

    impl Drop for Shield {
        fn drop(&mut self) {
            let mut raised = lock();
            raised.0 -= 1;
            if raised.0 > 0 {
                return;
            }
            if let Some(previous) = raised.1.take() {
                // SAFETY: `previous` is the disposition sigaction(2) reported.
                unsafe { libc::sigaction(libc::SIGINT, &previous, std::ptr::null_mut()) };
            }
        }
    }

    fn lock() -> MutexGuard<'static, (usize, Option<libc::sigaction>)> {
        RAISED.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Installs the handler; returns the disposition it replaced.
    fn install() -> Option<libc::sigaction> {
        // SAFETY: both structs are plain data, zeroed then filled as sigaction(2) expects;
        // the handler only calls async-signal-safe functions.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(libc::SIGINT, &action, &mut previous) == 0).then_some(previous)
        }
    }

    extern "C" fn on_interrupt(_: libc::c_int) {
        if RECEIVED.fetch_add(1, Ordering::SeqCst) == 0 {
            return;
        }
        const MESSAGE: &[u8] = b"\ninterrupted twice; stopping small (exit 130)\n";
        // SAFETY: write(2) and _exit(2) are async-signal-safe.
        unsafe {
            libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
            libc::_exit(130);
        }
    }
}

#[cfg(not(unix))]
mod interrupt {
    /// No signals to shield from here.
    pub struct Shield(());

    impl Shield {
        pub fn raise() -> Shield {
            Shield(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_stays_bounded() {
        let mut tail = Vec::new();
        for _ in 0..100 {
            keep_tail(&mut tail, &[b'x'; 1000]);
        }
        assert!(tail.len() <= EVIDENCE_OUTPUT_CAP * 8);
        assert!(tail.len() >= EVIDENCE_OUTPUT_CAP);
    }

    #[cfg(unix)]
    #[test]
    fn a_run_shows_its_output_keeps_it_and_reports_its_exit_code() {
        struct Seen(Mutex<Vec<(bool, Vec<u8>)>>);
        impl Watch for Seen {
            fn output(&self, chunk: &[u8], stderr: bool) {
                self.0.lock().unwrap().push((stderr, chunk.to_vec()));
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let spec = RunSpec {
            root: tmp.path().to_path_buf(),
            command: "echo out; echo err >&2; exit 3".into(),
            output_log: tmp.path().join("logs/run.output.log"),
        };
        let seen = Seen(Mutex::new(Vec::new()));
        let (code, tail) = run(&spec, Some(&seen), true).unwrap();
        assert_eq!(code, 3);
        let mut tail = String::from_utf8(tail).unwrap().into_bytes();
        tail.sort_unstable();
        let mut both = b"out\nerr\n".to_vec();
        both.sort_unstable();
        assert_eq!(tail, both);
        let log = std::fs::read_to_string(&spec.output_log).unwrap();
        assert!(log.contains("out\n") && log.contains("err\n"), "{log}");
        let seen = seen.0.into_inner().unwrap();
        assert!(seen.contains(&(false, b"out\n".to_vec())), "{seen:?}");
        assert!(seen.contains(&(true, b"err\n".to_vec())), "{seen:?}");
        let quiet = Seen(Mutex::new(Vec::new()));
        run(&spec, Some(&quiet), false).unwrap();
        assert!(quiet.0.into_inner().unwrap().is_empty());
    }
}
