//! Slow, idle and greedy clients against a real server over real sockets: every connection
//! is bounded in time and memory, the connection cap holds while /healthz still answers, and
//! shutdown has a deadline.

mod common;

use common::{config, TestServer};
use small_server::StoreLocation;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

fn limits() -> small_server::conn::Limits {
    small_server::conn::Limits {
        header_timeout: Duration::from_millis(500),
        idle_timeout: Duration::from_millis(700),
        ..Default::default()
    }
}

fn server(limits: small_server::conn::Limits) -> TestServer {
    let mut c = config(StoreLocation::Memory);
    c.limits = limits;
    TestServer::start(c)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Whether the server closed the connection: a read returns end-of-file or a reset (a
/// read timeout means it is still open).
fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // a response (e.g. 408) before closing
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

fn read_response(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_client_trickling_its_headers_is_cut_off() {
    let srv = server(limits());
    let mut s = connect(srv.addr);
    let start = Instant::now();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // One header byte every 100 ms: never a complete head.
    let mut cut = false;
    for _ in 0..60 {
        if s.write_all(b"X").is_err() {
            cut = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        cut || closed_by_server(&mut s),
        "still open after {:?}",
        start.elapsed()
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn idle_connections_are_closed() {
    let srv = server(limits());
    // Never sends anything.
    let mut silent = connect(srv.addr);
    // One keep-alive request, then nothing.
    let mut kept = connect(srv.addr);
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = kept.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let start = Instant::now();
    assert!(
        closed_by_server(&mut silent),
        "silent connection still open"
    );
    assert!(
        closed_by_server(&mut kept),
        "idle keep-alive connection still open"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn the_connection_cap_holds_and_healthz_still_answers() {
    let srv = server(small_server::conn::Limits {
        max_connections: 4,
        ..Default::default()
    });
    let held: Vec<TcpStream> = (0..4).map(|_| connect(srv.addr)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let health = common::raw_request(srv.addr, "GET", "/healthz", None, b"");
    assert_eq!(health.status, 200);
    let other = common::raw_request(srv.addr, "GET", "/protocol/small/v1", None, b"");
    assert_eq!(other.status, 503, "{}", other.text());
    assert_eq!(
        other.json()["error"],
        "too_many_connections",
        "{}",
        other.text()
    );
    assert_eq!(other.header("retry-after"), Some("1"));
    drop(held);
    // Slots free again once those connections are gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = common::raw_request(srv.addr, "GET", "/protocol/small/v1", None, b"");
        if r.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "slots never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn request_heads_are_bounded() {
    let srv = server(small_server::conn::Limits {
        max_header_bytes: 16 * 1024,
        ..Default::default()
    });
    let mut s = connect(srv.addr);
    let big = "a".repeat(100 * 1024);
    let req =
        format!("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\nConnection: close\r\n\r\n");
    let _ = s.write_all(req.as_bytes());
    let resp = read_response(&mut s);
    assert!(
        resp.starts_with("HTTP/1.1 431"),
        "{}",
        &resp[..resp.len().min(200)]
    );
    // A head under the limit is fine.
    let mut s = connect(srv.addr);
    let ok = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(8000)
    );
    s.write_all(ok.as_bytes()).unwrap();
    assert!(read_response(&mut s).starts_with("HTTP/1.1 200"));
}

#[test]
fn shutdown_does_not_wait_forever_for_an_unfinished_request() {
    let srv = server(small_server::conn::Limits {
        header_timeout: Duration::from_secs(600),
        idle_timeout: Duration::from_secs(600),
        shutdown_timeout: Duration::from_millis(500),
        ..Default::default()
    });
    let mut s = connect(srv.addr);
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let (tx, rx) = std::sync::mpsc::channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        srv.stop();
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the server did not stop within its shutdown deadline");
    assert!(start.elapsed() < Duration::from_secs(5));
    drop(s);
}

#[test]
fn a_405_names_the_allowed_methods() {
    let srv = server(Default::default());
    let r = common::raw_request(srv.addr, "GET", "/small/v1/replay", None, b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST"));
    let msg = r.json()["message"].as_str().unwrap().to_owned();
    assert!(msg.ends_with("allowed: POST"), "{msg}");
}

#[test]
fn a_half_closed_client_gets_every_pipelined_answer() {
    let srv = server(Default::default());
    let mut s = connect(srv.addr);
    s.write_all(
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let resp = read_response(&mut s);
    assert_eq!(resp.matches("HTTP/1.1 200").count(), 2, "{resp}");
}
