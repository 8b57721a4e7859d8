#!/usr/bin/env python3
"""Record what the reference CLI's `reconstruct` says of migrated 2.0.0 workspaces, as facts
the test suite holds our binary to (crates/small-cli/tests/testsuite/conformance_v2_reconstruct.rs).

For every migrated tree of the v2 corpus (../shared/conformance/v2/migrate/<case>/output),
in a fresh copy: `reconstruct --json` (exit code, the obligations' ids in the order printed,
the JSON type of `handoffs`) and `reconstruct --resume --json` with no session active (exit
code and `error.code`). Writes crates/small-cli/tests/fixtures/reference-json/
v2-reconstruct-migrated.json. Values other than ids and codes are not kept.

Usage: record-v2-reconstruct.py [--binary PATH]
Python 3 standard library only.
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "conformance", "v2", "migrate")
OUT = os.path.join(
    ROOT, "crates/small-cli/tests/fixtures/reference-json/v2-reconstruct-migrated.json"
)


def json_type(v):
    if v is None:
        return "null"
    return {list: "array", dict: "object", str: "string", bool: "bool"}.get(type(v), "number")


def run(binary, cwd, home, args):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "LANG": "C.UTF-8",
        "SMALL_NO_UPDATE_CHECK": "1",
        "SMALL_NO_BANNER": "1",
        "NO_COLOR": "1",
    }
    p = subprocess.run(
        [binary] + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    return p.returncode, json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "..", "shared", "reference", "small-1.1"))
    binary = os.path.abspath(ap.parse_args().binary)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    cases = {}
    for case in sorted(os.listdir(CORPUS)):
        src = os.path.join(CORPUS, case, "output")
        if not os.path.isdir(src):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            work, home = os.path.join(tmp, "w"), os.path.join(tmp, "home")
            os.mkdir(home)
            shutil.copytree(src, work, symlinks=True)
            code, doc = run(binary, work, home, ["reconstruct", "--json"])
            rcode, rdoc = run(binary, work, home, ["reconstruct", "--resume", "--json"])
        cases[case] = {
            "exit": code,
            "obligations": [o["id"] for o in doc.get("obligations") or []],
            "handoffs": json_type(doc.get("handoffs")),
            "resume_exit": rcode,
            "resume_error_code": (rdoc.get("error") or {}).get("code"),
        }
    with open(OUT, "w") as f:
        json.dump(
            {
                "comment": "Written by ci/record-v2-reconstruct.py: ids, JSON types, exit and error codes only.",
                "binary": version,
                "cases": cases,
            },
            f,
            indent=1,
        )
        f.write("\n")


if __name__ == "__main__":
    main()
