#!/usr/bin/env bash
# Load benchmark of `small serve` on loopback with wrk (apt-get install wrk):
# POST /small/v1/validate-manifest and POST /small/v1/replay with a ~300-byte manifest,
# keep-alive, 64 connections. Prints requests/s and latency percentiles (p50/p90/p99).
#
# Environment: SMALL_BIN (binary; default: builds target/release/small; the stand-alone
# `cargo build --release -p small-server --example serve` binary works too), DURATION (default 10s),
# CONNECTIONS (default 64), THREADS (wrk threads, default 2), STORE (default memory).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
command -v wrk >/dev/null 2>&1 || { echo "bench/load.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }

BIN="${SMALL_BIN:-}"
if [ -z "$BIN" ]; then
  cargo build --quiet --release -p small-cli
  BIN="$ROOT/target/release/small"
fi
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-64}"
THREADS="${THREADS:-2}"

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# A typical manifest of about 300 bytes.
BODY='{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":3,"metadata":{"title":"Morning Session","artist":"The Example Band","durationSeconds":241.5,"tags":["live","remaster","2026"],"source":{"kind":"upload","sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}}}'
echo "manifest request body: ${#BODY} bytes"

cat >"$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$BODY'
done = function(summary, latency, requests)
  io.write(string.format("RESULT requests/s=%.0f p50=%.3fms p90=%.3fms p99=%.3fms errors=%d non2xx=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
LUA

# Access logs off for the benchmark (RUST_LOG=warn); logging is measured separately below.
RUST_LOG="${RUST_LOG:-warn}" "$BIN" serve --addr 127.0.0.1:0 --store "${STORE:-memory}" >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$WORK/stdout" 2>/dev/null && break
  sleep 0.1
done
BASE="$(sed -n 's/^listening on //p' "$WORK/stdout" | head -n1)"
[ -n "$BASE" ] || { echo "bench/load.sh: server did not start" >&2; cat "$WORK/stderr" >&2; exit 1; }

for path in /small/v1/validate-manifest /small/v1/replay; do
  # Warm up (the first replay materialises the record).
  wrk -t1 -c4 -d1s -s "$WORK/post.lua" "$BASE$path" >/dev/null
  echo "== POST $path  (${CONNECTIONS} connections, ${THREADS} wrk threads, ${DURATION})"
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$WORK/post.lua" "$BASE$path" | grep -E 'RESULT|Latency|Requests/sec'
done
