//! The profile is decided in one module: outside `ops::backend`, no source file of small-core
//! names a profile to choose by it, or asks which profile a workspace, a stored run or an
//! archive holds.

use super::layers::{library_code, src};

/// What names a profile to choose by it.
const CHOICES: &[&str] = &[
    "Profile::V1",
    "Profile::V2",
    "ProfileName::V1",
    "ProfileName::V2",
    "holds_sessions(",
    "is_v2",
    "profile_v2",
    "PROFILE_VERSION ==",
    "== PROFILE_VERSION",
    "== crate::v2::PROFILE_VERSION",
    ".profile() ==",
    ".profile() !=",
];

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
                if line.contains(choice) && !rel.starts_with("ops/backend") {
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
