//! The documentation is true to the binary.
//!
//! - Every code block of README.md and docs/*.md whose fence reads `sh runnable` is run with
//!   bash (`set -euo pipefail`) in a fresh directory, with `small` on the PATH and HOME in that
//!   directory: each block must succeed.
//! - Every `small …` command line quoted in any other shell or synopsis block must name
//!   commands that exist, and every `--flag` on it must be a flag of that command.
//! - A decision record that a test names as the reason for a difference from the reference
//!   exists in docs/decisions/ and is in force (`decision_in_force`).

use crate::cli_conventions::command_paths;
use crate::tools_support::small;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

struct Block {
    file: String,
    line: usize,
    info: String,
    body: String,
}

fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for path in doc_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut open: Option<Block> = None;
        for (i, line) in text.lines().enumerate() {
            if let Some(rest) = line.strip_prefix("```") {
                match open.take() {
                    None => {
                        open = Some(Block {
                            file: name.clone(),
                            line: i + 1,
                            info: rest.trim().to_string(),
                            body: String::new(),
                        })
                    }
                    Some(b) => out.push(b),
                }
            } else if let Some(b) = open.as_mut() {
                b.body.push_str(line);
                b.body.push('\n');
            }
        }
        assert!(open.is_none(), "{name}: a code block is not closed");
    }
    out
}

#[test]
fn runnable_blocks_succeed() {
    let bin = assert_cmd::cargo::cargo_bin("small");
    let bin_dir = bin.parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for b in blocks().iter().filter(|b| b.info == "sh runnable") {
        let dir = tempfile::tempdir().unwrap();
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("set -euo pipefail\n{}", b.body))
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("HOME", dir.path())
            .env("NO_COLOR", "1")
            .env_remove("SMALL_PROGRESS_MODE")
            .env_remove("SMALL_SPEC_DIR")
            .env_remove("SMALL_STORE")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}:{}: the runnable block failed ({}):\n{}\n--- stdout\n{}--- stderr\n{}",
            b.file,
            b.line,
            o.status,
            b.body,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 2, "only {ran} runnable blocks found");
}

/// The line without quoted strings and without a trailing `# comment`.
fn strip_quotes_and_comment(line: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => break,
            None => out.push(c),
        }
    }
    out
}

/// `small …` lines of the shell and synopsis blocks, joined with their continuation lines.
fn quoted_command_lines() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for b in blocks() {
        let kind = b.info.split_whitespace().next().unwrap_or("");
        if !matches!(kind, "" | "sh" | "bash" | "console" | "shell") {
            continue;
        }
        let mut current: Option<(String, String)> = None;
        for (i, line) in b.body.lines().enumerate() {
            let where_ = format!("{}:{}", b.file, b.line + 1 + i);
            let t = line.trim_start_matches("$ ");
            if t.starts_with("small ") || t == "small" {
                out.extend(current.take());
                current = Some((where_, t.to_string()));
            } else if line.starts_with(' ') && current.is_some() {
                // A wrapped synopsis line.
                current.as_mut().unwrap().1.push(' ');
                current.as_mut().unwrap().1.push_str(line.trim());
            } else {
                out.extend(current.take());
            }
        }
        out.extend(current);
    }
    out
}

#[test]
fn quoted_command_lines_match_the_binary() {
    let paths: BTreeSet<Vec<String>> = command_paths().into_iter().collect();
    let mut helps: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let lines = quoted_command_lines();
    assert!(lines.len() > 20, "only {} command lines found", lines.len());
    let mut problems = Vec::new();
    for (at, line) in &lines {
        let clean = strip_quotes_and_comment(line);
        let mut words = clean.split_whitespace().skip(1).peekable();
        // The command paths the line names; `draft intent|constraints` names two.
        let mut targets: Vec<Vec<String>> = vec![Vec::new()];
        while let Some(w) = words.peek() {
            let next: Vec<Vec<String>> = targets
                .iter()
                .flat_map(|t| {
                    w.split('|').map(move |alt| {
                        let mut p = t.clone();
                        p.push(alt.to_string());
                        p
                    })
                })
                .collect();
            if next.iter().all(|p| paths.contains(p)) {
                targets = next;
                words.next();
            } else {
                break;
            }
        }
        let mut rest = clean.as_str();
        while let Some(at_flag) = rest.find("--") {
            let tail = &rest[at_flag + 2..];
            let name: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            rest = &tail[name.len()..];
            if name.is_empty() {
                continue; // `--` alone ends the options
            }
            let flag = format!("--{name}");
            for path in &targets {
                let help = helps.entry(path.clone()).or_insert_with(|| {
                    let o = small().args(path).arg("--help").output().unwrap();
                    String::from_utf8_lossy(&o.stdout).into_owned()
                });
                let known = help.lines().any(|l| {
                    l.trim_start()
                        .split([' ', ',', '[', '='])
                        .any(|w| w == flag)
                });
                if !known {
                    problems.push(format!(
                        "{at}: `small {}` has no flag {flag} (in: {line})",
                        path.join(" ")
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Checks that `record` (`0143-exit-codes-of-refusals`) is a decision record of docs/decisions/
/// whose number matches its title and whose status is `current`: a difference from the
/// reference must rest on a decision in force, not on one that was superseded.
pub(crate) fn decision_in_force(record: &str) -> Result<(), String> {
    let well_formed = record.len() > 5
        && record.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && record.as_bytes()[4] == b'-'
        && record
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !well_formed {
        return Err(format!(
            "{record:?} is not a record name (NNNN-short-title)"
        ));
    }
    let number = &record[..4];
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/decisions")
        .join(format!("{record}.md"));
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("docs/decisions/{record}.md: {e}"))?;
    if !text.starts_with(&format!("# {number}. ")) {
        return Err(format!(
            "docs/decisions/{record}.md: the title is not `# {number}. ...`"
        ));
    }
    match text.lines().find_map(|l| l.strip_prefix("Status: ")) {
        Some("current") => Ok(()),
        Some(other) => Err(format!("docs/decisions/{record}.md is {other}")),
        None => Err(format!("docs/decisions/{record}.md has no `Status:` line")),
    }
}

#[test]
fn a_difference_must_name_a_record_in_force() {
    assert_eq!(decision_in_force("0143-exit-codes-of-refusals"), Ok(()));
    for bad in [
        "0036-authoring-exit-codes",
        "0143-no-such-record",
        "Exit codes of refusals",
        "../decisions",
    ] {
        assert!(decision_in_force(bad).is_err(), "{bad} was accepted");
    }
}
