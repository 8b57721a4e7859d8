//! The staged check (`gates::check`) on workspaces made by `init`.

use crate::authoring::init::{init, InitRequest};
use crate::gates::check::*;
use crate::gates::schemas::SchemaSet;

fn fresh() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    init(&InitRequest {
        root: tmp.path(),
        intent: Some("Check the gates"),
        force: false,
        agents: None,
        tasks: &[],
    })
    .unwrap();
    tmp
}

fn check(root: &std::path::Path, strict: bool) -> CheckReport {
    let loc = crate::workspace::locate(Some(root)).unwrap();
    let schemas = SchemaSet::embedded();
    let opts = GateOptions {
        strict,
        threads: 1,
        ..GateOptions::default()
    };
    let loaded = load(loc, Some(&schemas), &opts);
    run_check(&loaded, &schemas, &opts)
}

#[test]
fn a_new_workspace_passes_every_stage() {
    let tmp = fresh();
    let r = check(tmp.path(), true);
    assert_eq!(r.exit_code, 0, "{:?}", r.diagnostics);
    for s in [&r.validate, &r.lint, &r.verify] {
        assert_eq!(s.status, StageStatus::Ok);
    }
}

#[test]
fn a_schema_error_fails_validate_and_skips_the_rest() {
    let tmp = fresh();
    let plan = tmp.path().join(".small/plan.small.yml");
    std::fs::write(
        &plan,
        "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks: 3\n",
    )
    .unwrap();
    let r = check(tmp.path(), false);
    assert_eq!(r.exit_code, 1);
    assert_eq!(r.validate.status, StageStatus::Failed);
    assert_eq!(r.lint.status, StageStatus::Skipped);
    assert_eq!(r.verify.status, StageStatus::Skipped);
    assert!(r
        .diagnostics
        .iter()
        .any(|(s, d)| *s == Stage::Validate && d.code == "schema"));
}

#[test]
fn strict_mode_adds_the_strict_rules() {
    let tmp = fresh();
    let handoff = tmp.path().join(".small/handoff.small.yml");
    let text = std::fs::read_to_string(&handoff).unwrap();
    // S4: a stray file under .small/ fails only in strict mode.
    std::fs::write(tmp.path().join(".small/notes.md"), "x").unwrap();
    assert_eq!(check(tmp.path(), false).exit_code, 0);
    let r = check(tmp.path(), true);
    assert_eq!(r.exit_code, 1);
    assert!(r.diagnostics.iter().any(|(_, d)| d.code == "S4"));
    assert_eq!(std::fs::read_to_string(&handoff).unwrap(), text);
}
