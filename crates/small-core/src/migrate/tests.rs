use super::*;

fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        let path = dir.path().join(".small").join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir
}

const PLAN: &str = "small_version: \"1.0.0\"\nowner: agent\ntasks:\n  - id: a\n    title: A\n    status: completed\n";
const PROGRESS: &str = "small_version: \"1.0.0\"\nowner: agent\nentries:\n  - task_id: a\n    status: completed\n    timestamp: \"2026-01-01T00:00:00Z\"\n    n: 3\n";

#[test]
fn ids_derive_from_the_digest_and_the_namespace() {
    let ws = workspace(&[("plan.small.yml", PLAN), ("progress.small.yml", PROGRESS)]);
    let a = preview(ws.path(), "ns/a").expect("preview");
    let b = preview(ws.path(), "ns/b").expect("preview");
    assert_eq!(a.expected_input_digest, b.expected_input_digest);
    assert_ne!(a.import_id, b.import_id);
    assert_eq!(a.import_id[7..], a.project_id[8..]);
    assert_eq!(a.tasks.as_ref().map(Vec::len), Some(1));
    assert_eq!(Plan::from_json(&a.to_json()).expect("round trip"), a);
}

#[test]
fn preview_refuses_a_fractional_number_that_apply_would_refuse() {
    let progress = PROGRESS.replace("n: 3", "n: 0.5");
    let ws = workspace(&[("plan.small.yml", PLAN), ("progress.small.yml", &progress)]);
    let err = preview(ws.path(), "ns").expect_err("refused");
    assert!(
        err.to_string().contains("non-integer numeric value 0.5"),
        "{err}"
    );
}

#[test]
fn apply_swaps_archives_and_is_idempotent() {
    let ws = workspace(&[("plan.small.yml", PLAN), ("progress.small.yml", PROGRESS)]);
    let plan = preview(ws.path(), "ns").expect("preview");
    let out = apply(ws.path(), &plan, &plan.expected_input_digest).expect("apply");
    assert!(!out.idempotent);
    assert_eq!(out.event_count, 5);
    let small = ws.path().join(".small");
    assert!(small.join("profile.json").is_file());
    let original = small
        .join("imports/v1")
        .join(&plan.import_id)
        .join("originals/plan.small.yml");
    assert_eq!(std::fs::read_to_string(original).expect("original"), PLAN);
    assert!(out
        .backup_path
        .expect("backup")
        .join("plan.small.yml")
        .is_file());
    let again = apply(ws.path(), &plan, &plan.expected_input_digest).expect("again");
    assert!(again.idempotent);
    assert_eq!(
        (again.frontier, again.event_count),
        (out.frontier, out.event_count)
    );
}

#[test]
fn apply_refuses_a_changed_input_and_a_wrong_expectation() {
    let ws = workspace(&[("plan.small.yml", PLAN)]);
    let plan = preview(ws.path(), "ns").expect("preview");
    assert!(matches!(
        apply(ws.path(), &plan, "0000"),
        Err(MigrateError::Refused(_))
    ));
    std::fs::write(ws.path().join(".small/plan.small.yml"), "tasks: []\n").expect("edit");
    assert!(matches!(
        apply(ws.path(), &plan, &plan.expected_input_digest),
        Err(MigrateError::Stale { .. })
    ));
    assert!(ws.path().join(".small/plan.small.yml").is_file());
}

#[test]
fn recover_finishes_a_swap_interrupted_between_the_renames() {
    let ws = workspace(&[("plan.small.yml", PLAN)]);
    let plan = preview(ws.path(), "ns").expect("preview");
    let reference = workspace(&[("plan.small.yml", PLAN)]);
    apply(reference.path(), &plan, &plan.expected_input_digest).expect("apply");
    // Interrupted after the v1 tree was moved aside: the candidate is complete.
    let tree = read_legacy_tree(ws.path()).expect("tree");
    let mig = migrations_dir(ws.path()).join(&plan.import_id);
    write_candidate(&mig.join("candidate/.small"), &plan, &tree.contents).expect("write");
    write_journal(&mig, &plan.import_id, "prepared").expect("journal");
    std::fs::rename(ws.path().join(".small"), mig.join("legacy.small")).expect("move");
    let r = recover(ws.path()).expect("recover");
    assert_eq!(r.completed, vec![plan.import_id.clone()]);
    assert_eq!(current_import(ws.path()), Some(plan.import_id.clone()));
    let again = apply(ws.path(), &plan, &plan.expected_input_digest).expect("again");
    assert!(again.idempotent);
}

#[test]
fn an_apply_refused_while_building_leaves_no_candidate() {
    let ws = workspace(&[
        ("plan.small.yml", PLAN),
        (
            "progress.small.yml",
            "entries:\n  - task_id: a\n    status: completed\n    score: 0.5\n",
        ),
    ]);
    // Preview refuses it; a plan made by hand for the same inputs is refused by apply too.
    assert!(matches!(
        preview(ws.path(), "ns"),
        Err(MigrateError::Refused(_))
    ));
    let tree = read_legacy_tree(ws.path()).expect("tree");
    let plan = plan_for(&tree, "ns").expect("plan");
    let err = apply(ws.path(), &plan, &plan.expected_input_digest).unwrap_err();
    assert!(err.to_string().contains("non-integer"), "{err}");
    let mig = migrations_dir(ws.path()).join(&plan.import_id);
    assert!(!mig.join("candidate").exists());
    assert!(ws.path().join(".small/progress.small.yml").is_file());
}
