//! The plan model the gates and the write side share: a plan's tasks in order, indexed by id,
//! read from the parsed YAML with their positions.

use std::collections::HashSet;

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
    pub ids: HashSet<String>,
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

    /// Up to `limit` plan ids that contain, or are contained in, `id`; else equal ignoring
    /// case. Used for "did you mean" hints.
    pub fn closest(&self, id: &str, limit: usize) -> Vec<String> {
        let mut m: Vec<String> = self
            .tasks
            .iter()
            .filter(|t| !t.id.is_empty() && (t.id.contains(id) || id.contains(t.id.as_str())))
            .map(|t| t.id.clone())
            .collect();
        if m.is_empty() {
            m = self
                .tasks
                .iter()
                .filter(|t| !t.id.is_empty() && t.id.eq_ignore_ascii_case(id))
                .map(|t| t.id.clone())
                .collect();
        }
        m.sort();
        m.dedup();
        m.truncate(limit);
        m
    }
}

/// The handoff's replayId value (trimmed), which scopes S2 to the current run.
pub fn handoff_replay_scope(handoff: Option<&Node>) -> String {
    trimmed_text(
        handoff
            .and_then(|h| h.get("replayId"))
            .and_then(|r| r.get("value")),
    )
}
