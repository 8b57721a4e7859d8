#!/usr/bin/env bash
# Install small from dist/ (ci/dist.sh) the ways a user would, on this machine, with no Rust
# toolchain on PATH: the wheel into a fresh virtualenv, the npm package from its tarballs into
# a fresh prefix, install.sh (under sh, with curl and with wget) from a loopback HTTP server.
# Each installed copy runs `small version` and `small selftest`. The arm64 archive runs under
# qemu-user. A corrupted archive, or a checksums.txt without its line, makes install.sh
# refuse and install nothing. Prints the archive sizes and each channel's install time.
set -euo pipefail
cd "$(dirname "$0")/.."

dist="$(cd "${SMALL_DIST_DIR:-dist}" && pwd)"
version="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
python="$(command -v python3)"
node_npm="$(command -v npm)"
qemu="$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)"

# The user's machine has no Rust: only system directories on PATH.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
for tool in cargo rustc rustup; do
  if command -v "$tool" >/dev/null 2>&1; then
    echo "install-test: $tool is still on PATH ($(command -v "$tool"))" >&2
    exit 2
  fi
done

tmp="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "install-test: FAILED: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
figures=()

# check NAME BINARY: the installed copy answers `version` (this version, a commit) and
# passes `selftest`.
check() {
  local out
  out="$("$2" version)" || fail "$1: small version exited $?"
  case "$out" in
    "small $version (commit "*) ;;
    *) fail "$1: small version printed: $out" ;;
  esac
  "$2" selftest >"$tmp/selftest.log" 2>&1 || { cat "$tmp/selftest.log"; fail "$1: small selftest"; }
  echo "ok: $1: $(head -n 1 <<<"$out"); selftest passed"
}

echo "== archives"
for f in "$dist"/small-v"$version"-*; do
  figures+=("$(basename "$f"): $(du -k "$f" | cut -f 1) KiB")
done

echo "== Python: the wheel into a fresh virtualenv"
wheel="$(ls "$dist"/small_rs-"$version"-*x86_64*.whl)"
t0="$(now)"
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --no-index "$wheel"
figures+=("pip install (wheel, fresh venv, no index): $(since "$t0")")
check "wheel" "$tmp/venv/bin/small"

echo "== npm: the package and its linux-x64 binary package from tarballs, no scripts"
main_tgz="$dist/small-rs-small-$version.tgz"
platform_tgz="$dist/small-rs-small-linux-x64-$version.tgz"
tar -xzOf "$main_tgz" package/package.json | grep -q '"scripts"' && fail "npm: the package has scripts"
t0="$(now)"
"$node_npm" install --global --prefix "$tmp/npm" --offline --no-audit --no-fund --loglevel=error \
  "$main_tgz" "$platform_tgz"
figures+=("npm install --global (two tarballs, offline): $(since "$t0")")
check "npm" "$tmp/npm/bin/small"

echo "== install.sh from a loopback HTTP server"
mkdir -p "$tmp/srv"
ln -s "$dist" "$tmp/srv/v$version"
"$python" -m http.server --bind 127.0.0.1 0 --directory "$tmp/srv" >"$tmp/http.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 100); do
  port="$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/http.log" | head -n 1)"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "the HTTP server did not start"
export SMALL_INSTALL_BASE_URL="http://127.0.0.1:$port"

for downloader in curl wget; do
  command -v "$downloader" >/dev/null 2>&1 || fail "$downloader is not installed"
  t0="$(now)"
  SMALL_INSTALL_DOWNLOADER="$downloader" sh "$dist/install.sh" --version "v$version" \
    --dir "$tmp/bin-$downloader"
  figures+=("install.sh with $downloader (loopback): $(since "$t0")")
  check "install.sh ($downloader)" "$tmp/bin-$downloader/small"
done
# The default directory, and the version the installer was built for.
HOME="$tmp/home" sh "$dist/install.sh"
check "install.sh (default ~/.local/bin)" "$tmp/home/.local/bin/small"

echo "== install.sh refuses a corrupted archive"
mkdir -p "$tmp/bad/v$version"
cp "$dist"/* "$tmp/bad/v$version/"
archive="small-v$version-linux-amd64.tar.gz"
size="$(wc -c <"$tmp/bad/v$version/$archive")"
printf 'X' | dd of="$tmp/bad/v$version/$archive" bs=1 seek=$((size / 2)) conv=notrunc status=none
(cd "$tmp/bad" && "$python" -m http.server --bind 127.0.0.1 0 >"$tmp/http-bad.log" 2>&1) &
bad_pid=$!
port=""
for _ in $(seq 100); do
  port="$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/http-bad.log" | head -n 1)"
  [ -n "$port" ] && break
  sleep 0.1
done
set +e
SMALL_INSTALL_BASE_URL="http://127.0.0.1:$port" sh "$dist/install.sh" --dir "$tmp/bin-bad" \
  2>"$tmp/bad.err"
code=$?
# The same, when checksums.txt has no line for the archive.
grep -v "  $archive\$" "$dist/checksums.txt" >"$tmp/bad/v$version/checksums.txt"
cp "$dist/$archive" "$tmp/bad/v$version/$archive"
SMALL_INSTALL_BASE_URL="http://127.0.0.1:$port" sh "$dist/install.sh" --dir "$tmp/bin-bad" \
  2>"$tmp/bad2.err"
code2=$?
set -e
kill "$bad_pid" 2>/dev/null || true
[ "$code" = 1 ] || fail "corrupted archive: exit $code, expected 1 ($(cat "$tmp/bad.err"))"
grep -q "checksum mismatch" "$tmp/bad.err" || fail "corrupted archive: $(cat "$tmp/bad.err")"
[ "$code2" = 1 ] || fail "missing checksum line: exit $code2, expected 1"
[ ! -e "$tmp/bin-bad/small" ] || fail "a refused install left $tmp/bin-bad/small"
echo "ok: refused a corrupted archive and a checksums.txt without its line; nothing installed"

echo "== linux-arm64 archive under qemu-user"
if [ -z "$qemu" ]; then
  fail "qemu-aarch64 is not installed (apt package qemu-user-static)"
fi
mkdir -p "$tmp/arm64"
tar -xzf "$dist/small-v$version-linux-arm64.tar.gz" -C "$tmp/arm64"
out="$("$qemu" "$tmp/arm64/small" version)"
case "$out" in "small $version (commit "*) ;; *) fail "arm64: small version printed: $out" ;; esac
# selftest runs the binary again as a child, which needs binfmt; run its steps one by one.
ws="$tmp/arm64-ws"
mkdir -p "$ws"
arm() { (cd "$ws" && "$qemu" "$tmp/arm64/small" "$@"); }
arm init --intent "arm64 smoke run" >/dev/null
arm plan --add "Arm task" >/dev/null
arm checkpoint --task task-2 --status completed --evidence "ran under qemu" >/dev/null
arm handoff --summary "arm64 smoke" >/dev/null
arm check --strict >/dev/null || fail "arm64: check --strict"
echo "ok: linux-arm64: $(head -n 1 <<<"$out"); init, plan, checkpoint, handoff, check --strict"

echo "== figures"
printf '%s\n' "${figures[@]}"
