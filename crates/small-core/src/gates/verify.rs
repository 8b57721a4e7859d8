//! Rules only `small verify` (and the verify stage of `small check`) enforces, on top of
//! schema validation and the lint invariants:
//!
//! | code | rule |
//! |---|---|
//! | `WS` | `workspace.small.yml` exists, parses, matches its schema (kind, small_version, `run.replay_id` as 64 hex) and its kind is allowed by `--workspace` |
//! | `RID` | the handoff has a `replayId` with a 64-hex `value` and a `source` of `auto` or `manual` |
//! | `S3` | the handoff's current task exists in the plan (verify enforces it without `--strict` too) |
//! | `GATE` | every completed plan task has at least one progress entry |
//! | `INV3` | with `--since REV`: the progress log is append-only since REV |
//!
//! A `run.replay_id` in the workspace metadata that differs from the handoff's replayId is a
//! `WS` warning: the spec makes the metadata the current run identity, but `small handoff`
//! legitimately rewrites both at different times.

use crate::spec::model::{HANDOFF_REPLAY_ID_POINTER, RUN_REPLAY_ID_POINTER};
use std::path::Path;
use std::process::Command;

use crate::diag::{Diagnostic, Span};
use crate::gates::invariants;
use crate::spec::consts::{ArtifactKind, SMALL_DIR};
use crate::spec::replayid;
use crate::state::ProjectState;
use crate::yaml::{self, Node, Value};

/// RID: the handoff's replayId block is present and well formed.
pub fn check_replay_id(handoff: &Node, out: &mut Vec<Diagnostic>) {
    let file = ArtifactKind::Handoff.rel_path();
    let help = "regenerate it with `small handoff`";
    let err = |span: Span, path: &str, msg: String| {
        Diagnostic::error("RID", msg)
            .in_file(file.clone())
            .at(Some(span))
            .with_path(path)
            .with_help(help)
    };
    let Some(rid) = handoff.get("replayId") else {
        out.push(err(
            handoff.span,
            "/replayId",
            "the handoff has no replayId".into(),
        ));
        return;
    };
    if rid.as_map().is_none() {
        out.push(err(
            rid.span,
            "/replayId",
            format!(
                "replayId must be a mapping with `value` and `source`, found {}",
                invariants::show(rid)
            ),
        ));
        return;
    }
    match rid.get("value") {
        Some(v) => match v.as_str().map(str::trim) {
            Some(s) if replayid::is_well_formed(s) => {}
            Some("") | None => out.push(err(
                v.span,
                HANDOFF_REPLAY_ID_POINTER,
                "replayId.value must be a non-empty string".into(),
            )),
            Some(s) => out.push(err(
                v.span,
                HANDOFF_REPLAY_ID_POINTER,
                format!("replayId.value {s:?} is not a SHA-256 hash (64 hex digits)"),
            )),
        },
        None => out.push(err(
            rid.span,
            HANDOFF_REPLAY_ID_POINTER,
            "replayId.value is missing".into(),
        )),
    }
    match rid.get("source") {
        Some(s) => match s.as_str().map(str::trim) {
            Some("auto" | "manual") => {}
            Some("") | None => out.push(err(
                s.span,
                "/replayId/source",
                "replayId.source must be \"auto\" or \"manual\"".into(),
            )),
            Some(other) => out.push(err(
                s.span,
                "/replayId/source",
                format!("replayId.source must be \"auto\" or \"manual\", found {other:?}"),
            )),
        },
        None => out.push(err(
            rid.span,
            "/replayId/source",
            "replayId.source is missing".into(),
        )),
    }
}

/// WS warning: workspace `run.replay_id` and the handoff's replayId name different runs.
pub fn check_run_identity(
    meta_root: &Node,
    meta_file: &str,
    handoff: Option<&Node>,
    out: &mut Vec<Diagnostic>,
) {
    let Some(run_id) = meta_root.pointer(RUN_REPLAY_ID_POINTER) else {
        return;
    };
    let Some(run) = run_id
        .as_str()
        .map(str::trim)
        .filter(|s| replayid::is_well_formed(s))
    else {
        return;
    };
    let Some(h) = handoff
        .and_then(|h| h.pointer(HANDOFF_REPLAY_ID_POINTER))
        .and_then(Node::as_str)
    else {
        return;
    };
    if replayid::is_well_formed(h.trim()) && !replayid::same_replay_id(run, h) {
        out.push(
            Diagnostic::warning(
                "WS",
                format!(
                    "run.replay_id {run} differs from the handoff's replayId {}",
                    h.trim()
                ),
            )
            .in_file(meta_file)
            .at(Some(run_id.span))
            .with_path(RUN_REPLAY_ID_POINTER)
            .with_help("run `small handoff` to record the current run in both places"),
        );
    }
}

/// S3 and the evidence gate as verify runs them without strict mode (strict lint reports S3
/// and S1, which covers the gate), on the state the gates built: nothing without a plan,
/// the gate only with a progress log.
pub fn check_plan_links(state: &ProjectState, out: &mut Vec<Diagnostic>) {
    if state.tasks.is_none() {
        return;
    }
    invariants::check_s3(state, out);
    invariants::check_evidence_gate(state, out);
}

// ---------------------------------------------------------------------------------------
// Append-only progress since a git revision (INV3)

/// `verify --since` could not run (a usage or system problem, not an invalid log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinceError {
    #[error("cannot run git: {0}")]
    Git(String),
    #[error("{0}")]
    Revision(String),
    #[error("the progress log at {rev} is not valid YAML: {reason}")]
    OldUnreadable { rev: String, reason: String },
}

/// The progress log as committed at `rev`, or `None` when it did not exist there.
pub fn progress_at_revision(root: &Path, rev: &str) -> Result<Option<String>, SinceError> {
    if rev.starts_with('-') {
        return Err(SinceError::Revision(format!("invalid revision {rev:?}")));
    }
    let check = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("{rev}^{{commit}}"))
        .output()
        .map_err(|e| SinceError::Git(e.to_string()))?;
    if !check.status.success() {
        return Err(SinceError::Revision(format!(
            "{rev:?} is not a commit of the git repository at {} (or it is not a git repository)",
            root.display()
        )));
    }
    let spec = format!("{rev}:./{SMALL_DIR}/{}", ArtifactKind::Progress.file_name());
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["show", &spec])
        .output()
        .map_err(|e| SinceError::Git(e.to_string()))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        if msg.contains("does not exist") || msg.contains("exists on disk, but not in") {
            return Ok(None);
        }
        return Err(SinceError::Git(msg.trim().to_string()));
    }
    String::from_utf8(out.stdout)
        .map(Some)
        .map_err(|_| SinceError::OldUnreadable {
            rev: rev.into(),
            reason: "not UTF-8".into(),
        })
}

/// Structural equality of two YAML values, ignoring positions, quoting style and key order.
pub fn same_value(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits() || x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter().all(|e| {
                    y.iter()
                        .any(|f| f.key == e.key && same_value(&e.value, &f.value))
                })
        }
        _ => false,
    }
}

fn entry_label(e: &Node) -> String {
    let task = e
        .get("task_id")
        .and_then(invariants::scalar_text)
        .unwrap_or_default();
    let ts = e
        .get("timestamp")
        .and_then(invariants::scalar_text)
        .unwrap_or_default();
    match (task.is_empty(), ts.is_empty()) {
        (false, false) => format!("(task {task}, {ts})"),
        (false, true) => format!("(task {task})"),
        (true, false) => format!("({ts})"),
        (true, true) => String::new(),
    }
}

fn changed_fields(old: &Node, new: &Node) -> Vec<String> {
    let (Some(o), Some(n)) = (old.as_map(), new.as_map()) else {
        return Vec::new();
    };
    let mut keys: Vec<String> = Vec::new();
    for e in o {
        match n.iter().find(|f| f.key == e.key) {
            Some(f) if same_value(&e.value, &f.value) => {}
            _ => keys.push(e.key.to_string()),
        }
    }
    for f in n {
        if !o.iter().any(|e| e.key == f.key) {
            keys.push(f.key.to_string());
        }
    }
    keys
}

/// INV3, entry by entry: feed today's entries in order with [`AppendOnly::feed`], then
/// [`AppendOnly::finish`] reports the first entry of the log at the revision that was
/// deleted, altered, moved or cut off.
pub struct AppendOnly {
    rev: String,
    old: Vec<Node>,
    /// First mismatch: index, today's entry there, and whether it equals the next old entry.
    first: Option<(usize, Node, bool)>,
    /// The mismatching old entry shows up later in today's log.
    found_later: bool,
    seen: usize,
}

impl AppendOnly {
    /// Parse the log as it was at `rev`.
    pub fn new(rev: &str, old_text: &str) -> Result<AppendOnly, SinceError> {
        let old = yaml::parse_str(old_text, &yaml::Limits::default()).map_err(|e| {
            SinceError::OldUnreadable {
                rev: rev.into(),
                reason: e.to_string(),
            }
        })?;
        let entries = match old.root.value {
            Value::Map(fields) => fields
                .into_iter()
                .find(|e| e.key == "entries")
                .and_then(|e| match e.value.value {
                    Value::Seq(items) => Some(items),
                    _ => None,
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Ok(AppendOnly {
            rev: rev.to_string(),
            old: entries,
            first: None,
            found_later: false,
            seen: 0,
        })
    }

    /// Today's entry `i` (in order).
    pub fn feed(&mut self, i: usize, n: &Node) {
        self.seen = i + 1;
        match &self.first {
            None => {
                if let Some(o) = self.old.get(i) {
                    if !same_value(o, n) {
                        let next_here = self.old.get(i + 1).is_some_and(|x| same_value(x, n));
                        self.first = Some((i, n.clone(), next_here));
                    }
                }
            }
            Some((fi, _, _)) => {
                if !self.found_later && same_value(&self.old[*fi], n) {
                    self.found_later = true;
                }
            }
        }
    }

    /// The violation, if any. `entries_span`: where today's `entries` list is (for the
    /// truncation report).
    pub fn finish(self, entries_span: Option<Span>) -> Vec<Diagnostic> {
        let file = ArtifactKind::Progress.rel_path();
        let rev = &self.rev;
        let help = format!(
            "progress is append-only: restore the entry from `git show {rev}:./{file}` and record corrections as new entries"
        );
        if let Some((i, n, next_here)) = &self.first {
            let o = &self.old[*i];
            let label = entry_label(o);
            let what = if *next_here {
                format!("entries[{i}] {label} present at {rev} was deleted")
            } else if self.found_later {
                format!("entries[{i}] {label} present at {rev} was moved: new entries were inserted before it")
            } else {
                let fields = changed_fields(o, n);
                if fields.is_empty() {
                    format!("entries[{i}] {label} present at {rev} was replaced")
                } else {
                    format!(
                        "entries[{i}] {label} present at {rev} was altered (changed: {})",
                        fields.join(", ")
                    )
                }
            };
            return vec![Diagnostic::error("INV3", what)
                .in_file(file)
                .at(Some(n.span))
                .with_path(format!("/entries/{i}"))
                .with_help(help)];
        }
        if self.seen < self.old.len() {
            let i = self.seen;
            let removed = self.old.len() - i;
            return vec![Diagnostic::error(
                "INV3",
                format!(
                    "entries[{i}] {} present at {rev} was deleted: the log had {} entries then and has {} now ({removed} removed from the end)",
                    entry_label(&self.old[i]),
                    self.old.len(),
                    self.seen
                ),
            )
            .in_file(file)
            .at(entries_span)
            .with_path(format!("/entries/{i}"))
            .with_help(help)];
        }
        Vec::new()
    }
}

/// INV3 when today's log cannot be loaded at all (missing, not YAML).
pub fn check_append_only_unreadable(a: AppendOnly) -> Vec<Diagnostic> {
    if a.old.is_empty() {
        return Vec::new();
    }
    vec![Diagnostic::error(
        "INV3",
        format!(
            "the progress log had {} entries at {} but cannot be read now",
            a.old.len(),
            a.rev
        ),
    )
    .in_file(ArtifactKind::Progress.rel_path())]
}

/// INV3 over a fully loaded log: every entry of `old_text` is still in `current` (the log
/// as loaded today), unchanged and in order, at the front.
pub fn check_append_only(
    rev: &str,
    old_text: &str,
    current: Option<&Node>,
) -> Result<Vec<Diagnostic>, SinceError> {
    let mut a = AppendOnly::new(rev, old_text)?;
    let Some(cur) = current else {
        if a.old.is_empty() {
            return Ok(Vec::new());
        }
        return Ok(vec![Diagnostic::error(
            "INV3",
            format!(
                "the progress log had {} entries at {rev} but cannot be read now",
                a.old.len()
            ),
        )
        .in_file(ArtifactKind::Progress.rel_path())]);
    };
    let entries = cur.get("entries");
    for (i, e) in entries
        .and_then(Node::as_seq)
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        a.feed(i, e);
    }
    Ok(a.finish(Some(entries.map_or(cur.span, |e| e.span))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(s: &str) -> yaml::Document {
        yaml::parse_str(s, &yaml::Limits::default()).unwrap()
    }

    const OLD: &str = "entries:\n  - {task_id: a, timestamp: \"t1\", evidence: x}\n  - {task_id: b, timestamp: \"t2\", evidence: y}\n";

    #[test]
    fn appended_is_fine_and_formatting_ignored() {
        let new = doc("entries:\n  - task_id: a\n    evidence: 'x'\n    timestamp: t1\n  - {task_id: b, timestamp: \"t2\", evidence: y}\n  - {task_id: c, evidence: z}\n");
        assert!(check_append_only("HEAD", OLD, Some(&new.root))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn names_first_deleted_or_altered_entry() {
        let new = doc("entries:\n  - {task_id: b, timestamp: \"t2\", evidence: y}\n");
        let d = check_append_only("HEAD", OLD, Some(&new.root)).unwrap();
        assert!(
            d[0].message.contains("entries[0] (task a, t1)") && d[0].message.contains("deleted"),
            "{d:?}"
        );
        let new = doc("entries:\n  - {task_id: a, timestamp: \"t1\", evidence: CHANGED}\n  - {task_id: b, timestamp: \"t2\", evidence: y}\n");
        let d = check_append_only("HEAD", OLD, Some(&new.root)).unwrap();
        assert!(
            d[0].message.contains("altered (changed: evidence)"),
            "{d:?}"
        );
        let new = doc("entries:\n  - {task_id: a, timestamp: \"t1\", evidence: x}\n");
        let d = check_append_only("HEAD", OLD, Some(&new.root)).unwrap();
        assert!(
            d[0].message.contains("entries[1] (task b, t2)") && d[0].message.contains("1 removed"),
            "{d:?}"
        );
        assert_eq!(d[0].code, "INV3");
    }
}
