//! The plan model the gates and the write side share: a plan's tasks in order, indexed by id,
//! read from the parsed YAML with their positions.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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
    match node.map(|n| &n.value) {
        // A string is trimmed where it is, not copied first.
        Some(Value::Str(s)) => super::trim(s).to_string(),
        _ => node
            .and_then(scalar_text)
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
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
    /// The distinct non-empty ids, numbered in plan order.
    slots: Arc<Slots>,
}

/// The distinct task ids of one plan, numbered in plan order: what a [`TaskSet`] counts by.
#[derive(Debug, Default)]
struct Slots {
    by_id: HashMap<String, u32, foldhash::fast::RandomState>,
    ids: Vec<String>,
}

/// The number of a plan task id in its [`PlanIndex`] (see [`PlanIndex::slot`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot(u32);

impl PlanIndex {
    pub fn from_plan(plan: Option<&Node>) -> PlanIndex {
        let mut idx = PlanIndex::default();
        let Some(tasks) = plan.and_then(|p| p.get("tasks")).and_then(Node::as_seq) else {
            return idx;
        };
        let mut slots = Slots::default();
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
            if !id.is_empty() && !slots.by_id.contains_key(&id) {
                slots.by_id.insert(id.clone(), slots.ids.len() as u32);
                slots.ids.push(id.clone());
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
        idx.slots = Arc::new(slots);
        idx
    }

    pub fn contains(&self, id: &str) -> bool {
        self.slots.by_id.contains_key(id)
    }

    /// The number of `id` among the plan's distinct ids, when the plan has it: one lookup
    /// that both answers [`PlanIndex::contains`] and files the id in any of this plan's
    /// [`TaskSet`]s.
    pub fn slot(&self, id: &str) -> Option<Slot> {
        self.slots.by_id.get(id).map(|&n| Slot(n))
    }

    /// The distinct non-empty ids, in plan order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.slots.ids.iter().map(String::as_str)
    }

    /// Up to `limit` plan ids closest to `id` (see [`closest_ids`]). Used for "did you mean"
    /// hints.
    pub fn closest(&self, id: &str, limit: usize) -> Vec<String> {
        let ids: Vec<&str> = self.tasks.iter().map(|t| t.id.as_str()).collect();
        closest_ids(id, &ids, limit)
    }
}

/// A set of task ids gathered from a progress log. The ids of the plan it was made for are
/// bits numbered by their [`Slot`], so that filing an entry's task costs no lookup beyond the
/// plan's, and the sets of a log checked in parts are joined word by word; any other id is
/// kept by name.
#[derive(Clone, Default)]
pub struct TaskSet {
    slots: Arc<Slots>,
    bits: Vec<u64>,
    other: IdSet,
}

impl TaskSet {
    /// An empty set for the ids of `plan`.
    pub fn new(plan: &PlanIndex) -> TaskSet {
        TaskSet {
            slots: Arc::clone(&plan.slots),
            bits: Vec::new(),
            other: IdSet::default(),
        }
    }

    /// `ids`, filed by the slots of `plan`.
    pub fn from_ids(plan: &PlanIndex, ids: impl IntoIterator<Item = String>) -> TaskSet {
        let mut set = TaskSet::new(plan);
        for id in ids {
            set.insert_name(&id);
        }
        set
    }

    /// Add `id`, looked up in this set's plan.
    fn insert_name(&mut self, id: &str) {
        let slot = self.slots.by_id.get(id).map(|&n| Slot(n));
        self.insert(slot, id);
    }

    /// Add `id`, whose slot in this set's plan is `slot` (from [`PlanIndex::slot`] of that
    /// plan: `None` for an id it does not have).
    pub fn insert(&mut self, slot: Option<Slot>, id: &str) {
        match slot {
            Some(slot) => self.insert_slot(slot),
            None => {
                if !self.other.contains(id) {
                    self.other.insert(id.to_string());
                }
            }
        }
    }

    fn insert_slot(&mut self, Slot(n): Slot) {
        debug_assert!(
            (n as usize) < self.slots.ids.len(),
            "a slot of another plan"
        );
        let (word, bit) = (n as usize / 64, n % 64);
        if self.bits.len() <= word {
            self.bits.resize(self.slots.ids.len().div_ceil(64), 0);
        }
        self.bits[word] |= 1 << bit;
    }

    pub fn contains(&self, id: &str) -> bool {
        match self.slots.by_id.get(id) {
            Some(&n) => self
                .bits
                .get(n as usize / 64)
                .is_some_and(|w| w & (1 << (n % 64)) != 0),
            None => self.other.contains(id),
        }
    }

    /// The ids: the plan's in plan order, then the others in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let known = self.bits.iter().enumerate().flat_map(move |(w, &word)| {
            (0..64)
                .filter(move |b| word & (1u64 << b) != 0)
                .map(move |b| self.slots.ids[w * 64 + b].as_str())
        });
        known.chain(self.other.iter().map(String::as_str))
    }

    pub fn len(&self) -> usize {
        let known: u32 = self.bits.iter().map(|w| w.count_ones()).sum();
        known as usize + self.other.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add every id of `from`: word by word when both sets count by the same plan.
    pub fn extend(&mut self, from: TaskSet) {
        if self.is_empty() {
            *self = from;
        } else if Arc::ptr_eq(&self.slots, &from.slots) {
            if self.bits.len() < from.bits.len() {
                self.bits.resize(from.bits.len(), 0);
            }
            for (w, f) in self.bits.iter_mut().zip(&from.bits) {
                *w |= f;
            }
            self.other.extend(from.other);
        } else {
            for id in from.iter() {
                self.insert_name(id);
            }
        }
    }
}

/// Sets are equal when they hold the same ids, whatever plan they count by.
impl PartialEq for TaskSet {
    fn eq(&self, other: &TaskSet) -> bool {
        self.len() == other.len() && self.iter().all(|id| other.contains(id))
    }
}

impl Eq for TaskSet {}

impl std::fmt::Debug for TaskSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ids: Vec<&str> = self.iter().collect();
        ids.sort_unstable();
        f.debug_set().entries(ids).finish()
    }
}

/// Ids kept by name, for no plan.
impl FromIterator<String> for TaskSet {
    fn from_iter<I: IntoIterator<Item = String>>(ids: I) -> TaskSet {
        TaskSet {
            other: ids.into_iter().collect(),
            ..TaskSet::default()
        }
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
    use super::{closest_ids, IdSet, PlanIndex, TaskSet};
    use proptest::prelude::*;

    fn plan_of(ids: &[&str]) -> PlanIndex {
        let mut text = String::from("tasks:\n");
        for id in ids {
            text.push_str(&format!("  - id: \"{id}\"\n"));
        }
        let doc = crate::yaml::parse_str(&text, &crate::yaml::Limits::default()).unwrap();
        PlanIndex::from_plan(Some(&doc.root))
    }

    #[test]
    fn plan_ids_have_slots_in_plan_order() {
        let plan = plan_of(&["b", " a ", "b", ""]);
        assert_eq!(plan.ids().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(plan.tasks.len(), 4);
        assert!(plan.contains("a") && plan.contains("b") && !plan.contains(""));
        assert!(plan.slot("a").is_some() && plan.slot("c").is_none());
        assert_ne!(plan.slot("a"), plan.slot("b"));
    }

    proptest! {
        // A task set holds exactly the ids put in it, whether the plan has them or not,
        // and sets joined word by word, joined across plans, or compared across plans
        // behave as sets of names.
        #[test]
        fn task_sets_are_sets_of_names(
            n in 0usize..150,
            picks in proptest::collection::vec((0usize..200, any::<bool>()), 0..80),
        ) {
            let names: Vec<String> = (0..n).map(|i| format!("task-{i}")).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let plan = plan_of(&refs);
            let other_plan = plan_of(&refs[..n / 2]);
            let (mut a, mut b) = (TaskSet::new(&plan), TaskSet::new(&plan));
            let mut c = TaskSet::new(&other_plan);
            let (mut want_a, mut want_b) = (IdSet::default(), IdSet::default());
            for (i, to_a) in picks {
                let id = format!("task-{i}");
                let (set, want) = if to_a { (&mut a, &mut want_a) } else { (&mut b, &mut want_b) };
                set.insert(plan.slot(&id), &id);
                c.insert(other_plan.slot(&id), &id);
                want.insert(id);
            }
            let names_of = |s: &TaskSet| s.iter().map(String::from).collect::<IdSet>();
            prop_assert_eq!(names_of(&a), want_a.clone());
            prop_assert_eq!(a.len(), want_a.len());
            for i in 0..200 {
                let id = format!("task-{i}");
                prop_assert_eq!(a.contains(&id), want_a.contains(&id));
            }
            let all: IdSet = want_a.union(&want_b).cloned().collect();
            let mut joined = a.clone();
            joined.extend(b.clone());
            prop_assert_eq!(names_of(&joined), all.clone());
            // Across plans, and into an empty set.
            let mut across = TaskSet::new(&other_plan);
            across.insert(other_plan.slot("task-0"), "task-0");
            across.extend(a.clone());
            across.extend(b.clone());
            let mut with_first: IdSet = all.clone();
            with_first.insert("task-0".into());
            prop_assert_eq!(names_of(&across), with_first);
            prop_assert_eq!(&c, &joined);
            prop_assert_eq!(c.is_empty(), all.is_empty());
        }
    }

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
