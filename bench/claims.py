#!/usr/bin/env python3
"""Claim latency: `small claim` against a bare repository on disk and a `git daemon` on
loopback, beside the plain `git push` round trip (the floor), and 16 agents claiming at once.

    python3 bench/claims.py [--small target/release/small] [--runs 40]

Prints p50/p99 of: a fresh claim, a renewal, a plain push of one ref; then, for 16 clones
running `small claim --next` at the same instant over 16 tasks, the time until the last has
its task (and that each got a different one).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = dict(
    os.environ,
    GIT_AUTHOR_NAME="bench",
    GIT_AUTHOR_EMAIL="bench@example.invalid",
    GIT_COMMITTER_NAME="bench",
    GIT_COMMITTER_EMAIL="bench@example.invalid",
    GIT_TERMINAL_PROMPT="0",
    NO_COLOR="1",
)


def run(args, cwd, check=True):
    p = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def timed(args, cwd):
    t = time.perf_counter()
    run(args, cwd)
    return (time.perf_counter() - t) * 1000


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def line(name, xs):
    print(f"{name:<52} p50 {pct(xs, 0.5):7.1f} ms   p99 {pct(xs, 0.99):7.1f} ms   (n={len(xs)})")


def seed(top, small, tasks):
    s = top / "seed"
    s.mkdir()
    run(["git", "init", "-q", "-b", "main"], s)
    run([small, "init", "--no-agents", "--intent", "bench", "--task", "Task 1"], s)
    args = [small, "plan"]
    for i in range(2, tasks + 1):
        args += ["--add", f"Task {i}"]
    run(args, s)
    run(["git", "add", "-A", ".small"], s)
    run(["git", "commit", "-q", "-m", "plan"], s)
    bare = top / "remote.git"
    run(["git", "clone", "-q", "--bare", str(s), str(bare)], top)
    return bare


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def daemon(base):
    port = free_port()
    p = subprocess.Popen(
        ["git", "daemon", "--export-all", "--enable=receive-pack", "--reuseaddr",
         f"--base-path={base}", "--listen=127.0.0.1", f"--port={port}", str(base)],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return p, port
        except OSError:
            time.sleep(0.02)
    sys.exit("git daemon did not start")


def latency(top, small, url, name, runs, first):
    work = top / f"clone-{name}"
    run(["git", "clone", "-q", url, str(work)], top)
    claim, renew, push = [], [], []
    for i in range(first, first + runs):
        claim.append(timed([small, "claim", f"task-{i}", "--as", "bench"], work))
        renew.append(timed([small, "claim", f"task-{i}", "--as", "bench"], work))
        sha = run(["git", "rev-parse", "HEAD"], work).stdout.strip()
        push.append(timed(["git", "push", "-q", url, f"{sha}:refs/bench/r{i}"], work))
    line(f"{name}: claim (fresh lease)", claim)
    line(f"{name}: claim (renewal)", renew)
    line(f"{name}: git push of one ref (floor)", push)


def race(top, small, url, agents):
    dirs = []
    for i in range(agents):
        d = top / f"agent-{i}"
        run(["git", "clone", "-q", url, str(d)], top)
        dirs.append(d)
    start = time.perf_counter()
    procs = [subprocess.Popen([small, "claim", "--next", "--as", f"agent-{i}", "--json"], cwd=d,
                              env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, d in enumerate(dirs)]
    done = []
    for p in procs:
        out, err = p.communicate()
        done.append((time.perf_counter() - start) * 1000)
        if p.returncode != 0:
            sys.exit(f"claim --next failed: {out}{err}")
        p.task = json.loads(out)["task"]
    tasks = [p.task for p in procs]
    assert len(set(tasks)) == agents, tasks
    print(f"{agents} agents, claim --next at once: each had a different task; "
          f"last after {max(done):.0f} ms, median {statistics.median(done):.0f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", default="target/release/small")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--agents", type=int, default=16)
    a = ap.parse_args()
    small = str(Path(a.small).resolve())
    with tempfile.TemporaryDirectory() as t:
        top = Path(t)
        bare = seed(top, small, 2 * a.runs)
        latency(top, small, str(bare), "bare repository on disk", a.runs, 1)
        d, port = daemon(top)
        try:
            url = f"git://127.0.0.1:{port}/remote.git"
            latency(top, small, url, "git daemon on loopback", a.runs, a.runs + 1)
            # A fresh remote for the race: every task free.
            race_top = top / "race"
            race_top.mkdir()
            seed(race_top, small, a.agents)
            race(race_top, small, f"git://127.0.0.1:{port}/race/remote.git", a.agents)
        finally:
            d.kill()


if __name__ == "__main__":
    main()
