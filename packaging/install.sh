#!/bin/sh
# Install small from a release archive: download the archive for this machine and the
# release's checksums.txt, verify the archive's SHA-256, then put `small` in a directory.
#
#   curl -fsSL https://github.com/@SMALL_RELEASE_REPO@/releases/download/v@SMALL_VERSION@/install.sh | sh
#   sh install.sh --version 0.1.0 --dir /usr/local/bin
#
# POSIX sh; needs curl or wget, tar, and sha256sum, shasum or openssl.
# SMALL_INSTALL_BASE_URL replaces the download base (mirrors, tests): files are fetched from
# $SMALL_INSTALL_BASE_URL/v<version>/<file>. Exit 0 installed, 1 refused (checksum), 2 usage
# or system error (no download, unknown platform). Nothing is installed unless verified.
set -eu

DEFAULT_VERSION="@SMALL_VERSION@"
DEFAULT_BASE_URL="https://github.com/@SMALL_RELEASE_REPO@/releases/download"

usage() {
	cat <<EOF
Usage: install.sh [--version X.Y.Z] [--dir DIR]

Installs the small binary for this machine from a release archive, after verifying its
SHA-256 against the release's checksums.txt.

Options:
  --version X.Y.Z  the release to install (default: $DEFAULT_VERSION)
  --dir DIR        where to put \`small\` (default: ~/.local/bin)
  -h, --help       show this help

Environment:
  SMALL_INSTALL_BASE_URL    download base instead of $DEFAULT_BASE_URL
  SMALL_INSTALL_DOWNLOADER  curl or wget (default: the first one found)
EOF
}

say() { printf 'small-install: %s\n' "$*" >&2; }
die() { say "error: $2"; exit "$1"; }

version="$DEFAULT_VERSION"
dir="${HOME:-}/.local/bin"
while [ "$#" -gt 0 ]; do
	case "$1" in
	--version)
		[ "$#" -ge 2 ] || die 2 "--version needs a value"
		version="$2"
		shift 2
		;;
	--version=*)
		version="${1#--version=}"
		shift
		;;
	--dir)
		[ "$#" -ge 2 ] || die 2 "--dir needs a value"
		dir="$2"
		shift 2
		;;
	--dir=*)
		dir="${1#--dir=}"
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		die 2 "unknown argument: $1"
		;;
	esac
done

version="${version#v}"
case "$version" in
'' | *[!0-9A-Za-z.+-]*) die 2 "not a version: '$version' (expected X.Y.Z)" ;;
esac
[ -n "$dir" ] || die 2 "--dir is empty and HOME is not set"

case "$(uname -s)" in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) die 2 "no release archive for $(uname -s); on Windows download the .zip from the release page" ;;
esac
case "$(uname -m)" in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die 2 "no release archive for the $(uname -m) processor" ;;
esac

base="${SMALL_INSTALL_BASE_URL:-$DEFAULT_BASE_URL}"
base="${base%/}/v$version"
archive="small-v$version-$os-$arch.tar.gz"

downloader="${SMALL_INSTALL_DOWNLOADER:-}"
if [ -z "$downloader" ]; then
	if command -v curl >/dev/null 2>&1; then
		downloader=curl
	elif command -v wget >/dev/null 2>&1; then
		downloader=wget
	else
		die 2 "neither curl nor wget is installed"
	fi
fi

# fetch URL FILE: download to FILE, failing on any HTTP error.
fetch() {
	case "$downloader" in
	curl) curl --proto '=https,http' -fsSL --retry 2 -o "$2" "$1" ;;
	wget) wget -q -O "$2" "$1" ;;
	*) die 2 "SMALL_INSTALL_DOWNLOADER must be curl or wget, not '$downloader'" ;;
	esac
}

# sha256 FILE: print the file's SHA-256 in hex.
sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d ' ' -f 1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d ' ' -f 1
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 "$1" | sed 's/^.*= *//'
	else
		die 2 "no SHA-256 tool (sha256sum, shasum or openssl) to verify the download"
	fi
}

tmp="$(mktemp -d 2>/dev/null || mktemp -d -t small-install)"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

say "downloading $archive (v$version) from $base"
fetch "$base/checksums.txt" "$tmp/checksums.txt" || die 2 "cannot download $base/checksums.txt"
fetch "$base/$archive" "$tmp/$archive" || die 2 "cannot download $base/$archive"

expected="$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/checksums.txt")"
[ -n "$expected" ] || die 1 "checksums.txt has no line for $archive; refusing to install"
actual="$(sha256 "$tmp/$archive")"
if [ "$actual" != "$expected" ]; then
	die 1 "checksum mismatch for $archive (expected $expected, got $actual); refusing to install"
fi

mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" small || die 1 "$archive holds no 'small' binary"
[ -f "$tmp/x/small" ] || die 1 "$archive holds no 'small' binary"

mkdir -p "$dir" || die 2 "cannot create $dir"
# Copy beside the target, then rename: a running `small` is never left half-written.
cp "$tmp/x/small" "$dir/.small.install.$$" || die 2 "cannot write to $dir"
chmod 755 "$dir/.small.install.$$"
mv -f "$dir/.small.install.$$" "$dir/small" || {
	rm -f "$dir/.small.install.$$"
	die 2 "cannot write $dir/small"
}

say "installed $dir/small (v$version, sha256 $actual)"
case ":${PATH:-}:" in
*":$dir:"*) ;;
*) say "note: $dir is not on your PATH; add it, e.g. export PATH=\"$dir:\$PATH\"" ;;
esac
