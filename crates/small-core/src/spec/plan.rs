//! The plan model the gates and the write side share: a plan's tasks in order, indexed by id,
//! read from the parsed YAML with their positions.

use std::collections::HashSet;

/// A set of task ids. Looked up for every progress entry, so hashed with a fast hash
/// (seeded per process) rather than SipHash.
pub type IdSet = HashSet<String, foldhash::fast::RandomState>;

use crate::diag::Span;
use crate::yaml::{Node, Value};

/// The text of a scalar as the reference's `%v` would show it, for ids and statuses that
/// are not strings. Mappings and sequences give `None`.
pub fn scalar_text(node: &Node) -> Option<String> {
    match &node.value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        Value::Seq(_) | Value::Map(_) => None,
    }
}

pub fn trimmed_text(node: Option<&Node>) -> String {
    node.and_then(scalar_text)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// One plan task, as the cross-file rules need it.
#[derive(Debug, Clone)]
pub struct TaskInfo {
    pub index: usize,
    pub id: String,
    pub title: String,
    pub status: String,
    pub dependencies: Vec<String>,
    /// Span of the task's `id` value (or of the task when it has none).
    pub span: Span,
}

impl TaskInfo {
    /// Status lower-cased and trimmed (`Completed` is `completed`).
    pub fn status_norm(&self) -> String {
        self.status.trim().to_lowercase()
    }
}

/// The plan's tasks in order, with an index by id.
#[derive(Debug, Clone, Default)]
pub struct PlanIndex {
    pub tasks: Vec<TaskInfo>,
    pub ids: IdSet,
}

impl PlanIndex {
    pub fn from_plan(plan: Option<&Node>) -> PlanIndex {
        let mut idx = PlanIndex::default();
        let Some(tasks) = plan.and_then(|p| p.get("tasks")).and_then(Node::as_seq) else {
            return idx;
        };
        for (i, t) in tasks.iter().enumerate() {
            if t.as_map().is_none() {
                continue;
            }
            let id = trimmed_text(t.get("id"));
            let dependencies = t
                .get("dependencies")
                .and_then(Node::as_seq)
                .map(|deps| {
                    deps.iter()
                        .filter_map(scalar_text)
                        .map(|s| s.trim().to_string())
                        .collect()
                })
                .unwrap_or_default();
            let span = t.get("id").map_or(t.span, |n| n.span);
            if !id.is_empty() {
                idx.ids.insert(id.clone());
            }
            idx.tasks.push(TaskInfo {
                index: i,
                id,
                title: trimmed_text(t.get("title")),
                status: trimmed_text(t.get("status")),
                dependencies,
                span,
            });
        }
        idx
    }

    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Up to `limit` plan ids closest to `id` (see [`closest_ids`]). Used for "did you mean"
    /// hints.
    pub fn closest(&self, id: &str, limit: usize) -> Vec<String> {
        let ids: Vec<&str> = self.tasks.iter().map(|t| t.id.as_str()).collect();
        closest_ids(id, &ids, limit)
    }
}

/// Up to `limit` of `known` closest to `id`, for every "did you mean": those containing it or
/// contained in it first (ignoring case), then by edit distance (at most a third of the id's
/// length), ties in plan order.
///
/// A gate may ask this for every one of a hundred thousand entries against a plan of
/// thousands of tasks, so no pair allocates, and a pair whose lengths or characters differ
/// too much for any of the two tests is set aside before either runs.
pub fn closest_ids<S: AsRef<str>>(id: &str, known: &[S], limit: usize) -> Vec<String> {
    let query = Folded::new(id);
    let max = (query.chars.len() / 3).max(1);
    let mut rows = (Vec::new(), Vec::new());
    let mut scored: Vec<(usize, usize, &str)> = Vec::new();
    for (i, k) in known.iter().map(AsRef::as_ref).enumerate() {
        if k.is_empty() {
            continue;
        }
        let (k_len, k_sig) = char_signature(k);
        let within = |a: &str, a_sig: u64, b: &str, b_sig: u64| {
            a_sig & !b_sig == 0 && contains_folded(b.as_bytes(), a.as_bytes())
        };
        if within(id, query.sig, k, k_sig) || within(k, k_sig, id, query.sig) {
            scored.push((0, i, k));
            continue;
        }
        // Each edit changes the length by at most one, and adds or drops at most two
        // characters from the set of characters present.
        if k_len.abs_diff(query.chars.len()) > max
            || (query.sig ^ k_sig).count_ones() as usize > 2 * max
        {
            continue;
        }
        if let Some(d) = edit_distance_within(&query.chars, k, max, &mut rows) {
            scored.push((d, i, k));
        }
    }
    scored.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, _, k) in scored {
        if out.len() == limit {
            break;
        }
        if !out.iter().any(|o| o == k) {
            out.push(k.to_string());
        }
    }
    out
}

/// An id with ASCII letters in lower case, as characters, and its [`char_signature`].
struct Folded {
    chars: Vec<char>,
    sig: u64,
}

impl Folded {
    fn new(id: &str) -> Self {
        Folded {
            chars: id.chars().map(|c| c.to_ascii_lowercase()).collect(),
            sig: char_signature(id).1,
        }
    }
}

/// The number of characters of `s`, and the set of its characters (ASCII letters in lower
/// case) as 64 bits, each character setting bit `code % 64`.
fn char_signature(s: &str) -> (usize, u64) {
    s.chars().fold((0, 0), |(n, sig), c| {
        (n + 1, sig | 1 << (u32::from(c.to_ascii_lowercase()) % 64))
    })
}

/// Whether `needle` occurs in `hay`, ASCII letters compared without case (the same as
/// comparing the texts after `to_ascii_lowercase`, which changes ASCII bytes only).
fn contains_folded(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || hay
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// The Levenshtein distance over characters between `a` (already folded) and `b` (ASCII
/// letters folded here), if it is at most `max`. `rows` are reused between calls.
fn edit_distance_within(
    a: &[char],
    b: &str,
    max: usize,
    rows: &mut (Vec<usize>, Vec<usize>),
) -> Option<usize> {
    let (prev, cur) = rows;
    prev.clear();
    prev.extend(0..=b.chars().count());
    for (i, ca) in a.iter().enumerate() {
        cur.clear();
        cur.push(i + 1);
        for (j, cb) in b.chars().enumerate() {
            let cost = usize::from(*ca != cb.to_ascii_lowercase());
            let d = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            cur.push(d);
        }
        // Every later row is at least this row's smallest value.
        if cur.iter().min().is_some_and(|&m| m > max) {
            return None;
        }
        std::mem::swap(prev, cur);
    }
    prev.last().copied().filter(|&d| d <= max)
}

/// The handoff's replayId value (trimmed), which scopes S2 to the current run.
pub fn handoff_replay_scope(handoff: Option<&Node>) -> String {
    trimmed_text(
        handoff
            .and_then(|h| h.get("replayId"))
            .and_then(|r| r.get("value")),
    )
}

#[cfg(test)]
mod tests {
    use super::closest_ids;
    use proptest::prelude::*;

    /// The definition [`closest_ids`] implements, written plainly: lower-case copies,
    /// substring tests and a full edit distance for every pair.
    fn closest_plainly(id: &str, known: &[String], limit: usize) -> Vec<String> {
        fn distance(a: &str, b: &str) -> usize {
            let b: Vec<char> = b.chars().collect();
            let mut prev: Vec<usize> = (0..=b.len()).collect();
            for (i, ca) in a.chars().enumerate() {
                let mut cur = vec![i + 1; b.len() + 1];
                for (j, cb) in b.iter().enumerate() {
                    let cost = usize::from(ca != *cb);
                    cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
                }
                prev = cur;
            }
            prev[b.len()]
        }
        let id_l = id.to_ascii_lowercase();
        let max = (id.chars().count() / 3).max(1);
        let mut scored: Vec<(usize, usize, &str)> = Vec::new();
        for (i, k) in known.iter().enumerate().filter(|(_, k)| !k.is_empty()) {
            let k_l = k.to_ascii_lowercase();
            if k_l.contains(&id_l) || id_l.contains(&k_l) {
                scored.push((0, i, k));
            } else {
                let d = distance(&id_l, &k_l);
                if d <= max {
                    scored.push((d, i, k));
                }
            }
        }
        scored.sort();
        let mut out: Vec<String> = Vec::new();
        for (_, _, k) in scored {
            if out.len() < limit && !out.iter().any(|o| o == k) {
                out.push(k.to_string());
            }
        }
        out
    }

    #[test]
    fn near_ids_are_suggested_and_far_ones_are_not() {
        let known: Vec<String> = ["task-1", "task-12", "Build-API", "docs", "tåsk-2"]
            .map(String::from)
            .to_vec();
        // "task-13" contains "task-1": containing comes before distance.
        assert_eq!(closest_ids("task-13", &known, 3), ["task-1", "task-12"]);
        assert_eq!(closest_ids("build-api", &known, 3), ["Build-API"]);
        assert_eq!(closest_ids("TASK", &known, 2), ["task-1", "task-12"]);
        assert_eq!(closest_ids("nope-65", &known, 3), Vec::<String>::new());
        assert_eq!(closest_ids("tåsk-3", &known, 3), ["tåsk-2", "task-1"]);
    }

    proptest! {
        #[test]
        fn the_filters_never_change_the_answer(
            id in "[a-dA-D0-9å-]{0,9}",
            known in prop::collection::vec("[a-dA-D0-9å-]{0,9}", 0..12),
        ) {
            prop_assert_eq!(closest_ids(&id, &known, 3), closest_plainly(&id, &known, 3));
        }
    }
}
