//! The primitives store on the page (`small ui --store PATH|URL`): the artifacts, a page at a
//! time, their lineage as a graph, and each artifact's lineage records and lifecycle events.
//!
//! The store is opened read-only ([`small_store::open_read_only`]) and only its read
//! operations are called. Everything shown is bounded: a page of artifacts, a capped graph,
//! a capped data excerpt; every string is masked as the gates mask secrets and escaped by the
//! templates.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use serde::Serialize;
use serde_json::Value;
use small_core::ops::secrets::redact;
use small_store::{Direction, Page, PrimitiveStore, Record};

/// Artifacts per page of the list.
pub const PAGE_SIZE: u32 = 50;
/// Most nodes a lineage graph draws.
pub const MAX_NODES: usize = 200;
/// Derivation steps walked each way from one artifact.
pub const ARTIFACT_DEPTH: u32 = 4;
/// Characters of an artifact's data shown.
const MAX_DATA: usize = 20_000;
/// Most lineage records and lifecycle events listed for one artifact.
const MAX_ROWS: usize = 1000;

const NODE_W: u32 = 220;
const NODE_H: u32 = 48;
const GAP_X: u32 = 70;
const GAP_Y: u32 = 18;
const PAD: u32 = 12;
const LABEL: usize = 28;

fn mask(s: &str) -> String {
    redact(s).into_owned()
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .map(mask)
        .unwrap_or_default()
}

#[derive(Debug, Clone, Serialize)]
pub struct ArtifactRow {
    pub id: String,
    pub version: u64,
    pub kind: String,
    pub schema_id: String,
    pub stored_at: String,
    pub derived_from: Vec<String>,
    pub events: usize,
    pub last_event: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LNode {
    pub id: String,
    pub label: String,
    pub kind: String,
    pub version: Option<u64>,
    /// Whether the artifact exists in the store (a parent may be named and missing).
    pub exists: bool,
    /// The artifact the page is about (the artifact page's centre).
    pub focus: bool,
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct LEdge {
    /// The parent (what `to` was derived from).
    pub from: String,
    /// The derived artifact.
    pub to: String,
    /// Who produced the derived artifact, when a lineage record says.
    pub by: String,
    pub path: String,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct LGraph {
    pub width: u32,
    pub height: u32,
    pub nodes: Vec<LNode>,
    pub edges: Vec<LEdge>,
    /// Set when the graph was cut to [`MAX_NODES`].
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StoreView {
    pub location: String,
    pub backend: &'static str,
    pub artifacts: Vec<ArtifactRow>,
    pub after: String,
    pub next: Option<String>,
    pub graph: LGraph,
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LineageRow {
    pub seq: u64,
    pub derived_from: Vec<String>,
    pub actor: String,
    pub name: String,
    pub run_id: String,
    pub at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventRow {
    pub seq: u64,
    pub kind: String,
    pub at: String,
    pub schema: String,
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ArtifactView {
    pub id: String,
    pub version: u64,
    pub kind: String,
    pub schema_id: String,
    pub stored_at: String,
    pub sha256: String,
    pub data: String,
    pub data_cut: bool,
    pub lineage: Vec<LineageRow>,
    pub events: Vec<EventRow>,
    pub graph: LGraph,
    pub problem: Option<String>,
}

/// What a lineage record says: (parents, producer name, at).
fn lineage_row(r: &Record) -> LineageRow {
    let v = r.value();
    let by = v.get("producedBy").cloned().unwrap_or(Value::Null);
    LineageRow {
        seq: r.version,
        derived_from: v
            .get("derivedFrom")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(mask).collect())
            .unwrap_or_default(),
        actor: str_of(&by, "actor"),
        name: str_of(&by, "name"),
        run_id: str_of(&by, "runId"),
        at: str_of(&v, "at"),
    }
}

fn event_row(r: &Record) -> EventRow {
    let v = r.value();
    EventRow {
        seq: r.version,
        kind: str_of(&v, "type"),
        at: str_of(&v, "at"),
        schema: str_of(&v, "schema"),
        note: str_of(&v, "note"),
    }
}

/// Raw (unmasked) parents of an artifact, and the producer's name per parent, from its lineage
/// records.
fn parents_of(store: &dyn PrimitiveStore, id: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in store.get_lineage(id).map_err(|e| e.to_string())? {
        let v = r.value();
        let by = v
            .get("producedBy")
            .and_then(|b| b.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        for p in v
            .get("derivedFrom")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !out.iter().any(|(x, _)| x == p) {
                out.push((p.to_string(), by.clone()));
            }
        }
    }
    Ok(out)
}

fn artifact_row(store: &dyn PrimitiveStore, r: &Record) -> Result<ArtifactRow, String> {
    let v = r.value();
    let parents = parents_of(store, &r.id)?;
    let events = store.get_lifecycle(&r.id).map_err(|e| e.to_string())?;
    Ok(ArtifactRow {
        id: mask(&r.id),
        version: r.version,
        kind: str_of(&v, "kind"),
        schema_id: str_of(&v, "schemaId"),
        stored_at: mask(&r.stored_at),
        derived_from: parents.iter().map(|(p, _)| mask(p)).collect(),
        events: events.len(),
        last_event: events
            .last()
            .map(|e| str_of(&e.value(), "type"))
            .filter(|s| !s.is_empty()),
    })
}

/// Lays out a graph: each node one layer right of its deepest parent (Kahn's order; nodes on
/// a cycle, which the store refuses anyway, go to layer 0), nodes in the given order within a
/// layer; an edge from each parent to what was derived from it.
fn layout(
    store: &dyn PrimitiveStore,
    order: &[String],
    edges: &BTreeMap<(String, String), String>,
    focus: Option<&str>,
    note: Option<String>,
) -> LGraph {
    let pos: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    let n = order.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indeg = vec![0usize; n];
    for (p, c) in edges.keys() {
        if let (Some(&pi), Some(&ci)) = (pos.get(p.as_str()), pos.get(c.as_str())) {
            children[pi].push(ci);
            indeg[ci] += 1;
        }
    }
    let mut layer = vec![0u32; n];
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    while let Some(i) = queue.pop_front() {
        for &c in &children[i] {
            layer[c] = layer[c].max(layer[i] + 1);
            indeg[c] -= 1;
            if indeg[c] == 0 {
                queue.push_back(c);
            }
        }
    }
    let mut rows: HashMap<u32, u32> = HashMap::new();
    let mut nodes = Vec::with_capacity(n);
    for (i, id) in order.iter().enumerate() {
        let row = rows.entry(layer[i]).or_insert(0);
        let x = PAD + layer[i].min(10_000) * (NODE_W + GAP_X);
        let y = PAD + *row * (NODE_H + GAP_Y);
        *row += 1;
        let rec = store.get_artifact(id, None).ok().flatten();
        let kind = rec
            .as_ref()
            .map(|r| str_of(&r.value(), "kind"))
            .unwrap_or_default();
        nodes.push(LNode {
            id: mask(id),
            label: mask(&truncate(id, LABEL)),
            kind: truncate(&kind, LABEL),
            version: rec.as_ref().map(|r| r.version),
            exists: rec.is_some(),
            focus: focus == Some(id.as_str()),
            x,
            y,
            w: NODE_W,
            h: NODE_H,
        });
    }
    let mut out_edges = Vec::new();
    for ((p, c), by) in edges {
        let (Some(&pi), Some(&ci)) = (pos.get(p.as_str()), pos.get(c.as_str())) else {
            continue;
        };
        let (a, b) = (&nodes[pi], &nodes[ci]);
        let (sx, sy) = (a.x + a.w, a.y + a.h / 2);
        let (ex, ey) = (b.x, b.y + b.h / 2);
        let bend = GAP_X / 2;
        // An edge that skips a layer would pass under the boxes between: it arcs below them.
        let path = if ex > sx + GAP_X + NODE_W / 2 {
            let low = sy.max(ey) + NODE_H + GAP_Y / 2;
            format!(
                "M{sx} {sy} C{} {low} {} {low} {ex} {ey}",
                sx + GAP_X,
                ex.saturating_sub(GAP_X)
            )
        } else {
            format!(
                "M{sx} {sy} C{} {sy} {} {ey} {ex} {ey}",
                sx + bend,
                ex.saturating_sub(bend)
            )
        };
        out_edges.push(LEdge {
            from: mask(p),
            to: mask(c),
            by: mask(by),
            path,
        });
    }
    let width = nodes.iter().map(|n| n.x + n.w).max().unwrap_or(0) + PAD;
    let height = nodes.iter().map(|n| n.y + n.h).max().unwrap_or(0) + PAD + NODE_H;
    LGraph {
        width,
        height,
        nodes,
        edges: out_edges,
        note,
    }
}

/// The list page: one page of artifacts (latest version of each, by id) after the cursor
/// `after`, and the lineage graph of those artifacts with their direct parents.
pub fn store_page(store: &dyn PrimitiveStore, location: &str, after: Option<&str>) -> StoreView {
    let mut view = StoreView {
        location: mask(&small_store::display_location(location)),
        backend: store.backend_name(),
        artifacts: Vec::new(),
        after: after.map(mask).unwrap_or_default(),
        next: None,
        graph: LGraph::default(),
        problem: None,
    };
    let listing = match store.list_artifacts(&Page {
        after: after.map(str::to_string),
        limit: Some(PAGE_SIZE),
    }) {
        Ok(l) => l,
        Err(e) => {
            view.problem = Some(mask(&format!("cannot read the store: {e}")));
            return view;
        }
    };
    view.next = listing.next.clone();
    let mut order: Vec<String> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut wanted = 0usize;
    for r in &listing.items {
        match artifact_row(store, r) {
            Ok(row) => view.artifacts.push(row),
            Err(e) => {
                view.problem = Some(mask(&format!("cannot read the store: {e}")));
                return view;
            }
        }
        let parents = parents_of(store, &r.id).unwrap_or_default();
        for id in std::iter::once(r.id.clone()).chain(parents.iter().map(|(p, _)| p.clone())) {
            if seen.insert(id.clone()) {
                wanted += 1;
                if order.len() < MAX_NODES {
                    order.push(id);
                }
            }
        }
        for (p, by) in parents {
            edges.insert((p, r.id.clone()), by);
        }
    }
    let note = (wanted > order.len()).then(|| {
        format!(
            "The graph shows {} of the {wanted} artifacts of this page and their parents.",
            order.len()
        )
    });
    view.graph = layout(store, &order, &edges, None, note);
    view
}

/// One artifact: its latest version, data, lineage records, lifecycle events (oldest first)
/// and the graph of its ancestors and descendants within [`ARTIFACT_DEPTH`] steps. `None`
/// when the store has no such artifact.
pub fn artifact_page(store: &dyn PrimitiveStore, id: &str) -> Result<Option<ArtifactView>, String> {
    let Some(rec) = store.get_artifact(id, None).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let v = rec.value();
    let data = v
        .get("data")
        .map(|d| serde_json::to_string_pretty(d).unwrap_or_default())
        .unwrap_or_default();
    let data_cut = data.chars().count() > MAX_DATA;
    let lineage = store.get_lineage(id).map_err(|e| e.to_string())?;
    let events = store.get_lifecycle(id).map_err(|e| e.to_string())?;
    // The graph: the artifact, its ancestors, its descendants; edges as the walks found them.
    let mut order = vec![id.to_string()];
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    wanted.insert(id.to_string());
    for dir in [Direction::Ancestors, Direction::Descendants] {
        let g = store
            .lineage_graph(id, dir, ARTIFACT_DEPTH)
            .map_err(|e| e.to_string())?;
        for n in g.nodes {
            if wanted.insert(n.id.clone()) && order.len() < MAX_NODES {
                order.push(n.id);
            }
        }
        for e in g.edges {
            // `from` was derived from `to`.
            edges.entry((e.to, e.from)).or_default();
        }
    }
    // Name the producer of each edge into a node shown.
    for child in &order {
        if let Ok(ps) = parents_of(store, child) {
            for (p, by) in ps {
                if let Some(slot) = edges.get_mut(&(p, child.clone())) {
                    *slot = by;
                }
            }
        }
    }
    let note = (wanted.len() > order.len()).then(|| {
        format!(
            "The graph shows {} of the {} artifacts within {ARTIFACT_DEPTH} derivation steps.",
            order.len(),
            wanted.len()
        )
    });
    let graph = layout(store, &order, &edges, Some(id), note);
    let mut problem = None;
    if lineage.len() > MAX_ROWS || events.len() > MAX_ROWS {
        problem = Some(format!(
            "Only the first {MAX_ROWS} lineage records and lifecycle events are listed."
        ));
    }
    Ok(Some(ArtifactView {
        id: mask(&rec.id),
        version: rec.version,
        kind: str_of(&v, "kind"),
        schema_id: str_of(&v, "schemaId"),
        stored_at: mask(&rec.stored_at),
        sha256: rec.sha256.clone(),
        data: mask(&truncate(&data, MAX_DATA)),
        data_cut,
        lineage: lineage.iter().take(MAX_ROWS).map(lineage_row).collect(),
        events: events.iter().take(MAX_ROWS).map(event_row).collect(),
        graph,
        problem,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> (tempfile::TempDir, std::sync::Arc<dyn PrimitiveStore>) {
        let dir = tempfile::tempdir().unwrap();
        let s = small_store::open(dir.path().join("s.db").to_str().unwrap()).unwrap();
        s.register_schema(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "note", "type": "object"
        }))
        .unwrap();
        for id in ["a", "b", "c"] {
            s.put_artifact(
                &json!({"id": id, "kind": "doc", "schemaId": "note", "data": {"t": id}}),
            )
            .unwrap();
        }
        s.append_lineage(&json!({"artifactId": "b", "derivedFrom": ["a"], "producedBy": {"actor": "agent", "name": "summarise"}}))
            .unwrap();
        s.append_lineage(&json!({"artifactId": "c", "derivedFrom": ["a", "b"], "producedBy": {"actor": "agent", "name": "merge"}}))
            .unwrap();
        s.append_lifecycle(
            "a",
            &json!({"type": "created", "at": "2025-01-01T00:00:00Z"}),
        )
        .unwrap();
        s.append_lifecycle(
            "a",
            &json!({"type": "validated", "at": "2025-01-02T00:00:00Z", "note": "ok"}),
        )
        .unwrap();
        (dir, s)
    }

    #[test]
    fn the_list_graph_has_a_node_per_artifact_and_an_edge_per_derivation() {
        let (_d, s) = store();
        let v = store_page(s.as_ref(), "s.db", None);
        assert!(v.problem.is_none());
        assert_eq!(v.artifacts.len(), 3);
        let ids: Vec<&str> = v.graph.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let edges: Vec<(&str, &str)> = v
            .graph
            .edges
            .iter()
            .map(|e| (e.from.as_str(), e.to.as_str()))
            .collect();
        assert_eq!(edges, [("a", "b"), ("a", "c"), ("b", "c")]);
        // Layers: a, then b, then c (derived from b).
        assert!(v.graph.nodes[0].x < v.graph.nodes[1].x);
        assert!(v.graph.nodes[1].x < v.graph.nodes[2].x);
        let a = &v.artifacts[0];
        assert_eq!((a.events, a.last_event.as_deref()), (2, Some("validated")));
    }

    #[test]
    fn an_artifact_page_lists_lineage_and_events_oldest_first() {
        let (_d, s) = store();
        let v = artifact_page(s.as_ref(), "c").unwrap().unwrap();
        assert_eq!(v.lineage.len(), 1);
        assert_eq!(v.lineage[0].derived_from, ["a", "b"]);
        assert_eq!(v.lineage[0].name, "merge");
        assert_eq!(v.graph.nodes.len(), 3);
        assert!(v.graph.nodes.iter().any(|n| n.focus && n.id == "c"));
        let a = artifact_page(s.as_ref(), "a").unwrap().unwrap();
        let kinds: Vec<&str> = a.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["created", "validated"]);
        assert_eq!(a.events[1].note, "ok");
        assert!(artifact_page(s.as_ref(), "nope").unwrap().is_none());
    }

    #[test]
    fn the_graph_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let s = small_store::open(dir.path().join("s.db").to_str().unwrap()).unwrap();
        s.register_schema(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "note", "type": "object"
        }))
        .unwrap();
        // One artifact derived from 300 parents that do not exist in the store.
        let parents: Vec<String> = (0..300).map(|i| format!("p{i:03}")).collect();
        s.put_artifact(&json!({"id": "x", "kind": "doc", "schemaId": "note", "data": {}}))
            .unwrap();
        s.append_lineage(&json!({"artifactId": "x", "derivedFrom": parents, "producedBy": {"actor": "a", "name": "n"}}))
            .unwrap();
        let v = store_page(s.as_ref(), "s.db", None);
        assert_eq!(v.graph.nodes.len(), MAX_NODES);
        assert!(v.graph.note.as_deref().unwrap().contains("200 of the 301"));
        assert!(v.graph.nodes.iter().skip(1).all(|n| !n.exists));
    }
}
