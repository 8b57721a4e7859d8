//! Reading the v1 artifacts the way the reference's migrator reads them.
//!
//! The reference decodes plan, progress and handoff into loose shapes: a scalar that is not
//! a string still fills a string field with its source text, a value of the wrong shape is
//! an error for the plan (preview refuses) and is skipped for progress and handoff (the
//! entries and fields that do fit are kept). Progress entries keep every member, typed as
//! YAML typed them (timestamps stay strings).

use crate::yaml::{self, Document, Limits, Node, Value};

use super::gojson::{go_float, GoValue};

/// One task of plan.small.yml.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LegacyTask {
    pub id: String,
    pub title: String,
    pub acceptance: Option<Vec<String>>,
    pub dependencies: Option<Vec<String>>,
    pub status: String,
}

/// handoff.small.yml as the migrator reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LegacyHandoff {
    pub summary: String,
    pub replay_id: String,
    /// Whether every field read had the expected shape (the lineage id only trusts a
    /// replay id read from a handoff without such errors).
    pub clean: bool,
}

/// One progress entry: its members (`None` for an entry written as null).
pub type LegacyEntry = Option<Vec<(String, GoValue)>>;

/// The reference's YAML reader nests flow collections (`[`, `{`) up to 10 000 levels, and
/// block indentation up to 10 000 levels.
const MAX_FLOW_DEPTH: usize = 10_000;
const MAX_DEPTH: usize = 2 * MAX_FLOW_DEPTH;

/// The deepest nesting of flow collections in `root`.
fn flow_depth(root: &Node) -> usize {
    flow_depth_within(root, 0)
}

/// [`flow_depth`] of `node` inside `outer` flow collections.
fn flow_depth_within(node: &Node, outer: usize) -> usize {
    let mut deepest = outer;
    let mut stack = vec![(node, outer)];
    while let Some((node, depth)) = stack.pop() {
        let depth = if node.style == yaml::Style::Flow {
            depth + 1
        } else {
            0
        };
        deepest = deepest.max(depth);
        match &node.value {
            Value::Seq(items) => stack.extend(items.iter().map(|n| (n, depth))),
            Value::Map(entries) => stack.extend(entries.iter().map(|e| (&e.value, depth))),
            _ => {}
        }
    }
    deepest
}

fn checked(doc: Document) -> Result<Document, String> {
    if flow_depth(&doc.root) > MAX_FLOW_DEPTH {
        return Err(format!("yaml: exceeded max depth of {MAX_FLOW_DEPTH}"));
    }
    Ok(doc)
}

/// Parse as the reference's reader does: only the first document of a file counts.
fn parse(bytes: &[u8]) -> Result<Document, String> {
    let limits = Limits {
        max_depth: MAX_DEPTH,
        ..Limits::default()
    };
    match yaml::parse_bytes(bytes, &limits) {
        Err(e) if e.is_extra_document() => {
            let first = bytes.get(..e.pos.offset as usize).unwrap_or(bytes);
            yaml::parse_bytes(first, &limits)
                .map_err(|e| format!("yaml: {e}"))
                .and_then(checked)
        }
        other => other.map_err(|e| format!("yaml: {e}")).and_then(checked),
    }
}

fn raw<'a>(doc: &'a Document, node: &Node) -> &'a str {
    doc.source.get(node.span.byte_range()).unwrap_or_default()
}

/// A scalar read into a string field: strings as they are, other scalars as written, null
/// as empty. Sequences and mappings do not fit.
fn string_field(doc: &Document, node: &Node) -> Result<String, String> {
    match &node.value {
        Value::Null => Ok(String::new()),
        Value::Str(s) => Ok(s.clone()),
        Value::Bool(_) | Value::Int(_) | Value::Float(_) => Ok(raw(doc, node).to_string()),
        Value::Seq(_) | Value::Map(_) => Err(format!(
            "line {}: cannot read a {} as a string",
            node.span.start.line,
            kind(node)
        )),
    }
}

fn kind(node: &Node) -> &'static str {
    match node.value {
        Value::Seq(_) => "sequence",
        Value::Map(_) => "mapping",
        _ => "scalar",
    }
}

fn string_list(doc: &Document, node: &Node) -> Result<Option<Vec<String>>, String> {
    match &node.value {
        Value::Null => Ok(None),
        Value::Seq(items) => items
            .iter()
            .map(|n| string_field(doc, n))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Err(format!(
            "line {}: cannot read a {} as a list of strings",
            node.span.start.line,
            kind(node)
        )),
    }
}

/// A value read into an untyped slot.
pub fn any_value(node: &Node) -> GoValue {
    match &node.value {
        Value::Null => GoValue::Null,
        Value::Bool(b) => GoValue::Bool(*b),
        Value::Int(i) => GoValue::Int(*i),
        Value::Float(f) => GoValue::Float(*f),
        Value::Str(s) => GoValue::Str(s.clone()),
        Value::Seq(items) => GoValue::Arr(items.iter().map(any_value).collect()),
        Value::Map(entries) => GoValue::map(
            entries
                .iter()
                .map(|e| (e.key.to_string(), any_value(&e.value)))
                .collect(),
        ),
    }
}

/// The tasks of plan.small.yml; an error when the file does not have the plan's shape.
pub fn plan_tasks(bytes: Option<&[u8]>) -> Result<Vec<LegacyTask>, String> {
    let Some(bytes) = bytes else {
        return Ok(Vec::new());
    };
    let doc = parse(bytes)?;
    let entries = match &doc.root.value {
        Value::Null => return Ok(Vec::new()),
        Value::Map(entries) => entries,
        _ => {
            return Err(format!(
                "line {}: the plan is a {}, not a mapping",
                doc.root.span.start.line,
                kind(&doc.root)
            ))
        }
    };
    let Some(tasks) = entries.iter().find(|e| e.key == "tasks").map(|e| &e.value) else {
        return Ok(Vec::new());
    };
    let items = match &tasks.value {
        Value::Null => return Ok(Vec::new()),
        Value::Seq(items) => items,
        _ => {
            return Err(format!(
                "line {}: tasks is a {}, not a sequence",
                tasks.span.start.line,
                kind(tasks)
            ))
        }
    };
    let mut out = Vec::new();
    for item in items {
        let mut task = LegacyTask::default();
        match &item.value {
            Value::Null => {}
            Value::Map(fields) => {
                for f in fields {
                    match &*f.key {
                        "id" => task.id = string_field(&doc, &f.value)?,
                        "title" => task.title = string_field(&doc, &f.value)?,
                        "status" => task.status = string_field(&doc, &f.value)?,
                        "acceptance" => task.acceptance = string_list(&doc, &f.value)?,
                        "dependencies" => task.dependencies = string_list(&doc, &f.value)?,
                        _ => {}
                    }
                }
            }
            _ => {
                return Err(format!(
                    "line {}: a task is a {}, not a mapping",
                    item.span.start.line,
                    if matches!(item.value, Value::Seq(_)) {
                        "sequence"
                    } else {
                        "scalar"
                    }
                ))
            }
        }
        out.push(task);
    }
    Ok(out)
}

/// The summary and replay id of handoff.small.yml (empty where absent or unreadable).
pub fn handoff(bytes: Option<&[u8]>) -> LegacyHandoff {
    let mut out = LegacyHandoff {
        clean: true,
        ..LegacyHandoff::default()
    };
    let Some(bytes) = bytes else {
        return out;
    };
    let Ok(doc) = parse(bytes) else {
        out.clean = false;
        return out;
    };
    let entries = match &doc.root.value {
        Value::Null => return out,
        Value::Map(entries) => entries,
        _ => {
            out.clean = false;
            return out;
        }
    };
    for e in entries {
        match &*e.key {
            "summary" => match string_field(&doc, &e.value) {
                Ok(s) => out.summary = s,
                Err(_) => out.clean = false,
            },
            "replayId" => match &e.value.value {
                Value::Null => {}
                Value::Map(fields) => {
                    for f in fields.iter().filter(|f| f.key == "value") {
                        match string_field(&doc, &f.value) {
                            Ok(s) => out.replay_id = s,
                            Err(_) => out.clean = false,
                        }
                    }
                }
                _ => out.clean = false,
            },
            _ => {}
        }
    }
    out
}

/// progress.small.yml, parsed once; its entries are converted one at a time, so that a long
/// log is never held twice (as YAML nodes and as values) in memory.
pub struct Progress(Vec<Node>);

/// Parse progress.small.yml (an unreadable or missing log has no entries). The entries are
/// streamed out of the document, which takes the fast path the gates read logs with where
/// it applies (the general parser's tree otherwise, held equal to it by the fuzz suite): at
/// 100 000 entries the general parser was a quarter of the migration's time.
pub fn progress(bytes: Option<&[u8]>) -> Progress {
    Progress(bytes.and_then(progress_items).unwrap_or_default())
}

/// The items of the log's top-level `entries` sequence, read as [`parse`] reads the file
/// (its first document only; the same limits); `None` when it cannot be read.
fn progress_items(bytes: &[u8]) -> Option<Vec<Node>> {
    let limits = Limits {
        max_depth: MAX_DEPTH,
        ..Limits::default()
    };
    let text = std::str::from_utf8(bytes).ok()?;
    let stream = |src: &str| {
        let mut items = Vec::new();
        let root = yaml::parse_streaming(src, &limits, "entries", &mut |_, n| items.push(n));
        root.map(|root| (root, items))
    };
    let (root, items) = match stream(text) {
        Err(e) if e.is_extra_document() => {
            stream(text.get(..e.pos.offset as usize).unwrap_or(text)).ok()?
        }
        other => other.ok()?,
    };
    let Value::Map(entries) = &root.value else {
        return None;
    };
    let list = &entries.iter().find(|e| e.key == "entries")?.value;
    if !matches!(list.value, Value::Seq(_)) {
        return None;
    }
    let outer = usize::from(list.style == yaml::Style::Flow);
    let too_deep = flow_depth(&root) > MAX_FLOW_DEPTH
        || items
            .iter()
            .any(|n| flow_depth_within(n, outer) > MAX_FLOW_DEPTH);
    (!too_deep).then_some(items)
}

impl Progress {
    fn items(&self) -> &[Node] {
        &self.0
    }

    /// The entries that have an entry's shape (a mapping, or null), in order.
    pub fn entries(&self) -> impl Iterator<Item = LegacyEntry> + '_ {
        self.items().iter().filter_map(|item| match &item.value {
            Value::Null => Some(None),
            Value::Map(fields) => Some(Some(
                fields
                    .iter()
                    .map(|f| (f.key.to_string(), any_value(&f.value)))
                    .collect(),
            )),
            _ => None,
        })
    }
}

/// The entries of progress.small.yml that have an entry's shape (a mapping, or null).
#[cfg(test)]
pub fn progress_entries(bytes: Option<&[u8]>) -> Vec<LegacyEntry> {
    progress(bytes).entries().collect()
}

/// A member of an entry as text (trimmed; empty when absent or null).
pub fn entry_text(entry: &LegacyEntry, key: &str) -> String {
    entry
        .as_ref()
        .and_then(|m| m.iter().rev().find(|(k, _)| k == key))
        .map(|(_, v)| match v {
            GoValue::Null => String::new(),
            v => sprint(v),
        })
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// How Go's `fmt.Sprint` prints a decoded value.
fn sprint(v: &GoValue) -> String {
    match v {
        GoValue::Null => "<nil>".to_string(),
        GoValue::Bool(b) => b.to_string(),
        GoValue::Int(i) => i.to_string(),
        GoValue::Float(f) => go_float(*f),
        GoValue::Str(s) => s.clone(),
        GoValue::Arr(items) => {
            let parts: Vec<String> = items.iter().map(sprint).collect();
            format!("[{}]", parts.join(" "))
        }
        GoValue::Obj(members) => {
            let parts: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{k}:{}", sprint(v)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_scalars_fill_string_fields_as_written() {
        let tasks = plan_tasks(Some(
            b"tasks:\n  - id: 7\n    title: ~\n    acceptance: []\n",
        ))
        .expect("plan");
        assert_eq!(tasks[0].id, "7");
        assert_eq!(tasks[0].title, "");
        assert_eq!(tasks[0].acceptance, Some(vec![]));
        assert_eq!(tasks[0].dependencies, None);
        assert!(plan_tasks(Some(b"tasks:\n  - just a string\n")).is_err());
    }

    #[test]
    fn only_the_first_document_counts() {
        let tasks = plan_tasks(Some(b"tasks:\n  - id: a\n---\ntasks: []\n")).expect("plan");
        assert_eq!(tasks.len(), 1);
    }

    #[test]
    fn handoff_with_a_scalar_replay_id_is_not_clean() {
        let h = handoff(Some(b"summary: s\nreplayId: abc\n"));
        assert_eq!(
            (h.summary.as_str(), h.replay_id.as_str(), h.clean),
            ("s", "", false)
        );
    }

    #[test]
    fn progress_skips_entries_of_the_wrong_shape() {
        let e = progress_entries(Some(b"entries:\n  - x\n  - task_id: ' a '\n  - null\n"));
        assert_eq!(e.len(), 2);
        assert_eq!(entry_text(&e[0], "task_id"), "a");
        assert_eq!(entry_text(&e[1], "task_id"), "");
    }

    /// The entries as the whole document gives them (the general parser, no streaming).
    fn whole(bytes: &[u8]) -> Vec<LegacyEntry> {
        let Ok(doc) = parse(bytes) else {
            return Vec::new();
        };
        let Value::Map(entries) = &doc.root.value else {
            return Vec::new();
        };
        let Some(list) = entries.iter().find(|e| e.key == "entries") else {
            return Vec::new();
        };
        let Value::Seq(items) = &list.value.value else {
            return Vec::new();
        };
        Progress(items.clone()).entries().collect()
    }

    /// Streaming the entries out of the log gives what parsing it whole gives, whatever the
    /// shape: block and flow entries, a second document, nulls, odd values, other keys,
    /// damage.
    #[test]
    fn streamed_entries_are_the_whole_documents_entries() {
        let logs: &[&str] = &[
            "small_version: \"1.0.0\"\nentries:\n  - task_id: t1\n    status: in_progress\n    timestamp: 2026-01-01T00:00:00Z\n  - null\n  - task_id: t2\n    n: 1.5\n    list: [a, {b: c}]\n",
            "entries: [{task_id: t1, status: done}, ~, {x: [1, [2, [3]]]}]\n",
            "entries:\n  - task_id: t1\n---\nentries:\n  - task_id: t2\n",
            "entries:\n- a: 1\n- 'str'\n- [x]\nother: {k: v}\n",
            "entries: not a list\n",
            "- just a list\n",
            "entries:\n  - task_id: t1\n    notes: |\n      two\n      lines\n  - task_id: \"quoted \\u00e9\"\n",
            "entries:\n  - task_id: t1\n  status: broken indentation\n",
            "entries:\n  - &a {k: v}\n  - *a\n",
            "",
        ];
        for log in logs {
            let streamed: Vec<LegacyEntry> = progress(Some(log.as_bytes())).entries().collect();
            assert_eq!(streamed, whole(log.as_bytes()), "{log:?}");
        }
        assert!(progress(None).entries().next().is_none());
        assert!(progress(Some(b"entries:\n  - \xff\n"))
            .entries()
            .next()
            .is_none());
    }
}
