//! Running a child shell for `small apply`: a terminal and process concern, kept out of the
//! commands. The child's output is shown as it comes (when asked), kept whole in a log file
//! and, for the evidence, its tail in memory; the first Ctrl-C reaches only the child, so
//! that the interrupted run can still be recorded.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use small_core::authoring::apply::{RunResult, RunSpec, EVIDENCE_OUTPUT_CAP};

use crate::GlobalArgs;

/// Which of the child's streams are shown as they come: (stdout, stderr).
pub type Echo = (bool, bool);

/// Runs `sh -lc command` in the spec's root, copying its output to ours (per `echo`), into
/// the output log and into a bounded buffer. Returns the exit code (128 + signal when killed)
/// and the tail of the output.
pub fn run_shell(g: &GlobalArgs, spec: &RunSpec, echo: Echo) -> RunResult {
    // Ctrl-C reaches the command (same process group); small itself outlives the first one so
    // that the interrupted run is still recorded. A second Ctrl-C stops small as well.
    shield_from_first_interrupt();
    let mut child = Command::new("sh")
        .arg("-lc")
        .arg(&spec.command)
        .current_dir(&spec.root)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start `sh -lc`: {e}")))?;
    let captured = Arc::new(Mutex::new(Vec::<u8>::new()));
    let log_file = open_log(g, &spec.output_log);
    let streams: Vec<(Box<dyn Read + Send>, bool)> = vec![
        (
            Box::new(child.stdout.take().expect("stdout is piped")),
            false,
        ),
        (
            Box::new(child.stderr.take().expect("stderr is piped")),
            true,
        ),
    ];
    let pumps: Vec<std::thread::JoinHandle<()>> = streams
        .into_iter()
        .map(|(stream, is_err)| {
            let show = if is_err { echo.1 } else { echo.0 };
            let (captured, log_file) = (Arc::clone(&captured), log_file.clone());
            std::thread::Builder::new()
                .spawn(move || pump(stream, is_err, show, &captured, log_file.as_deref()))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| {
            // Without a reader its output would fill the pipe and stop it: stop it now.
            let _ = child.kill();
            let _ = child.wait();
            std::io::Error::new(
                e.kind(),
                format!("cannot start a thread to read the command's output: {e}"),
            )
        })?;
    let status = child.wait().map_err(|e| {
        std::io::Error::new(e.kind(), format!("waiting for the command failed: {e}"))
    })?;
    for p in pumps {
        let _ = p.join();
    }
    if let Some(f) = &log_file {
        if let Ok(f) = f.lock() {
            let _ = f.sync_all();
        }
    }
    let out = captured.lock().map(|c| c.clone()).unwrap_or_default();
    Ok((exit_code(status), out))
}

/// A fresh regular file for the output log (never through a link planted at its name), or
/// `None` with a warning.
fn open_log(g: &GlobalArgs, path: &Path) -> Option<Arc<Mutex<std::fs::File>>> {
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = small_core::workspace::fsio::regular_metadata(path)
        .map(|m| m.map(|_| std::fs::remove_file(path)));
    match small_core::workspace::fsio::create_new(path, None) {
        Ok(f) => Some(Arc::new(Mutex::new(f))),
        Err(e) => {
            g.warn(format!(
                "warning: cannot keep the output in {}: {e}",
                path.display()
            ));
            None
        }
    }
}

/// Copies one stream of the child until it closes.
fn pump(
    mut stream: Box<dyn Read + Send>,
    is_err: bool,
    show: bool,
    captured: &Mutex<Vec<u8>>,
    log_file: Option<&Mutex<std::fs::File>>,
) {
    let mut buf = [0u8; 8192];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        if show {
            if is_err {
                let mut e = crate::output::stderr();
                let _ = e.write_all(chunk);
                let _ = e.flush();
            } else {
                let mut o = crate::output::stdout();
                let _ = o.write_all(chunk);
                let _ = o.flush();
            }
        }
        if let Ok(mut c) = captured.lock() {
            // Keep memory bounded: the evidence only needs the tail.
            c.extend_from_slice(chunk);
            let cap = EVIDENCE_OUTPUT_CAP * 4;
            if c.len() > cap * 2 {
                let cut = c.len() - cap;
                c.drain(..cut);
            }
        }
        if let Some(f) = log_file {
            if let Ok(mut f) = f.lock() {
                let _ = f.write_all(chunk);
            }
        }
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
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

/// Keeps the first SIGINT (Ctrl-C) from killing small while a command runs; the second one
/// exits with 130. Best effort: without a signal handler the default behaviour stays.
fn shield_from_first_interrupt() {
    let ready = std::sync::Arc::new(std::sync::Barrier::new(2));
    let ready2 = std::sync::Arc::clone(&ready);
    let spawned = std::thread::Builder::new()
        .name("ctrl-c".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(_) => {
                    ready2.wait();
                    return;
                }
            };
            rt.block_on(async move {
                let mut first = true;
                loop {
                    let signal = tokio::signal::ctrl_c();
                    tokio::pin!(signal);
                    // Register the handler before letting the command start waiting.
                    let registered = futures_poll_once(&mut signal).await;
                    if first {
                        ready2.wait();
                    }
                    if !registered {
                        // Already received while registering: treat as a Ctrl-C.
                    } else if signal.await.is_err() {
                        return;
                    }
                    if !first {
                        crate::output::error_line("\ninterrupted twice; stopping small (exit 130)");
                        std::process::exit(130);
                    }
                    first = false;
                }
            });
        });
    if spawned.is_ok() {
        ready.wait();
    }
}

/// Polls a future once (to run its registration side effects). Returns `true` if it is still
/// pending, `false` if it completed on that first poll.
async fn futures_poll_once<F: std::future::Future + Unpin>(f: &mut F) -> bool {
    use std::pin::Pin;
    use std::task::Poll;
    std::future::poll_fn(|cx| match Pin::new(&mut *f).poll(cx) {
        Poll::Pending => Poll::Ready(true),
        Poll::Ready(_) => Poll::Ready(false),
    })
    .await
}
