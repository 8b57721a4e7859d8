#!/usr/bin/env python3
"""The packaging steps of ci/dist.sh whose output must be exact and reproducible.

Release archives (tar.gz / zip with fixed owners, modes and times), the binary taken out of a
wheel (so each platform is compiled once, by maturin, for every channel), the npm package
directories, and checksums.txt. Standard library only: it runs on the release runners of
every platform as it runs here.
"""

import argparse
import gzip
import hashlib
import io
import json
import re
import shutil
import tarfile
import time
import zipfile
from pathlib import Path


def _epoch(value):
    # Zip cannot hold times before 1980.
    return max(int(value), 315532800)


def archive(args):
    """Write dist/<name>.tar.gz (or .zip): the binary, LICENSE and README.md at the top."""
    exe = "small.exe" if args.format == "zip" else "small"
    members = [(exe, Path(args.binary), 0o755)]
    members += [(Path(f).name, Path(f), 0o644) for f in args.files]
    epoch = _epoch(args.epoch)
    out = Path(args.out) / f"{args.name}.{args.format}"
    if args.format == "zip":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name, path, mode in members:
                info = zipfile.ZipInfo(name, time.gmtime(epoch)[:6])
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, path.read_bytes())
    else:
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, path, mode in members:
                data = path.read_bytes()
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), mode, epoch
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(data))
        with open(out, "wb") as f, gzip.GzipFile(
            filename="", fileobj=f, mode="wb", compresslevel=9, mtime=epoch
        ) as gz:
            gz.write(raw.getvalue())
    print(out)


def wheel_binary(args):
    """Copy the `small` script of a maturin `bin` wheel to `out` (mode 0755)."""
    pattern = re.compile(r"^[^/]+\.data/scripts/small(\.exe)?$")
    with zipfile.ZipFile(args.wheel) as z:
        names = [n for n in z.namelist() if pattern.match(n)]
        if len(names) != 1:
            raise SystemExit(f"{args.wheel}: expected one small binary, found {names}")
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(z.read(names[0]))
    out.chmod(0o755)
    print(out)


def _write_json(path, value):
    path.write_text(json.dumps(value, indent=2) + "\n")


def npm_platform(args):
    """A platform package: its binary in bin/, chosen by npm through `os` and `cpu`."""
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    (out / "bin").mkdir(parents=True)
    exe = "small.exe" if args.os == "win32" else "small"
    shutil.copyfile(args.binary, out / "bin" / exe)
    (out / "bin" / exe).chmod(0o755)
    shutil.copyfile(args.license, out / "LICENSE")
    (out / "README.md").write_text(
        f"# {args.name}\n\nThe {args.os} {args.cpu} binary of `@small-rs/small`; "
        "install that package, not this one.\n"
    )
    _write_json(
        out / "package.json",
        {
            "name": args.name,
            "version": args.version,
            "description": f"The {args.os} {args.cpu} binary of @small-rs/small",
            "license": "MIT",
            "os": [args.os],
            "cpu": [args.cpu],
            "files": [f"bin/{exe}", "README.md", "LICENSE"],
            "preferUnplugged": True,
        },
    )
    print(out)


def npm_main(args):
    """The `@small-rs/small` package, its version and its platform packages stamped in."""
    src, out = Path(args.src), Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(src, out)
    shutil.copyfile(args.license, out / "LICENSE")
    pkg = json.loads((out / "package.json").read_text())
    pkg["version"] = args.version
    pkg["optionalDependencies"] = {name: args.version for name in sorted(args.platform)}
    _write_json(out / "package.json", pkg)
    print(out)


def checksums(args):
    """checksums.txt: `<sha256>  <name>` for every other file of the directory."""
    d = Path(args.dir)
    lines = []
    for f in sorted(d.iterdir()):
        if f.is_file() and f.name != "checksums.txt":
            lines.append(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n")
    (d / "checksums.txt").write_text("".join(lines))
    print(d / "checksums.txt")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(required=True)

    a = sub.add_parser("archive")
    a.add_argument("--name", required=True)
    a.add_argument("--binary", required=True)
    a.add_argument("--format", choices=["tar.gz", "zip"], required=True)
    a.add_argument("--epoch", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("files", nargs="*")
    a.set_defaults(run=archive)

    w = sub.add_parser("wheel-binary")
    w.add_argument("wheel")
    w.add_argument("out")
    w.set_defaults(run=wheel_binary)

    n = sub.add_parser("npm-platform")
    for flag in ("--binary", "--name", "--os", "--cpu", "--version", "--license", "--out"):
        n.add_argument(flag, required=True)
    n.set_defaults(run=npm_platform)

    m = sub.add_parser("npm-main")
    for flag in ("--src", "--version", "--license", "--out"):
        m.add_argument(flag, required=True)
    m.add_argument("--platform", action="append", default=[])
    m.set_defaults(run=npm_main)

    c = sub.add_parser("checksums")
    c.add_argument("dir")
    c.set_defaults(run=checksums)

    args = p.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
