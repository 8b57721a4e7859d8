//! Strict layout boundary (spec invariant 8, rule S4): under `.small/` only the canonical
//! root files may live, plus the extension directory `.small/ext/` that the spec's extension
//! mechanism names. Operational data belongs in `.small-cache/`, run history in
//! `.small-runs/` and archives in `.small-archive/`.

use std::io;
use std::path::Path;

use crate::spec::consts::{ArtifactKind, EXT_DIR, SMALL_DIR, WORKSPACE_FILE};

/// One path under `.small/` that strict layout does not allow.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unexpected {
    /// Path relative to the workspace root, `/`-separated; directories end with `/`.
    pub rel_path: String,
    pub is_dir: bool,
    /// Where this kind of content belongs instead, if we know (`.small-runs/`, ...).
    pub belongs_in: Option<&'static str>,
}

/// True for the names allowed directly under `.small/` as regular files.
pub fn is_canonical_file_name(name: &str) -> bool {
    name == WORKSPACE_FILE || ArtifactKind::ALL.iter().any(|k| k.file_name() == name)
}

/// List the entries of `<root>/.small/` that break the strict layout, sorted by path.
/// Entries inside `.small/ext/` are never inspected.
pub fn unexpected_paths(root: &Path) -> io::Result<Vec<Unexpected>> {
    let small = root.join(SMALL_DIR);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&small)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // Do not follow symlinks: a link is judged as what it is, not what it points to.
        let is_dir = entry.file_type()?.is_dir();
        if is_dir {
            if name == EXT_DIR {
                continue;
            }
            let belongs_in = match name.as_str() {
                "runs" => Some(crate::spec::consts::RUNS_DIR),
                "archive" => Some(crate::spec::consts::ARCHIVE_DIR),
                "cache" | "tmp" | "logs" | "locks" => Some(crate::spec::consts::CACHE_DIR),
                _ => None,
            };
            out.push(Unexpected {
                rel_path: format!("{SMALL_DIR}/{name}/"),
                is_dir,
                belongs_in,
            });
        } else if !is_canonical_file_name(&name) {
            out.push(Unexpected {
                rel_path: crate::spec::consts::small_rel(&name),
                is_dir,
                belongs_in: None,
            });
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext_allowed_others_reported() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join(SMALL_DIR);
        std::fs::create_dir_all(small.join("ext/deep")).unwrap();
        std::fs::create_dir_all(small.join("runs")).unwrap();
        std::fs::write(small.join("plan.small.yml"), "").unwrap();
        std::fs::write(small.join("workspace.small.yml"), "").unwrap();
        std::fs::write(small.join("ext/deep/x.yml"), "").unwrap();
        std::fs::write(small.join(".gitkeep"), "").unwrap();
        std::fs::write(small.join("notes.md"), "").unwrap();
        let got: Vec<String> = unexpected_paths(dir.path())
            .unwrap()
            .into_iter()
            .map(|u| u.rel_path)
            .collect();
        assert_eq!(
            got,
            vec![".small/.gitkeep", ".small/notes.md", ".small/runs/"]
        );
    }

    #[test]
    fn ext_as_a_file_is_unexpected() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join(SMALL_DIR);
        std::fs::create_dir_all(&small).unwrap();
        std::fs::write(small.join("ext"), "").unwrap();
        let got = unexpected_paths(dir.path()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].rel_path, ".small/ext");
    }
}
