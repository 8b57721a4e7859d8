//! Three-way merges of the agent-owned artifacts, for git's merge driver (`small merge-driver`).
//!
//! git hands a merge driver three versions of one file: the common ancestor (base), ours and
//! theirs. A line-oriented text merge of an append-only log conflicts on every parallel append
//! (both branches add lines at the same place), and git's `union` merge duplicates entries.
//! These merges work on the protocol's own units instead:
//!
//! - **progress** (append-only): both sides must keep every base entry, unchanged and in
//!   order; rewriting or deleting one is a conflict that names the entry. A side's new
//!   entries may sit between base entries (an earlier entry that a rebase put before a later
//!   one pushed first). The result is the base entries in their order, with every new entry
//!   of both sides placed before the first base entry with a later timestamp, new entries
//!   ordered by timestamp (ties broken by the entry's canonical text, so the result does not
//!   depend on which side is "ours"); an entry both sides added identically is kept once.
//! - **plan**: a task-level three-way merge keyed by task id. Tasks added on either side are
//!   kept, fields changed on one side are taken, the same field changed differently on both
//!   sides is a conflict naming the task and the field, and two different tasks added under
//!   one id is a conflict naming both titles.
//! - **handoff** and **workspace metadata** are generated files: a side that did not change
//!   the file yields to the other; when both changed it, the workspace metadata with the newer
//!   `updated_at` is kept, and the handoff of ours is kept with a comment marking it for
//!   regeneration (`small handoff`), which `small resume` reports.
//!
//! Text is spliced, not re-serialised: each entry or task keeps the bytes it had on the side
//! it came from (comments included), re-indented to the column of the result's list. Only a
//! task whose fields came from both sides is written afresh.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value as Json;

use crate::authoring::edit;
use crate::spec::timestamp::Instant;
use crate::yaml::{self, Limits, Node, Style};

/// Which canonical file a merge is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeKind {
    Progress,
    Plan,
    Handoff,
    Workspace,
}

impl MergeKind {
    /// The kind for a path git names (`%P`), by file name.
    pub fn for_path(path: &str) -> Option<MergeKind> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        match name {
            "progress.small.yml" => Some(MergeKind::Progress),
            "plan.small.yml" => Some(MergeKind::Plan),
            "handoff.small.yml" => Some(MergeKind::Handoff),
            "workspace.small.yml" => Some(MergeKind::Workspace),
            _ => None,
        }
    }

    /// The file names the merge driver handles (human-owned intent and constraints are left
    /// to git's text merge: a human resolves their conflicts).
    pub const FILES: [&'static str; 4] = [
        "progress.small.yml",
        "plan.small.yml",
        "handoff.small.yml",
        "workspace.small.yml",
    ];
}

/// A merged file and what the merge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub text: String,
    /// One line per notable decision (e.g. "kept 3 new entries from ours, 2 from theirs").
    pub notes: Vec<String>,
}

/// Why the three versions cannot be merged automatically. Each message names the entry, task
/// or field, and says which side did what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .conflicts.join("; "))]
pub struct MergeConflict {
    pub conflicts: Vec<String>,
}

impl MergeConflict {
    fn one(msg: impl Into<String>) -> Self {
        MergeConflict {
            conflicts: vec![msg.into()],
        }
    }
}

pub use crate::spec::bookkeeping::{handoff_needs_regeneration, HANDOFF_STALE_MARK};

/// Merge three versions of the file `kind`.
pub fn merge(
    kind: MergeKind,
    base: &str,
    ours: &str,
    theirs: &str,
) -> Result<Merged, MergeConflict> {
    if ours == theirs {
        return Ok(Merged {
            text: ours.to_string(),
            notes: vec!["both sides are identical".into()],
        });
    }
    if base == ours {
        return Ok(Merged {
            text: theirs.to_string(),
            notes: vec!["only theirs changed the file".into()],
        });
    }
    if base == theirs {
        return Ok(Merged {
            text: ours.to_string(),
            notes: vec!["only ours changed the file".into()],
        });
    }
    match kind {
        MergeKind::Progress => merge_progress(base, ours, theirs),
        MergeKind::Plan => merge_plan(base, ours, theirs),
        MergeKind::Handoff => merge_handoff(ours),
        MergeKind::Workspace => merge_workspace(ours, theirs),
    }
}

// ---------------------------------------------------------------------------------------
// Shared helpers

fn parse(which: &str, src: &str) -> Result<yaml::Document, MergeConflict> {
    yaml::parse_str(src, &Limits::default())
        .map_err(|e| MergeConflict::one(format!("{which}: not valid YAML: {e}")))
}

/// Canonical text of a JSON value with mapping keys sorted: equal values, equal text.
fn canon(v: &Json) -> String {
    fn go(v: &Json, out: &mut String) {
        match v {
            Json::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Json::String(k.clone()).to_string());
                    out.push(':');
                    go(&m[k], out);
                }
                out.push('}');
            }
            Json::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    go(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    go(v, &mut s);
    s
}

fn canon_node(n: &Node) -> String {
    canon(&n.to_json())
}

/// The header of a document: every top-level key except `list_key`, canonicalised.
fn header(root: &Node, list_key: &str) -> String {
    let mut v = root.to_json();
    if let Json::Object(m) = &mut v {
        m.remove(list_key);
    }
    canon(&v)
}

/// One item of a block list with the source text it occupies.
struct Item<'a> {
    node: &'a Node,
    /// The item's lines: from the start of its dash line to the start of the next item (or
    /// the end of its last line for the last item).
    text: String,
    /// Column of its dash.
    col: usize,
}

/// A parsed side: its list items, and where the list sits in the source.
struct Side<'a> {
    src: &'a str,
    items: Vec<Item<'a>>,
    /// Byte offset where the first item's line starts (insertion point for an empty list).
    list_start: usize,
    /// Byte offset just after the last item's last line.
    list_end: usize,
    /// Whether the list is a non-empty block list we can splice into.
    spliceable: bool,
}

/// The dash that introduces a block-list item: scan back from the item's first byte over
/// blanks to the `-`.
fn dash_of(src: &str, item_start: usize) -> usize {
    let b = src.as_bytes();
    let mut i = item_start.min(b.len());
    while i > 0 {
        let c = b[i - 1];
        if c == b'-' {
            return i - 1;
        }
        if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
            i -= 1;
            continue;
        }
        break;
    }
    item_start
}

fn side<'a>(src: &'a str, root: &'a Node, list_key: &str) -> Side<'a> {
    let seq = root.get(list_key);
    let nodes: &[Node] = seq.and_then(Node::as_seq).unwrap_or(&[]);
    let block = seq.is_some_and(|s| s.style == Style::Block) && !nodes.is_empty();
    if !block {
        return Side {
            src,
            items: nodes
                .iter()
                .map(|n| Item {
                    node: n,
                    text: String::new(),
                    col: 0,
                })
                .collect(),
            list_start: 0,
            list_end: 0,
            spliceable: false,
        };
    }
    let starts: Vec<usize> = nodes
        .iter()
        .map(|n| edit::line_start(src, dash_of(src, n.span.start.offset as usize)))
        .collect();
    let last_end = edit::line_end_after(src, edit::content_end(nodes.last().unwrap())).0;
    let mut items = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let start = starts[i];
        let end = starts.get(i + 1).copied().unwrap_or(last_end);
        let dash = dash_of(src, n.span.start.offset as usize);
        let mut text = src[start..end.max(start)].to_string();
        if !text.ends_with('\n') {
            text.push_str(edit::eol_of(src));
        }
        items.push(Item {
            node: n,
            text,
            col: edit::column_of(src, dash),
        });
    }
    Side {
        src,
        list_start: starts[0],
        list_end: last_end,
        items,
        spliceable: true,
    }
}

/// Re-indent an item's lines from column `from` to column `to`.
fn reindent(text: &str, from: usize, to: usize) -> String {
    if from == to {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.split_inclusive('\n') {
        if line.trim().is_empty() {
            out.push_str(line);
            continue;
        }
        if to > from {
            out.push_str(&" ".repeat(to - from));
            out.push_str(line);
        } else {
            let strip = line
                .bytes()
                .take(from - to)
                .take_while(|&b| b == b' ')
                .count();
            out.push_str(&line[strip..]);
        }
    }
    out
}

/// Splice `items` (texts at column `col` of their side) into `host` in place of its list.
fn splice(host: &Side, items: &[(String, usize)]) -> String {
    let col = host.items.first().map_or(0, |i| i.col);
    let mut out = String::with_capacity(host.src.len() + 256);
    out.push_str(&host.src[..host.list_start]);
    for (text, from) in items {
        out.push_str(&reindent(text, *from, col));
    }
    out.push_str(&host.src[host.list_end..]);
    out
}

// ---------------------------------------------------------------------------------------
// Progress

fn entry_label(n: &Node) -> String {
    let get = |k: &str| n.get(k).and_then(Node::as_str).unwrap_or("?").to_string();
    format!("{} at {}", get("task_id"), get("timestamp"))
}

fn push_new(
    items: &mut Vec<(String, usize)>,
    want: &mut Vec<String>,
    text: &str,
    col: usize,
    node: &Node,
    key: &str,
) {
    if text.is_empty() {
        // Flow-style side: render the entry.
        items.push((render_item(&node.to_json()), 0));
    } else {
        items.push((text.to_string(), col));
    }
    want.push(key.to_string());
}

fn merge_progress(base: &str, ours: &str, theirs: &str) -> Result<Merged, MergeConflict> {
    let (bd, od, td) = (
        parse("base", base)?,
        parse("ours", ours)?,
        parse("theirs", theirs)?,
    );
    let (bs, os, ts) = (
        side(base, &bd.root, "entries"),
        side(ours, &od.root, "entries"),
        side(theirs, &td.root, "entries"),
    );
    let (bh, oh, th) = (
        header(&bd.root, "entries"),
        header(&od.root, "entries"),
        header(&td.root, "entries"),
    );
    let mut conflicts = Vec::new();
    if oh != bh && th != bh && oh != th {
        conflicts.push(
            "both sides changed the top-level keys of progress.small.yml differently".to_string(),
        );
    }
    let base_keys: Vec<String> = bs.items.iter().map(|i| canon_node(i.node)).collect();
    // Each side keeps every base entry, unchanged and in order; entries it added may sit
    // between them (a rebase puts an earlier entry before a later one pushed first).
    let mut added: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    for (w, (name, s)) in [("ours", &os), ("theirs", &ts)].into_iter().enumerate() {
        let mut k = 0;
        for (i, it) in s.items.iter().enumerate() {
            if k < base_keys.len() && canon_node(it.node) == base_keys[k] {
                k += 1;
            } else {
                added[w].push(i);
            }
        }
        if k < base_keys.len() {
            let what = if s.items.len() < base_keys.len() {
                "deleted"
            } else {
                "rewrote"
            };
            conflicts.push(format!(
                "{name} {what} progress entry #{} ({}): the log is append-only",
                k + 1,
                entry_label(bs.items[k].node)
            ));
        }
    }
    if !conflicts.is_empty() {
        return Err(MergeConflict { conflicts });
    }
    let nb = base_keys.len();
    // New entries of each side, with a multiset merge: an entry kept as many times as the
    // side that has it most.
    struct New<'a> {
        key: String,
        ts: Option<Instant>,
        text: &'a str,
        col: usize,
        node: &'a Node,
    }
    let mut merged: Vec<New> = Vec::new();
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    for &i in &added[0] {
        counts.entry(canon_node(os.items[i].node)).or_default().0 += 1;
    }
    for &i in &added[1] {
        counts.entry(canon_node(ts.items[i].node)).or_default().1 += 1;
    }
    let mut taken: HashMap<String, usize> = HashMap::new();
    let (mut from_ours, mut from_theirs, mut dups) = (0usize, 0usize, 0usize);
    for (which, s) in [(0, &os), (1, &ts)] {
        for it in added[which].iter().map(|&i| &s.items[i]) {
            let key = canon_node(it.node);
            let (co, ct) = counts[&key];
            let want = co.max(ct);
            let t = taken.entry(key.clone()).or_default();
            if *t >= want {
                dups += 1;
                continue;
            }
            *t += 1;
            if which == 0 {
                from_ours += 1;
            } else {
                from_theirs += 1;
            }
            merged.push(New {
                ts: it
                    .node
                    .get("timestamp")
                    .and_then(Node::as_str)
                    .and_then(crate::authoring::progress::parse_lenient),
                key,
                text: &it.text,
                col: it.col,
                node: it.node,
            });
        }
    }
    merged.sort_by(|a, b| a.ts.cmp(&b.ts).then_with(|| a.key.cmp(&b.key)));
    // The host text: the side whose header the result keeps, if it has a block list.
    let host = if oh == bh && th != bh { &ts } else { &os };
    let host = if host.spliceable {
        host
    } else if os.spliceable {
        &os
    } else if ts.spliceable {
        &ts
    } else {
        return Err(MergeConflict::one(
            "progress.small.yml: the entries list is not a block list on either side; merge it by hand",
        ));
    };
    // The base entries in their order, each new entry before the first base entry with a
    // later timestamp: sorted when the base is, whichever side is ours.
    let base_ts: Vec<Option<Instant>> = bs
        .items
        .iter()
        .map(|i| {
            i.node
                .get("timestamp")
                .and_then(Node::as_str)
                .and_then(crate::authoring::progress::parse_lenient)
        })
        .collect();
    let host_base: Vec<&Item> = {
        let mut k = 0;
        host.items
            .iter()
            .filter(|it| {
                let hit = k < nb && canon_node(it.node) == base_keys[k];
                k += usize::from(hit);
                hit
            })
            .collect()
    };
    let mut items: Vec<(String, usize)> = Vec::with_capacity(nb + merged.len());
    let mut want: Vec<String> = Vec::with_capacity(nb + merged.len());
    let mut next = merged.iter().peekable();
    for (k, b) in host_base.iter().enumerate() {
        while let Some(n) =
            next.next_if(|n| matches!((n.ts, base_ts[k]), (Some(x), Some(y)) if x < y))
        {
            push_new(&mut items, &mut want, n.text, n.col, n.node, &n.key);
        }
        items.push((b.text.clone(), b.col));
        want.push(base_keys[k].clone());
    }
    for n in next {
        push_new(&mut items, &mut want, n.text, n.col, n.node, &n.key);
    }
    let text = splice(host, &items);
    // Check: the result parses to exactly the entries intended.
    let check = parse("merged", &text)?;
    let got: Vec<String> = check
        .root
        .get("entries")
        .and_then(Node::as_seq)
        .unwrap_or(&[])
        .iter()
        .map(canon_node)
        .collect();
    if got != want {
        return Err(MergeConflict::one(
            "progress.small.yml: the merged text did not read back as the merged entries (unusual formatting); merge it by hand",
        ));
    }
    let mut notes = vec![format!(
        "kept {nb} base entries, added {from_ours} new from ours and {from_theirs} from theirs, by timestamp"
    )];
    if dups > 0 {
        notes.push(format!(
            "{dups} entries added identically on both sides kept once"
        ));
    }
    Ok(Merged { text, notes })
}

// ---------------------------------------------------------------------------------------
// Plan

fn task_id(n: &Node) -> Option<String> {
    n.get("id")
        .and_then(crate::spec::plan::scalar_text)
        .map(|s| s.trim().to_string())
}

fn task_title(n: &Node) -> String {
    n.get("title")
        .and_then(crate::spec::plan::scalar_text)
        .unwrap_or_default()
}

/// Render a JSON value as a YAML scalar or flow collection (JSON is YAML).
fn render_value(v: &Json) -> String {
    match v {
        Json::String(s) => edit::quote(s),
        Json::Null => "null".into(),
        other => other.to_string(),
    }
}

/// Render a mapping as a block-list item at column 0.
fn render_item(v: &Json) -> String {
    let mut out = String::new();
    let Json::Object(m) = v else {
        return format!("- {}\n", render_value(v));
    };
    if m.is_empty() {
        return "- {}\n".into();
    }
    for (i, (k, val)) in m.iter().enumerate() {
        out.push_str(if i == 0 { "- " } else { "  " });
        out.push_str(k);
        out.push(':');
        match val {
            Json::Array(a)
                if !a.is_empty() && a.iter().all(|x| !x.is_object() && !x.is_array()) =>
            {
                out.push('\n');
                for x in a {
                    out.push_str("    - ");
                    out.push_str(&render_value(x));
                    out.push('\n');
                }
            }
            other => {
                out.push(' ');
                out.push_str(&render_value(other));
                out.push('\n');
            }
        }
    }
    out
}

fn merge_plan(base: &str, ours: &str, theirs: &str) -> Result<Merged, MergeConflict> {
    let (bd, od, td) = (
        parse("base", base)?,
        parse("ours", ours)?,
        parse("theirs", theirs)?,
    );
    let (bs, os, ts) = (
        side(base, &bd.root, "tasks"),
        side(ours, &od.root, "tasks"),
        side(theirs, &td.root, "tasks"),
    );
    let (bh, oh, th) = (
        header(&bd.root, "tasks"),
        header(&od.root, "tasks"),
        header(&td.root, "tasks"),
    );
    let mut conflicts = Vec::new();
    if oh != bh && th != bh && oh != th {
        conflicts.push(
            "both sides changed the top-level keys of plan.small.yml differently".to_string(),
        );
    }
    let index = |s: &Side<'_>, which: &str, conflicts: &mut Vec<String>| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for (i, it) in s.items.iter().enumerate() {
            match task_id(it.node) {
                Some(id) if !id.is_empty() => {
                    if m.insert(id.clone(), i).is_some() {
                        conflicts.push(format!("{which}: task id {id} appears twice in the plan"));
                    }
                }
                _ => conflicts.push(format!("{which}: task #{} has no id", i + 1)),
            }
        }
        m
    };
    let (bi, oi, ti) = (
        index(&bs, "base", &mut conflicts),
        index(&os, "ours", &mut conflicts),
        index(&ts, "theirs", &mut conflicts),
    );
    if !conflicts.is_empty() {
        return Err(MergeConflict { conflicts });
    }
    // The order: ours' order for tasks ours has, then theirs' additions in theirs' order.
    let mut order: Vec<String> = os.items.iter().filter_map(|i| task_id(i.node)).collect();
    for it in &ts.items {
        let id = task_id(it.node).unwrap_or_default();
        if !oi.contains_key(&id) && !bi.contains_key(&id) {
            order.push(id);
        }
    }
    // Base tasks ours deleted but theirs changed: kept (as a conflict below).
    let mut items: Vec<(String, usize)> = Vec::new();
    let mut notes = Vec::new();
    for id in order
        .iter()
        .chain(bi.keys().filter(|id| !oi.contains_key(*id)))
    {
        let b = bi.get(id).map(|&i| &bs.items[i]);
        let o = oi.get(id).map(|&i| &os.items[i]);
        let t = ti.get(id).map(|&i| &ts.items[i]);
        let bv = b.map(|i| canon_node(i.node));
        let ov = o.map(|i| canon_node(i.node));
        let tv = t.map(|i| canon_node(i.node));
        let pick = |it: &Item| (it.text.clone(), it.col);
        match (b, o, t) {
            (_, Some(o), Some(_)) if ov == tv => items.push(pick(o)),
            (Some(_), Some(o), Some(_)) if tv == bv => items.push(pick(o)),
            (Some(_), Some(_), Some(t)) if ov == bv => {
                notes.push(format!("{id}: took theirs"));
                items.push(pick(t))
            }
            (b, Some(o), Some(t)) => {
                if b.is_none() {
                    let (a, c) = (task_title(o.node), task_title(t.node));
                    if a != c {
                        conflicts.push(format!(
                            "task id {id} was added on both sides for different tasks: ours {a:?}, theirs {c:?}; give one of them another id (small plan --add TITLE --id NAME)"
                        ));
                        continue;
                    }
                }
                match merge_fields(id, b.map(|i| i.node), o.node, t.node) {
                    Ok(v) => {
                        notes.push(format!("{id}: merged fields of both sides"));
                        items.push((render_item(&v), 0));
                    }
                    Err(mut c) => conflicts.append(&mut c),
                }
            }
            (None, Some(o), None) => items.push(pick(o)),
            (None, None, Some(t)) => {
                notes.push(format!("{id}: added from theirs"));
                items.push(pick(t))
            }
            (Some(_), Some(o), None) => {
                if ov == bv {
                    notes.push(format!("{id}: deleted by theirs"));
                } else {
                    conflicts.push(format!(
                        "task {id} was deleted by theirs and changed by ours"
                    ));
                    items.push(pick(o));
                }
            }
            (Some(_), None, Some(t)) => {
                if tv != bv {
                    conflicts.push(format!(
                        "task {id} was deleted by ours and changed by theirs"
                    ));
                    items.push(pick(t));
                }
            }
            (_, None, None) => {}
        }
    }
    if !conflicts.is_empty() {
        return Err(MergeConflict { conflicts });
    }
    let host = if oh == bh && th != bh { &ts } else { &os };
    let text = if host.spliceable {
        splice(host, &items)
    } else if items.is_empty() {
        host.src.to_string()
    } else {
        return Err(MergeConflict::one(
            "plan.small.yml: the tasks list is not a non-empty block list; merge it by hand",
        ));
    };
    parse("merged", &text)?;
    Ok(Merged { text, notes })
}

/// Field-level three-way merge of one task (`base` absent for a task added on both sides).
fn merge_fields(
    id: &str,
    base: Option<&Node>,
    ours: &Node,
    theirs: &Node,
) -> Result<Json, Vec<String>> {
    let obj = |n: Option<&Node>| match n.map(Node::to_json) {
        Some(Json::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let (b, o, t) = (obj(base), obj(Some(ours)), obj(Some(theirs)));
    let mut keys: Vec<&String> = o.keys().collect();
    for k in t.keys() {
        if !o.contains_key(k) {
            keys.push(k);
        }
    }
    let mut out = serde_json::Map::new();
    let mut conflicts = Vec::new();
    for k in keys {
        let (bv, ov, tv) = (b.get(k), o.get(k), t.get(k));
        let c = |v: Option<&Json>| v.map(canon);
        let v = if c(ov) == c(tv) || c(tv) == c(bv) {
            ov
        } else if c(ov) == c(bv) {
            tv
        } else {
            let show = |v: Option<&Json>| v.map_or("(removed)".to_string(), |v| v.to_string());
            conflicts.push(format!(
                "task {id}: field `{k}` changed on both sides: ours {}, theirs {}",
                show(ov),
                show(tv)
            ));
            continue;
        };
        if let Some(v) = v {
            out.insert(k.clone(), v.clone());
        }
    }
    if conflicts.is_empty() {
        Ok(Json::Object(out))
    } else {
        Err(conflicts)
    }
}

// ---------------------------------------------------------------------------------------
// Handoff and workspace metadata

fn merge_handoff(ours: &str) -> Result<Merged, MergeConflict> {
    let text = if ours.starts_with(HANDOFF_STALE_MARK) {
        ours.to_string()
    } else {
        format!("{HANDOFF_STALE_MARK}{}{ours}", edit::eol_of(ours))
    };
    Ok(Merged {
        text,
        notes: vec![
            "both sides changed the handoff: kept ours, marked for regeneration (run `small handoff`)"
                .into(),
        ],
    })
}

/// The handoff text without the merge driver's regeneration mark line.
pub fn strip_handoff_mark(text: &str) -> &str {
    match text.strip_prefix(HANDOFF_STALE_MARK) {
        Some(rest) => rest
            .strip_prefix("\r\n")
            .or(rest.strip_prefix('\n'))
            .unwrap_or(rest),
        None => text,
    }
}

fn merge_workspace(ours: &str, theirs: &str) -> Result<Merged, MergeConflict> {
    let updated = |src: &str| -> Option<Instant> {
        let d = yaml::parse_str(src, &Limits::default()).ok()?;
        let s = d.root.get("updated_at")?.as_str()?.to_string();
        crate::authoring::progress::parse_lenient(&s)
    };
    let (o, t) = (updated(ours), updated(theirs));
    if t > o {
        Ok(Merged {
            text: theirs.to_string(),
            notes: vec![
                "both sides changed the workspace metadata: kept theirs (newer updated_at)".into(),
            ],
        })
    } else {
        Ok(Merged {
            text: ours.to_string(),
            notes: vec![
                "both sides changed the workspace metadata: kept ours (newer or equal updated_at)"
                    .into(),
            ],
        })
    }
}

// ---------------------------------------------------------------------------------------
// Installing the driver in a git repository

/// The name of the merge driver in `.gitattributes` and git config (`merge.small.*`).
pub const DRIVER_NAME: &str = "small";

/// What installing the merge driver did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InstallReport {
    /// The repository's top-level directory.
    pub repo: std::path::PathBuf,
    /// `.gitattributes` lines added (empty when all were there).
    pub attributes_added: Vec<String>,
    /// Whether `.gitattributes` was created.
    pub attributes_created: bool,
    /// The git config values set, as `(key, value)`, and whether each changed.
    pub config: Vec<(String, String, bool)>,
}

impl InstallReport {
    /// One line per thing the install did or found already done.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.attributes_added.is_empty() {
            out.push(
                ".gitattributes: already routes the SMALL artifacts to the driver".to_string(),
            );
        } else {
            out.push(format!(
                ".gitattributes: {} {}",
                if self.attributes_created {
                    "created with"
                } else {
                    "added"
                },
                self.attributes_added.join(", ")
            ));
        }
        for (k, v, changed) in &self.config {
            out.push(format!(
                "git config {k} {}: {v}",
                if *changed { "set" } else { "already set" }
            ));
        }
        out
    }
}

/// Why the driver could not be installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallError {
    #[error("{0} is not inside a git repository (run `git init` first)")]
    NotGitRepo(std::path::PathBuf),
    #[error("{0}")]
    Git(String),
    #[error("cannot write {0}: {1}")]
    Io(std::path::PathBuf, String),
}

fn git(dir: &std::path::Path, args: &[&str]) -> Result<std::process::Output, InstallError> {
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| InstallError::Git(format!("cannot run git: {e}")))
}

/// The top-level directory of the git repository holding `dir`, if any.
pub fn git_toplevel(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let out = git(dir, &["rev-parse", "--show-toplevel"]).ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?;
    let s = s.trim_end_matches(['\n', '\r']);
    (!s.is_empty()).then(|| std::path::PathBuf::from(s))
}

/// The `.gitattributes` lines for a workspace at `rel` (relative to the repository's top,
/// `/`-separated, empty for the top itself).
pub fn attribute_lines(rel: &str) -> Vec<String> {
    let prefix = if rel.is_empty() || rel == "." {
        String::new()
    } else {
        format!("{}/", rel.trim_end_matches('/'))
    };
    MergeKind::FILES
        .iter()
        .map(|f| format!("{prefix}.small/{f} merge={DRIVER_NAME}"))
        .collect()
}

/// Install the merge driver for the workspace at `root`: add the `.gitattributes` lines at
/// the repository's top (only the missing ones) and set `merge.small.name` and
/// `merge.small.driver` (running `command`, e.g. `small`) in the repository's local config.
pub fn install(root: &std::path::Path, command: &str) -> Result<InstallReport, InstallError> {
    let top = git_toplevel(root).ok_or_else(|| InstallError::NotGitRepo(root.to_path_buf()))?;
    let canon_top = std::fs::canonicalize(&top).unwrap_or(top.clone());
    let canon_root = std::fs::canonicalize(root).unwrap_or(root.to_path_buf());
    let rel = canon_root
        .strip_prefix(&canon_top)
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_default();
    let path = top.join(".gitattributes");
    let existing = match crate::fsio::read_string_bounded(&path, crate::fsio::MAX_READ_BYTES) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(InstallError::Io(path, e.to_string())),
    };
    let have: Vec<&str> = existing
        .as_deref()
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .collect();
    let added: Vec<String> = attribute_lines(&rel)
        .into_iter()
        .filter(|l| !have.contains(&l.as_str()))
        .collect();
    if !added.is_empty() {
        let mut text = existing.clone().unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(
            "# SMALL: merge the agent-owned artifacts entry by entry (small merge-driver)\n",
        );
        for l in &added {
            text.push_str(l);
            text.push('\n');
        }
        crate::workspace::txn::atomic_write(&path, text.as_bytes())
            .map_err(|e| InstallError::Io(path.clone(), e.to_string()))?;
    }
    let config = configure_driver(&top, command)?;
    Ok(InstallReport {
        repo: top,
        attributes_added: added,
        attributes_created: existing.is_none(),
        config,
    })
}

/// Set `merge.small.name` and `merge.small.driver` (running `command`) in the local config
/// of the repository holding `dir`, where they differ: each key, its value, and whether it
/// changed.
pub fn configure_driver(
    dir: &std::path::Path,
    command: &str,
) -> Result<Vec<(String, String, bool)>, InstallError> {
    let mut config = Vec::new();
    for (key, value) in [
        (
            format!("merge.{DRIVER_NAME}.name"),
            "SMALL artifacts: progress entries, plan tasks, handoff (small merge-driver)"
                .to_string(),
        ),
        (
            format!("merge.{DRIVER_NAME}.driver"),
            format!("{command} merge-driver %O %A %B %P"),
        ),
    ] {
        let cur = git(dir, &["config", "--local", "--get", &key])?;
        let cur = String::from_utf8_lossy(&cur.stdout).trim_end().to_string();
        let changed = cur != value;
        if changed {
            let out = git(dir, &["config", "--local", &key, &value])?;
            if !out.status.success() {
                return Err(InstallError::Git(format!(
                    "git config {key} failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        config.push((key, value, changed));
    }
    Ok(config)
}

/// How git should call the `small` at `exe`: plain `small` when that name on `PATH` is this
/// very binary, otherwise its absolute path (shell-quoted), so the driver works in a clone
/// whose `PATH` lacks it only if the path still exists.
pub fn driver_command_for(exe: &std::path::Path) -> String {
    let exe = std::fs::canonicalize(exe).unwrap_or(exe.to_path_buf());
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let cand = dir.join("small");
            if std::fs::canonicalize(&cand).is_ok_and(|c| c == exe) {
                return "small".into();
            }
        }
    }
    let s = exe.to_string_lossy();
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// git's three files of a merge (`%O %A %B`), and the path in the repository (`%P`).
#[derive(Debug, Clone)]
pub struct MergeFilesRequest<'a> {
    pub base: &'a std::path::Path,
    /// Ours; the result is written here.
    pub ours: &'a std::path::Path,
    pub theirs: &'a std::path::Path,
    /// The file's path in the repository (chooses the merge; default: `ours`).
    pub path: Option<&'a str>,
}

/// Why the files were not merged cleanly.
#[derive(Debug)]
pub enum MergeFilesError {
    /// Not a file small merges.
    NotMerged { name: String },
    /// A file cannot be read or written.
    Io(String),
    /// Both sides changed the same thing: git's conflict markers were left in ours.
    Conflict {
        name: String,
        conflicts: Vec<String>,
    },
}

/// Merge git's three files into ours, as git's merge driver for the SMALL artifacts. On a
/// conflict ours is left with git's usual text-merge markers, for a human to resolve.
pub fn merge_files(req: &MergeFilesRequest) -> Result<(String, Merged), MergeFilesError> {
    use crate::fsio;
    let name = req
        .path
        .map(str::to_string)
        .unwrap_or_else(|| req.ours.to_string_lossy().into_owned());
    let Some(kind) = MergeKind::for_path(&name) else {
        return Err(MergeFilesError::NotMerged { name });
    };
    let read = |p: &std::path::Path| {
        fsio::read_bounded(p, fsio::MAX_READ_BYTES)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| MergeFilesError::Io(format!("cannot read {}: {e}", p.display())))
    };
    let (b, o, t) = (read(req.base)?, read(req.ours)?, read(req.theirs)?);
    match merge(kind, &b, &o, &t) {
        Ok(m) => {
            std::fs::write(req.ours, m.text.as_bytes()).map_err(|e| {
                MergeFilesError::Io(format!("cannot write {}: {e}", req.ours.display()))
            })?;
            Ok((name, m))
        }
        Err(c) => {
            let _ = std::process::Command::new("git")
                .args(["merge-file", "-L", "ours", "-L", "base", "-L", "theirs"])
                .arg(req.ours)
                .arg(req.base)
                .arg(req.theirs)
                .status();
            Err(MergeFilesError::Conflict {
                name,
                conflicts: c.conflicts,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "# log\nsmall_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n";

    fn entry(task: &str, ts: &str, ev: &str) -> String {
        format!("  - task_id: \"{task}\"\n    timestamp: \"{ts}\"\n    evidence: \"{ev}\"\n")
    }

    fn ids(text: &str) -> Vec<String> {
        let d = yaml::parse_str(text, &Limits::default()).unwrap();
        d.root
            .get("entries")
            .unwrap()
            .as_seq()
            .unwrap()
            .iter()
            .map(|e| e.get("evidence").unwrap().as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn progress_keeps_every_entry_once_in_timestamp_order() {
        let b = format!(
            "{HEAD}{}",
            entry("t", "2026-01-01T00:00:00.000000000Z", "base")
        );
        let o = format!(
            "{b}{}{}",
            entry("t", "2026-01-01T00:00:02.000000000Z", "o1"),
            entry("t", "2026-01-01T00:00:05.000000000Z", "same")
        );
        let t = format!(
            "{b}  # their comment\n{}{}",
            entry("t", "2026-01-01T00:00:01.000000000Z", "t1"),
            entry("t", "2026-01-01T00:00:05.000000000Z", "same")
        );
        let m = merge(MergeKind::Progress, &b, &o, &t).unwrap();
        assert_eq!(ids(&m.text), ["base", "t1", "o1", "same"]);
        assert!(m.text.starts_with("# log\n"));
        // Symmetric: swapping sides gives the same entries.
        let m2 = merge(MergeKind::Progress, &b, &t, &o).unwrap();
        assert_eq!(ids(&m2.text), ids(&m.text));
    }

    #[test]
    fn progress_reindents_the_other_side() {
        let b = format!("{HEAD}{}", entry("t", "2026-01-01T00:00:00Z", "base"));
        let o = format!("{b}{}", entry("t", "2026-01-01T00:00:02Z", "o1"));
        let t = "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n- task_id: \"t\"\n  timestamp: \"2026-01-01T00:00:00Z\"\n  evidence: \"base\"\n- task_id: \"t\"\n  timestamp: \"2026-01-01T00:00:03Z\"\n  evidence: \"t1\"\n".to_string();
        // theirs re-indented the base entries: that is a rewrite? No: same values.
        let m = merge(MergeKind::Progress, &b, &o, &t).unwrap();
        assert_eq!(ids(&m.text), ["base", "o1", "t1"]);
    }

    #[test]
    fn progress_takes_an_entry_a_rebase_put_before_the_last_base_entry() {
        // A rebase published o1 (earlier) before b2 (pushed first): the base entries are
        // still all there, in order, and the result stays in timestamp order.
        let b = format!(
            "{HEAD}{}{}",
            entry("t", "2026-01-01T00:00:00Z", "b0"),
            entry("t", "2026-01-01T00:00:02Z", "b2")
        );
        let o = format!(
            "{HEAD}{}{}{}",
            entry("t", "2026-01-01T00:00:00Z", "b0"),
            entry("t", "2026-01-01T00:00:01Z", "o1"),
            entry("t", "2026-01-01T00:00:02Z", "b2")
        );
        let t = format!("{b}{}", entry("t", "2026-01-01T00:00:03Z", "t3"));
        let m = merge(MergeKind::Progress, &b, &o, &t).unwrap();
        assert_eq!(ids(&m.text), ["b0", "o1", "b2", "t3"]);
        let m2 = merge(MergeKind::Progress, &b, &t, &o).unwrap();
        assert_eq!(ids(&m2.text), ids(&m.text));
    }

    proptest::proptest! {
        /// Any interleaving a rebase can produce: entries with distinct times, a sorted
        /// base, and each side holding the base in order plus entries of its own placed by
        /// time. The merge keeps every entry once, in time order, whichever side is ours.
        #[test]
        fn progress_merges_any_sorted_sides(
            sides in proptest::collection::vec(0u8..4, 1..14),
        ) {
            // Entry i has time i; 0: base, 1: ours, 2: theirs, 3: both sides.
            let e = |i: usize| entry("t", &format!("2026-01-01T00:00:{i:02}Z"), &format!("e{i}"));
            let keep = |want: &[u8]| -> String {
                sides.iter().enumerate()
                    .filter(|(_, w)| want.contains(w))
                    .map(|(i, _)| e(i))
                    .collect()
            };
            let (b, o, t) = (
                format!("{HEAD}{}", keep(&[0])),
                format!("{HEAD}{}", keep(&[0, 1, 3])),
                format!("{HEAD}{}", keep(&[0, 2, 3])),
            );
            let all: Vec<String> = (0..sides.len()).map(|i| format!("e{i}")).collect();
            let m = merge(MergeKind::Progress, &b, &o, &t).unwrap();
            proptest::prop_assert_eq!(ids(&m.text), all.clone());
            let m2 = merge(MergeKind::Progress, &b, &t, &o).unwrap();
            proptest::prop_assert_eq!(ids(&m2.text), all);
        }
    }

    #[test]
    fn progress_deleted_base_entry_is_a_conflict_naming_it() {
        let b = format!(
            "{HEAD}{}{}",
            entry("a", "2026-01-01T00:00:00Z", "x"),
            entry("b", "2026-01-01T00:00:01Z", "y")
        );
        let o = format!("{HEAD}{}", entry("a", "2026-01-01T00:00:00Z", "x"));
        let t = format!("{b}{}", entry("c", "2026-01-01T00:00:02Z", "z"));
        let e = merge(MergeKind::Progress, &b, &o, &t).unwrap_err();
        assert_eq!(
            e.conflicts,
            ["ours deleted progress entry #2 (b at 2026-01-01T00:00:01Z): the log is append-only"]
        );
    }

    #[test]
    fn handoff_changed_on_both_sides_is_marked_and_unmarked() {
        let m = merge(
            MergeKind::Handoff,
            "summary: \"a\"\n",
            "summary: \"b\"\n",
            "summary: \"c\"\n",
        )
        .unwrap();
        assert!(handoff_needs_regeneration(&m.text));
        assert_eq!(strip_handoff_mark(&m.text), "summary: \"b\"\n");
        let m = merge(
            MergeKind::Handoff,
            "summary: \"a\"\n",
            "summary: \"a\"\n",
            "summary: \"c\"\n",
        )
        .unwrap();
        assert_eq!(m.text, "summary: \"c\"\n");
    }

    #[test]
    fn workspace_keeps_the_newer() {
        let w = |t: &str| format!("kind: \"repo-root\"\nupdated_at: \"{t}\"\n");
        let m = merge(
            MergeKind::Workspace,
            &w("2026-01-01T00:00:00Z"),
            &w("2026-01-01T00:00:01Z"),
            &w("2026-01-01T00:00:02Z"),
        )
        .unwrap();
        assert_eq!(m.text, w("2026-01-01T00:00:02Z"));
    }

    #[test]
    fn plan_merges_tasks_and_reports_collisions() {
        let head = "# plan\nsmall_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n";
        let task = |id: &str, title: &str, status: &str| {
            format!(
                "  - id: \"{id}\"\n    title: \"{title}\"  # keep me\n    status: \"{status}\"\n"
            )
        };
        let b = format!("{head}{}", task("t1", "One", "pending"));
        let o = format!(
            "{head}{}{}",
            task("t1", "One", "completed"),
            task("a", "Alpha", "pending")
        );
        let t = format!(
            "{head}{}{}",
            task("t1", "One", "pending"),
            task("b", "Beta", "pending")
        );
        let m = merge(MergeKind::Plan, &b, &o, &t).unwrap();
        assert!(m.text.contains("# keep me"));
        let d = yaml::parse_str(&m.text, &Limits::default())
            .unwrap()
            .root
            .to_json();
        let got: Vec<(String, String)> = d["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["id"].as_str().unwrap().into(),
                    t["status"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("t1".into(), "completed".into()),
                ("a".into(), "pending".into()),
                ("b".into(), "pending".into())
            ]
        );
        let o = format!(
            "{head}{}{}",
            task("t1", "One", "pending"),
            task("t2", "Login", "pending")
        );
        let t = format!(
            "{head}{}{}",
            task("t1", "One", "pending"),
            task("t2", "Billing", "pending")
        );
        let e = merge(MergeKind::Plan, &b, &o, &t).unwrap_err();
        assert!(
            e.conflicts[0].contains("ours \"Login\", theirs \"Billing\""),
            "{e}"
        );
    }

    #[test]
    fn merge_files_writes_ours_and_refuses_other_files() {
        let tmp = tempfile::tempdir().unwrap();
        let f = |n: &str, t: &str| {
            let p = tmp.path().join(n);
            std::fs::write(&p, t).unwrap();
            p
        };
        let base = f("base", "a\n");
        let ours = f("ours", "a\n");
        let theirs = f("theirs", "b\n");
        let req = MergeFilesRequest {
            base: &base,
            ours: &ours,
            theirs: &theirs,
            path: Some(".small/handoff.small.yml"),
        };
        let (name, m) = merge_files(&req).unwrap();
        assert_eq!(name, ".small/handoff.small.yml");
        assert!(!m.notes.is_empty());
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), "b\n");
        let other = MergeFilesRequest {
            path: Some("README.md"),
            ..req
        };
        assert!(matches!(
            merge_files(&other),
            Err(MergeFilesError::NotMerged { .. })
        ));
    }
}
