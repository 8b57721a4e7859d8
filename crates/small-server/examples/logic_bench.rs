//! Throughput of the validate-manifest logic alone (parse, validate, canonicalise, hash), no
//! HTTP: `cargo run --release -p small-server --example logic_bench`.

use std::time::Instant;

const BODY: &str = r#"{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":3,"metadata":{"title":"Morning Session","artist":"The Example Band","durationSeconds":241.5,"tags":["live","remaster","2026"],"source":{"kind":"upload","sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}}}"#;

fn main() {
    let n = 200_000;
    let mut valid = 0;
    let start = Instant::now();
    for _ in 0..n {
        let out = small_core::ops::api::validate_request(BODY.as_bytes()).expect("valid JSON");
        let mut buf = Vec::with_capacity(128);
        out.write_json(&mut buf);
        valid += usize::from(out.valid());
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{n} requests ({} bytes each) in {secs:.3}s: {:.0} per second on one thread ({valid} valid)",
        BODY.len(),
        n as f64 / secs
    );
}
