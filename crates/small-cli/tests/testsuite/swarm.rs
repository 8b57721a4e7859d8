//! The swarm: K agent processes, each a shell script in its own clone of one remote, run the
//! documented loop (`claim --next`, work committed to git, `checkpoint`, `sync --commit`) on
//! a plan of 25 tasks with chains, a diamond and a join, until every task is completed. Both
//! profiles (v1 and 2.0.0, one session per clone), a bare repository by path and `git daemon`,
//! 4 and 8 agents. Afterwards a fresh clone of the remote shows every task started by one
//! agent and completed once, passes `check --strict`, holds no conflict marker, and the remote
//! holds no live lease. Deterministic checks without concurrency: a completion that is not
//! pushed yet keeps its task from another clone, and from another worktree with `--local`
//! leases; a progress entry that a rebase put before a newer one does not stop the next
//! sync (the v1 swarm's failure, step by step).
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::claims_support::{
    bare_remote, clone, command, daemon_or_skip, git, init_seed, json, small, text, Daemon, BIN,
};

/// The tasks of the swarm's plan: `task-1` … `task-25`.
const TASKS: usize = 25;

/// `task-N:task-M` (N depends on M): three chains of four, a diamond, eight free tasks and a
/// join of the chains' and the diamond's ends.
const DEPENDS: &[(usize, usize)] = &[
    (2, 1),
    (3, 2),
    (4, 3),
    (6, 5),
    (7, 6),
    (8, 7),
    (10, 9),
    (11, 10),
    (12, 11),
    (14, 13),
    (15, 13),
    (16, 14),
    (16, 15),
    (25, 4),
    (25, 8),
    (25, 12),
    (25, 16),
];

/// The claims an agent makes at most, and the seconds it runs at most, before it gives up
/// (exit 3): a bug cannot hang the test.
const MAX_ITERATIONS: usize = 400;
const DEADLINE_SECS: u64 = 240;

/// One agent: claim the next ready task, pull when the claim says a dependency's work is
/// not here yet, write its work file (naming the work files
/// it found) and commit it, complete it, publish with `small sync --commit`; when nothing is
/// ready, pull and stop once the plan shows every task completed, else wait a moment and
/// claim again.
///
/// Arguments: the small binary, the agent's name, its clone, the log directory, the number
/// of completed tasks `small status --json` shows at the end, the iteration bound and the
/// deadline in seconds. It appends each task it claimed to `<logs>/<agent>.started` and
/// writes its counters to `<logs>/<agent>.stats`. Exit 0 done, 3 out of iterations or time,
/// 4 a command failed, 5 `small sync` failed.
const AGENT: &str = r#"#!/usr/bin/env bash
set -u
small=$1 agent=$2 clone=$3 logs=$4 expect=$5 max=$6 deadline=$7
cd "$clone" || exit 4
: >"$logs/$agent.started"
retries=0 rejected=0 syncs=0 waits=0 idle=0 claimed=0
say() { printf '%s: %s\n' "$agent" "$*" >&2; }
finish() {
  printf 'retries=%s rejected=%s syncs=%s dependency_waits=%s idle=%s claimed=%s\n' \
    "$retries" "$rejected" "$syncs" "$waits" "$idle" "$claimed" >"$logs/$agent.stats"
  exit "$1"
}
# small sync [--commit]: the push retries of each sync summed. A sync whose every push was
# refused (others kept pushing first) is run again; anything else ends the agent.
publish() {
  local n out rc attempts
  for n in 1 2 3 4 5; do
    out=$("$small" sync "$@" --json 2>&1)
    rc=$?
    if [ "$rc" -eq 0 ]; then
      attempts=$(printf '%s\n' "$out" | sed -n 's/^  "attempts": \([0-9]*\),$/\1/p')
      retries=$((retries + ${attempts:-1} - 1))
      syncs=$((syncs + 1))
      return 0
    fi
    case "$out" in
      *'"code": "push-rejected"'*) rejected=$((rejected + 1)); sleep "0.$((RANDOM % 5 + 1))" ;;
      *) say "small sync $* exit $rc: $out"; finish 5 ;;
    esac
  done
  say "small sync $*: every push refused, 5 times"
  finish 5
}
i=0
while [ "$i" -lt "$max" ]; do
  i=$((i + 1))
  if [ "$SECONDS" -gt "$deadline" ]; then say "out of time after $i iterations"; finish 3; fi
  out=$("$small" claim --next --as "$agent" --json 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    task=$(printf '%s\n' "$out" | sed -n 's/^  "task": "\(.*\)",$/\1/p' | head -n 1)
    if [ -z "$task" ]; then say "claim named no task: $out"; finish 4; fi
    printf '%s\n' "$task" >>"$logs/$agent.started"
    claimed=$((claimed + 1))
    # A dependency finished elsewhere: the claim says to pull its work first.
    case "$out" in *'"pull_first"'*) publish ;; esac
    mkdir -p work
    saw=$(ls work | tr '\n' ' ')
    printf 'task %s\ndone by %s\nsaw: %s\n' "$task" "$agent" "$saw" >"work/$task.txt"
    git add "work/$task.txt" && git commit -q -m "work: $task ($agent)" || finish 4
    w=0
    until cp=$("$small" checkpoint --status completed --evidence "work/$task.txt by $agent" 2>&1); do
      case "$cp" in
        *open-dependencies*)
          # v1: a dependency is finished by another agent's done record, and this
          # checkout's plan does not show it yet: pull, and complete the task then.
          w=$((w + 1))
          waits=$((waits + 1))
          if [ "$w" -gt 100 ]; then say "the dependencies of $task never arrived: $cp"; finish 4; fi
          publish
          sleep 0.1
          ;;
        *) say "checkpoint of $task: $cp"; finish 4 ;;
      esac
    done
    publish --commit
  elif [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -q '"code": "no-free-task"'; then
    publish
    st=$("$small" status --json 2>&1)
    if printf '%s\n' "$st" | grep -Eq "^ *\"completed\": $expect,?\$" &&
      ! printf '%s\n' "$st" | grep -Eq '^ *"(pending|in_progress|blocked)": [1-9]'; then
      finish 0
    fi
    idle=$((idle + 1))
    sleep "0.$((RANDOM % 4 + 2))"
  else
    say "claim --next exit $rc: $out"
    finish 4
  fi
done
say "out of iterations ($max)"
finish 3
"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Profile {
    V1,
    V2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Path,
    Daemon,
}

fn task(n: usize) -> String {
    format!("task-{n}")
}

/// A repository `top/seed` whose workspace (of `profile`) plans `tasks` tasks, `task-1` …,
/// with `depends`, committed on `main`. The number of completed tasks `small status --json`
/// shows once every task is done (2.0.0 counts the imported `meta/init` too).
fn seed(
    top: &Path,
    profile: Profile,
    tasks: usize,
    depends: &[(usize, usize)],
) -> (PathBuf, usize) {
    let seed = init_seed(top, "Swarm", &[]);
    if profile == Profile::V2 {
        git(&seed, &["add", "-A"]);
        git(&seed, &["commit", "-q", "-m", "v1"]);
        let plan = json(
            &seed,
            0,
            &[
                "migrate",
                "--to",
                "2.0.0",
                "--preview",
                "--namespace",
                "swarm",
                "--mode",
                "collaborative",
                "--json",
            ],
        );
        let file = top.join("migration.json");
        std::fs::write(&file, plan.to_string()).unwrap();
        let digest = plan["expected_input_digest"].as_str().unwrap();
        let apply = [
            "migrate",
            "--apply",
            file.to_str().unwrap(),
            "--expect-state",
            digest,
        ];
        small(&seed, 0, &apply);
        small(&seed, 0, &["session", "start", "--label", "planner"]);
        // One change per call on 2.0.0; the aliases are task-2 … in order.
        for n in 2..=tasks {
            let o = small(&seed, 0, &["plan", "--add", &format!("Task {n}")]);
            assert!(
                text(&o).contains(&format!("Added task {} ", task(n))),
                "{}",
                text(&o)
            );
        }
    } else {
        for n in 2..=tasks {
            let id = task(n);
            small(
                &seed,
                0,
                &["plan", "--add", &format!("Task {n}"), "--id", &id],
            );
        }
    }
    for (t, dep) in depends {
        small(
            &seed,
            0,
            &["plan", "--depends", &format!("task-{t}:task-{dep}")],
        );
    }
    if profile == Profile::V2 {
        small(&seed, 0, &["session", "close", "--summary", "planned"]);
    }
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "plan"]);
    let st = json(&seed, 0, &["status", "--json"]);
    let expect = match profile {
        Profile::V1 => st["plan"]["total_tasks"].as_u64().unwrap() as usize,
        Profile::V2 => st["tasks"].as_array().unwrap().len(),
    };
    (bare_remote(top, &seed, &[]), expect)
}

/// One swarm at a time: on two cores, two at once only slow each other down.
static SERIAL: Mutex<()> = Mutex::new(());

/// What one agent left behind.
struct Agent {
    name: String,
    exit: Option<i32>,
    started: Vec<String>,
    stats: BTreeMap<String, u64>,
    stderr: String,
}

/// Run K agents of `profile` over `transport` to the end, and check what the remote holds.
fn swarm(profile: Profile, transport: Transport, k: usize) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = tempfile::tempdir().unwrap();
    let top = d.path();
    let (remote, expect) = seed(top, profile, TASKS, DEPENDS);
    let daemon: Option<Daemon> = match transport {
        Transport::Path => None,
        Transport::Daemon => match daemon_or_skip(top) {
            Some(daemon) => Some(daemon),
            None => return,
        },
    };
    let url = match &daemon {
        Some(daemon) => daemon.url("remote.git"),
        None => remote.to_str().unwrap().to_string(),
    };
    let logs = top.join("logs");
    std::fs::create_dir(&logs).unwrap();
    let script = top.join("agent.sh");
    std::fs::write(&script, AGENT).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The agents run a link to the binary: a build that replaces it meanwhile (cargo in
    // another terminal) does not pull it from under them.
    let linked = top.join("small");
    let bin = match std::fs::hard_link(BIN, &linked) {
        Ok(()) => linked.to_str().unwrap().to_string(),
        Err(_) => BIN.to_string(),
    };
    let names: Vec<String> = (0..k).map(|i| format!("agent-{i}")).collect();
    let dirs: Vec<PathBuf> = names
        .iter()
        .map(|name| {
            let dir = clone(top, &url, name);
            if profile == Profile::V2 {
                // Each clone works in a session of its own (collaborative mode).
                small(
                    &dir,
                    0,
                    &["session", "start", "--label", name, "--actor-label", name],
                );
            }
            dir
        })
        .collect();

    let start = Instant::now();
    let mut children: Vec<Option<Child>> = names
        .iter()
        .zip(&dirs)
        .map(|(name, dir)| {
            let err = std::fs::File::create(logs.join(format!("{name}.err"))).unwrap();
            let args = [
                script.to_str().unwrap(),
                &bin,
                name,
                dir.to_str().unwrap(),
                logs.to_str().unwrap(),
                &expect.to_string(),
                &MAX_ITERATIONS.to_string(),
                &DEADLINE_SECS.to_string(),
            ];
            let mut c = command(top, "bash", &args);
            // Its own process group: a watchdog can stop it with everything it started.
            c.process_group(0).stdout(Stdio::null()).stderr(err);
            Some(c.spawn().unwrap())
        })
        .collect();
    // Wait for every agent; once one fails (or the deadline is long past), the others
    // would only wait for its tasks: stop them (exit -9).
    let mut exits: Vec<Option<i32>> = vec![None; k];
    let hard = Duration::from_secs(DEADLINE_SECS + 60);
    while children.iter().any(Option::is_some) {
        let failed = exits.iter().any(|e| e.is_some_and(|c| c != 0));
        for (i, slot) in children.iter_mut().enumerate() {
            if let Some(child) = slot {
                if let Some(status) = child.try_wait().unwrap() {
                    exits[i] = Some(status.code().unwrap_or(-1));
                    *slot = None;
                } else if failed || start.elapsed() > hard {
                    let group = format!("-{}", child.id());
                    let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
                    let _ = child.wait();
                    exits[i] = Some(-9);
                    *slot = None;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let wall = start.elapsed();

    let agents: Vec<Agent> = names
        .iter()
        .zip(exits)
        .map(|(name, exit)| {
            let read = |ext: &str| {
                std::fs::read_to_string(logs.join(format!("{name}.{ext}"))).unwrap_or_default()
            };
            Agent {
                name: name.clone(),
                exit,
                started: read("started").lines().map(str::to_string).collect(),
                stats: read("stats")
                    .split_whitespace()
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.parse().unwrap_or(0)))
                    .collect(),
                stderr: read("err"),
            }
        })
        .collect();
    let report: String = agents
        .iter()
        .map(|a| {
            format!(
                "{} exit {:?}, started {:?}, {:?}\n{}\n",
                a.name, a.exit, a.started, a.stats, a.stderr
            )
        })
        .collect();

    // Every agent finished by itself.
    let failed: Vec<(&str, Option<i32>)> = agents
        .iter()
        .filter(|a| a.exit != Some(0))
        .map(|a| (a.name.as_str(), a.exit))
        .collect();
    assert!(
        failed.is_empty(),
        "agents that did not finish (-9: stopped): {failed:?}\n{report}"
    );
    let sum = |key: &str| {
        agents
            .iter()
            .map(|a| a.stats.get(key).copied().unwrap_or(0))
            .sum::<u64>()
    };
    let minutes = wall.as_secs_f64() / 60.0;
    // The figures, for information only.
    eprintln!(
        "swarm {profile:?} over {transport:?}, {k} agents: {TASKS} tasks in {:.1}s ({:.1} tasks/minute); \
         push retries {}, syncs refused after every push {}, syncs {}, dependency waits {}, idle rounds {}",
        wall.as_secs_f64(),
        TASKS as f64 / minutes,
        sum("retries"),
        sum("rejected"),
        sum("syncs"),
        sum("dependency_waits"),
        sum("idle"),
    );
    // No task started twice; every task started once.
    let mut by_task: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in &agents {
        for t in &a.started {
            by_task.entry(t.as_str()).or_default().push(a.name.as_str());
        }
    }
    let twice: Vec<_> = by_task.iter().filter(|(_, who)| who.len() > 1).collect();
    assert!(
        twice.is_empty(),
        "tasks started more than once: {twice:?}\n{report}"
    );
    let all: BTreeSet<String> = (1..=TASKS).map(task).collect();
    let started: BTreeSet<String> = by_task.keys().map(|t| t.to_string()).collect();
    assert_eq!(started, all, "{report}");

    // What the remote holds, in a fresh clone.
    let fresh = clone(top, &url, "fresh");
    small(&fresh, 0, &["check", "--strict"]);
    let completions = completions(&fresh, profile);
    for t in &all {
        assert_eq!(
            completions.get(t).copied().unwrap_or(0),
            1,
            "{t} completed {:?} times: {completions:?}\n{report}",
            completions.get(t)
        );
        let work = std::fs::read_to_string(fresh.join("work").join(format!("{t}.txt")))
            .unwrap_or_else(|e| panic!("work/{t}.txt: {e}\n{report}"));
        let by = by_task[t.as_str()][0];
        assert!(work.contains(&format!("done by {by}")), "{t}: {work}");
    }
    // Every dependent started with its dependencies' work in its clone: `claim --next`
    // offers a task only once its dependencies' completions are on the remote, and the
    // agent pulls when the claim says so (`pull_first`).
    let early = (1..=TASKS)
        .filter(|&t| {
            let work = std::fs::read_to_string(fresh.join(format!("work/task-{t}.txt")))
                .unwrap_or_default();
            let saw = work
                .lines()
                .find_map(|l| l.strip_prefix("saw:"))
                .unwrap_or("");
            DEPENDS.iter().any(|&(n, dep)| {
                n == t
                    && !saw
                        .split_whitespace()
                        .any(|f| f == format!("task-{dep}.txt"))
            })
        })
        .count();
    let dependents = DEPENDS.iter().map(|d| d.0).collect::<BTreeSet<_>>().len();
    assert_eq!(
        early, 0,
        "swarm {profile:?} over {transport:?}, {k} agents: {early} of {dependents} dependent \
         tasks started before their dependencies' work was on the remote"
    );
    let st = json(&fresh, 0, &["status", "--json"]);
    let counts = match profile {
        Profile::V1 => st["plan"]["tasks_by_status"].clone(),
        Profile::V2 => st["task_counts"].clone(),
    };
    assert_eq!(counts["completed"], expect, "{st}");
    let leases = json(&fresh, 0, &["claims", "--json"]);
    let held: Vec<&Value> = leases["claims"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["state"] == "held")
        .collect();
    assert!(held.is_empty(), "live leases left on the remote: {held:?}");
    let marked = conflict_markers(&fresh);
    assert!(marked.is_empty(), "conflict markers in {marked:?}");
}

/// How many times each task (by name) is completed in the workspace at `dir`: v1 progress
/// entries with status `completed`; 2.0.0 `task_transitioned` events to `completed`.
fn completions(dir: &Path, profile: Profile) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    match profile {
        Profile::V1 => {
            let r = json(dir, 0, &["reconstruct", "--json", "--limit", "0"]);
            assert_eq!(r["truncated"], false, "{r}");
            for e in r["entries"].as_array().unwrap() {
                if e["status"] == "completed" {
                    *out.entry(e["task_id"].as_str().unwrap().to_string())
                        .or_default() += 1;
                }
            }
        }
        Profile::V2 => {
            let st = json(dir, 0, &["status", "--json"]);
            let alias: BTreeMap<&str, &str> = st["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| (t["id"].as_str().unwrap(), t["alias"].as_str().unwrap()))
                .collect();
            let events = dir.join(".small/events");
            for session in std::fs::read_dir(&events).unwrap() {
                for file in std::fs::read_dir(session.unwrap().path()).unwrap() {
                    let bytes = std::fs::read(file.unwrap().path()).unwrap();
                    let e: Value = serde_json::from_slice(&bytes).unwrap();
                    if e["kind"] == "task_transitioned" && e["payload"]["status"] == "completed" {
                        let id = e["task_id"].as_str().unwrap();
                        let name = alias.get(id).copied().unwrap_or(id);
                        *out.entry(name.to_string()).or_default() += 1;
                    }
                }
            }
        }
    }
    out
}

/// The files under `dir` (but `.git`) holding a line that starts a conflict.
fn conflict_markers(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                if entry.file_name() != ".git" {
                    todo.push(path);
                }
            } else if kind.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                if String::from_utf8_lossy(&bytes)
                    .lines()
                    .any(|l| l.starts_with("<<<<<<<"))
                {
                    found.push(path);
                }
            }
        }
    }
    found
}

// Four of the eight combinations, so that each profile runs over both transports and with
// both K, and each transport with both K: all eight took about 3.5 minutes on two cores,
// these four about 1.5.
#[test]
fn swarm_v1_four_agents_over_a_bare_path() {
    swarm(Profile::V1, Transport::Path, 4);
}

#[test]
fn swarm_v1_eight_agents_over_git_daemon() {
    swarm(Profile::V1, Transport::Daemon, 8);
}

#[test]
fn swarm_v2_eight_agents_over_a_bare_path() {
    swarm(Profile::V2, Transport::Path, 8);
}

#[test]
fn swarm_v2_four_agents_over_git_daemon() {
    swarm(Profile::V2, Transport::Daemon, 4);
}

/// The claim document's task, from `small claim … --json` in `dir` (exit 0).
fn claimed(dir: &Path, args: &[&str]) -> String {
    let v = json(dir, 0, args);
    assert_eq!(v["status"], "claimed", "{v}");
    v["task"].as_str().unwrap().to_string()
}

/// The error code of `small args` in `dir`, which must exit 1 with a JSON error document.
fn refused(dir: &Path, args: &[&str]) -> String {
    let v = json(dir, 1, args);
    v["errors"][0]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Write and commit the work of `task` in `dir`, then complete it.
fn complete(dir: &Path, task: &str) {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let file = format!("work/{task}.txt");
    std::fs::write(dir.join(&file), format!("task {task}\n")).unwrap();
    git(dir, &["add", &file]);
    git(dir, &["commit", "-q", "-m", &format!("work: {task}")]);
    let evidence = format!("{file} written");
    small(
        dir,
        0,
        &[
            "checkpoint",
            "--status",
            "completed",
            "--evidence",
            &evidence,
        ],
    );
}

#[test]
fn a_completion_not_pushed_yet_keeps_its_task_from_another_clone() {
    let d = tempfile::tempdir().unwrap();
    let top = d.path();
    let (remote, _) = seed(top, Profile::V1, 4, &[]);
    let url = remote.to_str().unwrap();
    let (a, b) = (clone(top, url, "a"), clone(top, url, "b"));
    let ta = claimed(&a, &["claim", "--next", "--as", "alice", "--json"]);
    complete(&a, &ta);
    // b has not pulled, and a has not synced: the done record on the remote holds the task.
    let tb = claimed(&b, &["claim", "--next", "--as", "bob", "--json"]);
    assert_ne!(tb, ta);
    assert_eq!(
        refused(&b, &["claim", &ta, "--as", "bob", "--json"]),
        "done"
    );
    let list = json(&b, 0, &["claims", "--json"]);
    let rec = list["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["task"] == ta.as_str())
        .unwrap_or_else(|| panic!("no record of {ta}: {list}"));
    assert_eq!(rec["state"], "done", "{list}");
    assert_eq!(rec["label"], "alice", "{list}");
}

#[test]
fn a_completion_on_a_worktree_branch_keeps_its_task_from_local_claims() {
    let d = tempfile::tempdir().unwrap();
    let top = d.path();
    let (remote, _) = seed(top, Profile::V1, 4, &[]);
    let main = clone(top, remote.to_str().unwrap(), "main");
    let trees: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|name| {
            let dir = top.join(format!("tree-{name}"));
            let add = ["worktree", "add", "-q", "-b", name, dir.to_str().unwrap()];
            git(&main, &add);
            dir
        })
        .collect();
    let (a, b) = (&trees[0], &trees[1]);
    let ta = claimed(
        a,
        &["claim", "--next", "--local", "--as", "tree-a", "--json"],
    );
    complete(a, &ta);
    git(a, &["add", "-A", ".small"]);
    git(a, &["commit", "-q", "-m", "small: record SMALL state"]);
    // b takes every other task, one after another, and never ta.
    let mut taken = BTreeSet::new();
    loop {
        let o = small_any(
            b,
            &["claim", "--next", "--local", "--as", "tree-b", "--json"],
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        match o.status.code() {
            Some(0) => assert!(taken.insert(v["task"].as_str().unwrap().to_string()), "{v}"),
            Some(1) => {
                assert_eq!(v["errors"][0]["code"], "no-free-task", "{v}");
                break;
            }
            _ => panic!("{}", text(&o)),
        }
        assert!(taken.len() <= 4, "{taken:?}");
    }
    let others: BTreeSet<String> = (1..=4).map(task).filter(|t| *t != ta).collect();
    assert_eq!(taken, others);
    assert_eq!(
        refused(b, &["claim", &ta, "--local", "--as", "tree-b", "--json"]),
        "done"
    );
}

fn small_any(dir: &Path, args: &[&str]) -> Output {
    command(dir, BIN, args).output().unwrap()
}

/// The swarm's v1 failure in three clones, one step after another: a's completion is older
/// than b's but reaches the remote after it, so the rebase puts a's entry before b's; c,
/// which pulled b's push, then syncs its own completion on top.
#[test]
fn an_older_entry_pushed_later_does_not_stop_the_next_sync() {
    let d = tempfile::tempdir().unwrap();
    let top = d.path();
    let (remote, _) = seed(top, Profile::V1, 3, &[]);
    let url = remote.to_str().unwrap();
    let [a, b, c] = ["a", "b", "c"].map(|name| clone(top, url, name));
    let done = |dir: &Path, t: &str| {
        let args = ["checkpoint", "--task", t, "--status", "completed"];
        small(dir, 0, &[&args[..], &["--evidence", t]].concat());
    };
    done(&a, "task-1");
    done(&b, "task-2");
    small(&b, 0, &["sync", "--commit"]);
    small(&c, 0, &["sync"]);
    small(&a, 0, &["sync", "--commit"]);
    done(&c, "task-3");
    small(&c, 0, &["sync", "--commit"]);
    small(&c, 0, &["check", "--strict"]);
    let fresh = clone(top, url, "fresh");
    small(&fresh, 0, &["check", "--strict"]);
    let mut completions = completions(&fresh, Profile::V1);
    completions.retain(|t, _| t.starts_with("task-"));
    let want: BTreeMap<String, usize> = (1..=3).map(|n| (task(n), 1)).collect();
    assert_eq!(completions, want);
}
