//! `small lint` and `small verify` on small, representative workspaces: what a user sees.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_small");

const INTENT: &str = "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"Ship it\"\nscope:\n  include: [\"src/**\"]\n  exclude: []\nsuccess_criteria: [\"works\"]\n";
const CONSTRAINTS: &str =
    "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"c1\"\n    rule: \"Be kind\"\n    severity: \"warn\"\n";
const PLAN: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"a\"\n    title: \"First\"\n    status: \"completed\"\n  - id: \"b\"\n    title: \"Second\"\n    status: \"pending\"\n    dependencies: [\"a\"]\n";
const PROGRESS: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"a\"\n    timestamp: \"2026-01-01T10:00:00.000001Z\"\n    status: \"completed\"\n    evidence: \"tests pass\"\n";
const HANDOFF: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"Next: b\"\nresume:\n  current_task_id: \"b\"\n  next_steps: [\"do b\"]\nlinks: []\nreplayId:\n  value: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n  source: \"auto\"\n";
const WORKSPACE: &str = "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\n";

fn workspace(overrides: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join(".small");
    std::fs::create_dir(&small).unwrap();
    for (name, text) in [
        ("intent.small.yml", INTENT),
        ("constraints.small.yml", CONSTRAINTS),
        ("plan.small.yml", PLAN),
        ("progress.small.yml", PROGRESS),
        ("handoff.small.yml", HANDOFF),
        ("workspace.small.yml", WORKSPACE),
    ] {
        let text = overrides
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(text, |(_, t)| *t);
        if !text.is_empty() {
            std::fs::write(small.join(name), text).unwrap();
        }
    }
    dir
}

fn small(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn valid_workspace_passes_every_gate() {
    let ws = workspace(&[]);
    for args in [
        &["lint"][..],
        &["lint", "--strict"],
        &["verify"],
        &["verify", "--strict"],
        &["check", "--strict"],
    ] {
        let (code, out, err) = small(ws.path(), args);
        assert_eq!(code, 0, "{args:?}\n{out}\n{err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
    let (_, out, _) = small(ws.path(), &["lint"]);
    assert_eq!(out, "All invariants satisfied\n");
}

#[test]
fn s1_points_at_the_plan_task_with_a_fix() {
    let plan = PLAN.replace("status: \"pending\"", "status: \"completed\"");
    let ws = workspace(&[("plan.small.yml", &plan)]);
    let (code, out, err) = small(ws.path(), &["lint", "--strict"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("error[S1]: task \"b\" is completed but it has no progress entry"),
        "{err}"
    );
    assert!(err.contains("--> .small/plan.small.yml:7:9"), "{err}");
    assert!(
        err.contains("help: record evidence: small progress add --task b"),
        "{err}"
    );
    assert!(err.contains("lint failed: 1 error"), "{err}");
    // Without --strict lint passes, but verify's evidence gate does not.
    assert_eq!(small(ws.path(), &["lint"]).0, 0);
    let (code, _, err) = small(ws.path(), &["verify"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[GATE]"), "{err}");
}

#[test]
fn secrets_warn_by_default_fail_in_strict_and_are_never_printed() {
    let key = "sk_live_51HqLyjWDarjtT1zdp7dc9xQ4";
    let progress = PROGRESS.replace("tests pass", &format!("used key {key} in the sandbox"));
    let ws = workspace(&[("progress.small.yml", &progress)]);
    let (code, out, err) = small(ws.path(), &["lint"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning[INV1]: possible secret at entries[0].evidence: Stripe secret key"),
        "{err}"
    );
    assert!(out.contains("1 warning"), "{out}");
    let (code, _, err) = small(ws.path(), &["lint", "--strict"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[INV1]"), "{err}");
    let shown: String = err
        .lines()
        .filter(|l| !l.contains("evidence: \"used key"))
        .collect();
    assert!(
        !shown.contains("51HqLyj"),
        "the secret leaked outside the source line: {err}"
    );
}

#[test]
fn ext_directory_is_allowed_other_files_are_not() {
    let ws = workspace(&[]);
    std::fs::create_dir_all(ws.path().join(".small/ext/tool")).unwrap();
    std::fs::write(ws.path().join(".small/ext/tool/state.yml"), "x: 1\n").unwrap();
    assert_eq!(small(ws.path(), &["lint", "--strict"]).0, 0);
    std::fs::write(ws.path().join(".small/notes.md"), "hi\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".small/runs")).unwrap();
    let (code, _, err) = small(ws.path(), &["lint", "--strict"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error[S4]: unexpected file .small/notes.md under .small/"),
        "{err}"
    );
    assert!(
        err.contains("error[S4]: unexpected directory .small/runs/"),
        "{err}"
    );
    assert!(err.contains("move it to .small-runs/"), "{err}");
}

#[test]
fn timestamps_quote_what_was_written() {
    let progress = format!(
        "{PROGRESS}  - task_id: \"a\"\n    timestamp: \"2026-01-01T09:00:00.000000Z\"\n    evidence: \"x\"\n  - task_id: \"a\"\n    timestamp: \"2026-01-02 09:00:00.5\"\n    evidence: \"x\"\n"
    );
    let ws = workspace(&[("progress.small.yml", &progress)]);
    let (code, _, err) = small(ws.path(), &["lint"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "entries[1].timestamp \"2026-01-01T09:00:00.000000Z\" is not later than entries[0]'s"
        ),
        "{err}"
    );
    assert!(
        err.contains("date and time must be separated by `T`"),
        "{err}"
    );
    assert!(err.contains("--> .small/progress.small.yml:12:16"), "{err}");
}

#[test]
fn duplicate_ids_and_unquoted_version() {
    let plan = PLAN
        .replace("id: \"b\"", "id: \"a\"")
        .replace("small_version: \"1.0.0\"", "small_version: 1.0.0");
    let ws = workspace(&[("plan.small.yml", &plan)]);
    let (code, _, err) = small(ws.path(), &["lint"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error[DUP]: duplicate id \"a\": tasks[1] repeats the id of tasks[0]"),
        "{err}"
    );
    assert!(
        err.contains("warning[FMT]: small_version is unquoted"),
        "{err}"
    );
    let (code, _, err) = small(ws.path(), &["lint", "--format-strict"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[FMT]"), "{err}");
}

#[test]
fn no_workspace_is_exit_2_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["lint", "verify", "check", "validate"] {
        let (code, _, err) = small(dir.path(), &[cmd]);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(err.contains("no SMALL workspace"), "{cmd}: {err}");
    }
    let (code, out, _) = small(dir.path(), &["check", "--json"]);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["validate"]["status"], "error");
    assert_eq!(v["lint"]["status"], "skipped");
}

#[test]
fn verify_checks_workspace_metadata_and_scope() {
    let ws = workspace(&[(
        "workspace.small.yml",
        "small_version: \"1.0.1\"\nkind: \"examples\"\n",
    )]);
    let (code, _, err) = small(ws.path(), &["verify"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[WS]"), "{err}");
    assert!(err.contains("--workspace"), "{err}");
    let (code, _, err) = small(ws.path(), &["verify", "--workspace", "any", "--ci"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.lines().all(|l| l.starts_with(".small/")),
        "compact lines only: {err}"
    );
    let ws = workspace(&[]);
    assert_eq!(
        small(ws.path(), &["verify", "--workspace", "examples"]).0,
        1
    );
    assert_eq!(small(ws.path(), &["verify", "--workspace", "nope"]).0, 2);
}

#[test]
fn no_workspace_is_exit_2_in_json_too() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["lint", "verify", "validate"] {
        let (code, out, _) = small(dir.path(), &[cmd, "--json"]);
        assert_eq!(code, 2, "{cmd}: {out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["exit_code"], 2, "{cmd}: {out}");
        if cmd != "validate" {
            assert_eq!(v["status"], "error", "{cmd}: {out}");
            assert_eq!(v["diagnostics"][0]["code"], "no-workspace", "{cmd}: {out}");
            let line = v["errors"][0].as_str().unwrap_or_default();
            assert!(line.contains("error[no-workspace]"), "{cmd}: {out}");
        }
    }
}

#[test]
fn many_findings_in_a_long_log_each_show_their_own_line() {
    // 3 000 entries naming tasks that are not in the plan (two ids, each close to a plan
    // task), one diagnostic each: every finding must quote its own line,
    // and the suggestion must not depend on how often an id was seen.
    // The handoff's run: only its entries must name plan tasks.
    const RUN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let mut progress = String::from("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n");
    progress.push_str(
        "  - task_id: \"a\"\n    timestamp: \"2026-01-01T10:00:00.000001Z\"\n    status: \"completed\"\n    evidence: \"tests pass\"\n",
    );
    for i in 0..3000 {
        let id = if i % 2 == 0 { "aa" } else { "bb" };
        progress.push_str(&format!(
            "  - task_id: \"{id}\"\n    timestamp: \"2026-01-01T10:00:01.{i:06}Z\"\n    status: \"in_progress\"\n    evidence: \"entry {i}\"\n    replayId: \"{RUN}\"\n"
        ));
    }
    let ws = workspace(&[("progress.small.yml", &progress)]);
    let (code, _, err) = small(ws.path(), &["lint", "--strict", "--no-cache"]);
    assert_eq!(code, 1, "{err}");
    let findings: Vec<&str> = err.split("\n\n").filter(|b| b.contains("[S2]")).collect();
    assert_eq!(findings.len(), 3000, "{}", &err[..err.len().min(2000)]);
    for (i, f) in findings.iter().enumerate() {
        let (id, close) = if i % 2 == 0 { ("aa", "a") } else { ("bb", "b") };
        let line = 8 + 5 * i;
        assert!(
            f.contains(&format!("progress.small.yml:{line}:")),
            "{i}: {f}"
        );
        assert!(
            f.contains(&format!("{line} |   - task_id: \"{id}\"")),
            "{i}: {f}"
        );
        assert!(f.contains(&format!("did you mean {close}?")), "{i}: {f}");
    }
}

/// Progress may link to local hosts over `http://`, named exactly: a host that only begins
/// like one, or a user part in front of one, is an external link (`LINK`, an error in strict).
#[test]
fn progress_links_to_lookalike_local_hosts_are_external() {
    let progress = |url: &str| {
        format!("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"a\"\n    timestamp: \"2026-01-01T10:00:00.000001Z\"\n    status: \"completed\"\n    evidence: \"served at {url}\"\n")
    };
    for url in [
        "http://localhost:8080/x",
        "http://[::1]:3000",
        "http://0.0.0.0",
    ] {
        let text = progress(url);
        let ws = workspace(&[("progress.small.yml", &text)]);
        let (code, _, err) = small(ws.path(), &["lint", "--strict"]);
        assert_eq!(code, 0, "{url}: {err}");
    }
    for url in [
        "http://localhost.evil.example/x",
        "http://127.0.0.1@evil.example/x",
        "http://127.0.0.12:8080",
        "http://localhost:port/x",
    ] {
        let text = progress(url);
        let ws = workspace(&[("progress.small.yml", &text)]);
        let (code, _, err) = small(ws.path(), &["lint", "--strict"]);
        assert_eq!(code, 1, "{url}: {err}");
        assert!(err.contains("LINK"), "{url}: {err}");
    }
}
