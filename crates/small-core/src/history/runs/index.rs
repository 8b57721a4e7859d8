//! The run index: `<store>/index.small.yml`, an append-only ledger with one entry for every
//! snapshot and archive (replayId, timestamp, git sha, summary, the previous replayId and the
//! reason). The file is rewritten atomically under a lock; a damaged index is never
//! overwritten.

use std::fs;
use std::path::Path;

use crate::spec::consts::PROTOCOL_VERSION;
use crate::yaml;

use super::safe;
use super::RunError;

/// The index file name inside a run store.
pub const INDEX_FILE: &str = "index.small.yml";
const LOCK_FILE: &str = ".index.lock";

/// One line of run lineage.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexEntry {
    #[serde(rename = "replayId")]
    pub replay_id: String,
    pub timestamp: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub git_sha: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub summary: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub previous_replay_id: String,
    pub reason: String,
}

const FIELDS: [&str; 6] = [
    "replayId",
    "timestamp",
    "git_sha",
    "summary",
    "previous_replay_id",
    "reason",
];

impl IndexEntry {
    fn field(&self, name: &str) -> &str {
        match name {
            "replayId" => &self.replay_id,
            "timestamp" => &self.timestamp,
            "git_sha" => &self.git_sha,
            "summary" => &self.summary,
            "previous_replay_id" => &self.previous_replay_id,
            _ => &self.reason,
        }
    }

    fn set(&mut self, name: &str, value: String) {
        match name {
            "replayId" => self.replay_id = value,
            "timestamp" => self.timestamp = value,
            "git_sha" => self.git_sha = value,
            "summary" => self.summary = value,
            "previous_replay_id" => self.previous_replay_id = value,
            _ => self.reason = value,
        }
    }
}

/// Read the entries of an index file (`Ok(empty)` when there is none).
pub fn read_index(store: &Path) -> Result<Vec<IndexEntry>, RunError> {
    let path = store.join(INDEX_FILE);
    let Some(bytes) = safe::read_stored_file(&path)? else {
        return Ok(Vec::new());
    };
    let damaged = |why: String| {
        RunError::invalid(format!(
            "the run index {} is damaged: {why}",
            path.display()
        ))
        .with_help("move the file away; it is rebuilt from the next snapshot on")
    };
    let doc =
        yaml::parse_bytes(&bytes, &yaml::Limits::default()).map_err(|e| damaged(e.to_string()))?;
    if doc.root.is_null() {
        return Ok(Vec::new());
    }
    if doc.root.as_map().is_none() {
        return Err(damaged("the top level is not a mapping".into()));
    }
    let Some(entries) = doc.root.get("entries") else {
        return Ok(Vec::new());
    };
    if entries.is_null() {
        return Ok(Vec::new());
    }
    let Some(items) = entries.as_seq() else {
        return Err(damaged("`entries` is not a list".into()));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(map) = item.as_map() else {
            return Err(damaged(format!("entry {} is not a mapping", i + 1)));
        };
        let mut entry = IndexEntry::default();
        for e in map {
            if let Some(name) = FIELDS.iter().find(|f| **f == e.key) {
                let text = match &e.value.value {
                    yaml::Value::Str(s) => s.clone(),
                    yaml::Value::Null => String::new(),
                    yaml::Value::Int(n) => n.to_string(),
                    _ => {
                        return Err(damaged(format!(
                            "entry {} field `{}` is not text",
                            i + 1,
                            e.key
                        )))
                    }
                };
                entry.set(name, text);
            }
        }
        out.push(entry);
    }
    Ok(out)
}

/// Append `entry` to the index of `store`, filling `previous_replay_id` from the newest entry
/// of another run.
pub fn append(store: &Path, mut entry: IndexEntry) -> Result<(), RunError> {
    fs::create_dir_all(store).map_err(|e| RunError::io("cannot create", store, &e))?;
    let lock_path = store.join(LOCK_FILE);
    let lock = crate::fsio::open_or_create(&lock_path)
        .map_err(|e| RunError::io("cannot open the index lock", &lock_path, &e))?;
    fs4::FileExt::lock(&lock).map_err(|e| RunError::io("cannot lock", &lock_path, &e))?;

    let mut entries = read_index(store)?;
    if entry.previous_replay_id.is_empty() {
        // The run before this one: the newest entry of a different run (archiving or
        // re-snapshotting the same run does not make it its own predecessor).
        if let Some(prev) = entries
            .iter()
            .rev()
            .find(|e| !e.replay_id.eq_ignore_ascii_case(&entry.replay_id))
        {
            entry.previous_replay_id = prev.replay_id.clone();
        }
    }
    entries.push(entry);
    let text = render(&entries);
    let result = crate::workspace::txn::atomic_write(store.join(INDEX_FILE), text.as_bytes())
        .map_err(super::txn_error);
    let _ = fs4::FileExt::unlock(&lock);
    result
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
pub fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn render(entries: &[IndexEntry]) -> String {
    let mut out = format!("small_version: {}\nentries:\n", quote(PROTOCOL_VERSION));
    if entries.is_empty() {
        out = format!("small_version: {}\nentries: []\n", quote(PROTOCOL_VERSION));
    }
    for e in entries {
        let mut first = true;
        for name in FIELDS {
            let value = e.field(name);
            if value.is_empty() && name != "replayId" && name != "timestamp" && name != "reason" {
                continue;
            }
            let lead = if first { "  - " } else { "    " };
            first = false;
            out.push_str(&format!("{lead}{name}: {}\n", quote(value)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, reason: &str) -> IndexEntry {
        IndexEntry {
            replay_id: id.into(),
            timestamp: "2026-01-01T00:00:00Z".into(),
            reason: reason.into(),
            summary: "say \"hi\"\nnext: ok".into(),
            ..Default::default()
        }
    }

    #[test]
    fn appended_entries_read_back_with_lineage() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), entry("aa", "snapshot")).unwrap();
        append(dir.path(), entry("aa", "archive")).unwrap();
        append(dir.path(), entry("bb", "snapshot")).unwrap();
        let got = read_index(dir.path()).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].previous_replay_id, "");
        assert_eq!(
            got[1].previous_replay_id, "",
            "a run is never its own predecessor"
        );
        assert_eq!(got[2].previous_replay_id, "aa");
        assert_eq!(got[2].summary, "say \"hi\"\nnext: ok");
    }

    #[test]
    fn a_damaged_index_is_an_error_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(INDEX_FILE), "entries: {a: 1}\n").unwrap();
        assert!(read_index(dir.path()).is_err());
        assert!(append(dir.path(), entry("aa", "snapshot")).is_err());
        let text = std::fs::read_to_string(dir.path().join(INDEX_FILE)).unwrap();
        assert_eq!(text, "entries: {a: 1}\n");
    }
}
