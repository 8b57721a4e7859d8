//! A minimal stand-alone server for benchmarks and debugging, without the CLI:
//! `cargo run --release -p small-server --example serve -- serve --addr 127.0.0.1:0 --store memory`
//! (the leading `serve` is optional, so `bench/load.sh` can use it as `SMALL_BIN`).
//! Prints `listening on http://ADDR` like `small serve`.

use small_server::{LogFormat, ServerConfig, StoreLocation};
use std::io::Write;

fn main() {
    let mut config = ServerConfig {
        store: StoreLocation::Memory,
        ..ServerConfig::default()
    };
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("serve") {
        args.next();
    }
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--addr" => config.addr = value,
            "--store" => config.store = StoreLocation::parse(&value),
            _ => {
                eprintln!("usage: serve [--addr ADDR] [--store PATH|memory]");
                std::process::exit(2);
            }
        }
    }
    small_server::init_logging(LogFormat::Text);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result = rt.block_on(async move {
        let server = small_server::bind(&config).await?;
        println!(
            "listening on http://{}",
            server.local_addr().map_err(|e| e.to_string())?
        );
        let _ = std::io::stdout().flush();
        server
            .run(small_server::shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
