//! `small agents apply|check|print` on real files: content outside the block never changes.

use crate::tools_support;
use tools_support::{read, small};

const BEGIN: &str = "<!-- BEGIN SMALL HARNESS v1.0.0 -->";
const END: &str = "<!-- END SMALL HARNESS v1.0.0 -->";

fn canonical() -> String {
    let out = small().args(["agents", "print"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// (before BEGIN, after END) of a file with exactly one block.
fn outside(text: &str) -> (String, String) {
    let b = text.find(BEGIN).expect("has BEGIN");
    let e = text.find(END).expect("has END") + END.len();
    assert_eq!(text.matches(BEGIN).count(), 1, "exactly one block:\n{text}");
    (text[..b].to_string(), text[e..].to_string())
}

fn apply(dir: &std::path::Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    small()
        .args(["agents", "apply", "--dir"])
        .arg(dir)
        .args(extra)
        .assert()
}

#[test]
fn print_default_is_the_full_block_and_without_markers_is_the_body() {
    let block = canonical();
    assert!(block.starts_with(BEGIN) && block.trim_end().ends_with(END));
    assert!(block.ends_with('\n'));
    let body = small()
        .args(["agents", "print", "--with-markers=false"])
        .output()
        .unwrap();
    let body = String::from_utf8(body.stdout).unwrap();
    assert!(!body.contains("SMALL HARNESS v"));
    assert!(block.contains(&body));
    let plain = small()
        .args(["agents", "print", "--format", "plain"])
        .output()
        .unwrap();
    let plain = String::from_utf8(plain.stdout).unwrap();
    assert!(!plain.contains("**") && !plain.contains('`') && !plain.contains("\n#"));
    for section in ["Ownership Rules", "Artifact Rules", "Strict Mode Rules"] {
        assert!(block.contains(section), "block names the {section} section");
    }
}

#[test]
fn apply_creates_a_missing_file_with_the_canonical_block() {
    let d = tempfile::tempdir().unwrap();
    apply(d.path(), &[])
        .success()
        .stdout(predicates::str::contains("Created AGENTS.md"));
    assert_eq!(read(d.path().join("AGENTS.md")), canonical());
    small()
        .args(["agents", "check", "--strict", "--dir"])
        .arg(d.path())
        .assert()
        .success();
}

#[test]
fn apply_replaces_the_block_in_place_keeping_every_outside_byte() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("AGENTS.md");
    let cases = [
        format!("# Mine\n\n\n{BEGIN}\nOLD-BLOCK-TEXT stuff\n{END}\n\n\n  trailing   \n\n"),
        format!("{BEGIN}\nOLD-BLOCK-TEXT\n{END}"),
        format!("no newline before{BEGIN}OLD-BLOCK-TEXT{END}no newline after"),
        format!("# Windows\r\n\r\n{BEGIN}\r\nOLD-BLOCK-TEXT\r\n{END}\r\nfooter\r\n"),
        "top\n<!-- BEGIN SMALL HARNESS v0.9.0 -->\nOLD-BLOCK-TEXT\n<!-- END SMALL HARNESS v0.9.0 -->\nbottom\n".to_string(),
    ];
    for original in cases {
        std::fs::write(&p, &original).unwrap();
        let (before, after) = {
            let b = original.find("<!-- BEGIN").unwrap();
            let e = original.find("<!-- END").unwrap();
            let e = e + original[e..].find("-->").unwrap() + 3;
            (original[..b].to_string(), original[e..].to_string())
        };
        apply(d.path(), &[])
            .success()
            .stdout(predicates::str::contains(
                "Replaced the SMALL harness block",
            ));
        let now = read(&p);
        assert_eq!(
            outside(&now),
            (before, after),
            "outside bytes kept for {original:?}"
        );
        assert!(!now.contains("OLD-BLOCK-TEXT"), "old block content gone");
        // Idempotent: a second run changes nothing.
        apply(d.path(), &[])
            .success()
            .stdout(predicates::str::contains("nothing to change"));
        assert_eq!(read(&p), now);
    }
}

#[test]
fn apply_refuses_a_file_without_block_when_no_mode_is_given() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("AGENTS.md");
    std::fs::write(&p, "# My rules\n").unwrap();
    apply(d.path(), &[])
        .code(1)
        .stderr(predicates::str::contains("--agents-mode append"));
    assert_eq!(read(&p), "# My rules\n");
}

#[test]
fn append_and_prepend_keep_the_existing_content_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("AGENTS.md");
    for original in [
        "# Mine",
        "# Mine\n",
        "# Mine\n\n\n",
        "  indented\ttabs  \n- list\n",
        "crlf\r\nfile\r\n",
    ] {
        std::fs::write(&p, original).unwrap();
        apply(d.path(), &["--agents-mode", "append"])
            .success()
            .stdout(predicates::str::contains("Appended"));
        let now = read(&p);
        assert!(
            now.starts_with(original),
            "append keeps a byte-exact prefix: {now:?}"
        );
        let (before, after) = outside(&now);
        assert!(before.starts_with(original));
        assert!(after.trim().is_empty());

        std::fs::write(&p, original).unwrap();
        apply(d.path(), &["--agents-mode", "PREPEND"])
            .success()
            .stdout(predicates::str::contains("Prepended"));
        let now = read(&p);
        assert!(
            now.ends_with(original),
            "prepend keeps a byte-exact suffix: {now:?}"
        );
        assert!(now.starts_with(BEGIN));
        small()
            .args(["agents", "check", "--strict", "--dir"])
            .arg(d.path())
            .assert()
            .success();
    }
}

#[test]
fn append_to_a_file_with_a_block_replaces_it_in_place() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("AGENTS.md");
    let original = format!("head\n{BEGIN}\nx\n{END}\ntail\n");
    std::fs::write(&p, &original).unwrap();
    apply(d.path(), &["--agents-mode", "prepend"]).success();
    let now = read(&p);
    assert_eq!(
        outside(&now),
        ("head\n".to_string(), "\ntail\n".to_string())
    );
}

#[test]
fn overwrite_force_and_short_force_replace_the_whole_file() {
    for flag in ["--overwrite-agents", "--force", "-f"] {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("AGENTS.md");
        std::fs::write(&p, "# gone\n").unwrap();
        apply(d.path(), &[flag])
            .success()
            .stdout(predicates::str::contains("Overwrote"));
        assert_eq!(read(&p), canonical(), "{flag}");
    }
}

#[test]
fn mode_and_overwrite_are_mutually_exclusive() {
    let d = tempfile::tempdir().unwrap();
    apply(d.path(), &["--force", "--agents-mode", "append"]).code(2);
    apply(
        d.path(),
        &["--overwrite-agents", "--agents-mode", "prepend"],
    )
    .code(2);
    apply(d.path(), &["--agents-mode", "sideways"]).code(2);
    assert!(!d.path().join("AGENTS.md").exists());
}

#[test]
fn dry_run_and_print_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("AGENTS.md");
    apply(d.path(), &["--dry-run"])
        .success()
        .stdout(predicates::str::contains("Would create"));
    assert!(!p.exists());
    std::fs::write(&p, "# mine\n").unwrap();
    apply(d.path(), &["--dry-run", "--agents-mode", "append"])
        .success()
        .stdout(predicates::str::contains(
            "+<!-- BEGIN SMALL HARNESS v1.0.0 -->",
        ));
    assert_eq!(read(&p), "# mine\n");
    let out = small()
        .args([
            "agents",
            "apply",
            "--print",
            "--agents-mode",
            "append",
            "--dir",
        ])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(printed.starts_with("# mine\n") && printed.contains(BEGIN));
    assert_eq!(read(&p), "# mine\n");
}

#[test]
fn malformed_markers_are_errors_and_nothing_is_written() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("AGENTS.md");
    let cases = [
        (
            format!("{BEGIN}\na\n{END}\n{BEGIN}\nb\n{END}\n"),
            "more than one",
        ),
        (format!("{BEGIN}\nno end\n"), "no END marker"),
        (format!("{END}\nno begin\n"), "no BEGIN marker"),
        (format!("{END}\n{BEGIN}\n"), "comes before"),
        (
            format!("{BEGIN}\nx\n<!-- END SMALL HARNESS v0.9.0 -->\n"),
            "disagree on the version",
        ),
    ];
    for (text, why) in cases {
        std::fs::write(&p, &text).unwrap();
        for extra in [
            &[][..],
            &["--agents-mode", "append"][..],
            &["--agents-mode", "prepend"][..],
        ] {
            apply(d.path(), extra)
                .code(1)
                .stderr(predicates::str::contains(why));
            assert_eq!(read(&p), text);
        }
        small()
            .args(["agents", "check", "--dir"])
            .arg(d.path())
            .assert()
            .code(1)
            .stderr(predicates::str::contains(why));
        // An explicit overwrite repairs the file.
        apply(d.path(), &["--force"]).success();
        assert_eq!(read(&p), canonical());
    }
}

#[test]
fn custom_file_is_used_and_agents_md_left_alone() {
    let d = tempfile::tempdir().unwrap();
    apply(d.path(), &["--file", "GOVERNANCE.md"])
        .success()
        .stdout(predicates::str::contains("GOVERNANCE.md"));
    assert!(d.path().join("GOVERNANCE.md").exists());
    assert!(!d.path().join("AGENTS.md").exists());
    small()
        .args([
            "agents",
            "check",
            "--strict",
            "--file",
            "GOVERNANCE.md",
            "--dir",
        ])
        .arg(d.path())
        .assert()
        .success();
}

#[test]
fn apply_never_touches_the_small_directory() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join(".small")).unwrap();
    std::fs::write(d.path().join(".small/marker.txt"), "x").unwrap();
    apply(d.path(), &[]).success();
    let names: Vec<_> = std::fs::read_dir(d.path().join(".small"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("marker.txt")]);
    assert!(!d.path().join(".small-cache").exists());
}

#[cfg(unix)]
#[test]
fn a_symlinked_agents_md_is_updated_through_the_link() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("CLAUDE.md"), "# shared\n").unwrap();
    std::os::unix::fs::symlink("CLAUDE.md", d.path().join("AGENTS.md")).unwrap();
    apply(d.path(), &["--agents-mode", "append"]).success();
    assert!(std::fs::symlink_metadata(d.path().join("AGENTS.md"))
        .unwrap()
        .file_type()
        .is_symlink());
    let text = read(d.path().join("CLAUDE.md"));
    assert!(text.starts_with("# shared\n") && text.contains(BEGIN));
}

fn check_json(dir: &std::path::Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let out = small()
        .args(["agents", "check", "--format", "json", "--dir"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON only");
    (out.status.code().unwrap(), v)
}

#[test]
fn check_reports_missing_files() {
    let d = tempfile::tempdir().unwrap();
    let (code, v) = check_json(d.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(v["hasFile"], false);
    let (code, _) = check_json(d.path(), &["--allow-missing"]);
    assert_eq!(code, 0);
    small()
        .args(["agents", "check", "--dir"])
        .arg(d.path())
        .assert()
        .code(1);
}

#[test]
fn check_without_block_fails_only_when_strict() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("AGENTS.md"), "# mine\n").unwrap();
    let (code, v) = check_json(d.path(), &[]);
    assert_eq!(
        (code, v["hasFile"].clone(), v["hasBlock"].clone()),
        (0, true.into(), false.into())
    );
    let (code, _) = check_json(d.path(), &["--strict"]);
    assert_eq!(code, 1);
}

#[test]
fn check_detects_drift_and_fails_on_it_when_strict() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("AGENTS.md");
    let edited = canonical().replace("Ownership Rules", "Ownership Rules (edited)");
    std::fs::write(&p, format!("intro\n\n{edited}")).unwrap();
    let before = read(&p);
    let (code, v) = check_json(d.path(), &[]);
    assert_eq!(code, 0);
    assert_eq!(v["hasBlock"], true);
    assert_eq!(v["blockValid"], true);
    assert_eq!(v["hasDrift"], true);
    assert_eq!(v["blockVersion"], "1.0.0");
    let span = v["blockSpan"].as_array().unwrap();
    assert_eq!(span[0], 7);
    assert_eq!(v["blockLines"][0], 3);
    let (code, v) = check_json(d.path(), &["--strict"]);
    assert_eq!(code, 1);
    assert!(v["error"].as_str().unwrap().contains("differs"));
    assert_eq!(read(&p), before, "check never writes");
    // apply repairs the drift, keeping the intro
    apply(d.path(), &[]).success();
    assert!(read(&p).starts_with("intro\n\n"));
    let (code, v) = check_json(d.path(), &["--strict"]);
    assert_eq!((code, v["hasDrift"].clone()), (0, false.into()));
}

#[test]
fn check_rejects_a_block_of_another_protocol_version() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("AGENTS.md"),
        "<!-- BEGIN SMALL HARNESS v0.9.0 -->\nx\n<!-- END SMALL HARNESS v0.9.0 -->\n",
    )
    .unwrap();
    let (code, v) = check_json(d.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(v["blockVersion"], "0.9.0");
    small()
        .args(["agents", "check", "--dir"])
        .arg(d.path())
        .assert()
        .code(1)
        .stderr(predicates::str::contains("v0.9.0"));
}

#[test]
fn check_text_output_names_the_file_and_result() {
    let d = tempfile::tempdir().unwrap();
    apply(d.path(), &[]).success();
    small()
        .args(["agents", "check", "--strict", "--dir"])
        .arg(d.path())
        .assert()
        .success()
        .stdout(
            predicates::str::contains("AGENTS.md").and(predicates::str::contains("result:    ok")),
        );
}

use predicates::prelude::PredicateBooleanExt;

#[test]
fn from_inside_dot_small_the_file_next_to_it_is_meant() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join(".small")).unwrap();
    small()
        .args(["agents", "apply"])
        .current_dir(d.path().join(".small"))
        .assert()
        .success();
    assert!(d.path().join("AGENTS.md").exists());
    assert!(!d.path().join(".small/AGENTS.md").exists());
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else if e.file_name() != "expected.json" {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn conformance_case_with_agents_md_keeps_its_notes_and_validity() {
    let case = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/cases/valid-agents-md"
    ));
    if small_testkit::conformance_path(case).is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    copy_dir(case, d.path());
    let original = read(d.path().join("AGENTS.md"));
    // A hand-written v1.0.0 block: well-formed, drifted from ours.
    let (code, v) = check_json(d.path(), &[]);
    assert_eq!(
        (code, v["blockValid"].clone(), v["hasDrift"].clone()),
        (0, true.into(), true.into())
    );
    let (code, _) = check_json(d.path(), &["--strict"]);
    assert_eq!(code, 1);
    apply(d.path(), &[]).success();
    let now = read(d.path().join("AGENTS.md"));
    assert_eq!(
        outside(&now).0,
        outside(&original).0,
        "the team's notes before the block are kept"
    );
    assert_eq!(outside(&now).1, outside(&original).1);
    let (code, _) = check_json(d.path(), &["--strict"]);
    assert_eq!(code, 0);
    // AGENTS.md never affects protocol validity, and .small/ was not touched.
    small()
        .args(["validate", "--dir"])
        .arg(d.path())
        .assert()
        .success();
    for f in std::fs::read_dir(case.join(".small")).unwrap() {
        let f = f.unwrap();
        assert_eq!(
            std::fs::read(f.path()).unwrap(),
            std::fs::read(d.path().join(".small").join(f.file_name())).unwrap()
        );
    }
}
