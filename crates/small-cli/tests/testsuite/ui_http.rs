//! `small ui` over HTTP: the real binary on an ephemeral port, asked with a plain HTTP/1.1
//! client (so that the Host header and the method can be anything).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_small");

pub struct UiServer {
    child: Child,
    pub port: u16,
}

impl Drop for UiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl UiServer {
    pub fn start(args: &[&str], cwd: &Path) -> UiServer {
        let mut child = Command::new(BIN)
            .arg("ui")
            .args(args)
            .current_dir(cwd)
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("first line: {line:?}"));
        assert!(url.ends_with('/'), "{line}");
        let port = url
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        UiServer { child, port }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn request(&self, method: &str, path: &str, host: Option<&str>) -> Resp {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let host_line = match host {
            Some(h) => format!("Host: {h}\r\n"),
            None => String::new(),
        };
        write!(
            s,
            "{method} {path} HTTP/1.1\r\n{host_line}Connection: close\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        Resp::parse(&raw)
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, Some(&self.host()))
    }
}

pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    fn parse(raw: &[u8]) -> Resp {
        let text = String::from_utf8_lossy(raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        let body = if chunked {
            dechunk(body)
        } else {
            body.to_string()
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

pub fn small(dir: &Path, args: &[&str]) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "small {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A workspace whose artifacts hold the usual XSS payloads.
pub fn hostile_workspace() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    small(
        p,
        &[
            "init",
            "--intent",
            "Intent <script>window.__xss=1</script>",
            "--task",
            "Title <img src=x onerror=\"window.__xss=2\">",
            "--task",
            "Second",
        ],
    );
    small(p, &["plan", "--depends", "task-2:task-1"]);
    small(
        p,
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            "<img src=x onerror=\"window.__xss=3\"> and <script>window.__xss=4</script>",
        ],
    );
    small(
        p,
        &[
            "checkpoint",
            "--task",
            "task-1",
            "--status",
            "completed",
            "--evidence",
            "done",
            "--link",
            "https://example.com/\"><script>window.__xss=5</script>",
        ],
    );
    d
}

fn no_raw_payload(body: &str) {
    assert!(!body.contains("<script>window"), "{body}");
    assert!(!body.contains("<img src=x"), "{body}");
}

#[test]
fn the_page_shows_the_workspace_with_every_artifact_string_escaped() {
    let d = hostile_workspace();
    let s = UiServer::start(&[], d.path());
    let r = s.get("/");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/w/0/"));
    let r = s.get("/w/0/");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let csp = r.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    no_raw_payload(&r.body);
    assert!(r
        .body
        .contains("&lt;script&gt;window.__xss=1&lt;&#x2f;script&gt;"));
    assert!(r.body.contains("&lt;img src=x onerror="));
    // The graph: one node per task, one edge for the dependency.
    assert_eq!(r.body.matches("class=\"node ").count(), 2, "{}", r.body);
    assert!(r.body.contains("data-from=\"task-1\" data-to=\"task-2\""));
    // The only script is the embedded file.
    assert_eq!(r.body.matches("<script").count(), 1);
    assert!(r
        .body
        .contains("<script src=\"/assets/ui.js\" defer></script>"));
    let t = s.get("/w/0/task/task-1");
    assert_eq!(t.status, 200);
    no_raw_payload(&t.body);
    assert!(t.body.contains("Evidence history"));
    let js = s.get("/assets/ui.js");
    assert!(js
        .header("content-type")
        .unwrap()
        .starts_with("text/javascript"));
    assert!(js.body.contains("EventSource"));
}

#[test]
fn only_get_and_head_are_answered() {
    let d = hostile_workspace();
    let s = UiServer::start(&[], d.path());
    for m in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let r = s.request(m, "/w/0/", Some(&s.host()));
        assert_eq!(r.status, 405, "{m}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"), "{m}");
    }
    let r = s.request("HEAD", "/w/0/", Some(&s.host()));
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
}

#[test]
fn a_foreign_host_is_refused() {
    let d = hostile_workspace();
    let s = UiServer::start(&[], d.path());
    for host in [
        Some("evil.example.com".to_string()),
        Some(format!("evil.example.com:{}", s.port)),
        Some("localhost:1".to_string()),
        None,
    ] {
        let r = s.request("GET", "/w/0/", host.as_deref());
        assert_eq!(r.status, 403, "{host:?}");
        assert!(!r.body.contains("task-1"));
    }
    for host in [
        format!("localhost:{}", s.port),
        format!("127.0.0.1:{}", s.port),
    ] {
        assert_eq!(s.request("GET", "/w/0/", Some(&host)).status, 200, "{host}");
    }
}

#[test]
fn the_timeline_filters_and_pages() {
    let d = tempfile::tempdir().unwrap();
    small(
        d.path(),
        &["init", "--intent", "x", "--task", "a", "--task", "b"],
    );
    for i in 0..60 {
        let task = if i % 2 == 0 { "task-1" } else { "task-2" };
        let ev = format!("step {i}");
        small(
            d.path(),
            &[
                "progress",
                "add",
                "--task",
                task,
                "--status",
                "in_progress",
                "--evidence",
                &ev,
            ],
        );
    }
    let s = UiServer::start(&[], d.path());
    let r = s.get("/w/0/timeline");
    assert_eq!(r.status, 200);
    // Newest first, 50 a page.
    let first = r.body.find("step 59").unwrap();
    let later = r.body.find("step 58").unwrap();
    assert!(first < later);
    assert!(!r.body.contains(">step 5<"));
    assert!(r.body.contains("offset=50"));
    let r = s.get("/w/0/timeline?task=task-2");
    assert!(r.body.contains("step 59") && !r.body.contains("step 58"));
    let r = s.get("/w/0/timeline?offset=50");
    assert!(r.body.contains("step 0") && !r.body.contains("step 59"));
    let r = s.get("/w/0/fragment/timeline?status=blocked");
    assert!(r.body.contains("No entries match"));
}

#[test]
fn a_progress_add_is_pushed_as_an_event() {
    let d = hostile_workspace();
    let s = UiServer::start(&[], d.path());
    let mut sock = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(sock, "GET /events HTTP/1.1\r\nHost: {}\r\n\r\n", s.host()).unwrap();
    let mut reader = BufReader::new(sock);
    let mut seen = String::new();
    let mut line = String::new();
    while !seen.contains("event: ready") {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0);
        seen.push_str(&line);
    }
    // The first gate run may report first; the event for the append follows.
    small(
        d.path(),
        &[
            "progress",
            "add",
            "--task",
            "task-2",
            "--status",
            "in_progress",
            "--evidence",
            "live one",
        ],
    );
    let start = Instant::now();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "stream ended");
        if line.starts_with("data:") && line.contains("\"timeline\"") {
            assert!(line.contains("\"ws\":0"));
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no change event");
    }
    let r = s.get("/w/0/fragment/timeline");
    assert!(r.body.contains("live one"));
}

#[test]
fn several_workspaces_get_an_overview() {
    let a = hostile_workspace();
    let b = tempfile::tempdir().unwrap();
    small(
        b.path(),
        &["init", "--intent", "Second workspace", "--task", "x"],
    );
    let s = UiServer::start(
        &[a.path().to_str().unwrap(), b.path().to_str().unwrap()],
        b.path(),
    );
    let r = s.get("/");
    assert_eq!(r.status, 200);
    assert_eq!(r.body.matches("class=\"card\"").count(), 2);
    assert!(r.body.contains("Second workspace"));
    no_raw_payload(&r.body);
    assert_eq!(s.get("/w/1/").status, 200);
    assert_eq!(s.get("/w/2/").status, 404);
}

#[test]
fn the_demo_serves_a_sample_workspace() {
    let d = tempfile::tempdir().unwrap();
    let s = UiServer::start(&["--demo"], d.path());
    let r = s.get("/w/0/");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("--dry-run"));
    assert_eq!(r.body.matches("class=\"node ").count(), 6);
    assert!(r.body.contains("class=\"edge\""));
    let r = s.get("/w/0/fragment/handoff");
    assert!(r.body.contains("printing the changes is in progress"));
}

#[test]
fn no_workspace_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["ui"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

/// A 2.0.0 workspace is shown from the same project state as a v1 one: its tasks by alias in
/// the graph and on the board, their dependencies, the handoff event, and its sessions.
#[test]
fn a_v2_workspace_shows_its_tasks_sessions_and_handoff() {
    let Some(case) = small_testkit::conformance_path(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/v2/cases/wf-single-session"
    )) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    crate::conformance_v2::copy_case_links(&case, work.path());
    let ui = UiServer::start(&["--addr", "127.0.0.1:0"], work.path());
    let page = ui.get("/w/0/");
    assert_eq!(page.status, 200, "{}", page.body);
    for want in [
        "SMALL 2.0.0, solo mode",
        "Sessions (2, 0 open)",
        "3 (3 verified)",
        "session_f74eaf91908d192c41c7311f0205109f",
        "token-polling depends on device-code-request",
        "Device-flow integration test written and accepted",
    ] {
        assert!(page.body.contains(want), "{want} missing from the page");
    }
    assert!(
        !page.body.contains("task_2f73f9fb"),
        "tasks are named by alias"
    );
    let task = ui.get("/w/0/task/token-polling");
    assert_eq!(task.status, 200, "{}", task.body);
    assert!(task.body.contains("Poll the token endpoint with backoff"));
    assert_eq!(ui.get("/w/0/task/no-such-task").status, 404);
}

/// The timeline of a 2.0.0 workspace is its events: newest first, filtered by task, session
/// and kind, command receipts marked, and a new event file pushed to the page.
#[test]
fn a_v2_workspace_has_an_event_timeline() {
    let Some(case) = small_testkit::conformance_path(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/v2/cases/wf-single-session"
    )) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    crate::conformance_v2::copy_case_links(&case, work.path());
    let ui = UiServer::start(&[], work.path());
    let page = ui.get("/w/0/timeline");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Events 1–17 of 17"), "{}", page.body);
    assert_eq!(page.body.matches("<li class=\"entry\"").count(), 17);
    // Newest first: the last session's close comes before the first session's start.
    let positions: Vec<usize> = page
        .body
        .split("data-index=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(positions, (1..=17).rev().collect::<Vec<_>>());
    // The command receipt is verified (its receipt file is there and sound).
    assert!(page.body.contains("receipt verified"));
    assert!(page.body.contains("echo ok"));
    // Filters: by kind, by session, by task (alias).
    let r = ui.get("/w/0/timeline?kind=task_created");
    assert_eq!(r.body.matches("<li class=\"entry\"").count(), 5);
    assert!(r.body.contains("matching (17 in all)"));
    let r = ui.get("/w/0/timeline?session=session_f74eaf91908d192c41c7311f0205109f");
    let n = r.body.matches("<li class=\"entry\"").count();
    assert!((1..17).contains(&n), "{n}");
    assert!(!r
        .body
        .contains("data-session=\"session_3bcb641eab1bc69869dfcfeb5c41ee3e\""));
    let r = ui.get("/w/0/fragment/timeline?task=token-polling");
    assert!(r.body.contains("data-task=\"token-polling\""));
    assert!(!r.body.contains("data-task=\"device-code-request\""));
    // The task page's history is its events; the workspace page shows the newest.
    let t = ui.get("/w/0/task/token-polling");
    assert!(t.body.contains("data-kind=\"task_created\""), "{}", t.body);
    let w = ui.get("/w/0/");
    assert!(w.body.contains("data-kind=\"session_closed\""));
    // A damaged receipt makes the command's receipt not verified.
    let receipt = std::fs::read_dir(work.path().join(".small/receipts/sha256"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("d6b7369d"))
        .unwrap();
    std::fs::remove_file(&receipt).unwrap();
    let r = ui.get("/w/0/timeline?kind=command_recorded");
    assert!(r.body.contains("receipt not verified"), "{}", r.body);
}

#[test]
fn a_taken_over_session_shows_as_superseded() {
    let Some(case) = small_testkit::conformance_path(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/v2/cases/wf-single-session"
    )) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    crate::conformance_v2::copy_case_links(&case, work.path());
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_small"))
            .args(args)
            .current_dir(work.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let first = run(&["session", "start", "--label", "first", "--json"]);
    let first = first["session"]["session_id"].as_str().unwrap().to_string();
    run(&[
        "session",
        "start",
        "--takeover",
        &first,
        "--reason",
        "the first agent stopped",
        "--json",
    ]);
    let ui = UiServer::start(&["--addr", "127.0.0.1:0"], work.path());
    let page = ui.get("/w/0/");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Sessions (4, 1 open)"), "{}", page.body);
    let row = page
        .body
        .lines()
        .find(|l| l.contains(&first))
        .expect("the first session's row");
    assert!(row.contains("superseded"), "{row}");
}

#[test]
fn the_board_and_graph_show_who_holds_a_task_and_for_how_long() {
    let d = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    small(
        d.path(),
        &["init", "--intent", "Claims on the page", "--task", "First"],
    );
    small(d.path(), &["plan", "--add", "Second"]);
    small(
        d.path(),
        &[
            "claim",
            "task-2",
            "--local",
            "--as",
            "agent-<b>",
            "--ttl",
            "2h",
        ],
    );
    let s = UiServer::start(&[], d.path());
    let page = s.get("/w/0/");
    assert_eq!(page.status, 200);
    let board = s.get("/w/0/fragment/board");
    let left = ["2h 0m left", "1h 59m left"];
    assert!(
        left.iter()
            .any(|l| board.body.contains(&format!(">{l}</span>"))),
        "{}",
        board.body
    );
    assert!(
        board.body.contains("held by agent-&lt;b&gt; until "),
        "{}",
        board.body
    );
    assert_eq!(board.body.matches("class=\"holder held\"").count(), 1);
    // The claims panel lists the lease with its task's title and its dependencies.
    let claims = s.get("/w/0/fragment/claims");
    assert!(
        claims.body.contains("data-task=\"task-2\""),
        "{}",
        claims.body
    );
    assert!(claims.body.contains("Second"), "{}", claims.body);
    assert!(claims.body.contains("agent-&lt;b&gt;"), "{}", claims.body);
    // The task page names the holder.
    let task = s.get("/w/0/task/task-2");
    assert!(
        task.body.contains("held by agent-&lt;b&gt; until "),
        "{}",
        task.body
    );
    // The next task is the first ready task nobody holds, with its title.
    let summary = s.get("/w/0/fragment/summary");
    assert!(
        summary
            .body
            .contains("<code class=\"id\" title=\"task-1\">task-1</code> First"),
        "{}",
        summary.body
    );
    let graph = s.get("/w/0/fragment/graph");
    assert!(
        graph.body.contains("held by agent-&lt;b&gt; for "),
        "{}",
        graph.body
    );
    assert!(
        page.body.contains("held by agent-&lt;b&gt;"),
        "{}",
        page.body
    );
}

/// The board's five columns over HTTP: a v1 task still pending in the plan whose newest entry
/// is in progress is in progress (on its page too), a task whose dependency is open waits,
/// cancelled and `meta/*` tasks are not counted, and the next task is the first ready one
/// with its title (what `small resume` names).
#[test]
fn the_board_has_five_columns_and_the_next_task_follows_resume() {
    let d = tempfile::tempdir().unwrap();
    small(
        d.path(),
        &["init", "--intent", "Five columns", "--task", "First"],
    );
    for t in ["Second", "Third", "Fourth", "Dropped"] {
        small(d.path(), &["plan", "--add", t]);
    }
    small(d.path(), &["plan", "--depends", "task-4:task-3"]);
    small(d.path(), &["plan", "--cancel", "task-5"]);
    small(
        d.path(),
        &[
            "progress",
            "add",
            "--task",
            "task-1",
            "--status",
            "in_progress",
            "--evidence",
            "started",
        ],
    );
    let s = UiServer::start(&[], d.path());
    let board = s.get("/w/0/fragment/board").body;
    let column = |key: &str| -> Vec<String> {
        let start = board
            .find(&format!("data-column=\"{key}\""))
            .unwrap_or_else(|| panic!("no {key} column: {board}"));
        let end = board[start..]
            .find("</section>")
            .map_or(board.len(), |e| start + e);
        board[start..end]
            .split("<li data-task=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(column("in_progress"), ["task-1"], "{board}");
    assert_eq!(column("ready"), ["task-2", "task-3"], "{board}");
    assert_eq!(column("waiting"), ["task-4"], "{board}");
    assert!(column("blocked").is_empty() && column("completed").is_empty());
    assert!(board.contains("1 cancelled or"), "{board}");
    let task = s.get("/w/0/task/task-1").body;
    assert!(task.contains("▶ in progress"), "{task}");
    let summary = s.get("/w/0/fragment/summary").body;
    assert!(summary.contains("0/4"), "{summary}");
    // The page's next task is the one `small resume` names.
    let resume = Command::new(BIN)
        .args(["resume", "--json"])
        .current_dir(d.path())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&resume.stdout).unwrap();
    let next = doc["next_task"]["id"].as_str().unwrap().to_string();
    let title = doc["next_task"]["title"].as_str().unwrap().to_string();
    assert!(
        summary.contains(&format!("title=\"{next}\">{next}</code> {title}")),
        "resume names {next}: {summary}"
    );
}

/// A remote that accepts and never answers: the lease refresh waits on it on its own thread,
/// pages are still served at once, SIGTERM stops the server, and the waiting git does not
/// outlive it (the remote sees its connection closed).
#[cfg(unix)]
#[test]
fn a_silent_remote_holds_up_no_page_and_no_shutdown() {
    let remote = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = remote.local_addr().unwrap().port();
    let d = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&[
        "remote",
        "add",
        "origin",
        &format!("git://127.0.0.1:{port}/silent.git"),
    ]);
    small(
        d.path(),
        &["init", "--intent", "Silent remote", "--task", "One"],
    );
    let mut s = UiServer::start(&["--lease-refresh", "1"], d.path());
    // The refresh's fetch connects, and gets no answer.
    remote.set_nonblocking(true).unwrap();
    let start = Instant::now();
    let mut conn = loop {
        match remote.accept() {
            Ok((c, _)) => break c,
            Err(_) if start.elapsed() < Duration::from_secs(15) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("no fetch reached the remote: {e}"),
        }
    };
    let t = Instant::now();
    let page = s.get("/w/0/");
    assert_eq!(page.status, 200);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let pid = s.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let t = Instant::now();
    while s.child.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "small ui did not stop within 10 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The fetch was killed with the server: its connection is closed.
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the fetch outlived the server: {e}"),
        }
    }
}
