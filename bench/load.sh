#!/usr/bin/env bash
# Load benchmark of `small serve` on loopback with wrk (apt-get install wrk):
# POST /small/v1/validate-manifest and POST /small/v1/replay with a ~300-byte manifest,
# keep-alive, 64 connections. Prints requests/s and latency percentiles (p50/p90/p99).
#
# Replay is measured twice: the same manifest again and again (one record, then served from
# the store), and DISTINCT manifests (every request a new replay ID: one durable write each;
# the title carries a per-run, per-thread counter).
#
# Environment: SMALL_BIN (binary; default: builds target/release/small; the stand-alone
# `cargo build --release -p small-server --example serve` binary works too), DURATION (default 10s),
# CONNECTIONS (default 64), THREADS (wrk threads in all, default 2, split between the servers), STORE (default memory: `memory`,
# a file path for SQLite, or `postgres` for the database in SMALL_BENCH_POSTGRES_URL, else
# SMALL_TEST_POSTGRES_URL), SERVERS (default 1; with 2, two servers share the store and the
# connections are split between them: one wrk per server, and the sum is printed),
# ENDPOINTS (default "validate same distinct").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
command -v wrk >/dev/null 2>&1 || { echo "bench/load.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }

BIN="${SMALL_BIN:-}"
if [ -z "$BIN" ]; then
  cargo build --quiet --release -p small-cli
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/small"
fi
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-64}"
THREADS="${THREADS:-2}"
SERVERS="${SERVERS:-1}"
ENDPOINTS="${ENDPOINTS:-validate same distinct}"
STORE_ARG="${STORE:-memory}"
if [ "$STORE_ARG" = postgres ]; then
  STORE_ARG="${SMALL_BENCH_POSTGRES_URL:-${SMALL_TEST_POSTGRES_URL:-}}"
  [ -n "$STORE_ARG" ] || { echo "bench/load.sh: STORE=postgres needs SMALL_BENCH_POSTGRES_URL or SMALL_TEST_POSTGRES_URL" >&2; exit 2; }
fi
if [ "$SERVERS" -gt 1 ] && [ "$STORE_ARG" = memory ]; then
  echo "bench/load.sh: SERVERS=$SERVERS needs a shared store (STORE=postgres or a file)" >&2; exit 2
fi

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# A typical manifest of about 300 bytes; TITLE is replaced per request in the distinct mode.
BODY='{"protocolVersion":"1.0.0","manifest":{"artifact":"track.audio","schema":"artifact.v1","version":3,"metadata":{"title":"Morning Session TITLE","artist":"The Example Band","durationSeconds":241.5,"tags":["live","remaster","2026"],"source":{"kind":"upload","sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}}}'
echo "manifest request body: ${#BODY} bytes"
RUN_ID="$(date +%s%N)-$$"

REPORT='done = function(summary, latency, requests)
  io.write(string.format("RESULT requests/s=%.0f p50=%.3fms p90=%.3fms p99=%.3fms errors=%d non2xx=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end'

cat >"$WORK/same.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '${BODY/TITLE/1}'
$REPORT
LUA

# Every request a new manifest: the wrk thread number and a counter make the title unique
# (SERVER tells the wrk processes of several servers apart).
cat >"$WORK/distinct.lua" <<LUA
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local template = '${BODY/TITLE/%s}'
local counter = 0
local prefix = ""
function init(args)
  prefix = "$RUN_ID-" .. (args[1] or "s") .. "-" .. tostring(tid) .. "-"
end
function request()
  counter = counter + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"},
    string.format(template, prefix .. counter))
end
$REPORT
LUA

start_server() {
  local n="$1"
  # Access logs off for the benchmark (RUST_LOG=warn); logging is measured separately.
  RUST_LOG="${RUST_LOG:-warn}" "$BIN" serve --addr 127.0.0.1:0 --store "$STORE_ARG" >"$WORK/stdout$n" 2>"$WORK/stderr$n" &
  PIDS+=("$!")
  for _ in $(seq 1 100); do
    grep -q '^listening on ' "$WORK/stdout$n" 2>/dev/null && break
    sleep 0.1
  done
  local base
  base="$(sed -n 's/^listening on //p' "$WORK/stdout$n" | head -n1)"
  [ -n "$base" ] || { echo "bench/load.sh: server $n did not start" >&2; cat "$WORK/stderr$n" >&2; exit 1; }
  BASES+=("$base")
}

BASES=()
for n in $(seq 1 "$SERVERS"); do
  start_server "$n"
done
PER_SERVER=$((CONNECTIONS / SERVERS))
# The load generator gets the same threads whatever the number of servers (split between
# them, at least one each): on a small machine its own CPU would otherwise decide the sum.
THREADS_EACH=$((THREADS / SERVERS))
[ "$THREADS_EACH" -ge 1 ] || THREADS_EACH=1

# Runs one wrk per server at once; prints each RESULT line, and their sum with several servers.
measure() {
  local script="$1" path="$2" n=0 wrks=()
  rm -f "$WORK"/wrk*
  for base in "${BASES[@]}"; do
    n=$((n + 1))
    wrk -t"$THREADS_EACH" -c"$PER_SERVER" -d"$DURATION" --latency -s "$WORK/$script" "$base$path" -- "s$n" \
      >"$WORK/wrk$n" 2>&1 &
    wrks+=("$!")
  done
  for pid in "${wrks[@]}"; do wait "$pid"; done
  for i in $(seq 1 "$n"); do grep -E 'RESULT' "$WORK/wrk$i" || cat "$WORK/wrk$i"; done
  if [ "$n" -gt 1 ]; then
    cat "$WORK"/wrk* | sed -n 's/^RESULT requests\/s=\([0-9]*\).*/\1/p' | awk '{s+=$1} END {print "TOTAL requests/s=" s}'
  fi
}

for what in $ENDPOINTS; do
  case "$what" in
    validate) script=same.lua; path=/small/v1/validate-manifest; label="POST $path" ;;
    same) script=same.lua; path=/small/v1/replay; label="POST $path (same manifest)" ;;
    distinct) script=distinct.lua; path=/small/v1/replay; label="POST $path (distinct manifests)" ;;
    *) echo "bench/load.sh: unknown endpoint set \`$what\`" >&2; exit 2 ;;
  esac
  # Warm up (the first replay materialises the record).
  wrk -t1 -c4 -d1s -s "$WORK/$script" "${BASES[0]}$path" -- warm >/dev/null
  echo "== $label  (${CONNECTIONS} connections over $SERVERS server(s), ${THREADS_EACH} wrk thread(s) each, ${DURATION}, store ${STORE:-memory})"
  measure "$script" "$path"
done
