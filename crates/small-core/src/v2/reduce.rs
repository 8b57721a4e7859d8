//! The event graph's structural rules and the reducer that folds events into [`State`].

use std::collections::{BTreeMap, BTreeSet};

/// Maps keyed by event and task ids: foldhash, several times faster than SipHash on the
/// 100 000 ids of a large workspace (and seeded per process).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::diag::Diagnostic;
use crate::v2::load::{Event, Store};

/// One task as the events leave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub alias: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    pub revision: i64,
    pub status: String,
    /// The acceptance criteria of the task's definition in force.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_digests: Vec<String>,
    #[serde(skip)]
    pub policy_revision: String,
    /// The source the task was defined from, or its selected outcome's candidate.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_digest: String,
    /// The transitions that attest the task's outcome at its current revision (those not
    /// stale), in event order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attestations: Vec<String>,
    /// How many transitions attest it: `attestations.len()`, kept where the list is not
    /// (a [`crate::v2::snapshot::Snapshot`] holds counts only).
    #[serde(skip)]
    pub attestation_count: usize,
}

/// A session and what its events say about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    pub created_at: String,
    pub events: usize,
    pub closed: bool,
    /// Taken over by another session (an `ownership_taken_over` event of scope `session`
    /// names it as `prior_session`): it may no longer write, closed or not.
    pub superseded: bool,
}

impl SessionState {
    /// `superseded`, `closed` or `active`: a take-over outranks a close, as in the
    /// reference's session list.
    pub fn status(&self) -> &'static str {
        if self.superseded {
            "superseded"
        } else if self.closed {
            "closed"
        } else {
            "active"
        }
    }

    /// Neither closed nor superseded: the session may still write.
    pub fn is_active(&self) -> bool {
        !self.closed && !self.superseded
    }
}

/// One event of the timeline (topological order, ties by event id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEvent {
    pub id: String,
    pub session_id: String,
    pub sequence: i64,
    pub kind: String,
    pub occurred_at: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
}

/// An incompatible pair (or set) of concurrent changes no event has resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    pub id: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    pub heads: Vec<String>,
    pub message: String,
    /// What each head says, in the order of `heads` (the outcome, mode or policy it
    /// records and its session), for the steps that resolve the conflict. Not part of the
    /// JSON: the reference's conflict objects have the members above.
    #[serde(skip)]
    pub head_summaries: Vec<String>,
}

/// A receipt by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptState {
    pub digest: String,
    pub strength: String,
    pub availability: String,
}

/// The state of a 2.0.0 workspace, built once from its records: the value the front ends
/// read (status, check) instead of re-reading files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub project_id: String,
    pub mode: String,
    pub policy_revision: String,
    /// SHA-256 over the sorted `event_id:digest` lines of every event: names the event set.
    pub frontier: String,
    pub tasks: Vec<Task>,
    pub sessions: Vec<SessionState>,
    pub receipts: Vec<ReceiptState>,
    pub timeline: Vec<TimelineEvent>,
    /// The timeline as positions in the store's list of events (each event once): what
    /// the readers that show events walk, without the timeline's copies of their ids. Not
    /// kept in the cache.
    #[serde(skip)]
    pub order: Vec<usize>,
    pub conflicts: Vec<Conflict>,
    /// The latest handoff summary (by timeline order), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
}

impl State {
    /// The task to work on, by the queue's one rule ([`crate::spec::queue::preferred`]).
    pub fn next_task(&self) -> Option<&Task> {
        crate::spec::queue::preferred(&self.tasks)
    }
}

impl Task {
    /// A task its first definition has not been applied to yet.
    pub(crate) fn pending(id: &str) -> Task {
        Task {
            id: id.to_string(),
            alias: String::new(),
            title: String::new(),
            revision: 0,
            status: "pending".into(),
            acceptance: Vec::new(),
            dependencies: Vec::new(),
            evidence_digests: Vec::new(),
            policy_revision: String::new(),
            source_digest: String::new(),
            attestations: Vec::new(),
            attestation_count: 0,
        }
    }
}

impl crate::spec::queue::QueueTask for Task {
    fn id(&self) -> &str {
        &self.id
    }
    fn alias(&self) -> &str {
        &self.alias
    }
    fn status(&self) -> &str {
        &self.status
    }
    fn dependencies(&self) -> &[String] {
        &self.dependencies
    }
}

/// The frontier of a set of events.
///
/// SHA-256 over the sorted, distinct `event_id:digest` lines joined by newlines. The lines are
/// never built: pairs are sorted in the order their lines sort in and fed to the hash piece
/// by piece (at 100 000 events the lines and their join were 25 MB).
pub fn frontier<'a>(events: impl IntoIterator<Item = &'a Event>) -> String {
    let mut pairs: Vec<(&str, &str)> = events
        .into_iter()
        .map(|e| (e.id.as_str(), e.digest.as_str()))
        .collect();
    pairs.sort_unstable_by(line_order);
    // A set: an event read twice names the same frontier.
    pairs.dedup_by(|a, b| line_order(a, b).is_eq());
    let mut h = Sha256::new();
    for (i, (id, digest)) in pairs.iter().enumerate() {
        if i > 0 {
            h.update(b"\n");
        }
        h.update(id.as_bytes());
        h.update(b":");
        h.update(digest.as_bytes());
    }
    hex::encode(h.finalize())
}

/// The bytes of the line `id:digest` of a pair.
fn line<'b>(p: &(&'b str, &'b str)) -> impl Iterator<Item = u8> + 'b {
    p.0.bytes().chain(std::iter::once(b':')).chain(p.1.bytes())
}

/// The order of two pairs' `id:digest` lines, without building them: the ids' bytes decide
/// where they differ within the shorter id, the digests when the ids are equal, and the
/// lines byte by byte only when one id begins the other. Sorting 100 000 pairs byte by byte
/// was a fifth of `check --strict`'s time after reading.
fn line_order(a: &(&str, &str), b: &(&str, &str)) -> std::cmp::Ordering {
    let (x, y) = (a.0.as_bytes(), b.0.as_bytes());
    let n = x.len().min(y.len());
    match x[..n].cmp(&y[..n]) {
        std::cmp::Ordering::Equal if x.len() == y.len() => a.1.cmp(b.1),
        std::cmp::Ordering::Equal => line(a).cmp(line(b)),
        o => o,
    }
}

fn conflict_id(kind: &str, task: &str, heads: &[String]) -> String {
    let sum = Sha256::digest(format!("{kind}\n{task}\n{}", heads.join("\n")).as_bytes());
    format!("conflict_{}", hex::encode(&sum[..16]))
}

/// The structural rules of the event graph but the last: sessions exist, per-session
/// sequences are gapless and linked by previous_event, parents exist. The last, no cycle, is
/// [`cycle_diagnostic`]'s, needed only when the reducer's order leaves events out
/// ([`Reduced::whole`]).
pub(crate) fn graph_rules(store: &Store) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let ids: HashMap<&str, &Event> = store.events.iter().map(|e| (e.id.as_str(), e)).collect();
    let sessions: BTreeSet<&str> = store.sessions.iter().map(|s| s.id.as_str()).collect();
    let mut by_session: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in &store.events {
        by_session.entry(e.session_id.as_str()).or_default().push(e);
    }
    for (sid, mut evs) in by_session {
        if !sessions.contains(sid)
            && !store.diagnostics.iter().any(|d| {
                d.file
                    .as_deref()
                    .is_some_and(|f| f.ends_with(&format!("sessions/{sid}.json")))
            })
        {
            out.push(
                Diagnostic::error(
                    "V2-SESSION",
                    format!("{} event(s) belong to session {sid}, which has no session record", evs.len()),
                )
                .in_file(format!(".small/sessions/{sid}.json"))
                .with_help("restore the session record from version control; events cannot exist without their session"),
            );
        }
        evs.sort_by(|a, b| a.sequence.cmp(&b.sequence).then_with(|| a.id.cmp(&b.id)));
        let mut expected = 1;
        let mut prev: Option<&Event> = None;
        for e in evs {
            if let Some(p) = prev.filter(|p| p.sequence == e.sequence) {
                out.push(
                    Diagnostic::error(
                        "V2-SEQ",
                        format!("session {sid} has two events with sequence {}: {} and {}", e.sequence, p.id, e.id),
                    )
                    .in_file(e.file())
                    .with_help("a session's chain cannot fork; remove the event that was not written by the session"),
                );
                continue;
            }
            let gap = e.sequence != expected;
            if gap && !store.unreadable_events.contains(&e.previous_event) {
                out.push(
                    Diagnostic::error(
                        "V2-SEQ",
                        format!(
                            "session {sid} skips from sequence {} to {}: event(s) missing",
                            expected - 1,
                            e.sequence
                        ),
                    )
                    .in_file(e.file())
                    .with_help("restore the missing event files from version control; events are never deleted"),
                );
            }
            let want_prev = prev.map(|p| p.id.as_str()).unwrap_or("");
            if e.sequence == 1 && !e.previous_event.is_empty() {
                out.push(
                    Diagnostic::error(
                        "V2-SEQ",
                        format!("event {} is sequence 1 but names a previous_event", e.id),
                    )
                    .in_file(e.file())
                    .with_help("restore the record from version control"),
                );
            } else if e.sequence > 1 && e.previous_event != want_prev {
                let what = if e.previous_event.is_empty() {
                    "names no previous_event".to_string()
                } else if ids.contains_key(e.previous_event.as_str()) {
                    format!(
                        "names previous_event {}, not the session's preceding event",
                        e.previous_event
                    )
                } else {
                    format!(
                        "names previous_event {}, which does not exist",
                        e.previous_event
                    )
                };
                // A link into a gap already reported is the same damage.
                let dangling = !ids.contains_key(e.previous_event.as_str());
                let reported =
                    store.unreadable_events.contains(&e.previous_event) || (gap && dangling);
                if !reported {
                    out.push(
                        Diagnostic::error("V2-SEQ", format!("event {} (sequence {}) {what}", e.id, e.sequence))
                            .in_file(e.file())
                            .with_help("restore the session's events from version control; each event links to the one before it"),
                    );
                }
            }
            expected = e.sequence + 1;
            prev = Some(e);
        }
    }
    for e in &store.events {
        for p in &e.parents {
            if !ids.contains_key(p.as_str()) && !store.unreadable_events.contains(p) {
                out.push(
                    Diagnostic::error("V2-PARENT", format!("event {} names parent {p}, which does not exist", e.id))
                        .in_file(e.file())
                        .with_path("/parents")
                        .with_help("restore the parent event from version control (or merge the branch that has it)"),
                );
            }
        }
    }
    out
}

/// The last structural rule: no event is its own ancestor.
pub(crate) fn cycle_diagnostic(store: &Store) -> Option<Diagnostic> {
    let e = cycle(store)?;
    Some(
        Diagnostic::error("V2-CYCLE", format!("event {} is its own ancestor", e.id))
            .in_file(e.file())
            .with_help("the event graph must be acyclic; restore the records from version control"),
    )
}

fn cycle(store: &Store) -> Option<&Event> {
    let ids: HashMap<&str, usize> = store
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let mut state = vec![0u8; store.events.len()];
    for start in 0..store.events.len() {
        if state[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let parents = store.events[node].all_parents();
            if let Some(p) = parents.get(*next) {
                *next += 1;
                if let Some(&pi) = ids.get(p) {
                    match state[pi] {
                        1 => return Some(&store.events[pi]),
                        0 => {
                            state[pi] = 1;
                            stack.push((pi, 0));
                        }
                        _ => {}
                    }
                }
            } else {
                state[node] = 2;
                stack.pop();
            }
        }
    }
    None
}

struct Graph<'a> {
    /// The events in topological order (ties by event id), each id once.
    events: Vec<&'a Event>,
    /// Every distinct id, to its position in `events` (`u32::MAX`: on a cycle, dropped).
    index: HashMap<&'a str, u32>,
    /// The chain of each event and its position on it: the events are split into chains
    /// (paths that follow one parent link each, a session's `previous_event` first), so
    /// that an event's ancestry is, per other chain, the furthest position it reaches.
    chain: Vec<(u32, u32)>,
    /// Per event, the furthest position reached on every other chain (sorted by chain). An
    /// event whose only parent is its predecessor on its chain shares that one's clock.
    clock: Vec<std::rc::Rc<Vec<(u32, u32)>>>,
    /// Every record's event is in the order: no id read twice, none on or after a cycle.
    whole: bool,
}

/// Lists of event positions, one per event, in one allocation (`start[i]..start[i + 1]`
/// of `items`): 100 000 events' parents and children without 200 000 small vectors.
struct Lists {
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Lists {
    fn of(&self, i: usize) -> &[u32] {
        &self.items[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

impl<'a> Graph<'a> {
    /// Topological order (ties by event id); events on a cycle are dropped.
    ///
    /// Everything after the one lookup of each event's parents by id works on positions:
    /// with ids as keys (a map per step, a sorted set of ids as the ready queue) this was
    /// 0.3 s of `check --strict` at 100 000 events.
    fn new(store: &'a Store) -> Graph<'a> {
        let mut all: Vec<&Event> = store.events.iter().collect();
        // Stable: of two records with one id, the first read is kept.
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all.dedup_by(|a, b| a.id == b.id);
        let n = all.len();
        let distinct = n == store.events.len();
        let mut index: HashMap<&str, u32> = HashMap::default();
        index.reserve(n);
        for (i, e) in all.iter().enumerate() {
            index.insert(e.id.as_str(), i as u32);
        }
        // Each event's parents (`all_parents`: parents, then previous_event; the ones that
        // exist, each once) and its predecessor on its session's chain.
        let mut parents = Lists {
            start: Vec::with_capacity(n + 1),
            items: Vec::with_capacity(n),
        };
        let mut pred = vec![u32::MAX; n];
        for (i, e) in all.iter().enumerate() {
            parents.start.push(parents.items.len() as u32);
            let from = parents.items.len();
            for p in e.parents.iter().chain([&e.previous_event]) {
                if p.is_empty() {
                    continue;
                }
                if let Some(&pi) = index.get(p.as_str()) {
                    if !parents.items[from..].contains(&pi) {
                        parents.items.push(pi);
                    }
                }
            }
            if let Some(&pi) = index.get(e.previous_event.as_str()) {
                if !e.previous_event.is_empty() {
                    pred[i] = pi;
                }
            }
        }
        parents.start.push(parents.items.len() as u32);
        // Children, by counting.
        let mut indeg = vec![0u32; n];
        let mut count = vec![0u32; n + 1];
        for (i, d) in indeg.iter_mut().enumerate() {
            let ps = parents.of(i);
            *d = ps.len() as u32;
            for &p in ps {
                count[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut children = Lists {
            start: count.clone(),
            items: vec![0; parents.items.len()],
        };
        for i in 0..n {
            for &p in parents.of(i) {
                let at = &mut count[p as usize];
                children.items[*at as usize] = i as u32;
                *at += 1;
            }
        }
        // Kahn's algorithm; `all` is sorted by id, so the smallest position is the
        // smallest id.
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<u32>> = (0..n as u32)
            .filter(|&i| indeg[i as usize] == 0)
            .map(std::cmp::Reverse)
            .collect();
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut at = vec![u32::MAX; n];
        while let Some(std::cmp::Reverse(i)) = ready.pop() {
            at[i as usize] = order.len() as u32;
            order.push(i);
            for &c in children.of(i as usize) {
                indeg[c as usize] -= 1;
                if indeg[c as usize] == 0 {
                    ready.push(std::cmp::Reverse(c));
                }
            }
        }
        // Chains and clocks, in topological order (every parent is done before its child).
        let mut chain: Vec<(u32, u32)> = Vec::with_capacity(order.len());
        let mut clock: Vec<std::rc::Rc<Vec<(u32, u32)>>> = Vec::with_capacity(order.len());
        let mut extended = vec![false; order.len()];
        let mut chains = 0u32;
        let empty = std::rc::Rc::new(Vec::new());
        for &i in &order {
            // Continue the chain of the previous event of the session, unless another event
            // already did (a fork): then start a chain.
            let p = pred[i as usize];
            let pred = (p != u32::MAX)
                .then(|| at[p as usize] as usize)
                .filter(|&p| !extended[p]);
            let (c, pos) = match pred {
                Some(p) => {
                    extended[p] = true;
                    (chain[p].0, chain[p].1 + 1)
                }
                None => {
                    chains += 1;
                    (chains - 1, 0)
                }
            };
            chain.push((c, pos));
            // Parents of an event in the order are in the order before it.
            let others = parents
                .of(i as usize)
                .iter()
                .map(|&q| at[q as usize] as usize)
                .filter(|&q| Some(q) != pred);
            let ck = match (pred, others.clone().next().is_none()) {
                (Some(p), true) => std::rc::Rc::clone(&clock[p]),
                (None, true) => std::rc::Rc::clone(&empty),
                _ => {
                    let mut m: BTreeMap<u32, u32> = BTreeMap::new();
                    let mut reach = |ch: u32, at: u32| {
                        let v = m.entry(ch).or_insert(at);
                        *v = (*v).max(at);
                    };
                    for p in pred.into_iter().chain(others) {
                        for &(ch, at) in clock[p].iter() {
                            reach(ch, at);
                        }
                        reach(chain[p].0, chain[p].1);
                    }
                    m.remove(&c);
                    std::rc::Rc::new(m.into_iter().collect())
                }
            };
            clock.push(ck);
        }
        for v in index.values_mut() {
            *v = at[*v as usize];
        }
        Graph {
            whole: distinct && order.len() == n,
            events: order.iter().map(|&i| all[i as usize]).collect(),
            index,
            chain,
            clock,
        }
    }

    /// The position of event `id` in the order, if it is there.
    fn position(&self, id: &str) -> Option<usize> {
        self.index
            .get(id)
            .filter(|&&i| i != u32::MAX)
            .map(|&i| i as usize)
    }

    fn is_ancestor(&self, a: &str, d: &str) -> bool {
        match (self.position(a), self.position(d)) {
            (Some(ai), Some(di)) => self.is_ancestor_at(ai, di),
            _ => false,
        }
    }

    /// Whether event `a` is reachable through parents from event `d` (both positions in
    /// `events`).
    fn is_ancestor_at(&self, a: usize, d: usize) -> bool {
        let ((ca, pa), (cd, pd)) = (self.chain[a], self.chain[d]);
        if ca == cd {
            return pa < pd;
        }
        let ck = &self.clock[d];
        match ck.binary_search_by_key(&ca, |&(c, _)| c) {
            Ok(i) => ck[i].1 >= pa,
            Err(_) => false,
        }
    }

    fn concurrent(&self, a: &Event, b: &Event) -> bool {
        a.id != b.id && !self.is_ancestor(&a.id, &b.id) && !self.is_ancestor(&b.id, &a.id)
    }
}

fn transition_key(e: &Event) -> String {
    let mut ev = e.payload.strs_of("evidence_digests");
    ev.sort();
    let source = if e.source_digest.is_empty() {
        e.payload.str_of("candidate_digest").to_string()
    } else {
        e.source_digest.clone()
    };
    [
        e.task_id.clone(),
        e.task_revision.to_string(),
        e.payload.str_of("status").to_string(),
        e.policy_revision.clone(),
        source,
        ev.join(","),
    ]
    .join("\u{1}")
}

#[derive(Default)]
struct Conflicts(BTreeMap<String, Conflict>);

impl Conflicts {
    fn add(&mut self, kind: &str, task: &str, heads: Vec<String>, message: &str) {
        let mut heads: Vec<String> = heads.into_iter().filter(|h| !h.is_empty()).collect();
        heads.sort();
        heads.dedup();
        let id = conflict_id(kind, task, &heads);
        self.0.insert(
            id.clone(),
            Conflict {
                id,
                kind: kind.into(),
                task_id: task.into(),
                heads,
                message: message.into(),
                head_summaries: Vec::new(),
            },
        );
    }
}

/// Fold the events into the state. Conflicts are part of the state, not errors.
#[cfg(test)]
pub fn reduce(store: &Store) -> State {
    reduce_with(store, true)
}

/// [`reduce`], with the timeline or leaving it empty.
#[cfg(test)]
pub fn reduce_with(store: &Store, with_timeline: bool) -> State {
    let mut state = reduce_all(store, with_timeline).state;
    state.frontier = frontier(&store.events);
    state
}

/// What the reducer made of a store.
pub(crate) struct Reduced {
    /// The state, but for its frontier (left empty: [`frontier`] of the store's events,
    /// which needs nothing of the reduction and so can be computed beside it).
    pub state: State,
    /// The state's order holds every record's event: no id was read twice and none is on
    /// or after a cycle. When it does, the graph has no cycle.
    pub whole: bool,
}

/// [`reduce_with`] without the frontier, also saying whether its order holds every event.
pub(crate) fn reduce_all(store: &Store, with_timeline: bool) -> Reduced {
    let g = Graph::new(store);
    let profile = store.profile.clone().unwrap_or_default();
    let mut conflicts = Conflicts::default();
    let mut tasks: Vec<Task> = Vec::new();
    let mut tix: HashMap<String, usize> = HashMap::default();
    // Per task, its transitions and their positions in the order.
    let mut transitions: BTreeMap<&str, Vec<(usize, &Event)>> = BTreeMap::new();
    let mut modes: Vec<&Event> = Vec::new();
    let mut policies: Vec<&Event> = Vec::new();
    let mut resolutions: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
    let mut closed: BTreeSet<&str> = BTreeSet::new();
    let mut superseded: BTreeSet<&str> = BTreeSet::new();
    let mut claims: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    let mut takeovers: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    let mut handoff = None;
    let mut defs: BTreeMap<String, &Event> = BTreeMap::new();
    for (at, &e) in g.events.iter().enumerate() {
        match e.kind.as_str() {
            "session_closed" => {
                closed.insert(&e.session_id);
            }
            "handoff_recorded" => handoff = Some(e.payload.str_of("summary").to_string()),
            "ownership_claimed" | "ownership_taken_over" => {
                let prior = e.payload.str_of("prior_session");
                if e.kind == "ownership_taken_over"
                    && e.task_id.is_empty()
                    && e.payload.str_of("scope") == "session"
                {
                    superseded.insert(prior);
                    takeovers.entry(prior).or_default().push(e);
                } else {
                    claims.entry(e.task_id.as_str()).or_default().push(e);
                }
            }
            "task_created" | "task_updated" => {
                if e.task_id.is_empty() {
                    conflicts.add(
                        "task_identity",
                        "",
                        vec![e.id.clone()],
                        "task event is missing task identity",
                    );
                    continue;
                }
                if e.kind == "task_updated" && !tix.contains_key(&e.task_id) {
                    conflicts.add(
                        "missing_task",
                        &e.task_id,
                        vec![e.id.clone()],
                        "task update has no task_created event",
                    );
                    continue;
                }
                if let Some(prev) = defs.get(&e.task_id) {
                    let same = |x: &Event| {
                        (
                            x.task_revision,
                            x.payload.str_of("title").to_string(),
                            x.payload.strs_of("acceptance"),
                            x.payload.strs_of("dependencies"),
                        )
                    };
                    if g.concurrent(prev, e)
                        && same(prev) != same(e)
                        && prev.task_revision == e.task_revision
                    {
                        conflicts.add(
                            "task_definition",
                            &e.task_id,
                            vec![prev.id.clone(), e.id.clone()],
                            "concurrent task definitions differ",
                        );
                    }
                }
                defs.insert(e.task_id.clone(), e);
                let i = *tix.entry(e.task_id.clone()).or_insert_with(|| {
                    tasks.push(Task::pending(&e.task_id));
                    tasks.len() - 1
                });
                apply_definition(&mut tasks[i], e);
            }
            "task_transitioned" => transitions.entry(&e.task_id).or_default().push((at, e)),
            "mode_changed" => modes.push(e),
            "policy_changed" => policies.push(e),
            "conflict_resolved" => resolutions
                .entry(e.payload.str_of("conflict_id").to_string())
                .or_default()
                .push(e),
            _ => {}
        }
    }
    let receipts: HashMap<&str, &str> = store
        .receipts
        .iter()
        .map(|r| (r.digest.as_str(), r.availability.as_str()))
        .collect();
    for (&task_id, claims) in &transitions {
        let Some(&i) = tix.get(task_id) else {
            conflicts.add(
                "missing_task",
                task_id,
                claims.iter().map(|(_, e)| e.id.clone()).collect(),
                "task transition has no task_created event",
            );
            continue;
        };
        let mut live: Vec<(usize, &Event)> = Vec::new();
        for &(at, c) in claims {
            let t = &tasks[i];
            if c.task_revision != t.revision
                || (!c.policy_revision.is_empty() && c.policy_revision != t.policy_revision)
            {
                conflicts.add(
                    "stale_evidence",
                    task_id,
                    vec![c.id.clone()],
                    "transition evidence targets a stale task or policy revision",
                );
                continue;
            }
            for d in c.payload.strs_of("evidence_digests") {
                if receipts.get(d.as_str()) != Some(&"verified") {
                    conflicts.add(
                        "evidence_unavailable",
                        task_id,
                        vec![c.id.clone()],
                        "referenced portable evidence is missing or not verified",
                    );
                }
            }
            live.push((at, c));
        }
        // Heads: transitions no other transition descends from.
        // Latest first: an event is a head unless it is an ancestor of a later head (an
        // ancestor of any later live event is one of a head's, by transitivity).
        let mut heads: Vec<(usize, &Event)> = Vec::new();
        for &(a, e) in live.iter().rev() {
            if !heads.iter().any(|&(h, _)| g.is_ancestor_at(a, h)) {
                heads.push((a, e));
            }
        }
        let heads: Vec<&Event> = heads.into_iter().rev().map(|(_, e)| e).collect();
        if !live.is_empty() {
            tasks[i].attestations = live.iter().map(|(_, e)| e.id.clone()).collect();
            tasks[i].attestation_count = live.len();
        }
        let Some(&last) = heads.last() else { continue };
        for h in &heads {
            if transition_key(h) != transition_key(last) {
                conflicts.add(
                    "task_outcome",
                    task_id,
                    heads.iter().map(|e| e.id.clone()).collect(),
                    "concurrent task outcomes are not semantically equivalent",
                );
                break;
            }
        }
        set_outcome(&mut tasks[i], last);
    }
    let mut mode = profile.mode.clone();
    if let Some(sel) = latest(
        &g,
        &modes,
        |a, b| a.payload.str_of("new_mode") != b.payload.str_of("new_mode"),
        &mut conflicts,
        "mode_change",
        "concurrent mode changes differ",
    ) {
        mode = sel.payload.str_of("new_mode").into();
    }
    let policy_key = |e: &Event| {
        [
            e.payload.str_of("new_revision"),
            e.payload.str_of("intent_digest"),
            e.payload.str_of("constraints_digest"),
        ]
        .join("\u{1}")
    };
    let mut selected_policy = latest(
        &g,
        &policies,
        |a, b| policy_key(a) != policy_key(b),
        &mut conflicts,
        "policy_change",
        "concurrent project policy revisions differ",
    );
    // Ownership is advisory: concurrent claims of one task by different sessions, and
    // concurrent take-overs of one session by different sessions, are conflicts.
    let owner = |e: &Event| e.payload.str_of("owner_session").to_string();
    for (task, list) in &claims {
        let held: Vec<&Event> = list
            .iter()
            .copied()
            .filter(|e| e.payload.str_of("action") != "release")
            .collect();
        for (i, a) in held.iter().enumerate() {
            for b in &held[i + 1..] {
                if g.concurrent(a, b) && owner(a) != owner(b) {
                    conflicts.add(
                        "ownership",
                        task,
                        vec![a.id.clone(), b.id.clone()],
                        "competing advisory ownership claims",
                    );
                }
            }
        }
    }
    for (prior, list) in &takeovers {
        for (i, a) in list.iter().enumerate() {
            for b in &list[i + 1..] {
                if g.concurrent(a, b) && owner(a) != owner(b) {
                    conflicts.add(
                        "session_takeover",
                        prior,
                        vec![a.id.clone(), b.id.clone()],
                        "competing session takeovers require explicit resolution",
                    );
                }
            }
        }
    }
    // Resolutions: one valid resolution per conflict (heads match, expected_frontier names
    // the events it saw) resolves it.
    let mut resolved: BTreeSet<String> = BTreeSet::new();
    for (cid, options) in &resolutions {
        let Some(c) = conflicts.0.get(cid).cloned() else {
            continue;
        };
        let valid: Vec<&Event> = options
            .iter()
            .copied()
            .filter(|r| {
                let mut heads = r.payload.strs_of("heads");
                heads.sort();
                heads.dedup();
                let expected = r.payload.str_of("expected_frontier");
                let seen = g.events.iter().copied().filter(|e| {
                    !(e.kind == "conflict_resolved"
                        && e.payload.str_of("conflict_id") == cid
                        && g.concurrent(e, r))
                        && e.id != r.id
                        && !g.is_ancestor(&r.id, &e.id)
                });
                heads == c.heads && !expected.is_empty() && expected == frontier(seen)
            })
            .collect();
        if let [r] = valid.as_slice() {
            resolved.insert(cid.clone());
            let selected = g
                .position(r.payload.str_of("selected_event"))
                .map(|i| g.events[i]);
            if let (Some(sel), Some(&i)) = (selected, tix.get(&c.task_id)) {
                if c.kind == "task_outcome" {
                    set_outcome(&mut tasks[i], sel);
                }
                if c.kind == "task_definition" {
                    apply_definition(&mut tasks[i], sel);
                }
            }
            if let Some(sel) = selected.filter(|_| c.kind == "mode_change") {
                mode = sel.payload.str_of("new_mode").into();
            }
            if let Some(sel) = selected.filter(|_| c.kind == "policy_change") {
                selected_policy = Some(sel);
            }
        } else if valid.len() > 1
            && valid
                .iter()
                .enumerate()
                .any(|(i, a)| valid[i + 1..].iter().any(|b| g.concurrent(a, b)))
        {
            conflicts.add(
                "concurrent_resolution",
                "",
                valid.iter().map(|e| e.id.clone()).collect(),
                "concurrent resolutions require another explicit resolution",
            );
        }
    }
    let (mut want_intent, mut want_constraints, mut head, mut policy_revision) = (
        profile.intent_digest.clone(),
        profile.constraints_digest.clone(),
        format!("profile:{}", profile.policy_revision),
        profile.policy_revision.clone(),
    );
    if let Some(p) = selected_policy {
        want_intent = p.payload.str_of("intent_digest").into();
        want_constraints = p.payload.str_of("constraints_digest").into();
        head = p.id.clone();
        policy_revision = p.payload.str_of("new_revision").into();
    }
    if !want_intent.is_empty()
        && !store.policy_intent_digest.is_empty()
        && want_intent != store.policy_intent_digest
    {
        conflicts.add(
            "policy_material",
            "",
            vec![head.clone()],
            "tracked intent does not match the selected policy revision",
        );
    }
    if !want_constraints.is_empty()
        && !store.policy_constraints_digest.is_empty()
        && want_constraints != store.policy_constraints_digest
    {
        conflicts.add(
            "policy_material",
            "",
            vec![head],
            "tracked constraints do not match the selected policy revision",
        );
    }
    let mut per_session: HashMap<&str, usize> = HashMap::default();
    for e in &store.events {
        *per_session.entry(e.session_id.as_str()).or_default() += 1;
    }
    let mut sessions: Vec<SessionState> = store
        .sessions
        .iter()
        .map(|s| SessionState {
            id: s.id.clone(),
            label: s.label.clone(),
            created_at: s.created_at.clone(),
            events: per_session.get(s.id.as_str()).copied().unwrap_or(0),
            closed: closed.contains(s.id.as_str()),
            superseded: superseded.contains(s.id.as_str()),
        })
        .collect();
    sessions.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    let mut receipts: Vec<ReceiptState> = store
        .receipts
        .iter()
        .map(|r| ReceiptState {
            digest: r.digest.clone(),
            strength: r.strength.clone(),
            availability: r.availability.clone(),
        })
        .collect();
    receipts.sort_by(|a, b| a.digest.cmp(&b.digest));
    let mut conflicts: Vec<Conflict> = conflicts
        .0
        .into_values()
        .filter(|c| !resolved.contains(&c.id))
        .collect();
    for c in &mut conflicts {
        c.head_summaries = c
            .heads
            .iter()
            .map(|h| match g.position(h) {
                Some(i) => head_summary(g.events[i]),
                None => "not an event (the profile's policy)".to_string(),
            })
            .collect();
    }
    let state = State {
        project_id: profile.project_id.clone(),
        mode,
        policy_revision,
        frontier: String::new(),
        tasks,
        sessions,
        receipts,
        timeline: g
            .events
            .iter()
            .filter(|_| with_timeline)
            .map(|e| TimelineEvent {
                id: e.id.clone(),
                session_id: e.session_id.clone(),
                sequence: e.sequence,
                kind: e.kind.clone(),
                occurred_at: e.occurred_at.clone(),
                task_id: e.task_id.clone(),
            })
            .collect(),
        order: g
            .events
            .iter()
            .map(|e| position(&store.events, e))
            .collect(),
        conflicts,
        handoff,
    };
    Reduced {
        state,
        whole: g.whole,
    }
}

/// Where `e`, an element of `events`, is in it. The graph holds references into the
/// store's list, so the address says it (the list is not searched); one outside the list
/// (not expected) gives a position past its end, which readers skip.
fn position(events: &[Event], e: &Event) -> usize {
    let size = std::mem::size_of::<Event>().max(1);
    let at = (e as *const Event as usize).wrapping_sub(events.as_ptr() as usize) / size;
    if at < events.len() && std::ptr::eq(&events[at], e) {
        at
    } else {
        usize::MAX
    }
}

/// One line on what event `e` records, secrets masked: the head of a conflict as a
/// reviewer chooses between them.
fn head_summary(e: &Event) -> String {
    let p = &e.payload;
    let what = match e.kind.as_str() {
        "task_transitioned" => {
            let evidence = p.str_of("evidence");
            if evidence.is_empty() {
                format!("status {}", p.str_of("status"))
            } else {
                let short: String = evidence.chars().take(80).collect();
                let cut = if short.len() < evidence.len() {
                    "..."
                } else {
                    ""
                };
                format!("status {}: \"{short}{cut}\"", p.str_of("status"))
            }
        }
        "mode_changed" => format!("mode {}", p.str_of("new_mode")),
        "policy_changed" => format!("policy revision {}", p.str_of("new_revision")),
        "task_created" | "task_updated" => {
            format!("definition r{} \"{}\"", e.task_revision, p.str_of("title"))
        }
        "ownership_claimed" | "ownership_taken_over" => {
            format!("{} by {}", e.kind, p.str_of("owner_session"))
        }
        "conflict_resolved" => format!("resolution selecting {}", p.str_of("selected_event")),
        other => other.to_string(),
    };
    let line = format!("{what} (session {}, {})", e.session_id, e.occurred_at);
    crate::secrets::redact(&line).into_owned()
}

pub(crate) fn set_outcome(t: &mut Task, e: &Event) {
    t.status = e.payload.str_of("status").into();
    t.evidence_digests = e.payload.strs_of("evidence_digests");
    t.source_digest =
        first_non_empty(&e.source_digest, e.payload.str_of("candidate_digest")).to_string();
}

/// A task_created or task_updated event's definition, applied to `t`.
pub(crate) fn apply_definition(t: &mut Task, e: &Event) {
    t.revision = e.task_revision;
    t.alias = e.payload.str_of("alias").into();
    t.title = e.payload.str_of("title").into();
    t.acceptance = e.payload.strs_of("acceptance");
    t.dependencies = e.payload.strs_of("dependencies");
    let source = first_non_empty(&e.source_digest, e.payload.str_of("source_digest"));
    if !source.is_empty() {
        t.source_digest = source.to_string();
    }
    t.policy_revision =
        first_non_empty(&e.policy_revision, e.payload.str_of("policy_revision")).to_string();
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

/// The event of `events` that descends from the others; concurrent ones that `differ` are
/// a conflict of `kind`.
fn latest<'a>(
    g: &Graph<'a>,
    events: &[&'a Event],
    differ: impl Fn(&Event, &Event) -> bool,
    conflicts: &mut Conflicts,
    kind: &str,
    message: &str,
) -> Option<&'a Event> {
    let (&first, rest) = events.split_first()?;
    let mut sel = first;
    for &c in rest {
        if g.concurrent(sel, c) && differ(sel, c) {
            conflicts.add(kind, "", vec![sel.id.clone(), c.id.clone()], message);
        }
        if g.is_ancestor(&sel.id, &c.id) {
            sel = c;
        }
    }
    Some(sel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(session: usize, id: String, prev: Option<String>, parents: Vec<String>) -> Event {
        Event {
            events_dir: ".small/events".into(),
            id,
            session_id: format!("session_{session}"),
            kind: "session_started".into(),
            sequence: 0,
            previous_event: prev.unwrap_or_default(),
            parents,
            occurred_at: String::new(),
            task_id: String::new(),
            task_revision: 0,
            policy_revision: String::new(),
            source_digest: String::new(),
            payload: crate::v2::json::Jv::Obj(Vec::new()),
            digest: String::new(),
        }
    }

    /// Events `0..n` of up to three sessions (ids in no particular order), each naming the
    /// event before it in its session (or, a fork, the one before that), some also earlier events of any session as
    /// parents, and (when `back` is set) one naming itself or a later event (which closes a
    /// cycle, or names no event when there is none that late).
    fn graph_store(n: usize, picks: &[(u8, u8, u8)], back: Option<(usize, usize)>) -> Store {
        let id = |i: usize| format!("event_{:02x}", (i * 37) % 251);
        let mut seen: [Vec<usize>; 3] = Default::default();
        let mut events = Vec::new();
        for i in 0..n {
            let (s, p, q) = picks[i % picks.len()];
            let s = usize::from(s % 3);
            let mut parents = Vec::new();
            if i > 0 && p % 3 == 0 {
                parents.push(id(usize::from(q) % i));
            }
            if let Some((from, to)) = back.filter(|&(from, _)| from == i) {
                parents.push(id(to.max(from)));
            }
            // Mostly the session's last event; sometimes the one before it (a fork).
            let back_by = if q % 5 == 0 { 2 } else { 1 };
            let prev = seen[s].len().checked_sub(back_by).map(|k| id(seen[s][k]));
            events.push(ev(s, id(i), prev, parents));
            seen[s].push(i);
        }
        Store {
            events,
            ..Store::default()
        }
    }

    /// Whether `a` is reachable from `d` through parents (previous_event included).
    fn reaches(store: &Store, a: &str, d: &str) -> bool {
        let by_id: BTreeMap<&str, &Event> =
            store.events.iter().map(|e| (e.id.as_str(), e)).collect();
        let mut seen = BTreeSet::new();
        let mut todo = vec![d];
        while let Some(x) = todo.pop() {
            for p in by_id.get(x).map(|e| e.all_parents()).unwrap_or_default() {
                if p == a {
                    return true;
                }
                if seen.insert(p) {
                    todo.push(p);
                }
            }
        }
        false
    }

    proptest::proptest! {
        /// The frontier is its definition: SHA-256 over the sorted, distinct `id:digest`
        /// lines joined by newlines. Short ids over a small alphabet (`:` and `.` sort
        /// before the digits) make one id begin another, where the lines' order is not the
        /// ids' order.
        #[test]
        fn frontier_is_the_hash_of_the_sorted_lines(
            pairs in proptest::collection::vec(("[0-9a:.]{0,3}", "[0-9a]{0,2}"), 0..30),
            repeats in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..4),
        ) {
            let mut events: Vec<Event> = pairs
                .iter()
                .map(|(id, digest)| Event {
                    digest: digest.clone(),
                    ..ev(0, id.clone(), None, Vec::new())
                })
                .collect();
            for &r in &repeats {
                if !events.is_empty() {
                    let again = events[r % events.len()].clone();
                    events.push(again);
                }
            }
            let mut lines: Vec<String> =
                events.iter().map(|e| format!("{}:{}", e.id, e.digest)).collect();
            lines.sort();
            lines.dedup();
            let want = hex::encode(Sha256::digest(lines.join("\n").as_bytes()));
            proptest::prop_assert_eq!(frontier(&events), want);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

        /// The order is Kahn's with ties by id, ancestry is reachability, and an order that
        /// leaves events out means a cycle (and only then).
        #[test]
        fn graph_order_and_ancestry_are_the_parents(
            n in 1usize..40,
            picks in proptest::collection::vec(proptest::prelude::any::<(u8, u8, u8)>(), 1..40),
            back in proptest::option::of((0usize..40, 0usize..40)),
        ) {
            let store = graph_store(n, &picks, back);
            let g = Graph::new(&store);
            // Kahn's algorithm on ids, the smallest ready id first.
            let ids: BTreeSet<&str> = store.events.iter().map(|e| e.id.as_str()).collect();
            let mut indeg: BTreeMap<&str, usize> = BTreeMap::new();
            for e in &store.events {
                let known = e.all_parents().into_iter().filter(|p| ids.contains(p)).count();
                indeg.insert(&e.id, known);
            }
            let mut want: Vec<&str> = Vec::new();
            let mut ready: BTreeSet<&str> =
                indeg.iter().filter(|(_, &d)| d == 0).map(|(&k, _)| k).collect();
            while let Some(x) = ready.pop_first() {
                want.push(x);
                for e in store.events.iter().filter(|e| e.all_parents().contains(&x)) {
                    let d = indeg.get_mut(e.id.as_str()).unwrap();
                    *d -= 1;
                    if *d == 0 {
                        ready.insert(&e.id);
                    }
                }
            }
            let got: Vec<&str> = g.events.iter().map(|e| e.id.as_str()).collect();
            proptest::prop_assert_eq!(&got, &want);
            proptest::prop_assert_eq!(g.whole, got.len() == store.events.len());
            proptest::prop_assert_eq!(g.whole, cycle(&store).is_none());
            for a in &got {
                for d in &got {
                    proptest::prop_assert_eq!(
                        g.is_ancestor(a, d),
                        reaches(&store, a, d),
                        "is {} an ancestor of {}?", a, d
                    );
                }
            }
        }
    }
}
