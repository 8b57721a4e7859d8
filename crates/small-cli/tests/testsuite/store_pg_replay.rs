//! Replay records of `small serve` on PostgreSQL with group commit: a replay acknowledged is
//! durable (the server killed with SIGKILL under load, then restarted, returns every
//! acknowledged replay byte for byte), and two servers racing the same replay IDs agree.
//!
//! Needs `SMALL_TEST_POSTGRES_URL` (a visible skip when unset; a failure when
//! `SMALL_TEST_REQUIRE` lists `postgres`).

use crate::server_common as common;
use crate::store_scaleout::serve;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// A fresh schema on the test database and the store location that selects it.
struct Db {
    url: String,
    schema: String,
    store: String,
}

impl Db {
    fn fresh(name: &str) -> Option<Db> {
        let url = small_testkit::postgres_url()?;
        let schema = format!("t_{name}_{}", std::process::id());
        let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        c.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .expect("create the test schema");
        let sep = if url.contains('?') { '&' } else { '?' };
        let store = format!("{url}{sep}options=-c%20search_path%3D{schema}");
        Some(Db { url, schema, store })
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

/// A replay request whose manifest (and so replay ID) is told apart by `title`.
fn replay_body(title: &str) -> Vec<u8> {
    format!(
        r#"{{"protocolVersion":"1.0.0","manifest":{{"artifact":"track.audio","schema":"artifact.v1","version":3,"metadata":{{"title":"{title}","tags":["live"]}}}}}}"#
    )
    .into_bytes()
}

/// POST a replay; `None` when the server is gone (connection refused or cut).
fn try_replay(addr: SocketAddr, body: &[u8]) -> Option<common::Response> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let head = format!(
        "POST /small/v1/replay HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    if !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        return None;
    }
    Some(common::parse_response(&buf))
}

/// The (title, body) of every replay one client saw acknowledged with 200.
type Acked = Vec<(String, Vec<u8>)>;

/// Clients send distinct first replays until the server stops answering; each returns what
/// it saw acknowledged.
fn load(
    addr: SocketAddr,
    clients: usize,
    stop: Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<Acked>> {
    (0..clients)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let title = format!("kill-{t}-{i}");
                    match try_replay(addr, &replay_body(&title)) {
                        Some(r) if r.status == 200 => acked.push((title, r.body)),
                        Some(r) => panic!("replay answered {}: {}", r.status, r.text()),
                        None => break,
                    }
                }
                acked
            })
        })
        .collect()
}

#[test]
fn every_acknowledged_replay_survives_sigkill_under_load() {
    let Some(db) = Db::fresh("replay_sigkill") else {
        return;
    };
    let mut server = serve(&db.store);
    let stop = Arc::new(AtomicBool::new(false));
    let clients = load(server.addr, 32, stop.clone());
    std::thread::sleep(Duration::from_millis(1500));
    // SIGKILL with requests in flight: no shutdown, no flush beyond what was committed.
    server.child.kill().expect("SIGKILL small serve");
    let _ = server.child.wait();
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<(String, Vec<u8>)> = clients
        .into_iter()
        .flat_map(|h| h.join().expect("client thread"))
        .collect();
    assert!(
        acked.len() > 50,
        "too few replays before the kill: {}",
        acked.len()
    );

    let restarted = serve(&db.store);
    for (title, body) in &acked {
        let again = try_replay(restarted.addr, &replay_body(title)).expect("replay after restart");
        assert_eq!(again.status, 200, "{}", again.text());
        assert_eq!(
            &again.body, body,
            "acknowledged replay `{title}` changed after the crash"
        );
    }
}

#[test]
fn two_servers_racing_the_same_replay_ids_agree() {
    let Some(db) = Db::fresh("replay_race") else {
        return;
    };
    let a = serve(&db.store);
    let b = serve(&db.store);
    let servers = [a.addr, b.addr];
    let clients = 16;
    let barrier = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|t| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                (0..20)
                    .map(|i| {
                        barrier.wait();
                        let title = format!("race-{i}");
                        let r = try_replay(servers[(t + i) % 2], &replay_body(&title))
                            .expect("replay answered");
                        assert_eq!(r.status, 200, "{}", r.text());
                        (title, r.body)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen: HashMap<String, Vec<u8>> = HashMap::new();
    for h in handles {
        for (title, body) in h.join().expect("client thread") {
            let first = seen.entry(title.clone()).or_insert_with(|| body.clone());
            assert_eq!(first, &body, "servers disagree on replay `{title}`");
        }
    }
    assert_eq!(seen.len(), 20);
    for (title, body) in &seen {
        for addr in servers {
            let r = try_replay(addr, &replay_body(title)).expect("replay answered");
            assert_eq!(&r.body, body, "replay `{title}` changed");
        }
    }
}
