#!/usr/bin/env node
// Runs the `small` binary of this platform. Each binary ships in its own package
// (@small-rs/small-<os>-<cpu>), an optional dependency that npm installs only where its
// `os` and `cpu` match: no download and no install script.
'use strict';

const { spawnSync } = require('child_process');
const fs = require('fs');

const PACKAGES = {
  'linux x64': '@small-rs/small-linux-x64',
  'linux arm64': '@small-rs/small-linux-arm64',
  'darwin x64': '@small-rs/small-darwin-x64',
  'darwin arm64': '@small-rs/small-darwin-arm64',
  'win32 x64': '@small-rs/small-win32-x64',
};

function fail(message) {
  process.stderr.write(`small: ${message}\n`);
  process.exit(2);
}

function binaryPath() {
  const key = `${process.platform} ${process.arch}`;
  const pkg = PACKAGES[key];
  if (!pkg) {
    fail(`no prebuilt binary for ${key}; build from source: cargo install --path crates/small-cli`);
  }
  const exe = process.platform === 'win32' ? 'small.exe' : 'small';
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch (_) {
    fail(`the package ${pkg} is missing; reinstall without --omit=optional (or --no-optional)`);
  }
  return undefined;
}

const bin = binaryPath();
if (process.platform !== 'win32') {
  // Some package managers drop the executable bit when they unpack a tarball.
  try {
    fs.accessSync(bin, fs.constants.X_OK);
  } catch (_) {
    try {
      fs.chmodSync(bin, 0o755);
    } catch (_) {
      // The spawn below reports what is wrong.
    }
  }
}
const result = spawnSync(bin, process.argv.slice(2), { stdio: 'inherit' });
if (result.error) {
  fail(`cannot run ${bin}: ${result.error.message}`);
}
if (result.signal) {
  process.kill(process.pid, result.signal);
}
process.exit(result.status === null ? 2 : result.status);
