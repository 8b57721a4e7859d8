//! `small apply`: runs `sh -lc`, records the result, keeps command and output in .small-cache/.

use crate::tools_support;
use predicates::prelude::*;
use sha2::{Digest, Sha256};
use tools_support::{assert_check_strict, init, progress_entries, read, small, yaml_json};

fn apply(dir: &std::path::Path, args: &[&str]) -> assert_cmd::assert::Assert {
    small()
        .arg("apply")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .assert()
}

/// The output log of the last run, from `--json`'s `output_ref`.
fn output_ref(json: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(json).expect("apply --json");
    v["output_ref"].as_str().expect("output_ref").to_string()
}

#[test]
fn a_successful_run_of_a_plan_task_records_its_outcome_without_accepting_the_task() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let cmd = "echo   hello-from-apply;  echo second >&2";
    apply(d.path(), &["--cmd", cmd, "--task", "task-1"])
        .success()
        .stdout(predicate::str::contains("hello-from-apply"))
        .stdout(predicate::str::contains(
            "Recorded the outcome of the run for task-1",
        ));
    let entries = progress_entries(d.path());
    assert_eq!(entries.len(), 2, "signal mode: no start entry");
    let e = entries.last().unwrap();
    assert_eq!(e["task_id"], "task-1");
    assert_eq!(e["status"], "in_progress");
    assert_eq!(
        e["evidence"],
        serde_json::json!({"exit_code": 0, "kind": "cli_execution", "outcome": "succeeded", "strength": "cli_captured"})
    );
    assert_eq!(
        e["notes"],
        "apply: command outcome succeeded; task acceptance unchanged"
    );
    assert_eq!(
        e["command_summary"],
        "echo hello-from-apply; echo second >&2"
    );
    assert_eq!(e["command"], e["command_summary"]);
    assert!(e.get("command_summary_version").is_none(), "not cut");
    let sha = hex::encode(Sha256::digest(cmd.as_bytes()));
    assert_eq!(e["command_sha256"], sha.as_str());
    let r = e["command_ref"].as_str().unwrap();
    // Filed under the run's replay id (here: the handoff's), named for the entry's instant.
    let replay = yaml_json(d.path().join(".small/handoff.small.yml"))["replayId"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    let t = small_core::ops::formats::timestamp::parse(e["timestamp"].as_str().unwrap()).unwrap();
    assert_eq!(r, small_core::ops::formats::command_ref(&replay, t));
    assert_eq!(
        read(d.path().join(r)),
        cmd,
        "command_ref holds the full command"
    );
    let plan = yaml_json(d.path().join(".small/plan.small.yml"));
    assert_ne!(
        plan["tasks"][0]["status"], "completed",
        "apply accepts nothing"
    );
    assert_check_strict(d.path());
    // The output log is named in --json.
    let out = apply(d.path(), &["--cmd", cmd, "--task", "task-1", "--json"]).success();
    let output = read(d.path().join(output_ref(&out.get_output().stdout)));
    assert!(output.contains("hello-from-apply") && output.contains("second"));
}

#[test]
fn a_failing_command_exits_with_its_code_and_records_the_failed_outcome() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    apply(
        d.path(),
        &["--cmd", "echo broken; exit 3", "--task", "task-1"],
    )
    .code(3)
    .stdout(predicate::str::contains("Command failed"));
    let e = progress_entries(d.path()).last().cloned().unwrap();
    assert_eq!(e["status"], "in_progress");
    assert_eq!(e["evidence"]["exit_code"], 3);
    assert_eq!(e["evidence"]["outcome"], "failed");
    assert_eq!(
        e["notes"],
        "apply: command outcome failed; task acceptance unchanged"
    );
}

#[test]
fn signal_mode_records_nothing_for_runs_outside_the_plan() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    apply(d.path(), &["--cmd", "true"])
        .success()
        .stdout(predicate::str::contains("Nothing recorded"));
    assert_eq!(progress_entries(d.path()).len(), 1);
    apply(d.path(), &["--cmd", "true", "--task", "meta/other"]).success();
    assert_eq!(progress_entries(d.path()).len(), 1);
}

#[test]
fn audit_mode_records_start_and_end_for_every_run() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    small()
        .env("SMALL_PROGRESS_MODE", "AUDIT")
        .args(["apply", "--cmd", "echo audited", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    let entries = progress_entries(d.path());
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[1]["task_id"], "apply");
    assert_eq!(entries[1]["status"], "in_progress");
    assert_eq!(entries[2]["status"], "in_progress");
    assert_eq!(entries[2]["evidence"]["outcome"], "succeeded");
    // Each entry's command file is named for its own instant (same bytes, same digest).
    assert_ne!(entries[1]["command_ref"], entries[2]["command_ref"]);
    assert_eq!(entries[1]["command_sha256"], entries[2]["command_sha256"]);
    let t1 = small_core::ops::formats::timestamp::parse(entries[1]["timestamp"].as_str().unwrap())
        .unwrap();
    let t2 = small_core::ops::formats::timestamp::parse(entries[2]["timestamp"].as_str().unwrap())
        .unwrap();
    assert!(t1 < t2);
}

#[test]
fn dry_runs_record_a_pending_entry_for_plan_tasks_and_run_nothing() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let marker = d.path().join("ran.txt");
    apply(
        d.path(),
        &["--cmd", "touch ran.txt", "--task", "task-1", "--dry-run"],
    )
    .success()
    .stdout(predicate::str::contains("Dry run"));
    assert!(!marker.exists());
    let e = progress_entries(d.path()).last().cloned().unwrap();
    assert_eq!(
        (e["task_id"].as_str(), e["status"].as_str()),
        (Some("task-1"), Some("pending"))
    );
    assert!(e["command_ref"].is_string());
    // No --cmd means a dry run too.
    apply(d.path(), &["--task", "task-1"])
        .success()
        .stdout(predicate::str::contains("Dry run"));
    assert_eq!(progress_entries(d.path()).len(), 3);
    assert_check_strict(d.path());
}

#[test]
fn auto_progress_puts_the_output_into_the_evidence() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    apply(
        d.path(),
        &[
            "--cmd",
            "echo captured-output",
            "--task",
            "task-1",
            "--auto-progress",
        ],
    )
    .success()
    .stdout(
        predicate::str::is_match("(?m)^captured-output$")
            .unwrap()
            .not(),
    );
    let e = progress_entries(d.path()).last().cloned().unwrap();
    assert_eq!(e["evidence"]["exit_code"], 0);
    assert_eq!(e["evidence"]["bounded_output"], "captured-output");
}

#[test]
fn flag_combinations_that_make_no_sense_are_usage_errors() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    apply(d.path(), &["--cmd", "true", "--auto-checkpoint"]).code(2);
    apply(
        d.path(),
        &[
            "--cmd",
            "true",
            "--task",
            "task-1",
            "--auto-checkpoint",
            "--dry-run",
        ],
    )
    .code(2);
    apply(d.path(), &["--cmd", "true", "--auto-progress", "--dry-run"]).code(2);
    apply(d.path(), &["--cmd", "true", "--workspace", "examples"]).code(2);
    assert_eq!(progress_entries(d.path()).len(), 1);
}

#[test]
fn the_command_runs_in_the_workspace_root() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    apply(d.path(), &["--cmd", "pwd > where.txt", "--task", "task-1"]).success();
    let where_ = read(d.path().join("where.txt"));
    assert_eq!(
        std::fs::canonicalize(where_.trim()).unwrap(),
        std::fs::canonicalize(d.path()).unwrap()
    );
}

#[test]
fn no_workspace_is_exit_2() {
    let d = tempfile::tempdir().unwrap();
    apply(d.path(), &["--cmd", "true"])
        .code(2)
        .stderr(predicate::str::contains("small init"));
}

#[test]
fn the_workspace_is_not_locked_while_the_command_runs() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let exe = env!("CARGO_BIN_EXE_small");
    let inner = format!("'{exe}' apply --cmd 'echo inner' --task task-1 --dir .");
    small()
        .env("SMALL_LOCK_TIMEOUT", "5")
        .args(["apply", "--cmd", &inner, "--task", "task-1", "--dir"])
        .arg(d.path())
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    let entries = progress_entries(d.path());
    assert_eq!(entries.len(), 3, "inner and outer runs both recorded");
}

#[test]
fn run_bound_entries_carry_the_workspace_replay_id() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let rid = "ab".repeat(32);
    let ws = d.path().join(".small/workspace.small.yml");
    let text = read(&ws);
    std::fs::write(&ws, format!("{text}run:\n  replay_id: \"{rid}\"\n")).unwrap();
    apply(d.path(), &["--cmd", "true", "--task", "task-1"]).success();
    let e = progress_entries(d.path()).last().cloned().unwrap();
    assert_eq!(e["replayId"], rid.as_str());
    assert!(e["command_ref"].as_str().unwrap().contains(&rid));
}

#[test]
fn auto_checkpoint_sets_the_plan_status() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    apply(
        d.path(),
        &[
            "--cmd",
            "echo done",
            "--task",
            "task-1",
            "--auto-checkpoint",
        ],
    )
    .success();
    let plan = yaml_json(d.path().join(".small/plan.small.yml"));
    assert_eq!(plan["tasks"][0]["status"], "completed");
    assert_check_strict(d.path());
}

#[test]
fn handoff_flag_regenerates_the_handoff_after_success() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let handoff = d.path().join(".small/handoff.small.yml");
    let bootstrap = read(&handoff);
    std::fs::write(&handoff, &bootstrap).unwrap();
    apply(
        d.path(),
        &["--cmd", "false", "--task", "task-1", "--handoff"],
    )
    .code(1)
    .stdout(predicate::str::contains("Handoff not regenerated"));
    assert_eq!(read(&handoff), bootstrap);
    // A plan task that has a result but keeps its plan status would be dangling, which the
    // handoff refuses; with --auto-checkpoint the task is closed first.
    apply(
        d.path(),
        &[
            "--cmd",
            "true",
            "--task",
            "task-1",
            "--auto-checkpoint",
            "--handoff",
        ],
    )
    .success();
    let now = read(&handoff);
    assert_ne!(now, bootstrap);
    assert!(!now.contains("Project initialized."));
}

#[test]
fn an_unknown_plan_task_is_refused_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    apply(d.path(), &["--cmd", "touch ran.txt", "--task", "task-9"])
        .code(1)
        .stderr(
            predicate::str::contains("task-9 is not in").and(predicate::str::contains("task-1")),
        );
    assert!(!d.path().join("ran.txt").exists());
    assert_eq!(progress_entries(d.path()).len(), 1);
    // In signal mode a non-plan id records nothing, so it may run.
    apply(d.path(), &["--cmd", "touch ran.txt", "--task", "build"]).success();
    assert!(d.path().join("ran.txt").exists());
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_is_still_recorded() {
    use std::os::unix::process::CommandExt;
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_small"))
        .args(["apply", "--cmd", "sleep 20", "--task", "task-1", "--dir"])
        .arg(d.path())
        .env_remove("SMALL_PROGRESS_MODE")
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // Wait until the command runs (its command log exists), then Ctrl-C the whole group.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !d.path().join(".small-cache/logs").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status = std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130));
    let e = progress_entries(d.path()).last().cloned().unwrap();
    assert_eq!(
        (e["task_id"].as_str(), e["status"].as_str()),
        (Some("task-1"), Some("in_progress"))
    );
    assert_eq!(e["evidence"]["exit_code"], 130);
    assert_eq!(e["evidence"]["outcome"], "failed");
}

#[test]
fn large_output_is_kept_whole_in_the_log_and_capped_in_the_evidence() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    // 2 MB of output, ending in a recognisable line.
    let cmd = "head -c 2000000 /dev/zero | tr '\\0' 'x'; echo; echo LAST-LINE";
    let out = apply(
        d.path(),
        &[
            "--cmd",
            cmd,
            "--task",
            "task-1",
            "--auto-progress",
            "--json",
        ],
    )
    .success();
    let e = progress_entries(d.path()).last().cloned().unwrap();
    let ev = e["evidence"]["bounded_output"].as_str().unwrap();
    assert!(ev.len() <= 4000, "evidence is capped: {} bytes", ev.len());
    assert!(ev.ends_with("LAST-LINE"), "the tail is kept");
    assert_eq!(e["evidence"]["output_truncated"], true);
    let out_ref = output_ref(&out.get_output().stdout);
    let log = std::fs::metadata(d.path().join(out_ref)).unwrap().len();
    assert_eq!(log, 2_000_000 + 1 + "LAST-LINE\n".len() as u64);
}

#[test]
fn quiet_hides_the_command_output_but_not_its_errors() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    small()
        .args([
            "--quiet",
            "apply",
            "--cmd",
            "echo to-stdout; echo to-stderr >&2",
            "--task",
            "task-1",
            "--dir",
        ])
        .arg(d.path())
        .assert()
        .success()
        .stdout("")
        .stderr(predicate::str::contains("to-stderr"));
}

/// The entries `small apply` writes satisfy the rules v1.1.2 holds them to (as recorded in
/// the conformance corpus v1.1): the command file is named for the entry's instant and holds
/// the exact bytes, `command_sha256` is their digest, the display is the summarizer's, and the
/// marker is there exactly when the display is cut. Strict check then passes, fails once the
/// cache is gone, and passes again with the reviewed copy in `.small-command-proofs/`.
#[test]
fn applied_commands_round_trip_through_the_strict_proof_check() {
    use small_core::ops::formats;
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    // 253 bytes with a local URL before the cap and an https URL across it.
    let long_local = "echo relay-smoke   --target http://127.0.0.1:8787/relay/v1/hooks/flush?wait=true --retries 3 --backoff 250ms --jitter 0.2 --timeout 5s --log-level debug --policy-doc https://docs.example.org/relay/retry-policy/v2#backoff-and-jitter --owner platform-team";
    apply(d.path(), &["--cmd", long_local, "--task", "task-1"]).success();
    let failing = format!(
        "sh -c 'echo relay retry failed >&2; exit 3' # {}",
        "policy-document-reference ".repeat(7)
    );
    apply(d.path(), &["--cmd", &failing, "--task", "task-1"]).code(3);
    apply(
        d.path(),
        &["--cmd", "echo short", "--task", "task-1", "--dry-run"],
    )
    .success();
    let entries = progress_entries(d.path());
    let applied = &entries[entries.len() - 3..];
    for (e, cmd) in applied
        .iter()
        .zip([long_local, failing.as_str(), "echo short"])
    {
        let r = e["command_ref"].as_str().unwrap();
        let t =
            small_core::ops::formats::timestamp::parse(e["timestamp"].as_str().unwrap()).unwrap();
        assert!(r.ends_with(&formats::proof_file_name(t)), "{r}");
        let bytes = std::fs::read(d.path().join(r)).unwrap();
        assert_eq!(bytes, cmd.as_bytes());
        assert_eq!(
            e["command_sha256"],
            hex::encode(Sha256::digest(&bytes)).as_str()
        );
        let display = formats::summarize(cmd.as_bytes());
        assert_eq!(e["command_summary"], display.as_str());
        assert_eq!(e["command"], display.as_str());
        assert!(display.len() <= formats::SUMMARY_CAP);
        assert_eq!(
            e.get("command_summary_version").is_some(),
            formats::needs_marker(cmd.as_bytes()),
            "{cmd}"
        );
    }
    assert!(applied[0]["command_summary"]
        .as_str()
        .unwrap()
        .ends_with("--policy-doc ..."));
    assert_eq!(applied[0]["command_summary_version"], 2);
    assert_eq!(applied[1]["command_summary_version"], 2);
    assert_eq!(applied[1]["evidence"]["outcome"], "failed");
    assert_eq!(applied[2]["status"], "pending");
    assert_eq!(applied[2]["notes"], "apply --dry-run (cmd: \"echo short\")");
    assert_check_strict(d.path());
    // A fresh checkout: no cache, so the marked entries lack their proof.
    let cache = d.path().join(".small-cache");
    let saved = d.path().join("saved-cache");
    std::fs::rename(&cache, &saved).unwrap();
    let out = small()
        .args(["check", "--strict", "--dir"])
        .arg(d.path())
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(text.contains("error[PROOF]"), "{text}");
    assert!(
        !text.contains("platform-team"),
        "no command bytes past the cap: {text}"
    );
    // The reviewed copies under .small-command-proofs/ prove them.
    for e in &applied[..2] {
        let r = e["command_ref"].as_str().unwrap();
        let from = saved.join(r.strip_prefix(".small-cache/").unwrap());
        let to = d.path().join(formats::portable_path(r));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
    assert_check_strict(d.path());
}

/// A command holding a backtick-quoted local URL whose port is a source expression (as in a
/// JavaScript template) is local once its display is proven by the exact bytes, and so are the
/// notes of its dry run that wrap the display; without the proof both are external links.
#[test]
fn a_local_url_literal_in_a_command_passes_the_strict_check_with_its_proof() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let cmd = "node -e 'fetch(`http://127.0.0.1:${port}/health`)'";
    apply(d.path(), &["--cmd", cmd, "--task", "task-1", "--dry-run"]).success();
    let entries = progress_entries(d.path());
    let notes = entries.last().unwrap()["notes"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(notes.contains("${port}"), "{notes}");
    assert_check_strict(d.path());
    std::fs::rename(d.path().join(".small-cache"), d.path().join("saved")).unwrap();
    let out = small()
        .args(["check", "--strict", "--dir"])
        .arg(d.path())
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(text.contains("error[PROOF]"), "{text}");
    assert!(text.contains("error[LINK]"), "{text}");
}

#[test]
fn auto_checkpoint_of_a_task_with_acceptance_criteria_needs_acceptance_evidence() {
    let d = tempfile::tempdir().unwrap();
    init(d.path());
    let plan = d.path().join(".small/plan.small.yml");
    let text = read(&plan);
    let with = text.replacen(
        "    acceptance: []",
        "    acceptance:\n      - \"retries are bounded\"",
        1,
    );
    assert_ne!(with, text, "{text}");
    std::fs::write(&plan, with).unwrap();
    apply(
        d.path(),
        &[
            "--cmd",
            "touch ran.txt",
            "--task",
            "task-1",
            "--auto-checkpoint",
        ],
    )
    .code(2)
    .stderr(predicate::str::contains("--acceptance-evidence"));
    assert!(!d.path().join("ran.txt").exists());
    apply(
        d.path(),
        &[
            "--cmd",
            "touch ran.txt",
            "--task",
            "task-1",
            "--auto-checkpoint",
            "--acceptance-evidence",
            "bounded retries covered by the table tests",
        ],
    )
    .success();
    let e = progress_entries(d.path()).last().cloned().unwrap();
    assert_eq!(e["status"], "completed");
    assert_eq!(e["evidence"], "bounded retries covered by the table tests");
    assert_eq!(yaml_json(&plan)["tasks"][0]["status"], "completed");
    assert_check_strict(d.path());
}
