#!/usr/bin/env python3
"""Claim latency: `small claim` and `small unclaim` against a bare repository on disk and a
`git daemon` on loopback, beside the plain `git push` round trip (the floor); the git
processes one claim starts; `claim --next` under an 8-way race; `claims` and `claim --next`
with 1 000 and 10 000 records on the remote.

    python3 bench/claims.py [--small target/release/small] [--runs 40] [--rounds 10]

Prints p50/p99 of each.
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
    claim, renew, unclaim, push = [], [], [], []
    for i in range(first, first + runs):
        claim.append(timed([small, "claim", f"task-{i}", "--as", "bench"], work))
        renew.append(timed([small, "claim", f"task-{i}", "--as", "bench"], work))
        unclaim.append(timed([small, "unclaim", f"task-{i}"], work))
        sha = run(["git", "rev-parse", "HEAD"], work).stdout.strip()
        push.append(timed(["git", "push", "-q", url, f"{sha}:refs/bench/r{i}"], work))
    line(f"{name}: claim (fresh lease)", claim)
    line(f"{name}: claim (renewal)", renew)
    line(f"{name}: unclaim", unclaim)
    line(f"{name}: git push of one ref (floor)", push)
    return work


def processes(work, small, task):
    """The git processes one claim starts, by command (GIT_TRACE)."""
    trace = work / "trace.log"
    env = dict(ENV, GIT_TRACE=str(trace))
    subprocess.run([small, "claim", task, "--as", "bench"], cwd=work, env=env,
                   capture_output=True, check=True)
    subprocess.run([small, "unclaim", task], cwd=work, env=ENV, capture_output=True, check=True)
    ours, helpers = [], []
    for l in trace.read_text().splitlines():
        if "trace: built-in: git " in l:
            rest = l.split("trace: built-in: git ", 1)[1]
            cmd = rest.split(" ")[0]
            # git push lists the local refs itself (`for-each-ref --format=%(objectname)`).
            transfer = cmd in ("upload-pack", "receive-pack", "pack-objects", "unpack-objects",
                               "rev-list", "index-pack", "maintenance") or \
                rest.startswith("for-each-ref '--format=%(objectname)'")
            (helpers if transfer else ours).append(cmd)
    print(f"git processes one claim starts: {len(ours)} ({', '.join(ours)}), "
          f"plus {len(helpers)} git runs for the transfer ({', '.join(helpers)})")


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


def next_race(top, small, url, agents, rounds):
    """`claim --next` by `agents` clones at once, `rounds` times over fresh tasks: each
    claim's own latency, p50/p99 over all of them."""
    dirs = []
    for i in range(agents):
        d = top / f"next-{i}"
        run(["git", "clone", "-q", url, str(d)], top)
        dirs.append(d)
    lat, seen = [], set()
    for _ in range(rounds):
        procs = []
        for i, d in enumerate(dirs):
            t = time.perf_counter()
            p = subprocess.Popen([small, "claim", "--next", "--as", f"agent-{i}", "--ttl", "1h",
                                  "--json"], cwd=d, env=ENV, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            procs.append((t, p))
        for t, p in procs:
            out, err = p.communicate()
            lat.append((time.perf_counter() - t) * 1000)
            if p.returncode != 0:
                sys.exit(f"claim --next failed: {out}{err}")
            task = json.loads(out)["task_id"]
            assert task not in seen, f"{task} taken twice"
            seen.add(task)
    line(f"claim --next, {agents} at once ({rounds} rounds)", lat)


def many_records(top, small, count, runs):
    """`claims` and `claim --next` with `count` records of other holders on the remote."""
    bare = seed(top, small, 4)
    blobs = "".join(
        json.dumps({"version": 1, "task": f"other-{i}", "holder": f"h{i}", "label": f"agent {i}",
                    "host": "bench", "taken": "2026-01-01T00:00:00Z",
                    "renewed": "2026-01-01T00:00:00Z", "ends": "2099-01-01T00:00:00Z",
                    "ttl_seconds": 1800, "generation": 1}) + "\n"
        for i in range(count))
    # One blob per record through fast-import would be quicker; hash-object --stdin-paths
    # on files is simple enough for 10 000.
    rec_dir = top / f"records-{count}"
    rec_dir.mkdir()
    paths = []
    for i, l in enumerate(blobs.splitlines()):
        f = rec_dir / f"r{i}"
        f.write_text(l + "\n")
        paths.append(str(f))
    shas = subprocess.run(["git", "hash-object", "-w", "--stdin-paths"], cwd=bare, env=ENV,
                          input="\n".join(paths) + "\n", capture_output=True, text=True,
                          check=True).stdout.split()
    updates = "".join(f"create refs/small/claims/_/other-{i} {sha}\n" for i, sha in enumerate(shas))
    subprocess.run(["git", "update-ref", "--stdin"], cwd=bare, env=ENV, input=updates,
                   text=True, check=True)
    work = top / f"many-{count}"
    # A file:// URL transfers packs, as a clone over the network does (a plain path would
    # hard-link the remote's 10 000 loose objects into the clone).
    run(["git", "clone", "-q", f"file://{bare}", str(work)], top)
    first = timed([small, "claims"], work)
    listing, nxt = [], []
    for _ in range(runs):
        listing.append(timed([small, "claims", "--json"], work))
        nxt.append(timed([small, "claim", "--next", "--as", "bench"], work))
        run([small, "unclaim", "task-1"], work)
    print(f"{count} records: first `claims` (fetches them all) {first:.0f} ms")
    line(f"{count} records, loose refs on the remote: claims --json", listing)
    line(f"{count} records, loose refs on the remote: claim --next", nxt)
    # A remote's `git gc` (run by itself now and then, `receive.autogc`) packs its refs.
    run(["git", "pack-refs", "--all"], bare)
    listing, nxt = [], []
    for _ in range(runs):
        listing.append(timed([small, "claims", "--json"], work))
        nxt.append(timed([small, "claim", "--next", "--as", "bench"], work))
        run([small, "unclaim", "task-1"], work)
    line(f"{count} records, packed refs on the remote: claims --json", listing)
    line(f"{count} records, packed refs on the remote: claim --next", nxt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", default="target/release/small")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()
    small = str(Path(a.small).resolve())
    with tempfile.TemporaryDirectory() as t:
        top = Path(t)
        bare = seed(top, small, 2 * a.runs + 1)
        work = latency(top, small, str(bare), "bare repository on disk", a.runs, 1)
        processes(work, small, f"task-{2 * a.runs + 1}")
        next_top = top / "next"
        next_top.mkdir()
        next_race(next_top, small, str(seed(next_top, small, 8 * a.rounds)), 8, a.rounds)
        for count in (1000, 10000):
            many_top = top / f"many{count}"
            many_top.mkdir()
            many_records(many_top, small, count, max(5, a.runs // 4))
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
