//! Deeply nested flow collections (`data: [[[[...]]]]`).
//!
//! The YAML parser counts flow nesting in a byte and refuses anything past 255 levels, while
//! the reference accepts a plan task carrying a 500-level flow list. When the parser refuses a
//! file for that reason, each deep flow collection that starts in block context is cut out
//! (replaced by a null of the same length, newlines kept, so every other position stays
//! true), the rest of the document is parsed as usual, and the collections are parsed here
//! and put back in place. This parser is iterative (an explicit stack), so depth is bounded
//! only by [`Limits::max_depth`](super::Limits), never by the call stack.
//!
//! Only plain, single- and double-quoted scalars and nested `[...]` / `{...}` are read here;
//! anchors, aliases, tags and complex keys inside a deep collection leave the parser's
//! original error standing.

use saphyr_parser::ScalarStyle;

use super::{resolve_plain, Entry, Limits, Node, Style, Value, YamlError};
use crate::diag::{Pos, Span};

/// Flow collections nested deeper than this are cut out and parsed here.
const DEEP: usize = 200;

/// Line starts of a text, to turn byte offsets into positions.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
    base: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, base: usize) -> Self {
        let mut starts = vec![0];
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) != Some(&b'\n')) {
                starts.push(i + 1);
            }
            i += 1;
        }
        Lines { text, starts, base }
    }

    fn pos(&self, off: usize) -> Pos {
        let line = self.starts.partition_point(|&s| s <= off);
        let start = self.starts[line - 1];
        let column = self
            .text
            .get(start..off)
            .map_or(off - start, |s| s.chars().count());
        Pos {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column + 1).unwrap_or(u32::MAX),
            offset: u32::try_from(off + self.base).unwrap_or(u32::MAX),
        }
    }

    fn span(&self, s: usize, e: usize) -> Span {
        Span {
            start: self.pos(s),
            end: self.pos(e),
        }
    }
}

/// Parse `text` (BOM removed; `base` is its length) when the YAML parser refused it for
/// flow nesting. `None`: no deep flow collection was found, keep the parser's error.
pub(super) fn parse(text: &str, base: usize, limits: &Limits) -> Option<Result<Node, YamlError>> {
    let ranges = deep_flows(text);
    if ranges.is_empty() {
        return None;
    }
    // The document with each deep collection replaced by `~` and spaces.
    let mut masked = text.as_bytes().to_vec();
    for &(s, e) in &ranges {
        for (i, b) in masked[s..e].iter_mut().enumerate() {
            if *b != b'\n' && *b != b'\r' {
                *b = if i == 0 { b'~' } else { b' ' };
            }
        }
    }
    let masked = String::from_utf8(masked).ok()?;
    let mut root = match super::Builder::new(&masked, base, limits).run() {
        Ok(root) => root,
        Err(_) => return None,
    };
    let lines = Lines::new(text, base);
    for &(s, e) in &ranges {
        // Find the placeholder and its depth.
        let at = u32::try_from(s + base).ok()?;
        let (slot, depth) = find_null_at(&mut root, at)?;
        let room = limits.max_depth.saturating_sub(depth);
        match parse_flow(text, s, e, &lines, room, limits.max_depth) {
            Some(Ok(node)) => *slot = node,
            Some(Err(err)) => return Some(Err(err)),
            None => return None,
        }
    }
    Some(Ok(root))
}

/// The null node starting at byte `offset`, and how many collections enclose it.
fn find_null_at(root: &mut Node, offset: u32) -> Option<(&mut Node, usize)> {
    let mut stack: Vec<(&mut Node, usize)> = vec![(root, 0)];
    while let Some((node, depth)) = stack.pop() {
        if node.span.start.offset == offset && matches!(node.value, Value::Null) {
            return Some((node, depth));
        }
        if node.span.start.offset > offset || node.span.end.offset < offset {
            continue;
        }
        match &mut node.value {
            Value::Seq(items) => stack.extend(items.iter_mut().map(|n| (n, depth + 1))),
            Value::Map(entries) => {
                stack.extend(entries.iter_mut().map(|e| (&mut e.value, depth + 1)))
            }
            _ => {}
        }
    }
    None
}

/// Byte ranges of the flow collections that start in block context and nest deeper than
/// [`DEEP`]. Block scalars, quoted scalars and comments are skipped.
fn deep_flows(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut block_indent: Option<usize> = None;
    while i < b.len() {
        // One line: indentation, `- ` indicators, an optional `key:`, then a value.
        let line_start = i;
        let line_end = b[i..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |p| i + p);
        let mut j = i;
        while j < line_end && b[j] == b' ' {
            j += 1;
        }
        let indent = j - line_start;
        if let Some(bi) = block_indent {
            if j >= line_end || b[j] == b'\r' || indent > bi {
                i = line_end + 1;
                continue;
            }
            block_indent = None;
        }
        while j + 1 < line_end && b[j] == b'-' && b[j + 1] == b' ' {
            j += 2;
            while j < line_end && b[j] == b' ' {
                j += 1;
            }
        }
        // A key: up to `: ` (or `:` at the end of the line), outside quotes.
        let mut v = j;
        if j < line_end && !matches!(b[j], b'[' | b'{' | b'#' | b'|' | b'>') {
            let mut k = j;
            let mut found = None;
            while k < line_end {
                match b[k] {
                    b'"' | b'\'' if k == j => {
                        let q = b[k];
                        k += 1;
                        while k < line_end && b[k] != q {
                            k += if b[k] == b'\\' && q == b'"' { 2 } else { 1 };
                        }
                    }
                    b':' if k + 1 >= line_end || matches!(b[k + 1], b' ' | b'\r') => {
                        found = Some(k + 1);
                        break;
                    }
                    b'#' if k > j && b[k - 1] == b' ' => break,
                    _ => {}
                }
                k += 1;
            }
            v = match found {
                Some(after) => after,
                None => {
                    i = line_end + 1;
                    continue;
                }
            };
            while v < line_end && b[v] == b' ' {
                v += 1;
            }
        }
        if v >= line_end {
            i = line_end + 1;
            continue;
        }
        match b[v] {
            b'|' | b'>' => {
                block_indent = Some(indent);
                i = line_end + 1;
            }
            b'[' | b'{' => {
                let (end, depth) = flow_extent(b, v);
                if depth > DEEP {
                    out.push((v, end));
                }
                // Continue on the line after the collection ends.
                i = b[end.min(b.len())..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| end + p + 1);
            }
            b'"' | b'\'' => {
                // A quoted scalar may run over several lines.
                let q = b[v];
                let mut k = v + 1;
                while k < b.len() {
                    if b[k] == b'\\' && q == b'"' {
                        k += 2;
                        continue;
                    }
                    if b[k] == q {
                        if q == b'\'' && b.get(k + 1) == Some(&b'\'') {
                            k += 2;
                            continue;
                        }
                        break;
                    }
                    k += 1;
                }
                i = b[k.min(b.len())..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| k + p + 1);
            }
            _ => i = line_end + 1,
        }
    }
    out
}

/// End (exclusive) and deepest nesting of the flow collection opening at `start`.
fn flow_extent(b: &[u8], start: usize) -> (usize, usize) {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut k = start;
    while k < b.len() {
        match b[k] {
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return (k + 1, max);
                }
            }
            b'"' => {
                k += 1;
                while k < b.len() && b[k] != b'"' {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if k > 0 && matches!(b[k - 1], b'[' | b'{' | b',' | b' ' | b':') => {
                k += 1;
                while k < b.len() {
                    if b[k] == b'\'' {
                        if b.get(k + 1) == Some(&b'\'') {
                            k += 2;
                            continue;
                        }
                        break;
                    }
                    k += 1;
                }
            }
            b'#' if k > 0 && matches!(b[k - 1], b' ' | b'\t') => {
                while k < b.len() && b[k] != b'\n' {
                    k += 1;
                }
                continue;
            }
            _ => {}
        }
        k += 1;
    }
    (b.len(), max)
}

enum Frame {
    Seq(Vec<Node>, usize),
    Map(Vec<Entry>, usize, Option<(String, Span)>),
}

/// Parse the flow collection `text[s..e]`. `room`: how many levels it may nest.
fn parse_flow(
    text: &str,
    s: usize,
    e: usize,
    lines: &Lines<'_>,
    room: usize,
    max_depth: usize,
) -> Option<Result<Node, YamlError>> {
    let b = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut k = s;
    // A finished value waiting for `,` or the closing bracket.
    let mut pending: Option<Node> = None;
    while k < e {
        let c = b[k];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => k += 1,
            b'#' if k > s && matches!(b[k - 1], b' ' | b'\t' | b'\n') => {
                while k < e && b[k] != b'\n' {
                    k += 1;
                }
            }
            b'[' | b'{' => {
                if pending.is_some() {
                    return None;
                }
                if stack.len() >= room {
                    return Some(Err(YamlError {
                        message: format!("nesting is deeper than the limit of {max_depth} levels"),
                        pos: lines.pos(k),
                    }));
                }
                stack.push(if c == b'[' {
                    Frame::Seq(Vec::new(), k)
                } else {
                    Frame::Map(Vec::new(), k, None)
                });
                k += 1;
            }
            b']' | b'}' => {
                let frame = stack.pop()?;
                let node = match (frame, c) {
                    (Frame::Seq(mut items, start), b']') => {
                        items.extend(pending.take());
                        Node {
                            value: Value::Seq(items),
                            span: lines.span(start, k + 1),
                            style: Style::Flow,
                        }
                    }
                    (Frame::Map(mut entries, start, key), b'}') => {
                        if let Some((key, key_span)) = key {
                            let value = pending.take().unwrap_or_else(|| null_at(lines, k));
                            push_entry(&mut entries, key, key_span, value, lines)?.ok()?;
                        } else if pending.is_some() {
                            return None;
                        }
                        Node {
                            value: Value::Map(entries),
                            span: lines.span(start, k + 1),
                            style: Style::Flow,
                        }
                    }
                    _ => return None,
                };
                k += 1;
                if stack.is_empty() {
                    return (b[k..e].iter().all(|c| c.is_ascii_whitespace())).then_some(Ok(node));
                }
                pending = Some(node);
            }
            b',' => {
                match stack.last_mut()? {
                    Frame::Seq(items, _) => items.push(pending.take()?),
                    Frame::Map(entries, _, key) => {
                        let (name, key_span) = key.take()?;
                        let value = pending.take().unwrap_or_else(|| null_at(lines, k));
                        push_entry(entries, name, key_span, value, lines)?.ok()?;
                    }
                }
                k += 1;
            }
            b':' if matches!(stack.last(), Some(Frame::Map(_, _, None))) => {
                let key = pending.take()?;
                let name = match key.value {
                    Value::Str(s) => s,
                    Value::Null => String::new(),
                    Value::Bool(v) => v.to_string(),
                    Value::Int(v) => v.to_string(),
                    _ => return None,
                };
                if let Some(Frame::Map(_, _, slot)) = stack.last_mut() {
                    *slot = Some((name, key.span));
                }
                k += 1;
            }
            b'&' | b'*' | b'!' | b'?' | b'|' | b'>' | b'@' | b'`' | b'%' => return None,
            _ => {
                if pending.is_some() {
                    return None;
                }
                let (node, next) = scalar(text, k, e, lines)?;
                pending = Some(node);
                k = next;
            }
        }
    }
    None
}

fn null_at(lines: &Lines<'_>, at: usize) -> Node {
    Node {
        value: Value::Null,
        span: lines.span(at, at),
        style: Style::Plain,
    }
}

fn push_entry(
    entries: &mut Vec<Entry>,
    key: String,
    key_span: Span,
    value: Node,
    _lines: &Lines<'_>,
) -> Option<Result<(), YamlError>> {
    if entries.iter().any(|x| x.key == key) {
        return Some(Err(YamlError {
            message: format!("duplicate key `{key}`"),
            pos: key_span.start,
        }));
    }
    entries.push(Entry {
        key: key.into(),
        key_span,
        value,
    });
    Some(Ok(()))
}

/// One scalar starting at `k`: its node and where reading goes on.
fn scalar(text: &str, k: usize, e: usize, lines: &Lines<'_>) -> Option<(Node, usize)> {
    let b = text.as_bytes();
    match b[k] {
        b'"' => {
            let mut out = String::new();
            let mut i = k + 1;
            while i < e {
                match b[i] {
                    b'"' => {
                        let node = Node {
                            value: Value::Str(out),
                            span: lines.span(k, i + 1),
                            style: Style::DoubleQuoted,
                        };
                        return Some((node, i + 1));
                    }
                    b'\\' => {
                        let esc = *b.get(i + 1)?;
                        i += 2;
                        let ch = match esc {
                            b'n' => '\n',
                            b't' | b'\t' => '\t',
                            b'r' => '\r',
                            b'0' => '\0',
                            b'"' => '"',
                            b'\\' => '\\',
                            b'/' => '/',
                            b' ' => ' ',
                            b'x' | b'u' | b'U' => {
                                let n = match esc {
                                    b'x' => 2,
                                    b'u' => 4,
                                    _ => 8,
                                };
                                let hex = text.get(i..i + n)?;
                                i += n;
                                char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
                            }
                            _ => return None,
                        };
                        out.push(ch);
                    }
                    b'\n' | b'\r' => {
                        // Line folding: a line break and the indentation become one space.
                        while i < e && b[i].is_ascii_whitespace() {
                            i += 1;
                        }
                        out.push(' ');
                    }
                    _ => {
                        let ch = text[i..].chars().next()?;
                        out.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            None
        }
        b'\'' => {
            let mut out = String::new();
            let mut i = k + 1;
            while i < e {
                if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        out.push('\'');
                        i += 2;
                        continue;
                    }
                    let node = Node {
                        value: Value::Str(out),
                        span: lines.span(k, i + 1),
                        style: Style::SingleQuoted,
                    };
                    return Some((node, i + 1));
                }
                if b[i] == b'\n' || b[i] == b'\r' {
                    while i < e && b[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    out.push(' ');
                    continue;
                }
                let ch = text[i..].chars().next()?;
                out.push(ch);
                i += ch.len_utf8();
            }
            None
        }
        _ => {
            // Plain: up to a flow indicator, `: `, or ` #`.
            let mut i = k;
            while i < e {
                let c = b[i];
                if matches!(c, b',' | b'[' | b']' | b'{' | b'}') {
                    break;
                }
                if c == b':'
                    && (i + 1 >= e
                        || matches!(b[i + 1], b' ' | b'\t' | b'\n' | b'\r' | b',' | b']' | b'}'))
                {
                    break;
                }
                if c == b'#' && i > k && matches!(b[i - 1], b' ' | b'\t') {
                    break;
                }
                i += 1;
            }
            let raw = &text[k..i];
            let trimmed = raw.trim_end();
            let folded = trimmed.split_whitespace().collect::<Vec<_>>().join(" ");
            let value = if trimmed.contains('\n') {
                resolve_plain(&folded, ScalarStyle::Plain)
            } else {
                resolve_plain(trimmed, ScalarStyle::Plain)
            };
            let node = Node {
                value,
                span: lines.span(k, k + trimmed.len()),
                style: Style::Plain,
            };
            Some((node, i))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_str, Limits};
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}1{}", "[".repeat(n), "]".repeat(n))
    }

    fn depth(node: &Node) -> usize {
        let mut d = 0;
        let mut cur = node;
        while let Value::Seq(items) = &cur.value {
            d += 1;
            match items.first() {
                Some(n) => cur = n,
                None => break,
            }
        }
        d
    }

    #[test]
    fn a_thousand_levels_load_with_positions() {
        let src = format!(
            "tasks:\n  - id: a\n    data: {}\n    title: \"t\" # after\n",
            nested(1000)
        );
        let doc = parse_str(&src, &Limits::default()).unwrap();
        let task = &doc.root.get("tasks").unwrap().as_seq().unwrap()[0];
        let data = task.get("data").unwrap();
        assert_eq!(depth(data), 1000);
        assert_eq!((data.span.start.line, data.span.start.column), (3, 11));
        assert_eq!(task.get("title").unwrap().as_str(), Some("t"));
        std::mem::forget(doc);
    }

    #[test]
    fn the_same_as_the_parser_where_both_read_it() {
        let src = "a: [1, 'two', \"th\\u00e9\", {k: v, n: null}, [true, 2.5, ~], plain text]\n";
        let expected = parse_str(src, &Limits::default()).unwrap();
        let b = src.as_bytes();
        let s = src.find('[').unwrap();
        let (e, _) = flow_extent(b, s);
        let lines = Lines::new(src, 0);
        let node = parse_flow(src, s, e, &lines, 100, 100).unwrap().unwrap();
        assert_eq!(&node, expected.root.get("a").unwrap());
    }

    #[test]
    fn too_deep_is_a_clear_error() {
        let src = format!("data: {}\n", nested(100_000));
        let err = parse_str(&src, &Limits::default()).unwrap_err();
        assert!(
            err.message.contains("deeper than the limit of 2048"),
            "{err}"
        );
        let src = format!("data: {}\n", nested(2047));
        assert!(parse_str(&src, &Limits::default()).is_ok());
        let src = format!("data: {}\n", nested(2048));
        assert!(parse_str(&src, &Limits::default()).is_err());
    }
}
