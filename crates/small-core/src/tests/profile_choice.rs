//! The profile is decided in one module: outside `ops::backend`, no source file of small-core
//! names a profile to choose by it, or asks which profile a workspace or a stored run holds.
//! The 2.0.0 halves of the run store and the archives may recognise their own snapshots and
//! manifests (to pass over others when they look for a copy of their own); choosing which
//! half runs is the back end's.

use std::path::Path;

use super::layers::{library_code, src};

/// What names a profile to choose by it.
const CHOICES: &[&str] = &[
    "Profile::V1",
    "Profile::V2",
    "ProfileName::V1",
    "ProfileName::V2",
    "holds_sessions(",
    "is_v2_snapshot(",
    "is_v2_manifest(",
    ".profile() ==",
    ".profile() !=",
];

/// Files allowed to name a choice: the back end, and the halves that recognise their own.
fn allowed(rel: &Path, choice: &str) -> bool {
    rel.starts_with("ops/backend")
        || (choice == "is_v2_snapshot(" && rel == Path::new("history/runs/v2.rs"))
        || (choice == "is_v2_manifest(" && rel == Path::new("history/archive/v2.rs"))
}

/// Every `(file, choice)` outside the allowed files, tests and comments left out, and how
/// many files were read.
fn choices_outside_the_back_end() -> (Vec<String>, usize) {
    let files = library_code();
    let mut found = Vec::new();
    for (rel, code) in &files {
        for line in code.lines().map(str::trim_start) {
            if line.starts_with("//") {
                continue;
            }
            for choice in CHOICES {
                if line.contains(choice) && !allowed(rel, choice) {
                    found.push(format!("{}: {line}", rel.display()));
                }
            }
        }
    }
    (found, files.len())
}

#[test]
fn only_the_back_end_chooses_by_profile() {
    let (found, scanned) = choices_outside_the_back_end();
    assert!(
        scanned > 150,
        "only {scanned} files scanned: is the scan broken?"
    );
    assert!(
        found.is_empty(),
        "a profile chosen outside ops::backend:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_back_end_itself_is_seen_choosing() {
    // The scan finds what it looks for: the back end's own choices are there to be found.
    let text = std::fs::read_to_string(src().join("ops/backend/mod.rs")).unwrap();
    assert!(CHOICES.iter().any(|c| text.contains(c)));
}
