//! Test support: a real server on an ephemeral loopback port, a minimal HTTP/1.1 client over
//! TCP, and validation of every response against our OpenAPI document.
#![allow(dead_code)]

use serde_json::Value;
use small_server::{ServerConfig, StoreLocation};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

/// A running server; stopped (gracefully) on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub fn start(config: ServerConfig) -> TestServer {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let server = small_server::bind(&config).await.expect("bind");
                addr_tx.send(server.local_addr().unwrap()).unwrap();
                server
                    .run(async move {
                        let _ = stop_rx.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server started");
        TestServer {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    pub fn memory() -> TestServer {
        TestServer::start(config(StoreLocation::Memory))
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Send a request and check the response against the OpenAPI document.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Response {
        let resp = raw_request(self.addr, method, path, content_type, body);
        check_against_openapi(method, path, &resp);
        resp
    }

    pub fn get(&self, path: &str) -> Response {
        self.call("GET", path, None, b"")
    }

    pub fn post_json(&self, path: &str, body: &[u8]) -> Response {
        self.call("POST", path, Some("application/json"), body)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

pub fn config(store: StoreLocation) -> ServerConfig {
    ServerConfig {
        addr: "127.0.0.1:0".into(),
        store,
        ..ServerConfig::default()
    }
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        small_core::ops::formats::canonical::parse(&self.body)
            .unwrap_or_else(|e| {
                panic!(
                    "response is not JSON ({e}): {}",
                    String::from_utf8_lossy(&self.body)
                )
            })
            .to_serde_lossy()
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One request on a fresh connection (`Connection: close`), response read to the end.
pub fn raw_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Response {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(ct) = content_type {
        head.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    raw_exchange(addr, &bytes)
}

/// Write raw bytes, read the whole response.
pub fn raw_exchange(addr: SocketAddr, request: &[u8]) -> Response {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    // The server may answer (413) before reading everything; ignore write errors then.
    let _ = s.write_all(request);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    parse_response(&buf)
}

pub fn parse_response(buf: &[u8]) -> Response {
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response head");
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = buf[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 2 + size + 2..];
    }
    out
}

/// Our OpenAPI document as JSON.
pub fn openapi() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let doc = small_core::ops::formats::yaml::parse_str(
            small_server::openapi::document(),
            &Default::default(),
        )
        .expect("OpenAPI document is YAML");
        doc.root.to_json()
    })
}

/// The path template of the OpenAPI document matching a concrete path.
fn match_template(path: &str) -> Option<String> {
    let path = path.split('?').next().unwrap_or(path);
    let paths = openapi()["paths"].as_object()?;
    let segs: Vec<&str> = path.split('/').collect();
    paths
        .keys()
        .find(|t| {
            let ts: Vec<&str> = t.split('/').collect();
            ts.len() == segs.len()
                && ts
                    .iter()
                    .zip(&segs)
                    .all(|(t, s)| t == s || (t.starts_with('{') && !s.is_empty()))
        })
        .cloned()
}

fn resolve(v: &Value) -> &Value {
    match v.get("$ref").and_then(|r| r.as_str()) {
        Some(r) => openapi()
            .pointer(r.trim_start_matches('#'))
            .expect("$ref resolves"),
        None => v,
    }
}

/// Check a response against the OpenAPI document: the status is documented (or `default`),
/// the media type is the documented one, and the JSON body validates against its schema.
/// Unknown routes must answer with the documented Error shape.
pub fn check_against_openapi(method: &str, path: &str, resp: &Response) {
    let error_schema = serde_json::json!({"$ref": "#/components/schemas/Error"});
    let schema_ref = match match_template(path) {
        None => {
            assert_eq!(
                resp.status, 404,
                "{method} {path}: unknown route must be 404"
            );
            Some(error_schema)
        }
        Some(template) => {
            let op = &openapi()["paths"][&template][method.to_ascii_lowercase()];
            if op.is_null() {
                // Undocumented method: the documented error shape, 405 with Allow.
                if method == "HEAD" {
                    return;
                }
                assert_eq!(
                    resp.status, 405,
                    "{method} {path}: undocumented method must be 405"
                );
                assert!(resp.header("allow").is_some(), "405 needs Allow");
                Some(error_schema)
            } else {
                let responses = &op["responses"];
                let r = responses
                    .get(resp.status.to_string())
                    .or_else(|| responses.get("default"))
                    .unwrap_or_else(|| {
                        panic!("{method} {path}: status {} is not documented", resp.status)
                    });
                let r = resolve(r);
                let content = r["content"].as_object().expect("documented content");
                let ct = resp.header("content-type").unwrap_or("");
                let essence = ct.split(';').next().unwrap_or("").trim();
                let media = content.get(essence).unwrap_or_else(|| {
                    panic!(
                        "{method} {path}: content type {ct} not documented for {}",
                        resp.status
                    )
                });
                Some(media["schema"].clone())
            }
        }
    };
    if let Some(schema) = schema_ref {
        // Bodies may quote lone surrogates (`\ud800`), which serde_json refuses: read them
        // with the JavaScript-exact parser.
        let yaml = resp
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/yaml"));
        let instance: Value = if yaml {
            small_core::ops::formats::yaml::parse_bytes(&resp.body, &Default::default())
                .unwrap_or_else(|e| panic!("{method} {path}: body is not YAML: {}", e.message))
                .root
                .to_json()
        } else {
            small_core::ops::formats::canonical::parse(&resp.body)
                .unwrap_or_else(|e| {
                    panic!(
                        "{method} {path}: body is not JSON ({e}): {}",
                        String::from_utf8_lossy(&resp.body)
                    )
                })
                .to_serde_lossy()
        };
        let mut root = serde_json::Map::new();
        root.insert("components".into(), openapi()["components"].clone());
        if let Value::Object(m) = schema {
            for (k, v) in m {
                root.insert(k, v);
            }
        }
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&Value::Object(root))
            .expect("response schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{method} {path} ({}): response violates the OpenAPI document: {errors:?}\n{instance}",
            resp.status
        );
    }
}

/// Location of the shared conformance API vectors, or None (after a visible skip).
pub fn api_vectors_dir() -> Option<std::path::PathBuf> {
    let dir = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/api"
    ));
    small_testkit::conformance_path(dir)
}
