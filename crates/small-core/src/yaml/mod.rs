//! YAML 1.2 loading that keeps the position of every value.
//!
//! SMALL artifacts are YAML, and every diagnostic we print names a file, line and column, so
//! the loader builds its own small tree from the parser's events instead of deserialising
//! straight into structs. The tree is also what the authoring commands edit in place: spans
//! carry byte offsets, so a single scalar can be replaced without touching comments or
//! formatting around it.
//!
//! What the loader enforces (all with a position and a clear message, never a panic):
//! - YAML 1.2 core schema: `true`/`false`, `null`/`~`, decimal/octal/hex integers and floats
//!   are typed; everything else, including unquoted timestamps, is a string;
//! - duplicate keys in one mapping are an error; so is a second document in one file;
//! - merge keys (`<<`) are honoured, explicit keys winning;
//! - aliases are expanded under a node budget ("billion laughs" fails fast);
//! - nesting deeper than a limit and files larger than a limit are refused;
//! - bytes that are not UTF-8 are refused; a leading byte-order mark is tolerated.

use std::collections::{HashMap, HashSet};

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, ScanError};

use crate::diag::{Pos, Span};

mod deep;
mod fast;
pub(crate) mod find;
mod keyed;
mod spare;

pub use keyed::{keyed_scalars, KeyedScalars};

pub use spare::recycle;

pub use fast::{Part, Resume, Splice, Walked};

/// Resource limits for one file.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest file accepted, in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of sequences and mappings.
    pub max_depth: usize,
    /// Most nodes that alias expansion may create in one file.
    pub max_alias_nodes: usize,
}

impl Default for Limits {
    /// 256 MiB, depth 2048, 100 000 nodes created by aliases. A 100 000-entry progress log is
    /// about 32 MB; real artifacts nest a handful of levels and rarely use aliases at all.
    fn default() -> Self {
        Limits {
            max_bytes: 256 * 1024 * 1024,
            max_depth: 2048,
            max_alias_nodes: 100_000,
        }
    }
}

/// How a node was written in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
    /// A block (indented) sequence or mapping.
    Block,
    /// A flow (`[...]`, `{...}`) sequence or mapping.
    Flow,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// One `key: value` pair of a mapping. Keys are scalars, kept as their text.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key; the protocol's own keys are borrowed from [`known_key`] rather than allocated
    /// for every entry of a long log.
    pub key: std::borrow::Cow<'static, str>,
    pub key_span: Span,
    pub value: Node,
}

/// Keys of the protocol's files, shared by every mapping that has them.
const KNOWN_KEYS: [&str; 24] = [
    "timestamp",
    "task_id",
    "status",
    "evidence",
    "verification",
    "command",
    "command_summary",
    "command_sha256",
    "command_ref",
    "test",
    "link",
    "commit",
    "notes",
    "replayId",
    "small_version",
    "owner",
    "entries",
    "tasks",
    "id",
    "title",
    "depends_on",
    "value",
    "source",
    "summary",
];

/// A mapping key: borrowed when it is one of the protocol's keys, else owned.
pub fn known_key(key: &str) -> std::borrow::Cow<'static, str> {
    match KNOWN_KEYS.iter().find(|k| **k == key) {
        Some(k) => std::borrow::Cow::Borrowed(k),
        None => std::borrow::Cow::Owned(key.to_string()),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    pub span: Span,
    pub style: Style,
}

/// A parsed file.
#[derive(Debug, Clone)]
pub struct Document {
    pub root: Node,
    /// The text as read (byte-order mark included, if there was one).
    pub source: String,
}

/// Why a file could not be loaded, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (line {}, column {})", pos.line, pos.column)]
pub struct YamlError {
    pub message: String,
    pub pos: Pos,
}

impl Node {
    /// The value under `key`, if this is a mapping that has it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    /// The entry under `key`, if this is a mapping that has it.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.as_map()?.iter().find(|e| e.key == key)
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[Entry]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// Whether the node is a sequence or a mapping (it has nodes inside).
    pub fn is_collection(&self) -> bool {
        matches!(self.value, Value::Seq(_) | Value::Map(_))
    }

    /// A short name of the node's type, for messages: `string`, `mapping`, ...
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Seq(_) => "sequence",
            Value::Map(_) => "mapping",
        }
    }

    /// The node at a JSON pointer (`/tasks/0/id`), if it exists.
    pub fn pointer(&self, pointer: &str) -> Option<&Node> {
        let mut node = self;
        for token in pointer_tokens(pointer) {
            node = node.child(&token)?;
        }
        Some(node)
    }

    /// The span of the deepest node that exists along a JSON pointer. For a pointer to a
    /// missing key this is the mapping that should hold it, so errors still point somewhere.
    pub fn locate(&self, pointer: &str) -> Span {
        let mut node = self;
        for token in pointer_tokens(pointer) {
            match node.child(&token) {
                Some(child) => node = child,
                None => break,
            }
        }
        node.span
    }

    /// The span of the key named by the last token of a JSON pointer, if it is a mapping key.
    pub fn locate_key(&self, pointer: &str) -> Option<Span> {
        let tokens = pointer_tokens(pointer);
        let (last, parents) = tokens.split_last()?;
        let mut node = self;
        for token in parents {
            node = node.child(token)?;
        }
        node.entry(last).map(|e| e.key_span)
    }

    fn child(&self, token: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|e| e.key == token).map(|e| &e.value),
            Value::Seq(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        }
    }

    /// The node as JSON, for schema validation. Non-finite floats become `null`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => {
                let mut map = serde_json::Map::with_capacity(entries.len());
                for e in entries {
                    map.insert(e.key.to_string(), e.value.to_json());
                }
                J::Object(map)
            }
        }
    }

    fn count_nodes(&self) -> usize {
        1 + match &self.value {
            Value::Seq(items) => items.iter().map(Node::count_nodes).sum(),
            Value::Map(entries) => entries.iter().map(|e| e.value.count_nodes()).sum(),
            _ => 0,
        }
    }
}

/// Split a JSON pointer into unescaped tokens (`~1` is `/`, `~0` is `~`).
pub fn pointer_tokens(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// Load a file's bytes: checks size and UTF-8, tolerates a byte-order mark, then parses.
pub fn parse_bytes(bytes: &[u8], limits: &Limits) -> Result<Document, YamlError> {
    check_size(bytes.len(), limits)?;
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_str(text, limits),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            // The prefix is valid UTF-8 by construction.
            let prefix = std::str::from_utf8(good).unwrap_or_default();
            let bad = bytes.get(e.valid_up_to()).copied().unwrap_or_default();
            Err(YamlError {
                message: format!(
                    "the file is not valid UTF-8 (byte 0x{bad:02x}); SMALL artifacts must be UTF-8 text"
                ),
                pos: position_after(prefix),
            })
        }
    }
}

/// Parse YAML text into a single-document tree.
pub fn parse_str(src: &str, limits: &Limits) -> Result<Document, YamlError> {
    check_size(src.len(), limits)?;
    let (bom_len, text) = match src.strip_prefix('\u{feff}') {
        Some(rest) => ('\u{feff}'.len_utf8(), rest),
        None => (0, src),
    };
    let root = build(text, bom_len, limits)?;
    Ok(Document {
        root,
        source: src.to_string(),
    })
}

#[doc(hidden)]
/// Benchmark aid: how many events the underlying parser yields for `src`.
pub fn count_raw_events(src: &str) -> usize {
    Parser::new_from_str(src).take_while(Result::is_ok).count()
}

/// Parse text that the caller already owns, without copying it.
pub fn parse_string(src: String, limits: &Limits) -> Result<Document, YamlError> {
    check_size(src.len(), limits)?;
    let (bom_len, text) = match src.strip_prefix('\u{feff}') {
        Some(rest) => ('\u{feff}'.len_utf8(), rest),
        None => (0, src.as_str()),
    };
    let root = build(text, bom_len, limits)?;
    Ok(Document { root, source: src })
}

/// Parse a file's bytes without copying them (UTF-8 checked, BOM tolerated).
pub fn parse_vec(bytes: Vec<u8>, limits: &Limits) -> Result<Document, YamlError> {
    check_size(bytes.len(), limits)?;
    match String::from_utf8(bytes) {
        Ok(text) => parse_string(text, limits),
        Err(e) => parse_bytes(e.as_bytes(), limits),
    }
}

/// Parse with bounded memory for long logs: every item of the sequence under the top-level
/// key `stream_key` (for progress, `entries`) is handed to `sink` as soon as it is complete,
/// with its index, and is not kept in the returned tree. The returned root still has that
/// key, holding an empty sequence whose span covers the whole sequence in the source.
/// Anchors defined inside streamed items still resolve in later items.
pub fn parse_streaming(
    src: &str,
    limits: &Limits,
    stream_key: &str,
    sink: &mut dyn FnMut(usize, Node),
) -> Result<Node, YamlError> {
    streaming(src, limits, stream_key, sink, true)
}

fn streaming(
    src: &str,
    limits: &Limits,
    stream_key: &str,
    sink: &mut dyn FnMut(usize, Node),
    try_fast: bool,
) -> Result<Node, YamlError> {
    check_size(src.len(), limits)?;
    let (bom_len, text) = match src.strip_prefix('\u{feff}') {
        Some(rest) => ('\u{feff}'.len_utf8(), rest),
        None => (0, src),
    };
    if try_fast {
        if let Some(root) = fast::stream(text, bom_len, stream_key, sink) {
            return Ok(root);
        }
    }
    let fed = std::cell::Cell::new(0usize);
    let mut counting = |i: usize, node: Node| {
        fed.set(i + 1);
        sink(i, node);
    };
    let mut builder = Builder::new(text, bom_len, limits);
    builder.stream = Some(Stream {
        key: stream_key,
        sink: &mut counting,
        count: 0,
    });
    match builder.run() {
        Err(e) if e.message == FLOW_LIMIT => {
            // A flow collection too deep for the parser: load the whole document the slow
            // way, then hand over the items not yet streamed.
            let mut root = match deep::parse(text, bom_len, limits) {
                Some(r) => r?,
                None => return Err(e),
            };
            if let Some(Value::Seq(items)) = root
                .as_map()
                .and_then(|m| m.iter().position(|x| x.key == stream_key))
                .and_then(|i| match &mut root.value {
                    Value::Map(entries) => Some(&mut entries[i].value.value),
                    _ => None,
                })
            {
                for (i, item) in std::mem::take(items).into_iter().enumerate() {
                    if i >= fed.get() {
                        sink(i, item);
                    }
                }
            }
            Ok(root)
        }
        r => r,
    }
}

/// The fast paths held against the general parser over `src`, for the fuzz suite: the
/// streamed log read with and without the fast path, a plan read by [`fast_plan`] and by the
/// parser, and the walk of either sequence in parts. `Ok` when every fast path either declined
/// or built exactly the parser's tree (values, styles, start positions, key spans); an error
/// naming the difference otherwise.
#[doc(hidden)]
pub fn fast_path_differential(src: &str) -> Result<(), String> {
    let limits = Limits::default();
    let text = src.strip_prefix('\u{feff}').unwrap_or(src);
    for key in ["entries", "tasks"] {
        fast::differential::agree_on(text, key)?;
    }
    let mut fast_items = Vec::new();
    let fast_root = streaming(
        src,
        &limits,
        "entries",
        &mut |_, n| fast_items.push(n),
        true,
    );
    let mut items = Vec::new();
    let root = streaming(src, &limits, "entries", &mut |_, n| items.push(n), false);
    match (fast_root, root) {
        (Ok(f), Ok(g)) => {
            fast::differential::same(&f, &g)?;
            if fast_items.len() != items.len() {
                return Err("the streamed logs hold different numbers of entries".into());
            }
            for (f, g) in fast_items.iter().zip(&items) {
                fast::differential::same(f, g)?;
            }
        }
        (Err(_), Err(_)) => {}
        (Ok(_), Err(e)) => return Err(format!("the fast path read a log the parser refuses: {e}")),
        (Err(e), Ok(_)) => {
            return Err(format!("the fast path refused a log the parser reads: {e}"))
        }
    }
    if let Some(plan) = fast_plan(text, 0, &limits) {
        match Builder::new(text, 0, &limits).run() {
            Ok(general) => fast::differential::same(&plan, &general)?,
            Err(e) => return Err(format!("the fast path read a plan the parser refuses: {e}")),
        }
    }
    Ok(())
}

const FLOW_LIMIT: &str = "nesting is deeper than the YAML parser allows for flow collections";

/// The error of a second document in one file (see [`YamlError::is_extra_document`]).
const EXTRA_DOCUMENT: &str = "the file holds more than one YAML document; a SMALL artifact is a single document (remove the extra `---` section)";

impl YamlError {
    /// Whether the text was refused for holding a second document; [`YamlError::pos`] is
    /// where it starts, so the bytes before it are the first document.
    pub fn is_extra_document(&self) -> bool {
        self.message == EXTRA_DOCUMENT
    }
}

/// Build the tree; a flow collection too deep for the parser is read by [`deep`].
fn build(text: &str, base: usize, limits: &Limits) -> Result<Node, YamlError> {
    if let Some(root) = fast_plan(text, base, limits) {
        return Ok(root);
    }
    match Builder::new(text, base, limits).run() {
        Err(e) if e.message == FLOW_LIMIT => deep::parse(text, base, limits).unwrap_or(Err(e)),
        r => r,
    }
}
/// A plan of the fast path's shape (tasks whose fields are one-line scalars or lists of
/// them), read by the fast path: every command reads the plan, and the general parser takes
/// milliseconds over a plan of a thousand tasks. Anything else, or a limit the walk cannot
/// honour, is left to the general parser.
fn fast_plan(text: &str, base: usize, limits: &Limits) -> Option<Node> {
    const KEY: &str = "tasks";
    // Document, task mapping, field, list: the deepest the fast path goes.
    if limits.max_depth < 4 || !(text.starts_with("tasks:") || text.contains("\ntasks:")) {
        return None;
    }
    let mut tasks = Vec::new();
    let part = Part {
        lists: true,
        ..Part::default()
    };
    let mut root =
        fast::stream_part(text, base, KEY, part, &mut |_, task| tasks.push(task))?.root?;
    let Value::Map(fields) = &mut root.value else {
        return None;
    };
    let seq = &mut fields.iter_mut().find(|e| e.key == KEY)?.value;
    match &mut seq.value {
        Value::Seq(items) => *items = tasks,
        _ => return None,
    }
    Some(root)
}

/// Where to split the block sequence under `stream_key` to walk it on `threads` threads: its
/// first item (as a [`Resume`]) and the start offsets of the parts, each the first item line
/// at or after an equal share of the bytes. `None` when the text is not of the fast path's
/// shape or fewer than two parts result.
pub fn split_points(
    src: &str,
    limits: &Limits,
    stream_key: &str,
    threads: usize,
) -> Option<(Resume, Vec<usize>)> {
    let first = first_item(src, limits, stream_key)?;
    let bytes = src.as_bytes();
    let span = bytes.len() - first.offset;
    let mut starts = vec![first.offset];
    for k in 1..threads {
        let target = first.offset + span * k / threads;
        if let Some(at) = item_line_at_or_after(bytes, target, first.seq_indent) {
            if at > *starts.last()? {
                starts.push(at);
            }
        }
    }
    (starts.len() >= 2).then_some((first, starts))
}

/// Does the line at `at` open an item of a sequence whose `- ` markers are indented by
/// `indent` spaces?
pub fn is_item_line(bytes: &[u8], at: usize, indent: usize) -> bool {
    let l = &bytes[at..];
    l.len() > indent + 1
        && l[..indent].iter().all(|&b| b == b' ')
        && l[indent] == b'-'
        && l[indent + 1] == b' '
}

/// The first line at or after `at` that opens an item of the sequence (see [`is_item_line`]).
pub fn item_line_at_or_after(bytes: &[u8], at: usize, indent: usize) -> Option<usize> {
    let mut pos = at;
    loop {
        if (pos == 0 || bytes.get(pos - 1) == Some(&b'\n')) && is_item_line(bytes, pos, indent) {
            return Some(pos);
        }
        pos += memchr::memchr(b'\n', bytes.get(pos..)?)? + 1;
        if pos >= bytes.len() {
            return None;
        }
    }
}

/// Where the sequence under `stream_key` starts: its first item (see [`Resume`]), found by
/// the line-level fast path; `None` when the text is not of its shape up to there.
pub fn first_item(src: &str, limits: &Limits, stream_key: &str) -> Option<Resume> {
    let only_first = Part {
        first_item_only: true,
        ..Part::default()
    };
    stream_fast_part(src, limits, stream_key, only_first, &mut |_, _| {})?.last_item
}

/// [`first_item`] in the complete lines of `head` (the first bytes of a file), and the end of
/// the first item's line (the start of the next line).
pub fn head_first_item(head: &[u8], limits: &Limits, stream_key: &str) -> Option<(Resume, usize)> {
    let lines = &head[..memchr::memrchr(b'\n', head)? + 1];
    let first = first_item(std::str::from_utf8(lines).ok()?, limits, stream_key)?;
    let end = first.offset + memchr::memchr(b'\n', &lines[first.offset..])? + 1;
    Some((first, end))
}

/// Lines and item lines in `bytes[from..to]` (`from` starts a line). Two passes that do not
/// stop at each line: a count of the newlines, and a search for a newline followed by the
/// indent and the `- ` marker (such matches cannot overlap, as only the first byte of the
/// pattern is a newline). An item line may run past `to`, as [`is_item_line`] allows.
pub fn count_item_lines(bytes: &[u8], from: usize, to: usize, indent: usize) -> (usize, usize) {
    let lines = count_newlines(&bytes[from..to]);
    let mut items = usize::from(is_item_line(bytes, from, indent));
    let mut marker = Vec::with_capacity(indent + 3);
    marker.push(b'\n');
    marker.resize(indent + 1, b' ');
    marker.extend_from_slice(b"- ");
    let end = bytes.len().min(to.saturating_add(marker.len()));
    items += memchr::memmem::find_iter(&bytes[from..end.max(from)], &marker)
        .take_while(|&nl| from + nl + 1 < to)
        .count();
    (lines, items)
}

/// The newlines in `b`, counted 64 bytes at a time into a byte (which the compiler turns
/// into vector compares and adds; a plain filtered count is not).
fn count_newlines(b: &[u8]) -> usize {
    let blocks = b.chunks_exact(64);
    let tail = blocks.remainder().iter().filter(|&&c| c == b'\n').count();
    blocks
        .map(|block| usize::from(block.iter().map(|&c| u8::from(c == b'\n')).sum::<u8>()))
        .sum::<usize>()
        + tail
}

/// [`count_item_lines`] line by line (the definition the tests compare it with).
#[cfg(test)]
fn count_item_lines_by_line(bytes: &[u8], from: usize, to: usize, indent: usize) -> (usize, usize) {
    let mut lines = 0;
    let mut items = usize::from(is_item_line(bytes, from, indent));
    for nl in memchr::memchr_iter(b'\n', &bytes[from..to]) {
        lines += 1;
        let next = from + nl + 1;
        if next < to && is_item_line(bytes, next, indent) {
            items += 1;
        }
    }
    (lines, items)
}

/// The line-level fast path alone, on a part of a log (see [`Part`]): `None` when that part
/// is not of the simple shape the fast path reads (the caller then parses the whole file with
/// [`parse_streaming`]). Offsets in `part` and in the result are byte offsets in `src`
/// (a byte-order mark included). Items are sent to `sink` only after the part's shape checked.
pub fn stream_fast_part(
    src: &str,
    limits: &Limits,
    stream_key: &str,
    part: Part,
    sink: &mut dyn FnMut(usize, Node),
) -> Option<Walked> {
    check_size(src.len(), limits).ok()?;
    let (bom_len, text) = match src.strip_prefix('\u{feff}') {
        Some(rest) => ('\u{feff}'.len_utf8(), rest),
        None => (0, src),
    };
    let shift = |r: Resume| -> Option<Resume> {
        Some(Resume {
            offset: r.offset.checked_sub(bom_len)?,
            ..r
        })
    };
    let inner = Part {
        resume: match part.resume {
            Some(r) => Some(shift(r)?),
            None => None,
        },
        stop: match part.stop {
            Some(s) => Some(s.checked_sub(bom_len)?),
            None => None,
        },
        first_item_only: part.first_item_only,
        one_pass: part.one_pass,
        lists: part.lists,
        splice: match part.splice {
            Some(s) => Some(Splice {
                at: s.at.checked_sub(bom_len)?,
                ..s
            }),
            None => None,
        },
    };
    let mut walked = fast::stream_part(text, bom_len, stream_key, inner, sink)?;
    if let Some(r) = walked.last_item.as_mut() {
        r.offset += bom_len;
    }
    Some(walked)
}

/// [`parse_streaming`] with the general parser only (no line-level fast path).
pub fn parse_streaming_general(
    src: &str,
    limits: &Limits,
    stream_key: &str,
    sink: &mut dyn FnMut(usize, Node),
) -> Result<Node, YamlError> {
    streaming(src, limits, stream_key, sink, false)
}

fn check_size(len: usize, limits: &Limits) -> Result<(), YamlError> {
    if len > limits.max_bytes {
        return Err(YamlError {
            message: format!(
                "the file is {len} bytes, over the limit of {} bytes",
                limits.max_bytes
            ),
            pos: Pos {
                line: 1,
                column: 1,
                offset: 0,
            },
        });
    }
    Ok(())
}

/// Line and column just after `prefix`.
fn position_after(prefix: &str) -> Pos {
    let line = prefix.matches('\n').count() + 1;
    let line_start = prefix.rfind('\n').map_or(0, |i| i + 1);
    let column = prefix[line_start..].chars().count() + 1;
    Pos {
        line: to_u32(line),
        column: to_u32(column),
        offset: to_u32(prefix.len()),
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Converts the parser's character indices into byte offsets. Markers arrive almost in order,
/// so a cursor that walks forward (or back) from the last position keeps this linear.
struct Offsets<'a> {
    text: &'a str,
    ascii: bool,
    char_pos: usize,
    byte_pos: usize,
    base: usize,
}

impl<'a> Offsets<'a> {
    fn new(text: &'a str, base: usize) -> Self {
        Offsets {
            text,
            ascii: text.is_ascii(),
            char_pos: 0,
            byte_pos: 0,
            base,
        }
    }

    fn byte_of(&mut self, char_index: usize) -> usize {
        if self.ascii {
            return char_index.min(self.text.len());
        }
        while self.char_pos < char_index {
            match self.text[self.byte_pos..].chars().next() {
                Some(c) => {
                    self.byte_pos += c.len_utf8();
                    self.char_pos += 1;
                }
                None => break,
            }
        }
        while self.char_pos > char_index {
            match self.text[..self.byte_pos].chars().next_back() {
                Some(c) => {
                    self.byte_pos -= c.len_utf8();
                    self.char_pos -= 1;
                }
                None => break,
            }
        }
        self.byte_pos
    }

    fn pos(&mut self, m: &Marker) -> Pos {
        let offset = self.byte_of(m.index()) + self.base;
        Pos {
            line: to_u32(m.line()),
            column: to_u32(m.col() + 1),
            offset: to_u32(offset),
        }
    }

    fn span(&mut self, s: &saphyr_parser::Span) -> Span {
        Span {
            start: self.pos(&s.start),
            end: self.pos(&s.end),
        }
    }
}

enum Frame {
    Seq {
        items: Vec<Node>,
        start: Span,
        anchor: usize,
        style: Style,
    },
    Map(MapFrame),
}

struct MapFrame {
    entries: Vec<Entry>,
    merges: Vec<(Node, Span)>,
    key: Option<(String, Span)>,
    seen: Option<HashSet<String>>,
    start: Span,
    anchor: usize,
    style: Style,
}

impl MapFrame {
    fn has_key(&self, key: &str) -> bool {
        match &self.seen {
            Some(set) => set.contains(key),
            None => self.entries.iter().any(|e| e.key == key),
        }
    }

    fn remember(&mut self, key: &str) {
        if self.seen.is_none() && self.entries.len() >= 16 {
            self.seen = Some(self.entries.iter().map(|e| e.key.to_string()).collect());
        }
        if let Some(set) = &mut self.seen {
            set.insert(key.to_string());
        }
    }
}

struct Stream<'s> {
    key: &'s str,
    sink: &'s mut dyn FnMut(usize, Node),
    count: usize,
}

struct Builder<'a, 's> {
    stream: Option<Stream<'s>>,
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    offsets: Offsets<'a>,
    limits: Limits,
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Node, usize)>,
    alias_nodes: usize,
    root: Option<Node>,
    documents: usize,
}

impl<'a, 's> Builder<'a, 's> {
    fn new(text: &'a str, base: usize, limits: &Limits) -> Self {
        Builder {
            stream: None,
            parser: Parser::new_from_str(text),
            offsets: Offsets::new(text, base),
            limits: *limits,
            stack: Vec::new(),
            anchors: HashMap::new(),
            alias_nodes: 0,
            root: None,
            documents: 0,
        }
    }

    fn error(&mut self, at: Span, message: impl Into<String>) -> YamlError {
        YamlError {
            message: message.into(),
            pos: at.start,
        }
    }

    fn scan_error(&mut self, e: &ScanError) -> YamlError {
        let pos = self.offsets.pos(e.marker());
        let message = if e.info().contains("recursion limit") {
            FLOW_LIMIT.to_string()
        } else {
            format!("YAML syntax error: {}", e.info())
        };
        YamlError { message, pos }
    }

    fn run(mut self) -> Result<Node, YamlError> {
        while let Some(item) = self.parser.next() {
            let (event, raw_span) = item.map_err(|e| self.scan_error(&e))?;
            let span = self.offsets.span(&raw_span);
            match event {
                Event::StreamStart | Event::StreamEnd | Event::Nothing | Event::DocumentEnd => {}
                Event::DocumentStart(_) => {
                    self.documents += 1;
                    if self.documents > 1 {
                        return Err(self.error(span, EXTRA_DOCUMENT));
                    }
                }
                Event::Scalar(text, style, anchor, tag) => {
                    let node = scalar_node(&text, style, tag.as_deref(), span);
                    self.finish(node, anchor)?;
                }
                Event::Alias(id) => {
                    let Some((node, count)) = self.anchors.get(&id) else {
                        return Err(self.error(span, "alias refers to an unknown anchor"));
                    };
                    self.alias_nodes += count;
                    if self.alias_nodes > self.limits.max_alias_nodes {
                        let limit = self.limits.max_alias_nodes;
                        return Err(self.error(
                            span,
                            format!("aliases expand to more than {limit} nodes; refusing to expand further (is this a \"billion laughs\" file?)"),
                        ));
                    }
                    let node = node.clone();
                    self.finish(node, 0)?;
                }
                Event::SequenceStart(anchor, _) => {
                    self.check_depth(span)?;
                    let style = self.collection_style(span);
                    self.stack.push(Frame::Seq {
                        items: Vec::new(),
                        start: span,
                        anchor,
                        style,
                    });
                }
                Event::MappingStart(anchor, _) => {
                    self.check_depth(span)?;
                    if let Some(Frame::Map(m)) = self.stack.last() {
                        if m.key.is_none() {
                            return Err(self.error(
                                span,
                                "a mapping key must be a plain value, not a mapping or sequence",
                            ));
                        }
                    }
                    let style = self.collection_style(span);
                    self.stack.push(Frame::Map(MapFrame {
                        entries: Vec::new(),
                        merges: Vec::new(),
                        key: None,
                        seen: None,
                        start: span,
                        anchor,
                        style,
                    }));
                }
                Event::SequenceEnd => {
                    if let Some(Frame::Seq {
                        items,
                        start,
                        anchor,
                        style,
                    }) = self.stack.pop()
                    {
                        let node = Node {
                            value: Value::Seq(items),
                            span: Span {
                                start: start.start,
                                end: span.end.max(start.end),
                            },
                            style,
                        };
                        self.finish(node, anchor)?;
                    }
                }
                Event::MappingEnd => {
                    if let Some(Frame::Map(m)) = self.stack.pop() {
                        let end = span.end.max(m.start.end);
                        let (entries, anchor, style, start) = apply_merges(m);
                        let node = Node {
                            value: Value::Map(entries),
                            span: Span {
                                start: start.start,
                                end,
                            },
                            style,
                        };
                        self.finish(node, anchor)?;
                    }
                }
            }
        }
        Ok(self.root.take().unwrap_or(Node {
            value: Value::Null,
            span: Span::default(),
            style: Style::Plain,
        }))
    }

    fn collection_style(&mut self, span: Span) -> Style {
        let text = self.offsets.text;
        let at = (span.start.offset as usize).saturating_sub(self.offsets.base);
        match text.get(at..).and_then(|t| t.chars().next()) {
            Some('[') | Some('{') => Style::Flow,
            _ => Style::Block,
        }
    }

    fn check_depth(&mut self, span: Span) -> Result<(), YamlError> {
        if self.stack.len() >= self.limits.max_depth {
            let limit = self.limits.max_depth;
            return Err(self.error(
                span,
                format!("nesting is deeper than the limit of {limit} levels"),
            ));
        }
        Ok(())
    }

    /// A complete node: store its anchor and attach it to the enclosing collection.
    fn finish(&mut self, node: Node, anchor: usize) -> Result<(), YamlError> {
        if anchor != 0 {
            let count = node.count_nodes();
            self.anchors.insert(anchor, (node.clone(), count));
        }
        let streamed = self.stream.as_ref().is_some_and(|stream| {
            self.stack.len() == 2
                && matches!(&self.stack[1], Frame::Seq { .. })
                && matches!(&self.stack[0], Frame::Map(m)
                    if m.key.as_ref().is_some_and(|(k, _)| k == stream.key))
        });
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Ok(())
            }
            Some(Frame::Seq { items, .. }) => {
                if streamed {
                    if let Some(stream) = &mut self.stream {
                        (stream.sink)(stream.count, node);
                        stream.count += 1;
                        return Ok(());
                    }
                }
                items.push(node);
                Ok(())
            }
            Some(Frame::Map(m)) => match m.key.take() {
                None => {
                    let key =
                        match &node.value {
                            Value::Str(s) => s.clone(),
                            Value::Null => String::new(),
                            Value::Bool(b) => b.to_string(),
                            Value::Int(i) => i.to_string(),
                            Value::Float(f) => f.to_string(),
                            Value::Seq(_) | Value::Map(_) => return Err(self.error(
                                node.span,
                                "a mapping key must be a plain value, not a mapping or sequence",
                            )),
                        };
                    m.key = Some((key, node.span));
                    Ok(())
                }
                Some((key, key_span)) => {
                    if key == "<<" {
                        m.merges.push((node, key_span));
                        return Ok(());
                    }
                    if m.has_key(&key) {
                        let span = key_span;
                        return Err(self.error(
                            span,
                            format!("duplicate key `{key}` in one mapping; keep only one of them"),
                        ));
                    }
                    m.remember(&key);
                    m.entries.push(Entry {
                        key: key.into(),
                        key_span,
                        value: node,
                    });
                    Ok(())
                }
            },
        }
    }
}

/// Resolve `<<` merge keys: entries of merged mappings are added unless the mapping already
/// has the key explicitly (or from an earlier merge source).
fn apply_merges(m: MapFrame) -> (Vec<Entry>, usize, Style, Span) {
    let MapFrame {
        mut entries,
        merges,
        start,
        anchor,
        style,
        ..
    } = m;
    if !merges.is_empty() {
        let mut present: HashSet<String> = entries.iter().map(|e| e.key.to_string()).collect();
        for (source, _) in merges {
            let sources: Vec<Node> = match source.value {
                Value::Seq(items) => items,
                _ => vec![source],
            };
            for src in sources {
                if let Value::Map(merged) = src.value {
                    for e in merged {
                        if present.insert(e.key.to_string()) {
                            entries.push(e);
                        }
                    }
                }
            }
        }
    }
    (entries, anchor, style, start)
}

fn scalar_node(
    text: &str,
    style: ScalarStyle,
    tag: Option<&saphyr_parser::Tag>,
    span: Span,
) -> Node {
    let node_style = match style {
        ScalarStyle::Plain => Style::Plain,
        ScalarStyle::SingleQuoted => Style::SingleQuoted,
        ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
        ScalarStyle::Literal => Style::Literal,
        ScalarStyle::Folded => Style::Folded,
    };
    let value = match tag {
        Some(t) if t.is_yaml_core_schema() => match t.suffix.as_str() {
            "str" => Value::Str(text.to_string()),
            "null" => Value::Null,
            "bool" => parse_bool(text).map_or_else(|| Value::Str(text.to_string()), Value::Bool),
            "int" => parse_int(text).unwrap_or_else(|| Value::Str(text.to_string())),
            "float" => parse_float(text)
                .or_else(|| {
                    parse_int(text).map(|v| match v {
                        Value::Int(i) => Value::Float(i as f64),
                        other => other,
                    })
                })
                .unwrap_or_else(|| Value::Str(text.to_string())),
            _ => resolve_plain(text, style),
        },
        _ => resolve_plain(text, style),
    };
    Node {
        value,
        span,
        style: node_style,
    }
}

/// YAML 1.2 core schema resolution; only plain scalars are typed.
fn resolve_plain(text: &str, style: ScalarStyle) -> Value {
    if style != ScalarStyle::Plain {
        return Value::Str(text.to_string());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        _ => {}
    }
    if let Some(b) = parse_bool(text) {
        return Value::Bool(b);
    }
    if let Some(v) = parse_int(text) {
        return v;
    }
    if let Some(v) = parse_float(text) {
        return v;
    }
    Value::Str(text.to_string())
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn parse_int(text: &str) -> Option<Value> {
    let (digits, radix) = if let Some(rest) = text.strip_prefix("0o") {
        (rest, 8)
    } else if let Some(rest) = text.strip_prefix("0x") {
        (rest, 16)
    } else {
        let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
        if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        return Some(match text.parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Float(text.parse::<f64>().ok()?),
        });
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    i64::from_str_radix(digits, radix).ok().map(Value::Int)
}

fn parse_float(text: &str) -> Option<Value> {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let negative = text.starts_with('-');
    match unsigned {
        ".inf" | ".Inf" | ".INF" => {
            return Some(Value::Float(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }))
        }
        ".nan" | ".NaN" | ".NAN" if unsigned.len() == text.len() => {
            return Some(Value::Float(f64::NAN))
        }
        _ => {}
    }
    // [0-9]*(\.[0-9]*)?([eE][-+]?[0-9]+)? with at least one digit in the mantissa.
    let bytes = unsigned.as_bytes();
    let mut i = 0;
    let mut mantissa_digits = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
        mantissa_digits += 1;
    }
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
            mantissa_digits += 1;
        }
    }
    if mantissa_digits == 0 {
        return None;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        i += 1;
        if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return None;
        }
    }
    if i != bytes.len() {
        return None;
    }
    text.parse::<f64>().ok().map(Value::Float)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_lines_count_at_every_cut() {
        let text = b"entries:\n- a: 1\n  b: 2\n  - c\n- d: 3\n-\n- \n  - e\n";
        for indent in 0..3 {
            for from in (0..=text.len()).filter(|&f| f == 0 || text[f - 1] == b'\n') {
                for to in from..=text.len() {
                    assert_eq!(
                        count_item_lines(text, from, to, indent),
                        count_item_lines_by_line(text, from, to, indent),
                        "{from}..{to}, indent {indent}"
                    );
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn newlines_count_in_blocks_as_one_by_one(text in "[a\n]{0,400}") {
            let b = text.as_bytes();
            proptest::prop_assert_eq!(count_newlines(b), b.iter().filter(|&&c| c == b'\n').count());
        }
    }

    proptest::proptest! {
        /// Counting by whole-text passes equals counting line by line, for any range and
        /// indent, items running past the range included.
        #[test]
        fn item_lines_count_as_line_by_line(
            text in "[ \n\\-a]{0,80}",
            cut in (0usize..90, 0usize..90),
            indent in 0usize..4,
        ) {
            let b = text.as_bytes();
            let (x, y) = (cut.0.min(b.len()), cut.1.min(b.len()));
            let (from, to) = (x.min(y), x.max(y));
            // `from` starts a line.
            let from = b[..from].iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
            proptest::prop_assert_eq!(
                count_item_lines(b, from, to, indent),
                count_item_lines_by_line(b, from, to, indent)
            );
        }
    }

    fn parse(src: &str) -> Result<Document, YamlError> {
        parse_str(src, &Limits::default())
    }

    #[test]
    fn keeps_positions_of_values() {
        let doc = parse("a: 1\nlist:\n  - id: \"x\"\n    title: héllo wörld\n").unwrap();
        let id = doc.root.pointer("/list/0/id").unwrap();
        assert_eq!(id.as_str(), Some("x"));
        assert_eq!((id.span.start.line, id.span.start.column), (3, 9));
        assert_eq!(&doc.source[id.span.byte_range()], "\"x\"");
        let title = doc.root.pointer("/list/0/title").unwrap();
        assert_eq!(&doc.source[title.span.byte_range()], "héllo wörld");
        assert_eq!(doc.root.locate_key("/list/0/title").unwrap().start.line, 4);
    }

    #[test]
    fn byte_offsets_survive_a_bom_and_multibyte_text() {
        let src = "\u{feff}k: \"ü\"\nv: done\n";
        let doc = parse(src).unwrap();
        let v = doc.root.get("v").unwrap();
        assert_eq!(&doc.source[v.span.byte_range()], "done");
    }

    #[test]
    fn core_schema_types() {
        let doc = parse(
            "a: true\nb: ~\nc: 12\nd: 1.5\ne: 2026-01-01T00:00:00Z\nf: \"12\"\ng: 0x1f\nh: 1e3\ni: .inf\nj: yes\n",
        )
        .unwrap();
        let r = &doc.root;
        assert_eq!(r.get("a").unwrap().value, Value::Bool(true));
        assert!(r.get("b").unwrap().is_null());
        assert_eq!(r.get("c").unwrap().value, Value::Int(12));
        assert_eq!(r.get("d").unwrap().value, Value::Float(1.5));
        assert_eq!(r.get("e").unwrap().as_str(), Some("2026-01-01T00:00:00Z"));
        assert_eq!(r.get("f").unwrap().as_str(), Some("12"));
        assert_eq!(r.get("g").unwrap().value, Value::Int(31));
        assert_eq!(r.get("h").unwrap().value, Value::Float(1000.0));
        assert_eq!(r.get("i").unwrap().value, Value::Float(f64::INFINITY));
        assert_eq!(r.get("j").unwrap().as_str(), Some("yes"));
    }

    #[test]
    fn duplicate_keys_are_refused_with_position() {
        let err = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert!(err.message.contains("duplicate key `a`"), "{}", err.message);
        assert_eq!(err.pos.line, 3);
    }

    #[test]
    fn many_keys_still_detect_duplicates() {
        let mut src: String = (0..40).map(|i| format!("k{i}: {i}\n")).collect();
        src.push_str("k7: again\n");
        assert!(parse(&src)
            .unwrap_err()
            .message
            .contains("duplicate key `k7`"));
    }

    #[test]
    fn second_document_is_refused() {
        let err = parse("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(err.message.contains("more than one YAML document"));
        assert!(err.is_extra_document());
        assert_eq!(err.pos.line, 2);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let err = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(err.message.starts_with("YAML syntax error"));
        assert!(err.pos.line >= 1);
        let err = parse("a:\n\t- x\n").unwrap_err();
        assert_eq!(err.pos.line, 2);
    }

    #[test]
    fn merge_keys_and_aliases() {
        let doc = parse("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n").unwrap();
        let m = doc.root.get("m").unwrap();
        assert_eq!(m.get("x").unwrap().value, Value::Int(1));
        assert_eq!(m.get("y").unwrap().value, Value::Int(3));
        assert_eq!(m.as_map().unwrap().len(), 2);
    }

    #[test]
    fn billion_laughs_fails_fast() {
        let mut src = String::from(
            "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for i in 1..10 {
            let p = i - 1;
            src.push_str(&format!(
                "a{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
            ));
        }
        let err = parse(&src).unwrap_err();
        assert!(err.message.contains("aliases expand"), "{}", err.message);
    }

    #[test]
    fn depth_limit() {
        let deep = format!("{}1{}", "[".repeat(3000), "]".repeat(3000));
        let err = parse(&deep).map(std::mem::forget).unwrap_err();
        assert!(err.message.contains("deeper than"), "{}", err.message);
        let block: String = (0..2100)
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect();
        let err = parse(&block).map(std::mem::forget).unwrap_err();
        assert!(
            err.message.contains("deeper than the limit"),
            "{}",
            err.message
        );
        let ok = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn size_limit_and_utf8() {
        let limits = Limits {
            max_bytes: 10,
            ..Limits::default()
        };
        assert!(parse_str("a: 123456789\n", &limits)
            .unwrap_err()
            .message
            .contains("over the limit"));
        let err = parse_bytes(b"a: 1\nb: \xff\n", &Limits::default()).unwrap_err();
        assert!(err.message.contains("not valid UTF-8"));
        assert_eq!((err.pos.line, err.pos.column), (2, 4));
    }

    #[test]
    fn empty_file_is_null_and_json_conversion_keeps_order() {
        assert!(parse("").unwrap().root.is_null());
        assert!(parse("# only a comment\n").unwrap().root.is_null());
        let doc = parse("z: 1\na: [x, {k: v}]\n").unwrap();
        assert_eq!(
            doc.root.to_json().to_string(),
            r#"{"z":1,"a":["x",{"k":"v"}]}"#
        );
    }

    #[test]
    fn streaming_hands_out_items_without_keeping_them() {
        let src =
            "small_version: \"1.0.0\"\nentries:\n  - a: 1\n  - &x {b: 2}\n  - *x\nother: [1, 2]\n";
        let mut seen = Vec::new();
        let root = parse_streaming(src, &Limits::default(), "entries", &mut |i, n| {
            seen.push((i, n.to_json().to_string(), n.span.start.line))
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![
                (0, r#"{"a":1}"#.to_string(), 3),
                (1, r#"{"b":2}"#.to_string(), 4),
                (2, r#"{"b":2}"#.to_string(), 4)
            ]
        );
        let entries = root.get("entries").unwrap();
        assert_eq!(entries.as_seq().map(<[Node]>::len), Some(0));
        assert_eq!(entries.span.start.line, 3);
        assert_eq!(
            root.get("other").unwrap().as_seq().map(<[Node]>::len),
            Some(2)
        );
        let err = parse_streaming(
            "entries:\n  - a: 1\n  - a: 1\n    a: 2\n",
            &Limits::default(),
            "entries",
            &mut |_, _| {},
        );
        assert!(err.unwrap_err().message.contains("duplicate key"));
    }

    #[test]
    fn owned_parsing_keeps_the_source() {
        let doc = parse_vec(b"a: 1\n".to_vec(), &Limits::default()).unwrap();
        assert_eq!(doc.source, "a: 1\n");
        assert!(parse_vec(b"a: \xff\n".to_vec(), &Limits::default()).is_err());
    }

    #[test]
    fn styles_are_recorded() {
        let doc = parse("a: \"1.0.0\"\nb: '1.0.0'\nc: 1.0.0\nd: []\ne:\n  - x\n").unwrap();
        assert_eq!(doc.root.get("a").unwrap().style, Style::DoubleQuoted);
        assert_eq!(doc.root.get("b").unwrap().style, Style::SingleQuoted);
        assert_eq!(doc.root.get("c").unwrap().style, Style::Plain);
        assert_eq!(doc.root.get("d").unwrap().style, Style::Flow);
        assert_eq!(doc.root.get("e").unwrap().style, Style::Block);
    }
}
