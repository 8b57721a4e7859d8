#!/usr/bin/env python3
"""Record the shape of the reference CLI's `--json` documents, as facts the test suite holds
our binary to (crates/small-cli/tests/testsuite/reference_json.rs).

Runs every scenario of crates/small-cli/tests/fixtures/reference-json/scenarios.json with a
given binary (by default the reference, ../shared/reference/small-1.1) and writes
recorded.json beside it: for each step marked `"record": true`, the exit code, whether stdout
was JSON, and the key path -> JSON type map of each document. Nothing of the documents'
values is kept, only their shape.

Scenario format (the Rust test reads the same file):
  {"preludes": {NAME: [step, ...]},
   "scenarios": [{"name": ..., "profile": "1.0.0" | "2.0.0", "steps": [step, ...]}]}
  step: {"args": [...], "cwd": "sub", "capture": {VAR: "a.b[0].c"}, "stdout_to": "file",
         "record": true, "differs": "docs/decisions/NNNN-title.md: why"}
      | {"git": [...], "cwd": "sub"}
      | {"write": {"path": "file", "text": "..."}}
      | {"include": NAME}
  `{VAR}` in args, cwd, git args, paths and text is replaced by a captured value; `{DIR}` is
  the scenario's temporary directory. Steps not recorded must exit 0.

Usage: record-reference-json.py [--binary PATH] [--only SCENARIO] [--out FILE]
Python 3 standard library only.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates/small-cli/tests/fixtures/reference-json")
PLACEHOLDER = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")
ID_KEY = re.compile(r"[0-9a-f]{32}")
TIMEOUT = 300


class StepFailed(Exception):
    pass


def substitute(text, env):
    def one(m):
        if m.group(1) not in env:
            raise StepFailed(f"unknown placeholder {{{m.group(1)}}}")
        return env[m.group(1)]

    return PLACEHOLDER.sub(one, text)


def expand(steps, preludes):
    out = []
    for step in steps:
        if "include" in step:
            out.extend(expand(preludes[step["include"]], preludes))
        else:
            out.append(step)
    return out


def process_env(home):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "LANG": "C.UTF-8",
        "SMALL_NO_UPDATE_CHECK": "1",
        "SMALL_NO_BANNER": "1",
        "NO_COLOR": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Recorder",
        "GIT_AUTHOR_EMAIL": "recorder@example.com",
        "GIT_COMMITTER_NAME": "Recorder",
        "GIT_COMMITTER_EMAIL": "recorder@example.com",
    }
    return env


def json_documents(text):
    """The JSON objects/arrays stdout holds, one after another; None when it is not that."""
    decoder = json.JSONDecoder()
    docs, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return docs or None
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        if not isinstance(value, (dict, list)):
            return None
        docs.append(value)


def type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def key_name(key):
    """Keys that are generated ids (32+ hex digits) vary between runs: one name for all."""
    return "<id>" if ID_KEY.search(key) else key


def shape(value, path, out):
    out.setdefault(path, set()).add(type_name(value))
    prefix = "" if path == "$" else path
    if isinstance(value, dict):
        for k, v in value.items():
            shape(v, f"{prefix}.{key_name(k)}" if prefix else key_name(k), out)
    elif isinstance(value, list):
        for v in value:
            shape(v, f"{prefix}[]", out)
    return out


def doc_shape(doc):
    return {p: "|".join(sorted(t)) for p, t in sorted(shape(doc, "$", {}).items())}


def lookup(doc, path):
    value = doc
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            value = value[int(part[1:-1])]
        else:
            value = value[part]
    if not isinstance(value, str):
        value = json.dumps(value)
    return value


class Runner:
    def __init__(self, binary, scenario, preludes):
        self.binary = binary
        self.scenario = scenario
        self.steps = expand(scenario["steps"], preludes)
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="small-refjson-"))
        self.home = tempfile.mkdtemp(prefix="small-refjson-home-")
        self.env = {"DIR": self.dir}

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.home, ignore_errors=True)

    def path(self, rel):
        return os.path.join(self.dir, substitute(rel, self.env))

    def run(self, argv, cwd, executable=None):
        return subprocess.run(
            argv,
            executable=executable,
            cwd=self.path(cwd),
            env=process_env(self.home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT,
        )

    def step(self, index, step):
        where = f"{self.scenario['name']} step {index}"
        if "write" in step:
            target = self.path(step["write"]["path"])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as f:
                f.write(substitute(step["write"]["text"], self.env))
            return None
        if "git" in step:
            argv = ["git"] + [substitute(a, self.env) for a in step["git"]]
            proc = self.run(argv, step.get("cwd", "."))
            if proc.returncode != 0:
                raise StepFailed(f"{where}: {argv} exited {proc.returncode}: {proc.stderr!r}")
            return None
        args = [substitute(a, self.env) for a in step["args"]]
        proc = self.run(["small"] + args, step.get("cwd", "."), executable=self.binary)
        out = proc.stdout.decode("utf-8", "replace")
        if not step.get("record") and proc.returncode != 0:
            raise StepFailed(
                f"{where}: set-up {args} exited {proc.returncode}: {proc.stderr[-2000:]!r}"
            )
        if "stdout_to" in step:
            with open(self.path(step["stdout_to"]), "w", encoding="utf-8") as f:
                f.write(out)
        docs = json_documents(out)
        for var, path in step.get("capture", {}).items():
            try:
                self.env[var] = lookup(docs[0], path)
            except (TypeError, KeyError, IndexError) as e:
                raise StepFailed(f"{where}: cannot capture {var} = {path} from {out[:500]!r}: {e}")
        if not step.get("record"):
            return None
        fact = {
            "scenario": self.scenario["name"],
            "step": index,
            "args": step["args"],
            "exit": proc.returncode,
            "stdout": "json" if docs else ("empty" if not out.strip() else "text"),
            "stderr_empty": not proc.stderr.strip(),
        }
        if docs:
            fact["documents"] = [doc_shape(d) for d in docs]
        return fact

    def record(self):
        facts = []
        for index, step in enumerate(self.steps):
            fact = self.step(index, step)
            if fact is not None:
                facts.append(fact)
        return facts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--binary", default=os.path.join(ROOT, "..", "shared", "reference", "small-1.1")
    )
    parser.add_argument("--scenarios", default=os.path.join(FIXTURES, "scenarios.json"))
    parser.add_argument("--out", default=os.path.join(FIXTURES, "recorded.json"))
    parser.add_argument("--only", help="record only this scenario, print it, write nothing")
    opts = parser.parse_args()
    binary = os.path.abspath(opts.binary)
    with open(opts.scenarios, encoding="utf-8") as f:
        spec = json.load(f)
    preludes = spec.get("preludes", {})
    facts, failed = [], []
    for scenario in spec["scenarios"]:
        if opts.only and scenario["name"] != opts.only:
            continue
        runner = Runner(binary, scenario, preludes)
        try:
            facts.extend(runner.record())
        except (StepFailed, subprocess.TimeoutExpired) as e:
            failed.append(str(e))
        finally:
            runner.cleanup()
    for f in failed:
        print(f"FAILED: {f}", file=sys.stderr)
    if opts.only:
        json.dump(facts, sys.stdout, indent=1)
        print()
        return 1 if failed else 0
    if failed:
        return 1
    version = subprocess.run(
        ["small", "version"], executable=binary, capture_output=True, env=process_env("/tmp")
    ).stdout.decode("utf-8", "replace")
    doc = {
        "comment": "Written by ci/record-reference-json.py; shapes only (key paths, JSON types, exit codes).",
        "binary": next((l for l in version.splitlines() if l.startswith("small ")), "unknown"),
        "recorded": facts,
    }
    with open(opts.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"{len(facts)} recorded invocations -> {os.path.relpath(opts.out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
