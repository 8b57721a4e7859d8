#!/usr/bin/env bash
# Cost of `small progress add` as the log grows.
#
# Usage: bench/progress_add.sh [SIZES...]        (default sizes: 1000 100000)
# Env:   SMALL=<path to small>   binary to measure (default: target/release/small, built if missing)
#        REF=<path to reference> also measure another implementation (same command line)
#        ADDS=<n>                appends timed per size (default 50)
#
# For each size it writes a workspace whose progress log already holds that many entries,
# then times ADDS consecutive `progress add` runs and prints the median and mean wall time
# per add (whole process: start, lock, read tail, append, fsync), the log size, and the
# median's ratio to the first size. fsync latency dominates and varies with machine load;
# the median is the figure to compare.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=("$@"); [ ${#SIZES[@]} -eq 0 ] && SIZES=(1000 100000)
ADDS=${ADDS:-50}
SMALL=${SMALL:-target/release/small}
if [ ! -x "$SMALL" ]; then cargo build --release -p small-cli >&2; fi
SMALL=$(realpath "$SMALL")

make_ws() { # dir entries
  local d=$1 n=$2
  mkdir -p "$d/.small"
  cat > "$d/.small/intent.small.yml" <<'Y'
small_version: "1.0.0"
owner: "human"
intent: "Benchmark the progress log"
scope:
  include: []
  exclude: []
success_criteria: []
Y
  cat > "$d/.small/constraints.small.yml" <<'Y'
small_version: "1.0.0"
owner: "human"
constraints:
  - id: "no-secrets"
    rule: "No secrets"
    severity: "error"
Y
  cat > "$d/.small/plan.small.yml" <<'Y'
small_version: "1.0.0"
owner: "agent"
tasks:
  - id: "task-1"
    title: "Work"
Y
  cat > "$d/.small/workspace.small.yml" <<'Y'
small_version: "1.0.0"
owner: "agent"
kind: "repo-root"
created_at: "2020-01-01T00:00:00.000000000Z"
updated_at: "2020-01-01T00:00:00.000000000Z"
Y
  { printf 'small_version: "1.0.0"\nowner: "agent"\nentries:\n'
    awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) {
        s = i % 60; m = int(i / 60) % 60; h = int(i / 3600) % 24; d = 1 + int(i / 86400);
        printf "  - task_id: \"task-1\"\n    status: \"in_progress\"\n    timestamp: \"2020-01-%02dT%02d:%02d:%02d.000000001Z\"\n    evidence: \"Entry %d of the benchmark log, with a sentence of evidence text\"\n", d, h, m, s, i } }'
  } > "$d/.small/progress.small.yml"
}

measure() { # binary dir -> "median mean" microseconds per add
  local bin=$1 d=$2 t0 t1
  : > "$d.times"
  for i in $(seq 1 "$ADDS"); do
    t0=$(date +%s%N)
    "$bin" progress add --dir "$d" --task task-1 --status in_progress --evidence "bench $i" >/dev/null
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 )) >> "$d.times"
  done
  sort -n "$d.times" | awk '{ a[NR] = $1; s += $1 } END { printf "%d %d", a[int((NR + 1) / 2)], s / NR }'
}

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
first=""
printf '%-10s %-12s %-12s %-12s %-8s %s\n' entries log_bytes median_us mean_us ratio impl
for n in "${SIZES[@]}"; do
  for impl in small ${REF:+ref}; do
    bin=$SMALL; [ "$impl" = ref ] && bin=$REF
    d="$tmp/$impl-$n"; make_ws "$d" "$n"
    bytes=$(stat -c %s "$d/.small/progress.small.yml")
    read -r us mean <<< "$(measure "$bin" "$d")"
    [ "$impl" = small ] && [ -z "$first" ] && first=$us
    ratio=$(awk -v a="$us" -v b="${first:-$us}" 'BEGIN { printf "%.2f", a / b }')
    printf '%-10s %-12s %-12s %-12s %-8s %s\n' "$n" "$bytes" "$us" "$mean" "$ratio" "$impl"
    if [ "$impl" = small ]; then
      # the log still holds every entry, and still checks
      c=$(grep -c '^  - task_id:' "$d/.small/progress.small.yml")
      [ "$c" -eq $((n + ADDS)) ] || { echo "entry count $c, expected $((n + ADDS))" >&2; exit 1; }
    fi
  done
done
