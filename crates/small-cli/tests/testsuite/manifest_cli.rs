//! `small manifest validate|replay-id` and `small serve`, running the real binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const SEED: &str = r#"{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":1}}"#;
const SEED_ID: &str = "LhKhb9nluL3hYsKIjYUQox1aLPTfL_-oefVbJLnA0XU";

fn small() -> Command {
    Command::new(env!("CARGO_BIN_EXE_small"))
}

/// Run with `input` on stdin: (exit code, stdout, stderr).
fn run(args: &[&str], input: &[u8]) -> (i32, String, String) {
    let mut child = small()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn small");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn validate_prints_the_api_response() {
    let (code, out, _) = run(&["manifest", "validate"], SEED.as_bytes());
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!("{{\"valid\":true,\"replayId\":\"{SEED_ID}\",\"errors\":[]}}\n")
    );

    let (code, out, _) = run(
        &["manifest", "validate", "-"],
        br#"{"manifest":{"artifact":"a","version":"1"}}"#,
    );
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "{\"valid\":false,\"errors\":[{\"instancePath\":\"\",\"message\":\"must have required property 'schema'\"},{\"instancePath\":\"/version\",\"message\":\"must be number\"}]}\n"
    );

    let (code, out, err) = run(&["manifest", "validate"], b"{\"manifest\": }");
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("<stdin>:1:14: invalid JSON"), "{err}");

    let (code, _, err) = run(&["manifest", "validate", "/nonexistent/request.json"], b"");
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read /nonexistent/request.json"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("req.json");
    std::fs::write(&file, SEED).unwrap();
    let (code, out, _) = run(&["manifest", "validate", file.to_str().unwrap()], b"");
    assert_eq!((code, out.contains(SEED_ID)), (0, true));
}

#[test]
fn replay_id_prints_only_the_id() {
    let (code, out, _) = run(&["manifest", "replay-id"], SEED.as_bytes());
    assert_eq!((code, out.as_str()), (0, format!("{SEED_ID}\n").as_str()));
    let (code, out, err) = run(
        &["manifest", "replay-id"],
        br#"{"protocolVersion":"2.0.0","manifest":{"artifact":"a","schema":"s","version":1}}"#,
    );
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.contains("Unsupported protocol version: 2.0.0"), "{err}");
    let (code, _, _) = run(&["manifest", "replay-id"], b"nope");
    assert_eq!(code, 2);
}

#[test]
fn jsonl_one_result_per_line_worst_exit_code() {
    let input = format!("{SEED}\n\n{{\"manifest\":1}}\r\n{SEED}\n");
    let (code, out, _) = run(&["manifest", "validate", "--jsonl"], input.as_bytes());
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].contains(SEED_ID) && lines[2].contains(SEED_ID));
    assert_eq!(
        lines[1],
        r#"{"valid":false,"errors":[{"instancePath":"","message":"must be object"}]}"#
    );

    let (code, out, _) = run(
        &["manifest", "validate", "--jsonl"],
        format!("{SEED}\n{{oops\n").as_bytes(),
    );
    assert_eq!(code, 2);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    let err: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(err["error"], "invalid_json");
    assert_eq!(err["line"], 2);

    let (code, out, _) = run(
        &["manifest", "validate", "--jsonl"],
        format!("{SEED}\n{SEED}").as_bytes(),
    );
    assert_eq!((code, out.lines().count()), (0, 2));
}

fn api_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/api"
    ));
    small_testkit::conformance_path(dir)
}

/// All API vectors through `small manifest validate --jsonl`: one line in, one line out.
#[test]
fn every_api_vector_through_jsonl() {
    let Some(dir) = api_dir() else { return };
    for file in ["vectors.jsonl", "fuzz-1-unicode.jsonl"] {
        let text = std::fs::read(dir.join(file)).unwrap();
        let mut bodies = Vec::new();
        let mut expected = Vec::new();
        for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v = small_core::ops::formats::canonical::parse(line).unwrap();
            let body = v
                .get("request_body")
                .and_then(|b| b.as_js_str())
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned();
            // Raw line breaks in a valid JSON text can only be whitespace between tokens
            // (strings need escapes), so a body fits one JSONL line once they become spaces.
            assert!(
                small_core::ops::formats::canonical::parse(body.as_bytes()).is_ok()
                    || !body.contains('\n')
            );
            let body = body.replace(['\n', '\r'], " ");
            bodies.push(body);
            expected.push(v);
        }
        let input = bodies.join("\n") + "\n";
        let (code, out, err) = run(&["manifest", "validate", "--jsonl"], input.as_bytes());
        assert!(code == 0 || code == 1, "exit {code}: {err}");
        let outs: Vec<&str> = out.lines().collect();
        assert_eq!(outs.len(), expected.len(), "{file}: one result per line");
        for (v, got) in expected.iter().zip(outs) {
            let name = v
                .get("name")
                .and_then(|n| n.as_js_str())
                .unwrap()
                .to_string_lossy();
            let exp = v.get("expected").unwrap();
            let got = small_core::ops::formats::canonical::parse(got.as_bytes()).unwrap();
            assert_eq!(got.get("valid"), exp.get("valid"), "{name}");
            assert_eq!(got.get("errors"), exp.get("errors"), "{name}");
            match exp.get("replayId") {
                Some(small_core::ops::formats::canonical::Value::String(id)) => {
                    assert_eq!(
                        got.get("replayId").and_then(|x| x.as_js_str()),
                        Some(id),
                        "{name}"
                    )
                }
                _ => assert!(got.get("replayId").is_none(), "{name}"),
            }
        }
    }
}

/// `small serve` on an ephemeral port: prints its address, serves, logs one line per request
/// (JSON with --log-format json), and exits 0 on SIGTERM.
#[cfg(unix)]
#[test]
fn serve_binds_logs_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s/store.db");
    let mut child = small()
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--store",
        ])
        .arg(&store)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();

    let request = format!(
        "POST /small/v1/replay HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{SEED}",
        SEED.len()
    );
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.contains(SEED_ID));
    assert!(store.exists(), "the SQLite store file is created");

    // SIGTERM: graceful stop, exit 0.
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let mut waited = 0;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        std::thread::sleep(Duration::from_millis(50));
        waited += 50;
        assert!(waited < 10_000, "server did not stop on SIGTERM");
    };
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let access: Vec<serde_json::Value> = err
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|j| j["target"] == "small::access")
        .collect();
    assert_eq!(access.len(), 1, "one access line per request: {err}");
    assert_eq!(access[0]["path"], "/small/v1/replay");
    assert_eq!(access[0]["status"], 200);
}

#[test]
fn serve_rejects_bad_flags() {
    let (code, _, err) = run(&["serve", "--body-limit", "lots"], b"");
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = run(
        &["serve", "--addr", "256.0.0.1:1", "--store", "memory"],
        b"",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot listen on"), "{err}");
}
