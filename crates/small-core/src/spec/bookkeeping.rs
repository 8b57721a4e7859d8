//! Which progress entries are the tool's own bookkeeping, which entries belong to the
//! current run, and the merge driver's mark on a handoff it could not merge.
//!
//! Authoring commands write progress entries for edits that are not work: a task was added
//! (`plan --add`), set back to pending, retitled, given a dependency. Older tools also wrote
//! canned completion text when the caller gave no evidence. Such entries are history, but they
//! are not evidence: the strict rule S1, the evidence gate and the handoff's check for
//! half-done work ignore them (docs/decisions/0069-agent-loop-in-ordinary-use.md, "Evidence
//! is evidence").
//!
//! The progress schema admits no extra keys, so an entry is recognised by the text the tool
//! writes: the `notes` marker (`small plan --add`, ...) or one of the fixed evidence phrases.

use crate::spec::consts::META_TASK_PREFIX;

/// `notes` values the tool writes on bookkeeping entries.
pub const BOOKKEEPING_NOTES: [&str; 4] = [
    "small plan --add",
    "small plan --pending",
    "small plan --depends",
    "small plan --title",
];

/// Canned evidence older versions (and the reference) wrote when none was given.
pub const CANNED_EVIDENCE: [&str; 2] = [
    "Recorded checkpoint via small checkpoint",
    "Recorded progress via small progress add",
];

/// Whether an entry with this `evidence` and `notes` is the tool's bookkeeping rather than a
/// record of work. `meta/…` entries are never work either, but they are not bookkeeping in
/// this sense (they record resets, repairs, self-heals); callers skip them by id.
pub fn is_bookkeeping(evidence: Option<&str>, notes: Option<&str>) -> bool {
    let notes = notes.map(super::trim).unwrap_or("");
    if BOOKKEEPING_NOTES.contains(&notes) {
        return true;
    }
    let ev = evidence.map(super::trim).unwrap_or("");
    if ev.is_empty() {
        return false;
    }
    if CANNED_EVIDENCE.contains(&ev) {
        return true;
    }
    // Every phrase starts with one of these words; most evidence is spared the split.
    if !["Added", "Updated", "Recorded"]
        .iter()
        .any(|w| ev.starts_with(w))
    {
        return false;
    }
    let words: Vec<&str> = ev.split_whitespace().collect();
    matches!(
        words.as_slice(),
        ["Added", "task", _, "via", "small", "plan", "--add"]
            | ["Updated", "task", _, "to", "pending"]
            | ["Added", "dependency", _, "to", _]
            | [
                "Recorded",
                "completion",
                "via",
                "small",
                "plan",
                "--done",
                _
            ]
    )
}

/// Whether a task id names bookkeeping of the workspace itself (`meta/…`).
pub fn is_meta(task_id: &str) -> bool {
    super::trim(task_id).starts_with(META_TASK_PREFIX)
}

/// The task id of the entry that opens a new run (`small reset`).
pub const RESET_TASK: &str = "meta/reset";

/// The marker the handoff merge writes on the first line when both sides changed the handoff.
pub const HANDOFF_STALE_MARK: &str =
    "# small merge-driver: merged from two branches; run `small handoff` to regenerate";

/// Whether a handoff text carries the merge driver's regeneration mark.
pub fn handoff_needs_regeneration(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .starts_with(HANDOFF_STALE_MARK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_tool_entries() {
        assert!(is_bookkeeping(
            Some("Added task task-4 via small plan --add"),
            Some("Write the docs")
        ));
        assert!(is_bookkeeping(Some("Updated task task-2 to pending"), None));
        assert!(is_bookkeeping(
            Some("Added dependency task-1 to task-2"),
            None
        ));
        assert!(is_bookkeeping(
            Some("Recorded checkpoint via small checkpoint"),
            None
        ));
        assert!(is_bookkeeping(
            Some("Recorded completion via small plan --done task-3"),
            Some("completed via CLI")
        ));
        assert!(is_bookkeeping(Some("anything"), Some("small plan --title")));
    }

    #[test]
    fn work_is_not_bookkeeping() {
        assert!(!is_bookkeeping(Some("cargo test: 12 passed"), None));
        assert!(!is_bookkeeping(None, Some("looked at the parser")));
        assert!(!is_bookkeeping(
            Some("Updated task task-2 to blocked"),
            None
        ));
        assert!(!is_bookkeeping(None, None));
        assert!(is_meta("meta/reset") && !is_meta("task-1"));
    }
}
