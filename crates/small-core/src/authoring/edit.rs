//! Edits that keep a human's formatting: comments, key order, quoting and blank lines.
//!
//! Instead of re-serialising a whole YAML document, authoring commands change the source
//! text at the byte offsets the loader records for every node (`crate::yaml` spans):
//! replace one scalar, add one `key: value` line to a block mapping at the indentation its
//! other keys use, or add one item to a sequence (block style, at the column of its other
//! items; `[]` becomes a block list; a non-empty flow list gets `, item`). Every other byte
//! of the file stays as it was.
//!
//! Build a list of [`Edit`]s against one parsed [`Document`](crate::yaml::Document) and
//! apply them together with [`apply`]; edits must not overlap.

use crate::authoring::templates::yaml_quote;
use crate::yaml::{Node, Style, Value};

/// Replace `range` of the source with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: std::ops::Range<usize>,
    pub text: String,
}

/// Why an edit cannot be made without rewriting more than the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EditError(pub String);

/// Apply non-overlapping edits (in any order) to `src`.
pub fn apply(src: &str, mut edits: Vec<Edit>) -> Result<String, EditError> {
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(src.len() + 64);
    let mut pos = 0;
    for e in edits {
        if e.range.start < pos || e.range.end > src.len() || !src.is_char_boundary(e.range.start) {
            return Err(EditError(
                "internal error: overlapping or misplaced edits".into(),
            ));
        }
        out.push_str(&src[pos..e.range.start]);
        out.push_str(&e.text);
        pos = e.range.end;
    }
    out.push_str(&src[pos..]);
    Ok(out)
}

/// Render a string the way our edits write strings: double-quoted, fully escaped.
pub fn quote(s: &str) -> String {
    yaml_quote(s)
}

/// Byte offset of the start of the line containing `at`.
pub fn line_start(src: &str, at: usize) -> usize {
    src[..at.min(src.len())].rfind('\n').map_or(0, |i| i + 1)
}

/// Column (in bytes, 0-based) of `at` within its line.
pub fn column_of(src: &str, at: usize) -> usize {
    at - line_start(src, at)
}

/// Where to insert a new line after the line holding byte `end - 1`: the offset just after
/// that line's newline, and whether a newline must be written first (the file does not end
/// with one).
pub fn line_end_after(src: &str, end: usize) -> (usize, bool) {
    let end = end.min(src.len());
    if end > 0 && src.as_bytes()[end - 1] == b'\n' {
        return (end, false);
    }
    match src[end..].find('\n') {
        Some(i) => (end + i + 1, false),
        None => (src.len(), true),
    }
}

/// The line ending the file uses (`\r\n` if its first line break is CRLF).
pub fn eol_of(src: &str) -> &'static str {
    match src.find('\n') {
        Some(i) if i > 0 && src.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// Offset just past the last character that belongs to `node` (its last scalar, or the
/// closing bracket of a flow collection). Trailing comments and newlines are not included.
pub fn content_end(node: &Node) -> usize {
    match (&node.value, node.style) {
        (_, Style::Flow) => node.span.end.offset as usize,
        (Value::Seq(items), _) if !items.is_empty() => items.last().map_or(0, content_end),
        (Value::Map(entries), _) if !entries.is_empty() => entries.last().map_or(0, |e| {
            let v = content_end(&e.value);
            if e.value.is_null() && e.value.span.start.offset == e.value.span.end.offset {
                e.key_span.end.offset as usize
            } else {
                v.max(e.key_span.end.offset as usize)
            }
        }),
        _ => node.span.end.offset as usize,
    }
}

/// Replace a scalar node's text (quotes included) with `rendered`.
pub fn set_scalar(node: &Node, rendered: &str) -> Result<Edit, EditError> {
    match node.value {
        Value::Seq(_) | Value::Map(_) => Err(EditError(
            "expected a single value, found a list or mapping".into(),
        )),
        _ if matches!(node.style, Style::Literal | Style::Folded) => {
            // Block scalars end after their line break; keep the layout simple: replace the
            // indicator and content, then restore one line break.
            Ok(Edit {
                range: node.span.byte_range(),
                text: format!("{rendered}\n"),
            })
        }
        _ => Ok(Edit {
            range: node.span.byte_range(),
            text: rendered.to_string(),
        }),
    }
}

/// New value for [`set_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewValue {
    /// A rendered scalar (`"text"`, `12`, `null`).
    Scalar(String),
    /// A block list of rendered scalars.
    List(Vec<String>),
    /// A block mapping of `key: rendered scalar`.
    #[cfg(test)]
    Map(Vec<(String, String)>),
    /// Rendered lines placed under the key, each indented two columns past it (lines may
    /// carry further indentation of their own).
    Block(Vec<String>),
}

/// Set `key` in the block mapping `map` (found in `src`): replaces the value if the key
/// exists with a scalar, else adds `key: value` after the mapping's last entry, at the
/// column of its keys.
pub fn set_key(src: &str, map: &Node, key: &str, value: &NewValue) -> Result<Edit, EditError> {
    let Some(entries) = map.as_map() else {
        return Err(EditError("expected a mapping".into()));
    };
    if let Some(e) = entries.iter().find(|e| e.key == key) {
        if let NewValue::Scalar(s) = value {
            if e.value.is_null() && e.value.span.start.offset == e.value.span.end.offset {
                // `key:` with nothing after it.
                let at = e.key_span.end.offset as usize;
                let colon = src[at..].find(':').map_or(at, |i| at + i + 1);
                return Ok(Edit {
                    range: colon..colon,
                    text: format!(" {s}"),
                });
            }
            return set_scalar(&e.value, s);
        }
        // Replace a whole value with a block value: from after `key:` to the value's end.
        let at = e.key_span.end.offset as usize;
        let colon = src[at..].find(':').map_or(at, |i| at + i + 1);
        let end = content_end(&e.value).max(colon);
        let col = column_of(src, e.key_span.start.offset as usize);
        let eol = eol_of(src);
        let text = render_block_value(value, col, eol);
        // Keep the line break the old value ended with (block scalars include theirs).
        let text = if src[..end].ends_with('\n') {
            text
        } else {
            text.strip_suffix(eol).unwrap_or(&text).to_string()
        };
        return Ok(Edit {
            range: colon..end,
            text,
        });
    }
    if map.style == Style::Flow {
        return Err(EditError(format!(
            "cannot add `{key}` to a flow mapping ({{...}}) without rewriting it"
        )));
    }
    let Some(first) = entries.first() else {
        return Err(EditError("cannot add a key to an empty mapping".into()));
    };
    let col = column_of(src, first.key_span.start.offset as usize);
    let eol = eol_of(src);
    let (at, newline_first) = line_end_after(src, content_end(map));
    let mut text = String::new();
    if newline_first {
        text.push_str(eol);
    }
    text.push_str(&" ".repeat(col));
    text.push_str(key);
    text.push(':');
    text.push_str(&render_block_value(value, col, eol));
    Ok(Edit {
        range: at..at,
        text,
    })
}

fn render_block_value(value: &NewValue, col: usize, eol: &str) -> String {
    let mut text = String::new();
    match value {
        NewValue::Scalar(s) => {
            text.push(' ');
            text.push_str(s);
            text.push_str(eol);
        }
        NewValue::List(items) if items.is_empty() => {
            text.push_str(" []");
            text.push_str(eol);
        }
        NewValue::List(items) => {
            text.push_str(eol);
            for it in items {
                text.push_str(&" ".repeat(col + 2));
                text.push_str("- ");
                text.push_str(it);
                text.push_str(eol);
            }
        }
        NewValue::Block(lines) => {
            text.push_str(eol);
            for l in lines {
                text.push_str(&" ".repeat(col + 2));
                text.push_str(l);
                text.push_str(eol);
            }
        }
        #[cfg(test)]
        NewValue::Map(kvs) => {
            text.push_str(eol);
            for (k, v) in kvs {
                text.push_str(&" ".repeat(col + 2));
                text.push_str(k);
                text.push_str(": ");
                text.push_str(v);
                text.push_str(eol);
            }
        }
    }
    text
}

/// Add one item (rendered scalar) to the sequence `seq`, whose key starts at `key_col`.
/// Block lists get a new `- item` line at the column of their items; `[]` becomes a block
/// list under the key; a non-empty flow list gets `, item` before its closing bracket.
pub fn append_item(src: &str, seq: &Node, key_col: usize, item: &str) -> Result<Edit, EditError> {
    let Some(items) = seq.as_seq() else {
        return Err(EditError("expected a list".into()));
    };
    let eol = eol_of(src);
    if seq.style == Style::Flow {
        let r = seq.span.byte_range();
        let close = src[..r.end]
            .rfind(']')
            .filter(|&i| i >= r.start)
            .ok_or(EditError("malformed flow list".into()))?;
        if items.is_empty() {
            let text = format!("{eol}{}- {item}", " ".repeat(key_col + 2));
            // Replace `[]` (and the blank before it) with the block list.
            let mut start = r.start;
            while start > 0 && src.as_bytes()[start - 1] == b' ' {
                start -= 1;
            }
            return Ok(Edit {
                range: start..close + 1,
                text,
            });
        }
        return Ok(Edit {
            range: close..close,
            text: format!(", {item}"),
        });
    }
    append_to_block_list(src, seq, items, eol, |col| {
        format!("{}- {item}{eol}", " ".repeat(col))
    })
}

/// Add one mapping item (`- k1: v1` / `  k2: v2`, values already rendered) to the
/// sequence `seq` whose key starts at column `key_col`; block lists get it at the column of
/// their items, `[]` becomes a block list. A non-empty flow list is refused.
pub fn append_map_item(
    src: &str,
    seq: &Node,
    key_col: usize,
    fields: &[(String, String)],
) -> Result<Edit, EditError> {
    let Some(items) = seq.as_seq() else {
        return Err(EditError("expected a list".into()));
    };
    let eol = eol_of(src);
    let render = |col: usize| {
        let mut t = String::new();
        for (i, (k, v)) in fields.iter().enumerate() {
            t.push_str(&" ".repeat(col));
            t.push_str(if i == 0 { "- " } else { "  " });
            t.push_str(k);
            t.push_str(": ");
            t.push_str(v);
            t.push_str(eol);
        }
        t
    };
    if seq.style == Style::Flow {
        if !items.is_empty() {
            return Err(EditError("the list is written in flow style ([...]); rewrite it as a block list to add items".into()));
        }
        let r = seq.span.byte_range();
        let close = src[..r.end]
            .rfind(']')
            .filter(|&i| i >= r.start)
            .ok_or(EditError("malformed flow list".into()))?;
        let mut start = r.start;
        while start > 0 && src.as_bytes()[start - 1] == b' ' {
            start -= 1;
        }
        let body = render(key_col + 2);
        let text = format!("{eol}{}", body.strip_suffix(eol).unwrap_or(&body));
        return Ok(Edit {
            range: start..close + 1,
            text,
        });
    }
    append_to_block_list(src, seq, items, eol, render)
}

/// Append rendered text after the last item of a non-empty block list. `render` gets the
/// column of the list's dashes and returns the new item's lines.
fn append_to_block_list(
    src: &str,
    seq: &Node,
    items: &[Node],
    eol: &str,
    render: impl Fn(usize) -> String,
) -> Result<Edit, EditError> {
    let Some(first) = items.first() else {
        return Err(EditError("cannot add to an empty block list".into()));
    };
    // The dash sits before the first item's content; find its column on that line.
    let first_at = first.span.start.offset as usize;
    let ls = line_start(src, first_at);
    let dash = src[ls..first_at]
        .rfind('-')
        .map(|i| ls + i)
        .unwrap_or(seq.span.start.offset as usize);
    let col = column_of(src, dash);
    let (at, newline_first) = line_end_after(src, content_end(seq));
    let mut text = String::new();
    if newline_first {
        text.push_str(eol);
    }
    text.push_str(&render(col));
    Ok(Edit {
        range: at..at,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{parse_str, Limits};

    fn doc(s: &str) -> crate::yaml::Document {
        parse_str(s, &Limits::default()).unwrap()
    }

    #[test]
    fn set_scalar_keeps_comments() {
        let src =
            "# top\ntasks:\n  - id: task-1 # first\n    status: pending # was\n    title: 'x'\n";
        let d = doc(src);
        let st = d.root.pointer("/tasks/0/status").unwrap();
        let out = apply(src, vec![set_scalar(st, &quote("completed")).unwrap()]).unwrap();
        assert_eq!(out, src.replace("status: pending", "status: \"completed\""));
    }

    #[test]
    fn add_key_to_task_mapping() {
        let src = "tasks:\n  - id: task-1\n    title: x # t\n  - id: task-2\n    title: y\n";
        let d = doc(src);
        let t0 = d.root.pointer("/tasks/0").unwrap();
        let out = apply(
            src,
            vec![set_key(src, t0, "status", &NewValue::Scalar(quote("blocked"))).unwrap()],
        )
        .unwrap();
        assert_eq!(out, "tasks:\n  - id: task-1\n    title: x # t\n    status: \"blocked\"\n  - id: task-2\n    title: y\n");
        let d2 = doc(&out);
        assert_eq!(
            d2.root.pointer("/tasks/0/status").unwrap().as_str(),
            Some("blocked")
        );
    }

    #[test]
    fn append_to_block_flow_and_empty_lists() {
        let src = "tasks:\n  - id: a\n    deps: []\n    more: [x]\n    list:\n    - p # c\nend: 1";
        let d = doc(src);
        let deps = d.root.pointer("/tasks/0/deps").unwrap();
        let more = d.root.pointer("/tasks/0/more").unwrap();
        let list = d.root.pointer("/tasks/0/list").unwrap();
        let e1 = append_item(src, deps, 4, "\"b\"").unwrap();
        let e2 = append_item(src, more, 4, "y").unwrap();
        let e3 = append_item(src, list, 4, "q").unwrap();
        let out = apply(src, vec![e1, e2, e3]).unwrap();
        let d2 = doc(&out);
        assert_eq!(
            d2.root.pointer("/tasks/0/deps").unwrap().to_json(),
            serde_json::json!(["b"])
        );
        assert_eq!(
            d2.root.pointer("/tasks/0/more").unwrap().to_json(),
            serde_json::json!(["x", "y"])
        );
        assert_eq!(
            d2.root.pointer("/tasks/0/list").unwrap().to_json(),
            serde_json::json!(["p", "q"])
        );
        assert!(out.contains("- p # c\n    - q\n"), "{out}");
    }

    #[test]
    fn append_task_items() {
        let src = "tasks: []  # none\n";
        let d = doc(src);
        let f = vec![
            ("id".to_string(), quote("task-1")),
            ("title".to_string(), quote("T")),
        ];
        let out = apply(
            src,
            vec![append_map_item(src, d.root.get("tasks").unwrap(), 0, &f).unwrap()],
        )
        .unwrap();
        assert_eq!(
            out,
            "tasks:\n  - id: \"task-1\"\n    title: \"T\"  # none\n"
        );
        let d = doc(&out);
        let f2 = vec![("id".to_string(), quote("task-2"))];
        let out2 = apply(
            &out,
            vec![append_map_item(&out, d.root.get("tasks").unwrap(), 0, &f2).unwrap()],
        )
        .unwrap();
        assert_eq!(
            doc(&out2).root.pointer("/tasks/1/id").unwrap().as_str(),
            Some("task-2")
        );
        let src = "tasks:\n- id: a\n  steps:\n  - s1\n# trailing\n";
        let d = doc(src);
        let out = apply(
            src,
            vec![append_map_item(src, d.root.get("tasks").unwrap(), 0, &f2).unwrap()],
        )
        .unwrap();
        assert_eq!(
            out,
            "tasks:\n- id: a\n  steps:\n  - s1\n- id: \"task-2\"\n# trailing\n"
        );
    }

    #[test]
    fn add_key_at_end_of_file_without_newline() {
        let src = "a: 1\nrun:\n  x: 2";
        let d = doc(src);
        let run = d.root.get("run").unwrap();
        let out = apply(
            src,
            vec![set_key(src, run, "replay_id", &NewValue::Scalar(quote("r"))).unwrap()],
        )
        .unwrap();
        assert_eq!(out, "a: 1\nrun:\n  x: 2\n  replay_id: \"r\"\n");
        let out2 = apply(
            src,
            vec![set_key(
                src,
                &d.root,
                "b",
                &NewValue::Map(vec![("k".into(), "v".into())]),
            )
            .unwrap()],
        )
        .unwrap();
        assert_eq!(doc(&out2).root.pointer("/b/k").unwrap().as_str(), Some("v"));
    }
}
