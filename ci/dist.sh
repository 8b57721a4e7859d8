#!/usr/bin/env bash
# Build small's release files into dist/: per target a static archive
# (small-vX.Y.Z-<os>-<arch>.tar.gz, .zip on Windows), a wheel and an npm platform package;
# then the npm main package, install.sh and checksums.txt.
#
#   bash ci/dist.sh                       # Linux amd64 + arm64 (musl, static, linked by zig)
#   bash ci/dist.sh aarch64-apple-darwin  # what the release workflow runs on each runner
#   bash ci/dist.sh --checksums DIR       # checksums.txt over a directory of release files
#   bash ci/dist.sh --tools               # only install the pinned tools; print their bin dir
#
# Each target is compiled once, by maturin (the wheel); the archive and the npm package take
# the binary out of that wheel. The tools (maturin, zig) come from PyPI into target/dist-tools
# unless maturin is already on PATH. SOURCE_DATE_EPOCH (default: the commit's time) fixes
# every timestamp, so the same commit gives the same archives.
set -euo pipefail
cd "$(dirname "$0")/.."

py="${PYTHON:-python3}"
if [ "${1:-}" = "--checksums" ]; then
  "$py" ci/dist_pack.py checksums "${2:?--checksums needs a directory}"
  exit 0
fi

version="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
[ -n "$version" ] || { echo "dist: no version in Cargo.toml" >&2; exit 2; }
dist="${SMALL_DIST_DIR:-dist}"
repo="${SMALL_RELEASE_REPO:-small-rs/small}"
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl)

export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
export SMALL_BUILD_COMMIT="${SMALL_BUILD_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}"

# maturin, zig and cargo-zigbuild from PyPI, pinned, into target/dist-tools.
tools_venv() {
  local tools="$PWD/target/dist-tools"
  if [ ! -x "$tools/bin/cargo-zigbuild" ]; then
    "$py" -m venv "$tools"
    "$tools/bin/pip" install --quiet "maturin[zig]==1.16.0" "ziglang==0.17.1" \
      "cargo-zigbuild==0.24.1"
  fi
  echo "$tools/bin"
}
if [ "${1:-}" = "--tools" ]; then
  tools_venv
  exit 0
fi
# The release runners bring their own maturin; elsewhere the pinned one.
command -v maturin >/dev/null 2>&1 || PATH="$(tools_venv):$PATH"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$dist"
mkdir -p "$dist"

for target in "${targets[@]}"; do
  # target -> release os/arch (the reference's names), npm os/cpu, archive format
  case "$target" in
    x86_64-unknown-linux-musl) os=linux arch=amd64 npm_os=linux npm_cpu=x64 ;;
    aarch64-unknown-linux-musl) os=linux arch=arm64 npm_os=linux npm_cpu=arm64 ;;
    x86_64-apple-darwin) os=darwin arch=amd64 npm_os=darwin npm_cpu=x64 ;;
    aarch64-apple-darwin) os=darwin arch=arm64 npm_os=darwin npm_cpu=arm64 ;;
    x86_64-pc-windows-msvc) os=windows arch=amd64 npm_os=win32 npm_cpu=x64 ;;
    *) echo "dist: unknown target $target" >&2; exit 2 ;;
  esac
  format=tar.gz exe=small
  [ "$os" = windows ] && format=zip exe=small.exe
  build=(--release --locked --target "$target" --out "$work/wheels-$target")
  # A static musl binary runs on every Linux: tag its wheel for glibc and musl systems both.
  [ "$os" = linux ] && build+=(--zig --compatibility manylinux2014 musllinux_1_2)

  echo "== $target: wheel (maturin)"
  command -v rustup >/dev/null 2>&1 && rustup target add "$target" >/dev/null
  (cd packaging/python && maturin build "${build[@]}")
  wheel="$(ls "$work/wheels-$target"/*.whl)"
  cp "$wheel" "$dist/"
  bin="$work/bin-$target/$exe"
  "$py" ci/dist_pack.py wheel-binary "$wheel" "$bin"

  echo "== $target: archive"
  "$py" ci/dist_pack.py archive --name "small-v$version-$os-$arch" --binary "$bin" \
    --format "$format" --epoch "$SOURCE_DATE_EPOCH" --out "$dist" LICENSE README.md

  echo "== $target: npm package"
  name="@small-rs/small-$npm_os-$npm_cpu"
  "$py" ci/dist_pack.py npm-platform --binary "$bin" --name "$name" --os "$npm_os" \
    --cpu "$npm_cpu" --version "$version" --license LICENSE --out "$work/npm-$npm_os-$npm_cpu"
  (cd "$work/npm-$npm_os-$npm_cpu" && npm pack --silent --pack-destination "$OLDPWD/$dist" >/dev/null)
done

echo "== npm main package"
# Every platform the launcher knows is an optional dependency, built here or not: the release
# workflow builds each on its own runner and publishes them together.
npm_platforms=()
for p in linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64; do
  npm_platforms+=(--platform "@small-rs/small-$p")
done
"$py" ci/dist_pack.py npm-main --src packaging/npm/small --version "$version" \
  --license LICENSE --out "$work/npm-main" "${npm_platforms[@]}"
(cd "$work/npm-main" && npm pack --silent --pack-destination "$OLDPWD/$dist" >/dev/null)

echo "== install.sh"
sed -e "s|@SMALL_VERSION@|$version|g" -e "s|@SMALL_RELEASE_REPO@|$repo|g" \
  packaging/install.sh >"$dist/install.sh"
chmod 755 "$dist/install.sh"

"$py" ci/dist_pack.py checksums "$dist" >/dev/null
echo "== dist/"
ls -l "$dist"
