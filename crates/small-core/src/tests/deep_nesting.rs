//! Deep nesting through every stage, on a thread with a small (2 MiB) stack like a test or
//! server worker thread: a plan task carrying a 1000-level flow list loads, validates, lints
//! and verifies; canonical JSON reads and writes 1000 levels; 100 000 levels are a clear
//! error everywhere, never a stack overflow.

use crate::gates::check::{self, GateOptions};
use crate::gates::schemas::SchemaSet;
use crate::json::canonical;
use crate::workspace::locate;

const SMALL_STACK: usize = 2 << 20;

fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(SMALL_STACK)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

fn nested(n: usize) -> String {
    format!("{}1{}", "[".repeat(n), "]".repeat(n))
}

fn workspace(levels: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join(".small");
    std::fs::create_dir(&s).unwrap();
    let files = [
        ("intent.small.yml", "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"x\"\nscope:\n  include: []\n  exclude: []\nsuccess_criteria: []\n".to_string()),
        ("constraints.small.yml", "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"c1\"\n    rule: \"r\"\n    severity: \"warn\"\n".to_string()),
        ("plan.small.yml", format!("small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"a\"\n    title: \"t\"\n    status: \"completed\"\n    data: {}\n", nested(levels))),
        ("progress.small.yml", format!("small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"a\"\n    timestamp: \"2026-01-01T10:00:00.000001Z\"\n    evidence: \"ok\"\n    detail: {}\n", nested(levels))),
        ("handoff.small.yml", "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"s\"\nresume:\n  current_task_id: null\n  next_steps: []\nlinks: []\nreplayId:\n  value: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n  source: \"auto\"\n".to_string()),
        ("workspace.small.yml", "small_version: \"1.0.0\"\nowner: \"agent\"\nkind: \"repo-root\"\n".to_string()),
    ];
    for (name, text) in files {
        std::fs::write(s.join(name), text).unwrap();
    }
    dir
}

/// (validate, lint, verify) diagnostics as `code: message`.
fn gates(dir: std::path::PathBuf) -> Vec<String> {
    on_small_stack(move || {
        let opts = GateOptions {
            strict: true,
            ..Default::default()
        };
        let schemas = SchemaSet::embedded();
        let loaded = check::load(locate(Some(&dir)).unwrap(), Some(&schemas), &opts);
        let mut all = check::artifact_load_diagnostics(&loaded.ws);
        all.extend(check::validate_stage(&loaded, &schemas));
        all.extend(check::lint_stage(&loaded, &opts).unwrap());
        all.extend(check::verify_stage(&loaded, &schemas, &opts).unwrap());
        let out = all
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{}: {}", d.code, d.message))
            .collect();
        std::mem::forget(loaded);
        out
    })
}

#[test]
fn a_thousand_levels_pass_every_gate() {
    let ws = workspace(1000);
    let errors = gates(ws.path().to_path_buf());
    // The progress entry's extra field is a schema error (entries have a closed schema);
    // nothing else, and no stage overflowed its stack reading it.
    assert_eq!(
        errors,
        vec!["schema: unknown field `detail` in `entries[0]`".to_string()]
    );
}

#[test]
fn a_hundred_thousand_levels_are_a_clear_error() {
    let ws = workspace(100_000);
    let errors = gates(ws.path().to_path_buf());
    assert!(!errors.is_empty());
    assert!(
        errors
            .iter()
            .any(|e| e.contains("nesting is deeper than the limit")),
        "{errors:?}"
    );
}

#[test]
fn canonical_json_reads_and_writes_a_thousand_levels() {
    let text = on_small_stack(|| {
        let v = canonical::parse(nested(1000).as_bytes()).unwrap();
        let s = canonical::canonical_string(&v);
        std::mem::forget(v);
        s
    });
    assert_eq!(text, nested(1000));
    let err = on_small_stack(|| canonical::parse(nested(100_000).as_bytes()).map(|_| ()));
    assert!(err.unwrap_err().to_string().contains("deep"));
}
