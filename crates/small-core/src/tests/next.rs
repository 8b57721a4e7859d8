//! The next-task rule (`spec::next`) on the project state's tasks.

use crate::spec::next::counts_as_task;

#[test]
fn a_2_0_0_task_is_named_by_its_alias() {
    let imported = crate::state::Task {
        id: "task_0a1b".into(),
        alias: "meta/init".into(),
        title: String::new(),
        description: String::new(),
        status: "completed".into(),
        revision: 1,
        steps: Vec::new(),
        acceptance: Vec::new(),
        dependencies: Vec::new(),
        evidence: Vec::new(),
        attestation_count: 0,
        source: None,
    };
    assert!(!counts_as_task(&imported));
}
