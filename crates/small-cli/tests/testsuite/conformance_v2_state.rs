//! The readers of the project state on every recorded 2.0.0 workspace: `resume`, `emit`,
//! `doctor` and `status` see the same state as the strict check.
//!
//! The reference has no `resume`, `emit` or `doctor` for this profile, so there is no verdict
//! of its to repeat; what must hold is agreement with our own strict check, whose verdicts are
//! compared with the reference's in `conformance_v2`: resume's gate verdict passes exactly
//! when `check --strict` does, doctor finds an error exactly when it fails, and the task
//! counts of emit and resume equal status's.

use serde_json::Value;

use crate::conformance_v11::run_small;
use crate::conformance_v2::{copy_case_links, load_cases};

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn resume_emit_and_doctor_agree_with_the_strict_check_on_every_case() {
    let cases = load_cases();
    if cases.is_empty() {
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let mut failures = Vec::new();
    let mut passed = 0;
    for case in &cases {
        let work = tempfile::tempdir().expect("tmp");
        copy_case_links(&case.dir, work.path());
        let run = |a: &[&str]| run_small(work.path(), home.path(), &args(a));
        let (check, _, _) = run(&["check", "--strict", "--workspace", "any"]);
        let sound = check == 0;
        passed += usize::from(sound);
        let json = |what: &str, out: &str| -> Value {
            serde_json::from_str(out).unwrap_or_else(|e| {
                panic!("{}: {what} is not JSON ({e}): {out}", case.name);
            })
        };

        let (code, out, err) = run(&["resume", "--json"]);
        if code != 0 {
            failures.push(format!("{}: resume exit {code}: {err}", case.name));
            continue;
        }
        let resume = json("resume", &out);
        let verdict = resume["gates"]["status"].as_str().unwrap_or_default();
        if verdict != if sound { "pass" } else { "fail" } {
            failures.push(format!(
                "{}: resume's gates say {verdict}, check --strict exits {check}",
                case.name
            ));
        }

        let (code, out, err) = run(&["doctor", "--json"]);
        let doctor = json("doctor", &out);
        let errors = doctor["errors"].as_u64().unwrap_or(u64::MAX);
        if code != 0 || (errors == 0) != sound {
            failures.push(format!(
                "{}: doctor exit {code}, {errors} error(s), check --strict exits {check}: {err}",
                case.name
            ));
        }

        let (code, out, err) = run(&["emit"]);
        let emit = json("emit", &out);
        if code != 0 || emit["profile"] != "2.0.0" {
            failures.push(format!("{}: emit exit {code}: {out} {err}", case.name));
            continue;
        }
        if sound {
            let (_, out, _) = run(&["status", "--json"]);
            let status = json("status", &out);
            let tasks = status["tasks"].as_array().map_or(0, Vec::len);
            if emit["status"]["totalTasks"] != tasks {
                failures.push(format!(
                    "{}: emit counts {} task(s), status {tasks}",
                    case.name, emit["status"]["totalTasks"]
                ));
            }
            let next = status["next_task"]["alias"]
                .as_str()
                .filter(|a| !a.is_empty())
                .or_else(|| status["next_task"]["id"].as_str());
            if let Some(next) = next {
                if resume["next_task"]["id"].as_str() != Some(next) {
                    failures.push(format!(
                        "{}: resume's next task is {}, status's {next}",
                        case.name, resume["next_task"]["id"]
                    ));
                }
            }
        }
    }
    // The corpus has sound and damaged trees: both sides of every comparison were seen.
    assert!(
        passed > 10 && passed < cases.len(),
        "{passed} of {}",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `status` and `resume` answer the same through the cache in `.small-cache/` as with
/// `--no-cache`, on every recorded case: written by the first run, used by the second.
#[test]
fn the_state_cache_gives_the_answer_of_a_full_read_on_every_case() {
    let cases = load_cases();
    if cases.is_empty() {
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let works: Vec<_> = cases
        .iter()
        .map(|case| {
            let work = tempfile::tempdir().expect("tmp");
            copy_case_links(&case.dir, work.path());
            work
        })
        .collect();
    // Files younger than the cache's racy margin are never cached: let the copies age.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let mut failures = Vec::new();
    let mut hits = 0;
    let mut cached_verdicts = 0;
    for (case, work) in cases.iter().zip(&works) {
        let run = |a: &[&str]| run_small(work.path(), home.path(), &args(a));
        let full = run(&["status", "--json", "--no-cache"]);
        let first = run(&["status", "--json"]);
        let cached = run(&["status", "--json"]);
        if full != first || full != cached {
            failures.push(format!(
                "{}: status --no-cache, then twice through the cache:\n{full:?}\n{first:?}\n{cached:?}",
                case.name
            ));
        }
        hits += usize::from(work.path().join(".small-cache/v2-state.v1").is_file());
        let strip = |out: &str| -> Value {
            let mut v: Value = serde_json::from_str(out).unwrap_or(Value::Null);
            v["gates"]["source"] = Value::Null;
            v
        };
        let (c1, o1, _) = run(&["resume", "--json", "--no-cache"]);
        let (c2, o2, _) = run(&["resume", "--json"]);
        if c1 != c2 || strip(&o1) != strip(&o2) {
            failures.push(format!("{}: resume differs:\n{o1}\n{o2}", case.name));
        }
        let source = |out: &str| -> String {
            let v: Value = serde_json::from_str(out).unwrap_or(Value::Null);
            v["gates"]["source"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        cached_verdicts += usize::from(source(&o2).starts_with("cached"));
        if source(&o1).starts_with("cached") {
            failures.push(format!("{}: resume --no-cache used the cache", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(hits > 0, "no case was cached");
    assert!(cached_verdicts > 0, "resume never read the cache");
}
