//! `small validate` against the recorded verdicts of the reference CLI: for every case in
//! ../shared/conformance/cases, the exit code of `small validate` (fresh copy of the case,
//! cwd = the copy) must equal the recorded one, except where we deliberately do better
//! (`DELIBERATE` below; each names its reason, see docs/decisions/ and the conformance
//! README's list of improvements).

use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> Option<PathBuf> {
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/cases"
    ));
    small_testkit::conformance_path(p)
}

/// Cases where our exit code differs from the reference's on purpose: (case, our exit, why).
const DELIBERATE: &[(&str, i32, &str)] = &[
    // 7. No workspace to check is a usage/system error (2), not an invalid workspace.
    ("missing-small-dir", 2, "no .small/ directory: exit 2"),
    ("small-dir-is-file", 2, ".small is not a directory: exit 2"),
    // 2. `format` is asserted.
    ("progress-link-not-uri", 1, "link is not a URI"),
    ("handoff-link-not-uri", 1, "links[].url is not a URI"),
    (
        "handoff-run-created-at-not-datetime",
        1,
        "run.created_at is not an RFC 3339 date-time",
    ),
    (
        "timestamp-not-rfc3339",
        1,
        "timestamp is not an RFC 3339 date-time",
    ),
    (
        "timestamp-fraction-comma",
        1,
        "a comma fraction is not RFC 3339",
    ),
    // 5. Several YAML documents in one file are an error.
    (
        "yaml-multiple-documents",
        1,
        "second YAML document in plan.small.yml",
    ),
    // 7/8. Bad workspace metadata makes the workspace invalid (validate checks
    // workspace.small.yml when it exists).
    ("workspace-empty-file", 1, "workspace.small.yml is empty"),
    (
        "workspace-kind-invalid",
        1,
        "workspace kind is not repo-root or examples",
    ),
    (
        "workspace-top-level-list",
        1,
        "workspace.small.yml is a list",
    ),
    (
        "workspace-run-not-mapping",
        1,
        "workspace run is not a mapping",
    ),
    (
        "workspace-wrong-version",
        1,
        "workspace small_version is not \"1.0.0\"",
    ),
    (
        "workspace-syntax-error",
        1,
        "workspace.small.yml is not valid YAML",
    ),
    (
        "workspace-run-replay-id-invalid",
        1,
        "workspace run.replay_id is not 64 hex digits",
    ),
    // 9. Schemas never come from a spec/ folder found by walking up.
    (
        "dev-mode-schema-override",
        1,
        "the workspace's own relaxed schemas are ignored; plan.tasks is empty",
    ),
    (
        "dev-mode-schema-partial",
        0,
        "the workspace's incomplete schema folder is ignored",
    ),
];

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "expected.json" {
            continue;
        }
        let src = entry.path();
        let dst = to.join(&name);
        let ty = entry.file_type().unwrap();
        if ty.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

#[test]
fn validate_exit_codes_match_the_reference_or_our_recorded_decisions() {
    let Some(cases) = corpus() else { return };
    let mut names: Vec<_> = std::fs::read_dir(&cases)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("expected.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no cases found in {}", cases.display());

    let mut failures = Vec::new();
    let mut deliberate_seen = 0;
    for name in &names {
        let case = cases.join(name);
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("expected.json")).unwrap())
                .unwrap();
        let Some(reference_exit) = expected["runs"]["validate"]["exit"].as_i64() else {
            continue;
        };
        let (want, why) = match DELIBERATE.iter().find(|(n, _, _)| n == name) {
            Some((_, code, why)) => {
                deliberate_seen += 1;
                (*code, Some(*why))
            }
            None => (reference_exit as i32, None),
        };

        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("case");
        copy_tree(&case, &work);
        let out = Command::new(env!("CARGO_BIN_EXE_small"))
            .arg("validate")
            .current_dir(&work)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let got = out.status.code().unwrap_or(-1);
        if got != want {
            failures.push(format!(
                "{name}: exit {got}, want {want} (reference {reference_exit}{})\n{}",
                why.map(|w| format!("; deliberate: {w}"))
                    .unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        if got == 101 || String::from_utf8_lossy(&out.stderr).contains("panicked") {
            failures.push(format!("{name}: the binary panicked"));
        }
    }
    eprintln!(
        "{} cases checked, {deliberate_seen} with a deliberate difference",
        names.len()
    );
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
