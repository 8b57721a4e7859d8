//! Scale-out: two `small serve` processes on one PostgreSQL database, many concurrent HTTP
//! clients appending versions of the same artifact and lifecycle events through both. The end
//! state must be contiguous versions 1..N, no duplicates, no lost events.
//!
//! Needs `SMALL_TEST_POSTGRES_URL` (a visible skip when unset; a failure when
//! `SMALL_TEST_REQUIRE` lists `postgres`).

use crate::server_common as common;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn pg_url() -> Option<String> {
    small_testkit::postgres_url()
}

pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `small serve` on an ephemeral port and waits for its `listening on http://ADDR` line.
pub(crate) fn serve(store: &str) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_small"))
        .args(["serve", "--addr", "127.0.0.1:0", "--store", store])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start small serve");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("http://").nth(1) {
                let _ = tx.send(rest.trim().to_string());
            }
        }
    });
    let addr = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(a) => a.parse().expect("server address"),
        Err(_) => {
            let _ = child.kill();
            let status = child.wait();
            panic!("small serve --store postgres://… did not start ({status:?})");
        }
    };
    Served { child, addr }
}

fn post(addr: SocketAddr, path: &str, v: &Value) -> common::Response {
    let body = v.to_string();
    common::raw_request(
        addr,
        "POST",
        path,
        Some("application/json"),
        body.as_bytes(),
    )
}

#[test]
fn two_servers_on_one_postgres_keep_versions_contiguous() {
    let Some(url) = pg_url() else { return };
    let schema = format!("t_scaleout_{}", std::process::id());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))
    .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = format!("{url}{sep}options=-c%20search_path%3D{schema}");

    let a = serve(&store);
    let b = serve(&store);
    let servers = [a.addr, b.addr];

    let r = post(
        servers[0],
        "/small/v1/schemas",
        &json!({"$id": "schema:hot:v1", "type": "object", "required": ["n"], "properties": {"n": {"type": "string"}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = post(
        servers[1],
        "/small/v1/lifecycle/hot/events",
        &json!({"type": "created", "at": "2025-01-15T09:00:00Z"}),
    );
    assert_eq!(r.status, 201, "{}", r.text());

    let clients = 16;
    let per_client = 25;
    let handles: Vec<_> = (0..clients)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..per_client {
                    let server = servers[(t + i) % 2];
                    let tag = format!("c{t}-{i}");
                    let r = post(
                        server,
                        "/small/v1/artifacts",
                        &json!({"id": "hot", "kind": "counter", "schemaId": "schema:hot:v1", "data": {"n": tag}}),
                    );
                    assert_eq!(r.status, 201, "{}", r.text());
                    let other = servers[(t + i + 1) % 2];
                    let r = post(
                        other,
                        "/small/v1/lifecycle/hot/events",
                        &json!({"type": "validated", "at": "2025-01-15T09:30:00Z", "note": tag}),
                    );
                    assert_eq!(r.status, 201, "{}", r.text());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("client thread");
    }

    let n = clients * per_client;
    let r = common::raw_request(
        servers[1],
        "GET",
        "/small/v1/artifacts/hot/versions?limit=1000",
        None,
        b"",
    );
    assert_eq!(r.status, 200);
    let items = r.json()["items"].as_array().unwrap().clone();
    let versions: Vec<u64> = items
        .iter()
        .map(|i| i["version"].as_u64().unwrap())
        .collect();
    assert_eq!(
        versions,
        (1..=n as u64).collect::<Vec<_>>(),
        "contiguous versions 1..N"
    );

    let mut tags: Vec<String> = (1..=n)
        .map(|v| {
            let r = common::raw_request(
                servers[v % 2],
                "GET",
                &format!("/small/v1/artifacts/hot/versions/{v}"),
                None,
                b"",
            );
            assert_eq!(r.status, 200);
            r.json()["data"]["n"].as_str().unwrap().to_string()
        })
        .collect();
    tags.sort();
    tags.dedup();
    assert_eq!(
        tags.len(),
        n,
        "every append is one version: no duplicates, none lost"
    );

    let r = common::raw_request(servers[0], "GET", "/small/v1/lifecycle/hot", None, b"");
    let events = r.json()["events"].as_array().unwrap().clone();
    assert_eq!(events.len(), n + 1, "no lost lifecycle events");
    let mut notes: Vec<&str> = events.iter().filter_map(|e| e["note"].as_str()).collect();
    notes.sort();
    notes.dedup();
    assert_eq!(notes.len(), n);
    let seq: i64 = c
        .query_one(&format!("SELECT COUNT(DISTINCT seq) FROM {schema}.small_lifecycle WHERE artifact_id = 'hot'"), &[])
        .unwrap()
        .get(0);
    assert_eq!(seq as usize, n + 1);

    drop(a);
    drop(b);
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

/// Two `small serve` processes on one PostgreSQL: `xk derivedFrom [yk]` sent to one and
/// `yk derivedFrom [xk]` to the other at the same moment. At most one of each pair may be
/// stored: lineage stays acyclic under any interleaving.
#[test]
fn two_servers_on_one_postgres_never_store_a_lineage_cycle() {
    let Some(url) = pg_url() else { return };
    let schema = format!("t_lineage_race_{}", std::process::id());
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))
    .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    let a = serve(&store);
    let b = serve(&store);
    let rounds = 100;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let send = |addr: SocketAddr, from: &'static str, to: &'static str| {
        let barrier = barrier.clone();
        std::thread::spawn(move || {
            (0..rounds)
                .map(|k| {
                    barrier.wait();
                    let rec = json!({"artifactId": format!("{from}{k}"), "derivedFrom": [format!("{to}{k}")],
                                     "producedBy": {"actor": "agent", "name": "racer"}, "at": "2025-01-15T10:00:00Z"});
                    post(addr, "/small/v1/lineage", &rec).status
                })
                .collect::<Vec<u16>>()
        })
    };
    let ta = send(a.addr, "x", "y");
    let tb = send(b.addr, "y", "x");
    let (ra, rb) = (ta.join().unwrap(), tb.join().unwrap());
    let both = ra
        .iter()
        .zip(&rb)
        .filter(|(x, y)| **x == 201 && **y == 201)
        .count();
    assert_eq!(both, 0, "{both} of {rounds} pairs stored a lineage cycle");
    for (x, y) in ra.iter().zip(&rb) {
        assert!(
            (*x == 201) != (*y == 201),
            "exactly one of each pair is stored: {x} / {y}"
        );
    }
    drop(a);
    drop(b);
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}
