#!/usr/bin/env python3
"""Swarm throughput: K agents, each in its own clone, finish one plan of 24 tasks (with
dependencies) through the documented loop, over a bare repository on disk and over
`git daemon` on loopback.

    python3 bench/swarm.py [--small target/release/small] [--agents 1,4,8] [--tasks 24]
                           [--profile v1|v2]

Each agent runs, until the plan is finished:

    small claim --next --as AGENT        # nothing ready: small sync (pull), wait, again
    (trivial work: a file, committed)
    small checkpoint --status completed --evidence ...
    small sync --commit

Prints, per transport and K: wall time, tasks finished per minute, the push retries (`small
sync --json`'s attempts beyond the first, summed), the `claim --next` calls that found
nothing ready, and that no task was started twice.
"""

import argparse
import json
import os
import socket
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


def run(args, cwd, check=True, env=ENV):
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def seed(top, small, tasks, profile):
    """A plan of `tasks` tasks: chains of four (each task after the one before it)."""
    s = top / "seed"
    s.mkdir()
    run(["git", "init", "-q", "-b", "main"], s)
    run([small, "init", "--intent", "swarm", "--task", "Task 1"], s)
    for i in range(2, tasks + 1):
        run([small, "plan", "--add", f"Task {i}"], s)
    for i in range(2, tasks + 1):
        if (i - 1) % 4:
            run([small, "plan", "--depends", f"task-{i}:task-{i - 1}"], s)
    if profile == "v2":
        # Collaborative mode: each agent's clone has a session of its own open.
        plan = run([small, "migrate", "--to", "2.0.0", "--preview", "--namespace", "bench",
                    "--mode", "collaborative", "--json"], s).stdout
        path = top / "migration.json"
        path.write_text(plan)
        digest = json.loads(plan)["expected_input_digest"]
        run([small, "migrate", "--apply", str(path), "--expect-state", digest], s)
    run(["git", "add", "-A"], s)
    run(["git", "commit", "-q", "-m", "plan"], s)
    bare = top / "remote.git"
    run(["git", "clone", "-q", "--bare", str(s), str(bare)], top)
    return bare


AGENT = r"""
set -u
small="$1"; name="$2"; log="$3"
idle=0; retries=0; empty=0
for _ in $(seq 1 400); do
  out=$("$small" claim --next --as "$name" --json 2>/dev/null); rc=$?
  if [ $rc -ne 0 ]; then
    empty=$((empty + 1))
    s=$("$small" sync --json 2>/dev/null) || true
    open=$("$small" status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); ts=d.get("tasks") or d.get("plan",{}).get("tasks",[]); print(sum(1 for t in ts if t.get("status") not in ("completed","cancelled") and not str(t.get("alias") or t.get("id","")).startswith("meta/")))')
    [ "$open" = "0" ] && break
    sleep 0.05; continue
  fi
  task=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["task_id"])')
  echo "$task" >> "$log"
  mkdir -p work; echo "$name did $task" > "work/$task.txt"
  git add "work/$task.txt" && git commit -q -m "work on $task"
  "$small" checkpoint --status completed --evidence "work/$task.txt" >/dev/null || exit 3
  s=$("$small" sync --commit --json) || exit 4
  a=$(printf '%s' "$s" | python3 -c 'import json,sys; print(json.load(sys.stdin)["attempts"])')
  retries=$((retries + a - 1))
done
echo "$retries $empty" > "$log.stats"
"""


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


def swarm(top, small, url, agents, tasks, profile):
    script = top / "agent.sh"
    script.write_text(AGENT)
    dirs = []
    for i in range(agents):
        d = top / f"agent-{i}"
        run(["git", "clone", "-q", url, str(d)], top)
        run([small, "merge-driver", "--install"], d)
        if profile == "v2":
            run([small, "session", "start", "--label", f"agent-{i}"], d)
            run([small, "sync", "--commit"], d)
        dirs.append(d)
    start = time.perf_counter()
    procs = [subprocess.Popen(["bash", str(script), small, f"agent-{i}", str(top / f"log-{i}")],
                              cwd=d, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
             for i, d in enumerate(dirs)]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"an agent failed ({p.returncode}): {err[-2000:]}")
    wall = time.perf_counter() - start
    started, retries, empty = [], 0, 0
    for i in range(agents):
        log = top / f"log-{i}"
        started += log.read_text().split() if log.exists() else []
        r, e = (top / f"log-{i}.stats").read_text().split()
        retries, empty = retries + int(r), empty + int(e)
    twice = len(started) - len(set(started))
    return wall, len(set(started)), twice, retries, empty


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", default="target/release/small")
    ap.add_argument("--agents", default="1,4,8")
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--profile", choices=["v1", "v2"], default="v1")
    a = ap.parse_args()
    small = str(Path(a.small).resolve())
    for transport in ("bare repository on disk", "git daemon on loopback"):
        for k in [int(x) for x in a.agents.split(",")]:
            with tempfile.TemporaryDirectory() as t:
                top = Path(t)
                bare = seed(top, small, a.tasks, a.profile)
                d = None
                url = str(bare)
                if "daemon" in transport:
                    d, port = daemon(top)
                    url = f"git://127.0.0.1:{port}/remote.git"
                try:
                    wall, done, twice, retries, empty = swarm(top, small, url, k, a.tasks,
                                                             a.profile)
                finally:
                    if d:
                        d.kill()
                print(f"{a.profile} {transport}, {k} agent(s): {done}/{a.tasks} tasks in "
                      f"{wall:.1f} s = {done / wall * 60:.0f} tasks/min; started twice: {twice}; "
                      f"push retries: {retries}; claims that found nothing ready: {empty}")


if __name__ == "__main__":
    main()
