//! The house points one way: every module of small-core imports only modules below it in
//! [`LAYERS`], the order `lib.rs` declares them in, so there is no import circle and no
//! upward edge. Counted over every non-test source file, `spec/` included.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The top-level modules, lowest first.
const LAYERS: &[&str] = &[
    "par",
    "fsio",
    "diag",
    "yaml",
    "json",
    "spec",
    "workspace",
    "secrets",
    "v2",
    "state",
    "gates",
    "authoring",
    "history",
    "migrate",
    "api",
    "ops",
];

pub(super) fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Whether `rel` (relative to `src/`) holds tests rather than the library.
fn is_test_file(rel: &Path) -> bool {
    rel.components().any(|c| {
        let c = c.as_os_str().to_string_lossy();
        c == "tests" || c == "tests.rs" || c.ends_with("_tests.rs")
    })
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every source file of the library (path relative to `src/`) with its code: test files
/// left out, and a file's unit tests, which follow its code and may reach anywhere, cut off.
pub(super) fn library_code() -> Vec<(PathBuf, String)> {
    let root = src();
    let mut files = Vec::new();
    sources(&root, &mut files);
    files
        .into_iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(&root).unwrap().to_path_buf();
            if is_test_file(&rel) {
                return None;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            Some((rel, code))
        })
        .collect()
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules `code` names through `crate::`, grouped imports included.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut at_item = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_item = true,
                    c if at_item && depth == 0 && !c.is_whitespace() => {
                        out.insert(ident_at(&group[j..]).to_string());
                        at_item = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident_at(rest).to_string());
        }
    }
    out
}

#[test]
fn lib_declares_the_layers_in_order() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l
                .strip_prefix("pub(crate) mod ")
                .or(l.strip_prefix("pub mod "))?;
            l.strip_suffix(';')
        })
        .collect();
    assert_eq!(declared, LAYERS);
}

#[test]
fn no_module_imports_one_above_it() {
    let mut upward = Vec::new();
    let mut counted = 0;
    for (rel, code) in library_code() {
        if rel == Path::new("lib.rs") {
            continue;
        }
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        let Some(level) = LAYERS.iter().position(|l| *l == top) else {
            panic!("{} is in no layer", rel.display());
        };
        for m in named_modules(&code) {
            if let Some(l) = LAYERS.iter().position(|x| *x == m) {
                counted += 1;
                if l > level {
                    upward.push(format!("{} -> {m}", rel.display()));
                }
            }
        }
    }
    assert!(
        counted > 200,
        "only {counted} imports found: is the scan broken?"
    );
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn the_scan_sees_grouped_and_plain_paths() {
    let found = named_modules("use crate::{a::b, c::{d, e}, f};\nlet x = crate::g::h();");
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        ["a", "c", "f", "g"].map(String::from)
    );
}
