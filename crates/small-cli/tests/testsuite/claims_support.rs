//! Helpers shared by the claims tests (claims, claims_done, claims_hostile, handoff_claims,
//! swarm): the real `small` binary and real git in temporary directories, a bare remote
//! holding a planned workspace and clones of it, and `git daemon` on loopback.
//!
//! Every command runs with [`command`]'s environment; the `_env` forms add `env` on top of
//! it, for the modules whose commands all run with settings of their own.
#![cfg(unix)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_small");

/// `program args` in `dir`, without colour, with a git identity, never prompting, and
/// without the SMALL_* settings that change how claims behave; stdout and stderr piped.
pub fn command(dir: &Path, program: &str, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("SMALL_AGENT")
        .env_remove("SMALL_CLAIM_SKEW")
        .env_remove("SMALL_CLAIM_TIMEOUT")
        .env_remove("SMALL_LOCK_TIMEOUT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// A command's stdout and then its stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run `small` in `dir` with `env`; it must exit `code`. Its output.
pub fn small_env(dir: &Path, code: i32, args: &[&str], env: &[(&str, &str)]) -> Output {
    let o = command(dir, BIN, args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(code), "small {args:?}: {}", text(&o));
    o
}

/// Run `small` in `dir`; it must exit `code`. Its output.
pub fn small(dir: &Path, code: i32, args: &[&str]) -> Output {
    small_env(dir, code, args, &[])
}

/// `small args` in `dir` with `env`, exit `code`: its JSON document.
pub fn json_env(dir: &Path, code: i32, args: &[&str], env: &[(&str, &str)]) -> Value {
    let o = small_env(dir, code, args, env);
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("small {args:?}: not JSON ({e}): {}", text(&o)))
}

/// `small args` in `dir`, exit `code`: its JSON document.
pub fn json(dir: &Path, code: i32, args: &[&str]) -> Value {
    json_env(dir, code, args, &[])
}

/// `git args` in `dir` with `env`; it must succeed. Its stdout.
pub fn git_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let o = command(dir, "git", args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `git args` in `dir`; it must succeed. Its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_env(dir, args, &[])
}

/// `top/seed`, a new repository on `main` whose workspace (`small init`, run with `env`)
/// has `intent` and plans one task, `Task 1`. Nothing committed yet.
pub fn init_seed(top: &Path, intent: &str, env: &[(&str, &str)]) -> PathBuf {
    let seed = top.join("seed");
    std::fs::create_dir(&seed).unwrap();
    git_env(&seed, &["init", "-q", "-b", "main"], env);
    let init = [
        "init",
        "--no-agents",
        "--intent",
        intent,
        "--task",
        "Task 1",
    ];
    small_env(&seed, 0, &init, env);
    seed
}

/// The bare repository `top/remote.git`, cloned (with `env`) from `seed`.
pub fn bare_remote(top: &Path, seed: &Path, env: &[(&str, &str)]) -> PathBuf {
    let remote = top.join("remote.git");
    let clone = [
        "clone",
        "-q",
        "--bare",
        seed.to_str().unwrap(),
        remote.to_str().unwrap(),
    ];
    git_env(top, &clone, env);
    remote
}

/// A repository whose workspace (with `intent`) plans `tasks` tasks (`task-1` …), pushed to
/// the bare repository `top/remote.git`.
pub fn seeded(top: &Path, intent: &str, tasks: usize) -> PathBuf {
    let seed = init_seed(top, intent, &[]);
    let titles: Vec<String> = (2..=tasks).map(|i| format!("Task {i}")).collect();
    let mut args = vec!["plan"];
    for t in &titles {
        args.extend(["--add", t.as_str()]);
    }
    if tasks > 1 {
        small(&seed, 0, &args);
    }
    git(&seed, &["add", "-A", ".small"]);
    git(&seed, &["commit", "-q", "-m", "plan"]);
    bare_remote(top, &seed, &[])
}

/// Clones `url` (with `env`) to `top/name`.
pub fn clone_env(top: &Path, url: &str, name: &str, env: &[(&str, &str)]) -> PathBuf {
    let dir = top.join(name);
    git_env(top, &["clone", "-q", url, dir.to_str().unwrap()], env);
    dir
}

/// Clones `url` to `top/name`.
pub fn clone(top: &Path, url: &str, name: &str) -> PathBuf {
    clone_env(top, url, name, &[])
}

/// Clones `name-0` … of `url` under `top`.
pub fn clones(top: &Path, url: &str, name: &str, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| clone(top, url, &format!("{name}-{i}")))
        .collect()
}

/// The section of docs/json-output.md under the heading `## {title}`, up to the next `## `
/// heading.
pub fn json_output_section(title: &str) -> String {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/json-output.md"
    ))
    .unwrap();
    let start = page
        .find(&format!("## {title}"))
        .unwrap_or_else(|| panic!("docs/json-output.md has no `## {title}` section"));
    let section = &page[start..];
    section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)].to_string()
}

/// `git daemon` serving `base` (pushes allowed) on a free port, stopped when dropped.
pub struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Option<Daemon> {
        let exec = git(base, &["--exec-path"]);
        let program = Path::new(exec.trim()).join("git-daemon");
        if !program.exists() {
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(program)
            // Its own process group: stopping it stops the connections it serves too.
            .process_group(0)
            .args([
                "--export-all",
                "--enable=receive-pack",
                &format!("--base-path={}", base.display()),
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                "--reuseaddr",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let d = Daemon { child, port };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let start = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "git daemon did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(d)
    }

    pub fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // The daemon and every receive-pack or upload-pack it started, mid-transfer or not.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A [`Daemon`] serving `base`, or `None` (the test skipped, and said so) where this git
/// has no `git daemon`.
pub fn daemon_or_skip(base: &Path) -> Option<Daemon> {
    let d = Daemon::start(base);
    if d.is_none() {
        small_testkit::skip("git-daemon", "this git has no git-daemon");
    }
    d
}
