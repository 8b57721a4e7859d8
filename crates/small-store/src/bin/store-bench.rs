//! Store benchmark: materialise artifact versions (1 KB of data each) and time lineage graph
//! queries, on SQLite and/or PostgreSQL.
//!
//! ```text
//! cargo run --release -p small-store --bin store-bench -- [--backend sqlite|postgres|both]
//!     [--versions 100000] [--artifacts 1000] [--graph 100000] [--depth 10] [--threads 4]
//!     [--postgres-url URL]   (default: $SMALL_TEST_POSTGRES_URL)
//! ```
//!
//! The PostgreSQL run works in its own schema `small_bench` (dropped first). The SQLite run
//! uses a fresh file in a temporary directory.

use serde_json::json;
use small_store::pg::PgBackend;
use small_store::sqlite::SqliteBackend;
use small_store::{Direction, PrimitiveStore, Store};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Opts {
    backend: String,
    versions: u64,
    artifacts: u64,
    graph: u64,
    depth: u32,
    threads: u64,
    queries: usize,
    pg_url: Option<String>,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        backend: "both".into(),
        versions: 100_000,
        artifacts: 1000,
        graph: 100_000,
        depth: 10,
        threads: 4,
        queries: 200,
        pg_url: std::env::var("SMALL_TEST_POSTGRES_URL")
            .ok()
            .filter(|s| !s.is_empty()),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        let num = |s: String| {
            s.parse::<u64>()
                .map_err(|_| format!("`{s}` is not a number"))
        };
        match a.as_str() {
            "--backend" => o.backend = val()?,
            "--versions" => o.versions = num(val()?)?,
            "--artifacts" => o.artifacts = num(val()?)?.max(1),
            "--graph" => o.graph = num(val()?)?,
            "--depth" => o.depth = num(val()?)? as u32,
            "--threads" => o.threads = num(val()?)?.max(1),
            "--queries" => o.queries = num(val()?)? as usize,
            "--postgres-url" => o.pg_url = Some(val()?),
            "-h" | "--help" => {
                println!("store-bench [--backend sqlite|postgres|both] [--versions N] [--artifacts N] [--graph N] [--depth N] [--threads N] [--queries N] [--postgres-url URL]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(o)
}

fn payload(i: u64) -> String {
    // About 1 KB of data per version.
    let base = format!("version {i} of a benchmark article. ");
    base.repeat(1000 / base.len() + 1)[..960].to_string()
}

fn materialise(store: &Arc<dyn PrimitiveStore>, o: &Opts) -> Duration {
    store
        .register_schema(&json!({
            "$id": "schema:bench:v1",
            "type": "object",
            "required": ["title", "content"],
            "properties": {"title": {"type": "string", "minLength": 1}, "content": {"type": "string"}}
        }))
        .expect("register schema");
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..o.threads)
        .map(|_| {
            let store = store.clone();
            let next = next.clone();
            let (total, artifacts) = (o.versions, o.artifacts);
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let a = json!({
                    "id": format!("bench:{}", i % artifacts),
                    "kind": "article",
                    "schemaId": "schema:bench:v1",
                    "data": {"title": format!("t{i}"), "content": payload(i)}
                });
                store.put_artifact(&a).expect("put artifact");
            })
        })
        .collect();
    for h in handles {
        h.join().expect("bench thread");
    }
    start.elapsed()
}

fn build_graph(store: &Arc<dyn PrimitiveStore>, o: &Opts) -> Duration {
    // Node i is derived from i-1 and i/2: long chains with many shared ancestors.
    let next = Arc::new(AtomicU64::new(1));
    let start = Instant::now();
    let handles: Vec<_> = (0..o.threads)
        .map(|_| {
            let store = store.clone();
            let next = next.clone();
            let total = o.graph;
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let mut parents = vec![format!("node:{}", i - 1)];
                if i / 2 != i - 1 && i > 1 {
                    parents.push(format!("node:{}", i / 2));
                }
                let l = json!({
                    "artifactId": format!("node:{i}"),
                    "derivedFrom": parents,
                    "producedBy": {"actor": "agent", "name": "bench", "runId": "run_bench"},
                    "at": "2025-01-15T10:00:00Z"
                });
                store.append_lineage(&l).expect("append lineage");
            })
        })
        .collect();
    for h in handles {
        h.join().expect("bench thread");
    }
    start.elapsed()
}

fn query(store: &Arc<dyn PrimitiveStore>, o: &Opts) -> (Vec<Duration>, usize) {
    let mut times = Vec::with_capacity(o.queries);
    let mut nodes = 0;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..o.queries {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let i = o.graph / 2 + seed % (o.graph / 2).max(1);
        let start = Instant::now();
        let g = store
            .lineage_graph(&format!("node:{i}"), Direction::Ancestors, o.depth)
            .expect("ancestors");
        times.push(start.elapsed());
        nodes = nodes.max(g.nodes.len());
    }
    times.sort();
    (times, nodes)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn run(name: &str, store: Arc<dyn PrimitiveStore>, o: &Opts) {
    println!("== {name} ({} threads)", o.threads);
    let t = materialise(&store, o);
    println!(
        "materialise: {} artifact versions (1 KB data, {} artifacts) in {:.1} s = {:.0} versions/s",
        o.versions,
        o.artifacts,
        t.as_secs_f64(),
        o.versions as f64 / t.as_secs_f64()
    );
    let t = build_graph(&store, o);
    println!(
        "lineage: {} records (graph of {} artifacts) in {:.1} s = {:.0} records/s",
        o.graph.saturating_sub(1),
        o.graph,
        t.as_secs_f64(),
        o.graph as f64 / t.as_secs_f64()
    );
    if o.graph > 2 && o.queries > 0 {
        let (times, nodes) = query(&store, o);
        let p = |q: f64| ms(times[((times.len() as f64 * q) as usize).min(times.len() - 1)]);
        println!(
            "ancestors depth {}: {} queries, up to {nodes} nodes each: median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
            o.depth,
            times.len(),
            p(0.5),
            p(0.95),
            ms(*times.last().unwrap_or(&Duration::ZERO))
        );
    }
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("store-bench: {e}");
            std::process::exit(2);
        }
    };
    if o.backend == "sqlite" || o.backend == "both" {
        let dir = tempfile_dir();
        let backend = SqliteBackend::open(&dir.join("bench.db")).expect("open sqlite");
        run("sqlite", Arc::new(Store::new(backend)), &o);
        let _ = std::fs::remove_dir_all(&dir);
    }
    if o.backend == "postgres" || o.backend == "both" {
        match &o.pg_url {
            None => eprintln!("store-bench: no PostgreSQL URL (--postgres-url or SMALL_TEST_POSTGRES_URL); skipping"),
            Some(url) => {
                let mut c = postgres::Client::connect(url, postgres::NoTls).expect("connect");
                c.batch_execute("DROP SCHEMA IF EXISTS small_bench CASCADE").expect("drop bench schema");
                let backend = PgBackend::connect(url, Some("small_bench")).expect("open postgres");
                let store = Arc::new(Store::new(backend));
                run("postgres", store.clone(), &o);
                let (batches, writes) = store.backend().group_commit_counts();
                println!(
                    "group commit: {writes} writes in {batches} batches ({:.1} per batch), {} rolled back",
                    writes as f64 / batches.max(1) as f64,
                    store.backend().group_commit_rollbacks()
                );
            }
        }
    }
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("small-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
