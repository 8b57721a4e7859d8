//! `small-bench ui`: `small ui` on a generated workspace. Times the workspace page and the
//! timeline page (client-side over loopback: the server's time plus one local round trip),
//! the time from a `small progress add` finishing to the page's `change` event, and the
//! server's resident memory.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct UiArgs {
    /// The `small` binary to measure (build with --release)
    #[arg(long, default_value = "target/release/small")]
    small: PathBuf,
    /// Plan tasks
    #[arg(long, default_value_t = 1000)]
    tasks: usize,
    /// Progress entries
    #[arg(long, default_value_t = 100_000)]
    progress: usize,
    /// Where to generate the workspace
    #[arg(long, default_value = "target/bench-ui")]
    work: PathBuf,
    /// Page loads per measurement (the median is reported)
    #[arg(long, default_value_t = 9)]
    runs: usize,
    /// Appends timed for the live update
    #[arg(long, default_value_t = 50)]
    appends: usize,
    /// Use this workspace as it is instead of generating one
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also load the pages in headless Chromium with this Python (one with Playwright), via
    /// bench/ui_browser_load.py: Navigation Timing medians and the live update as the
    /// browser sees it
    #[arg(long, value_name = "PYTHON")]
    browser: Option<PathBuf>,
    /// Appends timed in the browser (with --browser)
    #[arg(long, default_value_t = 20)]
    browser_appends: usize,
}

struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(port: u16, path: &str) -> Result<(u16, usize), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| e.to_string())?;
    let status = String::from_utf8_lossy(&buf[..buf.len().min(20)])
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, buf.len()))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn time_page(port: u16, path: &str, runs: usize) -> Result<(Duration, usize), String> {
    let mut t = Vec::new();
    let mut size = 0;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let (status, n) = get(port, path)?;
        t.push(start.elapsed());
        if status != 200 {
            return Err(format!("GET {path}: status {status}"));
        }
        size = n;
    }
    t.sort();
    Ok((percentile(&t, 0.5), size))
}

fn rss_kib(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

pub fn run(
    a: &UiArgs,
    generate: &dyn Fn(&Path, usize, usize) -> Result<u64, String>,
) -> Result<(), String> {
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => {
            std::fs::create_dir_all(&a.work).map_err(|e| e.to_string())?;
            let bytes = generate(&a.work, a.tasks, a.progress)?;
            println!(
                "workspace: T={} P={} (progress log {:.1} MB)",
                a.tasks,
                a.progress,
                bytes as f64 / 1e6
            );
            a.work.clone()
        }
    };
    // The server and the appends run in the workspace: the binary's path must not be relative.
    let small =
        std::fs::canonicalize(&a.small).map_err(|e| format!("{}: {e}", a.small.display()))?;
    let a = &UiArgs {
        small,
        work: a.work.clone(),
        dir: a.dir.clone(),
        browser: a.browser.clone(),
        ..*a
    };
    let started = Instant::now();
    let mut child = Command::new(&a.small)
        .args(["ui", "--addr", "127.0.0.1:0"])
        .current_dir(&dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", a.small.display()))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().ok_or("no stdout")?)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let port: u16 = line
        .trim()
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("unexpected first line {line:?}"))?;
    let server = Server { child };
    let pid = server.child.id();
    println!(
        "start-up (index built, listening): {:.0} ms",
        ms(started.elapsed())
    );

    let (ws, ws_size) = time_page(port, "/w/0/", a.runs)?;
    let (tl, _) = time_page(port, "/w/0/timeline", a.runs)?;
    let (tl_deep, _) = time_page(port, "/w/0/timeline?offset=50000", a.runs)?;
    let (tl_filter, _) = time_page(port, "/w/0/timeline?task=task-7&status=completed", a.runs)?;
    println!(
        "workspace page: {:.1} ms median ({} KB); timeline: {:.1} ms; timeline page 1000: {:.1} ms; filtered: {:.1} ms",
        ms(ws),
        ws_size / 1000,
        ms(tl),
        ms(tl_deep),
        ms(tl_filter)
    );

    // Live updates: time from `progress add` exiting to the change event naming the timeline.
    let mut sock = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    write!(
        sock,
        "GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(sock);
    let mut l = String::new();
    loop {
        l.clear();
        if reader.read_line(&mut l).map_err(|e| e.to_string())? == 0 {
            return Err("the event stream ended".into());
        }
        if l.starts_with("event: ready") {
            break;
        }
    }
    let mut lat = Vec::new();
    let mut cmd = Vec::new();
    for i in 0..a.appends {
        let t0 = Instant::now();
        let st = Command::new(&a.small)
            .args([
                "progress",
                "add",
                "--task",
                "task-1",
                "--status",
                "in_progress",
                "--evidence",
            ])
            .arg(format!("bench append {i}"))
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        let written = Instant::now();
        if !st.success() {
            return Err("small progress add failed".into());
        }
        cmd.push(written - t0);
        loop {
            l.clear();
            if reader.read_line(&mut l).map_err(|e| e.to_string())? == 0 {
                return Err("the event stream ended".into());
            }
            if l.starts_with("data:") && l.contains("\"timeline\"") {
                break;
            }
        }
        lat.push(written.elapsed());
        // Let the gates' re-run after this append settle into the next measurement fairly.
        std::thread::sleep(Duration::from_millis(150));
    }
    lat.sort();
    cmd.sort();
    println!(
        "progress add -> change event: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms ({} appends; the command itself: p50 {:.0} ms)",
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.95)),
        ms(*lat.last().unwrap_or(&Duration::ZERO)),
        lat.len(),
        ms(percentile(&cmd, 0.5))
    );
    let (tl2, _) = time_page(port, "/w/0/timeline", a.runs)?;
    println!("timeline after the appends: {:.1} ms", ms(tl2));
    if let Some(python) = &a.browser {
        drop(reader);
        browser(python, port, a, &dir)?;
    }
    println!(
        "server memory: RSS {:.0} MiB now, peak {:.0} MiB",
        rss_kib(pid, "VmRSS:") as f64 / 1024.0,
        rss_kib(pid, "VmHWM:") as f64 / 1024.0
    );
    drop(server);
    Ok(())
}

/// The pages in headless Chromium: bench/ui_browser_load.py prints one JSON object.
fn browser(python: &Path, port: u16, a: &UiArgs, dir: &Path) -> Result<(), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/ui_browser_load.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(format!("http://127.0.0.1:{port}/"))
        .arg(a.runs.max(1).to_string())
        .arg(a.browser_appends.to_string())
        .arg(&a.small)
        .arg(dir)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed", script.display()));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{}: unexpected output: {e}", script.display()))?;
    let f = |p: &str| {
        v.pointer(p)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(f64::NAN)
    };
    for page in ["workspace", "timeline"] {
        println!(
            "browser, {page} page: domContentLoaded {:.0} ms, load {:.0} ms (median of {}; response {:.0} ms)",
            f(&format!("/{page}/domContentLoaded_ms")),
            f(&format!("/{page}/load_ms")),
            a.runs.max(1),
            f(&format!("/{page}/response_ms")),
        );
    }
    if v.get("live").is_some() {
        println!(
            "browser, progress add -> entry shown: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms ({} appends)",
            f("/live/p50_ms"),
            f("/live/p95_ms"),
            f("/live/max_ms"),
            f("/live/appends"),
        );
    }
    Ok(())
}
