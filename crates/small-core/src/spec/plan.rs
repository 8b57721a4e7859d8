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
pub fn closest_ids<S: AsRef<str>>(id: &str, known: &[S], limit: usize) -> Vec<String> {
    let id_l = id.to_ascii_lowercase();
    let max = (id.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, usize, &str)> = known
        .iter()
        .map(AsRef::as_ref)
        .enumerate()
        .filter(|(_, k)| !k.is_empty())
        .filter_map(|(i, k)| {
            let k_l = k.to_ascii_lowercase();
            if k_l == id_l || k_l.contains(&id_l) || id_l.contains(&k_l) {
                return Some((0, i, k));
            }
            let d = edit_distance(&id_l, &k_l);
            (d <= max).then_some((d, i, k))
        })
        .collect();
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

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
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

/// The handoff's replayId value (trimmed), which scopes S2 to the current run.
pub fn handoff_replay_scope(handoff: Option<&Node>) -> String {
    trimmed_text(
        handoff
            .and_then(|h| h.get("replayId"))
            .and_then(|r| r.get("value")),
    )
}
