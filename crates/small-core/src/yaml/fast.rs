//! A fast path for the common shape of long logs.
//!
//! A progress log is almost always a top-level mapping of plain keys to one-line scalars,
//! with one key (`entries`) holding a block sequence of block mappings whose values are
//! one-line scalars. The general YAML parser spends about a second on a 35 MB log of that
//! shape; this module reads it line by line an order of magnitude faster and produces the
//! same nodes (values, styles, starts of every span, key spans).
//!
//! It is deliberately strict: every line must be one of a handful of forms, checked in a
//! first pass that builds nothing. Anything else — flow collections other than `[]`/`{}`,
//! block scalars, multi-line scalars, anchors, aliases, tags, tabs, CR line ends, quoted or
//! unusual keys, duplicate keys, documents markers — makes [`stream`] return `None`, and the
//! caller parses the file with the general parser instead, which also produces the error
//! messages for files that are invalid YAML.

use super::{resolve_plain, to_u32, Entry, Node, Style, Value};
use crate::diag::{Pos, Span};
use saphyr_parser::ScalarStyle;

/// One classified line.
enum Line<'a> {
    /// Empty or comment only.
    Blank,
    /// `key: value` (value may be absent) at `indent`, optionally behind `- ` (`item`).
    Pair {
        indent: usize,
        item: bool,
        key: &'a str,
        key_col: usize,
        value: Option<Tok<'a>>,
    },
    /// `- scalar` at `indent`: an item of a sequence nested in a streamed item (a plan task's
    /// `dependencies`).
    Scalar { indent: usize, tok: Tok<'a> },
}

/// A one-line scalar (or an empty flow collection) found on a line.
#[derive(Clone, Copy)]
struct Tok<'a> {
    /// Byte column (0-based) where the token starts on its line.
    col: usize,
    /// The token's source text.
    raw: &'a str,
    kind: TokKind,
    /// The token's line has no backslash (nothing to unescape).
    plain: bool,
}

impl Tok<'_> {
    /// Where the token is on its line (`pos` makes a column a position).
    #[inline(always)]
    fn span(&self, pos: &dyn Fn(usize) -> Pos) -> Span {
        Span {
            start: pos(self.col),
            end: pos(self.col + self.raw.len()),
        }
    }

    /// A quoted token's text between its quotes.
    #[inline(always)]
    fn inner(&self) -> &str {
        &self.raw[1..self.raw.len() - 1]
    }
}

#[derive(Clone, Copy, PartialEq)]
enum TokKind {
    Plain,
    Single,
    Double,
    EmptySeq,
    EmptyMap,
}

/// Parse `text` if it has the simple shape, streaming the items under `stream_key`.
/// `base` is the byte offset of `text` in the file (a byte-order mark before it).
/// Returns `None` when the file has any other shape; nothing has been sent to `sink` then.
pub(super) fn stream(
    text: &str,
    base: usize,
    stream_key: &str,
    sink: &mut dyn FnMut(usize, Node),
) -> Option<Node> {
    stream_part(text, base, stream_key, Part::default(), sink)?.root
}

/// Where a walk over the streamed sequence starts: the start of the line of one of its items.
/// A walk that reaches the sequence's first item jumps straight here, so the items before it
/// are neither parsed nor sent (the caller vouches that the text before `offset` is what it
/// was when this point was recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    /// Byte offset of the item's line in the text (after any byte-order mark).
    pub offset: usize,
    /// 1-based line number of that line.
    pub line: usize,
    /// Index of the item that starts there.
    pub index: usize,
    /// Indentation of the sequence's `- ` markers.
    pub seq_indent: usize,
    /// Where the sequence starts (the span start of its first item's marker).
    pub seq_start: Pos,
}

/// Which part of the text to walk.
#[derive(Debug, Clone, Copy, Default)]
pub struct Part {
    /// Start at this item (see [`Resume`]) instead of the sequence's first item.
    pub resume: Option<Resume>,
    /// Stop at this byte offset, which must start the line of an item of the sequence (or be
    /// the end of the text, the next item being elsewhere): the item before it is complete
    /// there. The walk then returns no root.
    pub stop: Option<usize>,
    /// Stop at the sequence's first item (to learn where it is); nothing is streamed.
    pub first_item_only: bool,
    /// Walk once, sending each item as soon as it is built, instead of checking the whole
    /// part's shape first: when the walk then returns `None`, some items may have been sent,
    /// and the caller must discard what its sink did with them.
    pub one_pass: bool,
    /// The text is the file with a stretch left out (see [`Splice`]).
    pub splice: Option<Splice>,
    /// Items may hold sequences of one-line scalars (a plan's `dependencies`). Off for
    /// progress logs, whose walk is then compiled without them.
    pub lists: bool,
}

/// A text that is its file with one stretch left out: the head of the file (up to the
/// sequence's first item line) joined to a tail. Positions are reported in the file's
/// offsets; lines count from the resume point, which must be the tail's first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Splice {
    /// Where the tail starts in the text.
    pub at: usize,
    /// How many bytes of the file were left out there.
    pub skipped: usize,
}

/// What a walk found.
#[derive(Debug, Clone)]
pub struct Walked {
    /// The document with an empty streamed sequence (a walk to the end only).
    pub root: Option<Node>,
    /// The start of the last item seen (the first one for `first_item_only`).
    pub last_item: Option<Resume>,
    /// Items streamed, plus the index the walk started at.
    pub count: usize,
}

/// Walk a part of `text` (see [`Part`]): check its shape first, then stream the items in it
/// to `sink`. `None` when the part has another shape; nothing was sent then.
pub fn stream_part(
    text: &str,
    base: usize,
    stream_key: &str,
    part: Part,
    sink: &mut dyn FnMut(usize, Node),
) -> Option<Walked> {
    let walk = match part.lists {
        true => walk::<true>,
        false => walk::<false>,
    };
    if part.first_item_only {
        return walk(text, base, stream_key, part, &mut None);
    }
    if part.one_pass {
        return walk(text, base, stream_key, part, &mut Some(sink));
    }
    // Pass 1: check the shape without building anything.
    walk(text, base, stream_key, part, &mut None)?;
    // Pass 2: build, cannot fail where pass 1 succeeded.
    walk(text, base, stream_key, part, &mut Some(sink))
}

/// The item being built: its list of fields, where it starts, and how many of the list's
/// fields are its own (a recycled list holds an earlier item's fields after them, to be
/// written over).
type Item = Option<(Vec<Entry>, Pos, usize)>;

/// A sequence of one-line scalars under a key of a streamed item (`dependencies:` then
/// `- "task-1"` lines, deeper than the key), being read.
struct Nested<'t> {
    key: &'t str,
    key_span: Span,
    key_col: usize,
    /// Column of its `- ` markers, all alike.
    dash: Option<usize>,
    /// Where its first marker is.
    start: Option<Pos>,
    /// Its items, when the walk builds.
    items: Vec<Node>,
    /// How many items it has (built or not).
    len: usize,
}

/// End the nested sequence being read, if any, as an entry of the item. `None` when it has
/// no items (`key:` alone is a null, left to the general parser).
/// A walk that only checks the shape (`build` false) keeps no items and builds no entries.
fn close_nested(
    nested: &mut Option<Nested<'_>>,
    item: &mut Item,
    end: Pos,
    build: bool,
) -> Option<()> {
    let Some(n) = nested.take() else {
        return Some(());
    };
    if n.len == 0 {
        return None;
    }
    let (entries, _, filled) = item.as_mut()?;
    if build {
        let field = Entry {
            key: super::known_key(n.key),
            key_span: n.key_span,
            value: Node {
                value: Value::Seq(n.items),
                span: Span {
                    start: n.start?,
                    end,
                },
                style: Style::Block,
            },
        };
        match entries.get_mut(*filled) {
            Some(old) => *old = field,
            None => entries.push(field),
        }
        *filled += 1;
    }
    Some(())
}

/// Fields an item usually has (a progress entry's timestamp, task, status, evidence, command,
/// notes and replay ID, and one more).
const ITEM_FIELDS: usize = 8;
type Seq = Option<(usize, Option<Pos>, usize)>;

/// The walk; `LISTS`: see [`Part::lists`].
fn walk<'t, const LISTS: bool>(
    text: &'t str,
    base: usize,
    stream_key: &str,
    part: Part,
    sink: &mut Option<&mut dyn FnMut(usize, Node)>,
) -> Option<Walked> {
    let build = sink.is_some();
    let mut top: Vec<Entry> = Vec::new();
    let mut top_keys: Vec<&str> = Vec::new();
    // The sequence under the stream key, while inside it: (item indent, seq start, count).
    let mut in_seq: Seq = None;
    let mut seq_done = false;
    // The item mapping being built, and its keys (one list, reused item after item).
    let mut item: Item = None;
    let mut item_keys: Vec<&'t str> = Vec::with_capacity(ITEM_FIELDS);
    let mut nested: Option<Nested<'t>> = None;
    let mut last_item: Option<Resume> = None;
    let mut resume = part.resume;
    let mut line_no = 0usize;
    let mut offset = 0usize;
    let mut last_end = Pos {
        line: 1,
        column: 1,
        offset: to_u32(base),
    };
    // A text offset as an offset in the file.
    let in_file = |at: usize| match part.splice {
        Some(s) if at >= s.at => at + s.skipped,
        _ => at,
    };

    let flush = |item: &mut Item,
                 sink: &mut Option<&mut dyn FnMut(usize, Node)>,
                 seq: &mut Seq,
                 end: Pos| {
        if let (Some((mut entries, start, filled)), Some((_, _, count))) =
            (item.take(), seq.as_mut())
        {
            if let Some(sink) = sink {
                entries.truncate(filled);
                let node = Node {
                    value: Value::Map(entries),
                    span: Span { start, end },
                    style: Style::Block,
                };
                sink(*count, node);
            }
            *count += 1;
        }
    };

    let bytes = text.as_bytes();
    // The next tab, carriage return or backslash at or after `special_from` (the text's
    // length if none): one search over the text says which lines hold none of them, instead
    // of a search on every line.
    let (mut special_from, mut special) = (0usize, 0usize);
    while offset < text.len() {
        let line_start = offset;
        let line_end = super::find::one(&bytes[offset..], b'\n').map_or(text.len(), |i| offset + i);
        offset = (line_end + 1).min(text.len());
        line_no += 1;
        if part.stop == Some(line_start) {
            if LISTS {
                close_nested(&mut nested, &mut item, last_end, build)?;
            }
            flush(&mut item, sink, &mut in_seq, last_end);
            return Some(Walked {
                root: None,
                last_item,
                count: in_seq.map_or(0, |s| s.2),
            });
        }
        let line = &text[line_start..line_end];
        // Columns count characters; on an ASCII line (the usual case) that is the byte index.
        // A character YAML does not allow in a document (a control byte; a byte-order mark,
        // a C1 control, a non-character past ASCII) is left to the general parser, which
        // refuses it.
        let ascii = match super::find::line_bytes(line.as_bytes()) {
            super::find::LineBytes::Ascii => true,
            super::find::LineBytes::Wide => {
                if line.chars().any(not_plainly_printable) {
                    return None;
                }
                false
            }
            super::find::LineBytes::Control => return None,
        };
        let pos = |col: usize| Pos {
            line: to_u32(line_no),
            column: to_u32(
                if ascii {
                    col
                } else {
                    line[..col].chars().count()
                } + 1,
            ),
            offset: to_u32(base + in_file(line_start) + col),
        };
        if special < line_start || special_from > line_start {
            special_from = line_start;
            special = memchr::memchr3(b'\t', b'\r', b'\\', &bytes[line_start..])
                .map_or(text.len(), |i| line_start + i);
        }
        match classify(line, special >= line_end)? {
            Line::Blank => continue,
            Line::Scalar { indent, tok } => {
                if !LISTS {
                    return None;
                }
                let n = nested.as_mut()?;
                if indent <= n.key_col || n.dash.is_some_and(|d| d != indent) {
                    return None;
                }
                n.dash = Some(indent);
                let node = scalar(tok, &pos, build)?;
                n.start.get_or_insert(pos(indent));
                n.len += 1;
                if build {
                    n.items.push(node);
                }
                last_end = pos(line.len());
            }
            Line::Pair {
                indent,
                item: is_item,
                key,
                key_col,
                value,
            } => {
                if LISTS {
                    close_nested(&mut nested, &mut item, last_end, build)?;
                }
                let key_span = Span {
                    start: pos(key_col),
                    end: pos(key_col + key.len()),
                };
                if indent == 0 && !is_item {
                    let value_node = match value {
                        Some(tok) => Some(scalar(tok, &pos, build)?),
                        None => None,
                    };
                    // A top-level key ends the sequence (and its last item).
                    if let Some((_, seq_start, _)) = in_seq {
                        flush(&mut item, sink, &mut in_seq, last_end);
                        let start = seq_start?;
                        let seq = Node {
                            value: Value::Seq(Vec::new()),
                            span: Span { start, end: pos(0) },
                            style: Style::Block,
                        };
                        top.last_mut()?.value = seq;
                        in_seq = None;
                        seq_done = true;
                    }
                    if top_keys.contains(&key) {
                        return None;
                    }
                    top_keys.push(key);
                    let node = match value_node {
                        Some(n) => n,
                        None => {
                            // Only the stream key may open a block, and only once.
                            if key != stream_key || seq_done {
                                return None;
                            }
                            in_seq = Some((usize::MAX, None, 0));
                            Node {
                                value: Value::Null,
                                span: key_span,
                                style: Style::Plain,
                            }
                        }
                    };
                    top.push(Entry {
                        key: if build {
                            super::known_key(key)
                        } else {
                            std::borrow::Cow::Borrowed("")
                        },
                        key_span,
                        value: node,
                    });
                    last_end = pos(line.len());
                    continue;
                }
                // Inside the stream sequence.
                let (seq_indent, seq_start, count) = in_seq.as_mut()?;
                let Some(tok) = value else {
                    // `key:` alone inside an item: a sequence of scalars follows.
                    if !LISTS {
                        return None;
                    }
                    let (_, start, _) = item.as_ref()?;
                    if is_item || to_u32(key_col) + 1 != start.column || item_keys.contains(&key) {
                        return None;
                    }
                    item_keys.push(key);
                    nested = Some(Nested {
                        key,
                        key_span,
                        key_col,
                        dash: None,
                        start: None,
                        items: Vec::new(),
                        len: 0,
                    });
                    last_end = pos(line.len());
                    continue;
                };
                if is_item {
                    // Checked without building; when building, only the sequence's first
                    // item, which may be left below (for the resume point, or as the
                    // answer) before it is built. Built values are checked as they are made.
                    if !build || *seq_indent == usize::MAX {
                        scalar(tok, &pos, false)?;
                    }
                    if *seq_indent == usize::MAX {
                        *seq_indent = indent;
                        // An indentless sequence (`- ` at the parent key's column) starts
                        // at its first key, as the general parser reports it.
                        *seq_start = Some(pos(if indent == 0 { key_col } else { indent }));
                        let first = Resume {
                            offset: line_start,
                            line: line_no,
                            index: 0,
                            seq_indent: indent,
                            seq_start: (*seq_start)?,
                        };
                        if part.first_item_only {
                            return Some(Walked {
                                root: None,
                                last_item: Some(first),
                                count: 0,
                            });
                        }
                        if let Some(r) = resume.take() {
                            // Jump to the resume point: same sequence, later item.
                            if r.seq_indent != first.seq_indent
                                || r.seq_start != first.seq_start
                                || r.offset < line_start
                                || r.line < line_no
                                || r.offset > text.len()
                                || !text.is_char_boundary(r.offset)
                            {
                                return None;
                            }
                            *count = r.index;
                            offset = r.offset;
                            line_no = r.line - 1;
                            continue;
                        }
                    } else if indent != *seq_indent {
                        return None;
                    }
                    flush(&mut item, sink, &mut in_seq, last_end);
                    let (seq_indent, seq_start, count) = in_seq?;
                    last_item = Some(Resume {
                        offset: in_file(line_start),
                        line: line_no,
                        index: count,
                        seq_indent,
                        seq_start: seq_start?,
                    });
                    // Room for a progress entry's usual fields: no growing on the way. A
                    // recycled list keeps an earlier item's fields, written over one by one.
                    let mut entries = if build {
                        super::spare::item(ITEM_FIELDS)
                    } else {
                        Vec::new()
                    };
                    if build {
                        put(&mut entries, 0, key, key_span, tok, &pos)?;
                    }
                    item_keys.clear();
                    item_keys.push(key);
                    item = Some((entries, key_span.start, usize::from(build)));
                } else {
                    let (entries, start, filled) = item.as_mut()?;
                    if to_u32(key_col) + 1 != start.column || item_keys.contains(&key) {
                        return None;
                    }
                    item_keys.push(key);
                    if build {
                        put(entries, *filled, key, key_span, tok, &pos)?;
                        *filled += 1;
                    } else {
                        scalar(tok, &pos, false)?;
                    }
                }
                last_end = pos(line.len());
            }
        }
    }
    if LISTS {
        close_nested(&mut nested, &mut item, last_end, build)?;
    }
    if part.stop == Some(text.len()) && !part.first_item_only && resume.is_none() {
        // A part that ends with the text (the next item is in another text), inside the
        // sequence.
        in_seq?;
        flush(&mut item, sink, &mut in_seq, last_end);
        return Some(Walked {
            root: None,
            last_item,
            count: in_seq.map_or(0, |s| s.2),
        });
    }
    if part.stop.is_some() || part.first_item_only || resume.is_some() {
        // The stop (or the first item, or the resume point) was never reached.
        return None;
    }
    let end_pos = Pos {
        line: to_u32(line_no + 1),
        column: 1,
        offset: to_u32(base + in_file(offset)),
    };
    let count = in_seq.map_or(0, |s| s.2);
    let mut total = count;
    if let Some((_, seq_start, _)) = in_seq {
        flush(&mut item, sink, &mut in_seq, end_pos);
        total = in_seq.map_or(count, |s| s.2);
        // `entries:` with nothing after it is a null, not an empty sequence: leave that to
        // the general parser.
        let start = seq_start?;
        top.last_mut()?.value = Node {
            value: Value::Seq(Vec::new()),
            span: Span {
                start,
                end: end_pos,
            },
            style: Style::Block,
        };
    } else if seq_done {
        total = last_item.map_or(0, |r| r.index + 1);
    }
    if top.is_empty() {
        return None;
    }
    let start = top[0].key_span.start;
    Some(Walked {
        root: Some(Node {
            value: Value::Map(top),
            span: Span {
                start,
                end: end_pos,
            },
            style: Style::Block,
        }),
        last_item,
        count: total,
    })
}

/// A character past ASCII that the walk does not read itself: C1 controls (NEL among them,
/// a line break in YAML 1.1), the byte-order mark, line and paragraph separators, and the
/// non-characters U+FFFE and U+FFFF.
fn not_plainly_printable(c: char) -> bool {
    matches!(
        c,
        '\u{80}'..='\u{9f}' | '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}'
    )
}

/// The bytes a key on the fast path is made of: ASCII letters and digits, `_`, `-`, `.`, `/`.
const KEY_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/');
        c += 1;
    }
    t
};

/// Classify a line, or `None` if it is outside the simple shape. `plain`: the line is known
/// to hold no tab, carriage return or backslash.
fn classify(line: &str, plain: bool) -> Option<Line<'_>> {
    let bytes = line.as_bytes();
    let indent = bytes.iter().take_while(|&&b| b == b' ').count();
    let rest = &line[indent..];
    if rest.is_empty() || rest.starts_with('#') {
        // A carriage return ends a line in YAML, a comment's too: what follows it is content
        // the walk would not see.
        if !plain && memchr::memchr(b'\r', rest.as_bytes()).is_some() {
            return None;
        }
        return Some(Line::Blank);
    }
    if !plain && memchr::memchr2(b'\t', b'\r', rest.as_bytes()).is_some() {
        return None;
    }
    let (item, key_col) = match rest.strip_prefix("- ") {
        Some(after) => {
            let extra = after.bytes().take_while(|&b| b == b' ').count();
            (true, indent + 2 + extra)
        }
        None => (false, indent),
    };
    let after_key_start = &line[key_col..];
    let key_len = after_key_start
        .bytes()
        .take_while(|&b| KEY_BYTES[usize::from(b)])
        .count();
    if key_len == 0 || after_key_start.starts_with('-') || after_key_start.starts_with('.') {
        return scalar_item(item, indent, after_key_start, key_col, plain);
    }
    let key = &after_key_start[..key_len];
    let after_key = &after_key_start[key_len..];
    let Some(after_colon) = after_key.strip_prefix(':') else {
        return scalar_item(item, indent, after_key_start, key_col, plain);
    };
    if !(after_colon.is_empty() || after_colon.starts_with(' ')) {
        return scalar_item(item, indent, after_key_start, key_col, plain);
    }
    let spaces = after_colon.bytes().take_while(|&b| b == b' ').count();
    let value_col = key_col + key_len + 1 + spaces;
    let value_text = &line[value_col..];
    if value_text.is_empty() || value_text.starts_with('#') {
        if spaces == 0 && value_text.starts_with('#') {
            return None;
        }
        return Some(Line::Pair {
            indent,
            item,
            key,
            key_col,
            value: None,
        });
    }
    let tok = token(value_text, value_col, plain)?;
    Some(Line::Pair {
        indent,
        item,
        key,
        key_col,
        value: Some(tok),
    })
}

/// A line that is not `key:`: behind `- `, a one-line scalar item (no `key: value` in it);
/// otherwise outside the simple shape. Kept out of [`classify`]'s common path.
#[cold]
#[inline(never)]
fn scalar_item(item: bool, indent: usize, text: &str, col: usize, plain: bool) -> Option<Line<'_>> {
    if !item {
        return None;
    }
    let tok = token(text, col, plain)?;
    match tok.kind {
        TokKind::Plain | TokKind::Single | TokKind::Double => Some(Line::Scalar { indent, tok }),
        TokKind::EmptySeq | TokKind::EmptyMap => None,
    }
}

/// The one-line scalar at the start of `s` (which starts at byte column `col`), checking
/// that only spaces or a comment follow it. `plain`: see [`classify`].
fn token(s: &str, col: usize, plain: bool) -> Option<Tok<'_>> {
    let bytes = s.as_bytes();
    // Nothing after `- ` (an item with no value, at the end of the text): the general
    // parser's business.
    let first = *bytes.first()?;
    let (len, kind) = match first {
        b'"' => {
            // The closing quote: the first `"` not escaped by a backslash.
            let mut i = 1;
            loop {
                i += super::find::two(bytes.get(i..)?, b'\\', b'"')?;
                if bytes[i] == b'"' {
                    break;
                }
                i += 2;
            }
            (i + 1, TokKind::Double)
        }
        b'\'' => {
            // The closing quote: the first `'` not doubled.
            let mut i = 1;
            loop {
                i += memchr::memchr(b'\'', bytes.get(i..)?)?;
                if bytes.get(i + 1) != Some(&b'\'') {
                    break;
                }
                i += 2;
            }
            (i + 1, TokKind::Single)
        }
        b'[' if s.starts_with("[]") => (2, TokKind::EmptySeq),
        b'{' if s.starts_with("{}") => (2, TokKind::EmptyMap),
        b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b'[' | b']' | b'{' | b'}'
        | b',' | b'?' | b':' | b'#' => return None,
        b'-' if bytes.get(1).is_none_or(|b| *b == b' ') => return None,
        _ => {
            // Plain: up to a comment (` #`) or the end, trailing spaces trimmed; no `: `
            // inside and no `:` at the end (that would be a mapping).
            let end = s.find(" #").unwrap_or(s.len());
            let text = s[..end].trim_end_matches(' ');
            if text.contains(": ") || text.ends_with(':') || text.contains(" #") {
                return None;
            }
            if text
                .bytes()
                .any(|b| matches!(b, b'[' | b']' | b'{' | b'}' | b','))
            {
                // Fine in block context, but keep the fast path to the obvious cases.
                return None;
            }
            return Some(Tok {
                col,
                raw: text,
                kind: TokKind::Plain,
                plain,
            });
        }
    };
    let tail = &s[len..];
    let trimmed = tail.trim_start_matches(' ');
    if !(trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < tail.len())) {
        return None;
    }
    Some(Tok {
        col,
        raw: &s[..len],
        kind,
        plain,
    })
}

/// Build the node of a token (or, when not building, only check it can be decoded).
// Inlined into the walk, where it runs for every line: as a call the gates ran 2-10% slower.
#[inline(always)]
fn scalar(tok: Tok<'_>, pos: &dyn Fn(usize) -> Pos, build: bool) -> Option<Node> {
    let span = tok.span(pos);
    let (value, style) = match tok.kind {
        TokKind::Plain => (
            if build {
                resolve_plain(tok.raw, ScalarStyle::Plain)
            } else {
                Value::Null
            },
            Style::Plain,
        ),
        TokKind::Single => {
            let inner = tok.inner();
            (
                Value::Str(if build {
                    inner.replace("''", "'")
                } else {
                    String::new()
                }),
                Style::SingleQuoted,
            )
        }
        TokKind::Double => {
            let inner = tok.inner();
            let text = if tok.plain {
                if build {
                    inner.to_string()
                } else {
                    String::new()
                }
            } else {
                unescape(inner)?
            };
            (Value::Str(text), Style::DoubleQuoted)
        }
        TokKind::EmptySeq => (Value::Seq(Vec::new()), Style::Flow),
        TokKind::EmptyMap => (Value::Map(Vec::new()), Style::Flow),
    };
    Some(Node { value, span, style })
}

/// Field `k` of an item's list, `key: tok`, made in its place: over the field a recycled
/// list holds there (its string keeps its buffer), or added after the last. The node is not
/// moved from where it is built to where it is kept.
#[inline(always)]
fn put(
    entries: &mut Vec<Entry>,
    k: usize,
    key: &str,
    key_span: Span,
    tok: Tok<'_>,
    pos: &dyn Fn(usize) -> Pos,
) -> Option<()> {
    if k == entries.len() {
        entries.push(Entry {
            key: std::borrow::Cow::Borrowed(""),
            key_span,
            value: Node {
                value: Value::Null,
                span: key_span,
                style: Style::Plain,
            },
        });
    }
    let field = entries.get_mut(k)?;
    field.key = super::known_key(key);
    field.key_span = key_span;
    fill(tok, pos, &mut field.value)
}

/// [`scalar`] (building) written into `node`, reusing its string when it holds one.
#[inline(always)]
fn fill(tok: Tok<'_>, pos: &dyn Fn(usize) -> Pos, node: &mut Node) -> Option<()> {
    if tok.kind == TokKind::Double && tok.plain {
        match &mut node.value {
            Value::Str(old) => {
                old.clear();
                old.push_str(tok.inner());
            }
            other => *other = Value::Str(tok.inner().to_string()),
        }
        node.style = Style::DoubleQuoted;
        node.span = tok.span(pos);
        return Some(());
    }
    *node = scalar(tok, pos, true)?;
    Some(())
}

/// Decode the escapes of a double-quoted scalar; `None` for anything unusual.
fn unescape(s: &str) -> Option<String> {
    if memchr::memchr(b'\\', s.as_bytes()).is_none() {
        return Some(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let decoded = match e {
            '0' => '\0',
            'a' => '\u{7}',
            'b' => '\u{8}',
            't' => '\t',
            'n' => '\n',
            'v' => '\u{b}',
            'f' => '\u{c}',
            'r' => '\r',
            'e' => '\u{1b}',
            ' ' => ' ',
            '"' => '"',
            '/' => '/',
            '\\' => '\\',
            'N' => '\u{85}',
            '_' => '\u{a0}',
            'L' => '\u{2028}',
            'P' => '\u{2029}',
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.by_ref().take(n).collect();
                if hex.len() != n {
                    return None;
                }
                char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
            }
            _ => return None,
        };
        out.push(decoded);
    }
    Some(out)
}

/// The fast path held against the general parser: used by the unit tests below and by the
/// fuzz suite, which feeds it damaged files.
pub(crate) mod differential {
    use super::super::{Builder, Limits, Node, Stream, Value};

    /// What the general parser streams for `src`.
    fn general(src: &str, key: &str) -> Result<(Node, Vec<Node>), String> {
        let mut items = Vec::new();
        let mut sink = |_: usize, n: Node| items.push(n);
        let mut b = Builder::new(src, 0, &Limits::default());
        b.stream = Some(Stream {
            key,
            sink: &mut sink,
            count: 0,
        });
        let root = b.run().map_err(|e| e.message)?;
        Ok((root, items))
    }

    /// What the fast path streams for `src`. Each item is given back once copied, as the
    /// gates do, so that the next items are written over recycled ones.
    pub(crate) fn fast(src: &str, key: &str) -> Option<(Node, Vec<Node>)> {
        let mut items = Vec::new();
        let part = super::Part {
            lists: true,
            ..Default::default()
        };
        let mut sink = |_, n: Node| {
            items.push(n.clone());
            super::super::recycle(n);
        };
        let root = super::stream_part(src, 0, key, part, &mut sink)?.root?;
        Some((root, items))
    }

    /// Same values, styles, start positions and key spans (ends of spans may differ: the
    /// general parser lets a scalar's span run over a trailing comment). Walks with a stack
    /// of its own: documents may nest 2 048 levels, deeper than a thread's stack allows a
    /// recursive walk in a debug build.
    pub(crate) fn same(a: &Node, b: &Node) -> Result<(), String> {
        let mut todo = vec![(a, b)];
        while let Some((a, b)) = todo.pop() {
            // Only the node itself: a nested value printed in full could be 2 048 levels.
            let shown = |n: &Node| format!("{:?} at {:?} ({:?})", n.style, n.span, kind(n));
            if a.style != b.style || a.span.start != b.span.start {
                return Err(format!("node differs: {} vs {}", shown(a), shown(b)));
            }
            match (&a.value, &b.value) {
                (Value::Map(x), Value::Map(y)) => {
                    if x.len() != y.len() {
                        return Err(format!("map sizes differ: {} vs {}", shown(a), shown(b)));
                    }
                    for (ex, ey) in x.iter().zip(y) {
                        if ex.key != ey.key || ex.key_span != ey.key_span {
                            return Err(format!(
                                "keys differ: {:?} at {:?} vs {:?} at {:?}",
                                ex.key, ex.key_span, ey.key, ey.key_span
                            ));
                        }
                        todo.push((&ex.value, &ey.value));
                    }
                }
                (Value::Seq(x), Value::Seq(y)) if x.len() == y.len() => {
                    todo.extend(x.iter().zip(y))
                }
                (Value::Map(_) | Value::Seq(_), _) | (_, Value::Map(_) | Value::Seq(_)) => {
                    return Err(format!("values differ: {} vs {}", shown(a), shown(b)));
                }
                (Value::Float(x), Value::Float(y)) if x.is_nan() && y.is_nan() => {}
                (x, y) if x == y => {}
                _ => return Err(format!("values differ: {a:?} vs {b:?}")),
            }
        }
        Ok(())
    }

    /// What `n` holds, without its nested values.
    fn kind(n: &Node) -> String {
        match &n.value {
            Value::Map(m) => format!("map of {}", m.len()),
            Value::Seq(s) => format!("sequence of {}", s.len()),
            other => format!("{other:?}"),
        }
    }

    /// Whether the fast path took `src` (streaming the sequence under `key`); an error when it
    /// took it and built anything other than what the general parser builds.
    pub(crate) fn agree_on(src: &str, key: &str) -> Result<bool, String> {
        let Some((froot, fitems)) = fast(src, key) else {
            return Ok(false);
        };
        let (groot, gitems) = general(src, key)
            .map_err(|e| format!("fast path accepted what the parser refuses ({e}):\n{src}"))?;
        same(&froot, &groot).map_err(|e| format!("{e}\n{src}"))?;
        if fitems.len() != gitems.len() {
            return Err(format!("item counts differ\n{src}"));
        }
        for (f, g) in fitems.iter().zip(&gitems) {
            same(f, g).map_err(|e| format!("{e}\n{src}"))?;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_str, Builder, Limits, Node};
    use super::differential::{fast, same};
    use proptest::prelude::*;

    use super::differential::agree_on;

    fn agree(src: &str) -> Result<bool, String> {
        agree_on(src, "entries")
    }

    /// A document nested as deep as the parser allows goes through the differential on a
    /// small stack: its comparison of the two trees does not recurse (it once overflowed the
    /// fuzzer's threads in a debug build).
    #[test]
    fn the_differential_walks_deep_trees_without_the_call_stack() {
        let src = format!("key:\n  {}x\nentries: []\n", "- ".repeat(2000));
        let run = move || super::super::fast_path_differential(&src);
        let outcome = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(run)
            .expect("a thread")
            .join()
            .expect("no panic");
        assert_eq!(outcome, Ok(()));
    }

    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z][a-zA-Z0-9 ._/-]{0,20}",
            "[0-9]{1,5}",
            Just("true".to_string()),
            Just("~".to_string()),
            Just("null".to_string()),
            Just("1.5e3".to_string()),
            Just("0x1F".to_string()),
            Just("-dry run".to_string()),
            "\"([a-z #:'ü€]|\\\\|\\\"|\\n|\\t|\\u00e9|\\x41){0,12}\"",
            "'([a-z #:\"ü]|''){0,12}'",
            Just("[]".to_string()),
            Just("{}".to_string()),
            "[a-z]{1,5}: [a-z]{1,5}",
            "[a-z]{1,5} #[a-z]{0,5}",
            Just("\"unterminated".to_string()),
            Just("&anchor x".to_string()),
            Just("|".to_string()),
        ]
    }

    fn comment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just(" # note".to_string()),
            Just("  #x".to_string())
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn fast_path_agrees_with_the_parser(
            head in proptest::collection::vec((scalar(), comment()), 0..3),
            items in proptest::collection::vec(proptest::collection::vec((scalar(), comment()), 1..5), 0..6),
            indent in 0usize..3,
            blank_between in any::<bool>(),
        ) {
            let mut src = String::new();
            for (i, (v, c)) in head.iter().enumerate() {
                src.push_str(&format!("k{i}: {v}{c}\n"));
            }
            src.push_str("entries:\n");
            let pad = " ".repeat(indent);
            for item in &items {
                for (j, (v, c)) in item.iter().enumerate() {
                    let lead = if j == 0 { format!("{pad}- ") } else { format!("{pad}  ") };
                    src.push_str(&format!("{lead}f{j}: {v}{c}\n"));
                }
                if blank_between {
                    src.push_str("\n  # between items\n");
                }
            }
            src.push_str("tail: end\n");
            if let Err(e) = agree(&src) {
                return Err(TestCaseError::fail(e));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Items holding sequences of scalars (a plan's tasks and their dependencies), at
        /// every indentation, the usual and the unusual.
        #[test]
        fn nested_sequences_agree_with_the_parser(
            items in proptest::collection::vec(
                (
                    proptest::collection::vec((scalar(), comment()), 1..4),
                    proptest::collection::vec((scalar(), comment()), 0..4),
                    0usize..4,
                    0usize..3,
                    any::<bool>(),
                ),
                0..5,
            ),
            indent in 0usize..3,
        ) {
            let mut src = String::from("small_version: \"1.0.0\"\ntasks:\n");
            let pad = " ".repeat(indent);
            for (fields, deps, dep_indent, at, blank) in &items {
                for (j, (v, c)) in fields.iter().enumerate() {
                    let lead = if j == 0 { format!("{pad}- ") } else { format!("{pad}  ") };
                    src.push_str(&format!("{lead}f{j}: {v}{c}\n"));
                    if j + 1 == (*at).min(fields.len()).max(1) {
                        src.push_str(&format!("{pad}  deps:\n"));
                        for (k, (d, c)) in deps.iter().enumerate() {
                            // Deeper than the key (2 or 4), at the key's column (0), or
                            // ragged (3 after the first).
                            let extra = match (*dep_indent, k) {
                                (3, 0) => 2,
                                (3, _) => 3,
                                (n, _) => n * 2,
                            };
                            src.push_str(&format!("{pad}  {}- {d}{c}\n", " ".repeat(extra)));
                            if *blank {
                                src.push('\n');
                            }
                        }
                    }
                }
            }
            src.push_str("owner: agent\n");
            let agreed = agree_on(&src, "tasks");
            if let Err(e) = agreed {
                return Err(TestCaseError::fail(e));
            }
        }
    }

    #[test]
    fn plans_with_dependencies_take_the_fast_path() {
        let plan = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"a\"\n    title: \"First\"\n    status: \"completed\"\n  - id: \"b\"\n    title: \"Second\"\n    dependencies:\n      - \"a\"\n      - c # later\n    status: \"pending\"\n";
        assert_eq!(agree_on(plan, "tasks"), Ok(true));
        // `key:` with nothing under it is a null, and an indentless list is left to the
        // general parser.
        assert_eq!(
            agree_on("tasks:\n  - id: a\n    deps:\n", "tasks"),
            Ok(false)
        );
        assert_eq!(
            agree_on("tasks:\n  - id: a\n    deps:\n    - b\n", "tasks"),
            Ok(false)
        );
        assert_eq!(
            agree_on("tasks:\n  - id: a\n    deps:\n      - b: 1\n", "tasks"),
            Ok(false)
        );
    }

    #[test]
    fn an_item_with_nothing_after_its_dash_is_left_to_the_parser() {
        // The last line `- ` with no value and no newline (a torn write of a plan).
        for text in [
            "tasks:\n  - id: a\n    deps:\n      - ",
            "tasks:\n  - ",
            "entries:\n  - ",
            "tasks:\n  - id: a\n    deps:\n      -",
            // A carriage return in a comment ends the comment's line.
            "# note\r more: text\ntasks:\n  - id: a\n",
            "tasks:\n  - id: a # x\r y: z\n",
            "entries:\n  # c\r- a: 1\n",
            // A byte-order mark inside the document, before a value, inside one, at a key.
            "entries:\n  - task_id: \u{feff}\"x\"\n",
            "entries:\n  - task_id: \"a\u{feff}b\"\n",
            "entries:\n  - task_id: a\u{feff}b\n",
            "tasks:\n  - \u{feff}id: a\n",
            // Control characters, where YAML allows them and where it does not.
            "entries:\n  - task_id: \u{0}\"x\"\n",
            "entries:\n  - task_id: \"a\u{1b}[31mb\"\n",
            "entries:\n  - task_id: a\u{7f}b\n",
            "entries:\n  - task_id: a\u{85}b\n",
            "tasks:\n  - id: a # \u{0}\n",
        ] {
            assert_eq!(agree_on(text, "tasks"), Ok(false), "{text:?}");
            assert_eq!(agree_on(text, "entries"), Ok(false), "{text:?}");
            assert_eq!(
                super::super::fast_path_differential(text),
                Ok(()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_plan_parses_to_the_same_tree_either_way() {
        let plan = "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"a\"\n    title: \"First\"\n    status: \"completed\"\n  - id: \"b\"\n    title: 'Second'\n    dependencies:\n      - \"a\"\n      - c\n    status: pending\n";
        // The plan as written, and with `tasks:` first and a comment between the tasks:
        // both taken by the fast path, both the tree the general parser builds.
        let first = "tasks:\n  - id: a # first\n\n  # next\n  - id: b\n    dependencies:\n      - a\nowner: agent\n";
        for text in [plan, first] {
            assert!(
                super::super::fast_plan(text, 0, &Limits::default()).is_some(),
                "{text}"
            );
            let general = Builder::new(text, 0, &Limits::default()).run().unwrap();
            let parsed = parse_str(text, &Limits::default()).unwrap().root;
            same(&parsed, &general).unwrap();
        }
    }

    #[test]
    fn typical_logs_take_the_fast_path() {
        let log = "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - timestamp: \"2026-01-01T00:00:00.1Z\"\n    task_id: \"task-1\"\n    evidence: \"ran it: ok\"\n";
        assert_eq!(agree(log), Ok(true));
        assert_eq!(agree("small_version: \"1.0.0\"\nentries: []\n"), Ok(true));
        let crlf = log.replace('\n', "\r\n");
        assert_eq!(agree(&crlf), Ok(false));
        assert_eq!(agree("entries:\n  - a: 1\n    b:\n      c: 2\n"), Ok(false));
        assert_eq!(agree("entries:\n  - a: 1\n  - a: 1\n    a: 2\n"), Ok(false));
        assert_eq!(agree("entries:\nother: 1\n"), Ok(false));
        assert!(parse_str(log, &Limits::default()).is_ok());
    }

    /// Lines are told plain (no tab, carriage return or backslash) by one search ahead of
    /// the walk: escapes, a tab or a carriage return on any line, before or after plain
    /// ones, are still seen there.
    #[test]
    fn escapes_tabs_and_returns_are_seen_on_whichever_line_they_are() {
        let entry = |i: usize, ev: &str| {
            format!("  - timestamp: \"2026-01-01T00:00:0{i}.1Z\"\n    task_id: \"task-{i}\"\n    evidence: {ev}\n")
        };
        for special in 0..6 {
            let mut log = String::from("small_version: \"1.0.0\"\nentries:\n");
            for i in 0..6 {
                log += &entry(
                    i,
                    if i == special {
                        "\"a\\tb \\\"q\\\" \\u00e9\""
                    } else {
                        "\"ok\""
                    },
                );
            }
            let (_, items) = fast(&log, "entries").expect("escapes stay on the fast path");
            let want = ["a\tb \"q\" é", "ok"];
            for (i, it) in items.iter().enumerate() {
                let ev = it.get("evidence").and_then(Node::as_str);
                assert_eq!(ev, Some(want[usize::from(i != special)]), "{log}");
            }
            assert_eq!(agree(&log), Ok(true), "{log}");
            for raw in ["\t", "\r"] {
                let at = log.match_indices("\"ok\"").nth(special.min(4)).unwrap().0;
                let mut bad = log.clone();
                bad.insert_str(at + 2, raw);
                assert_eq!(agree(&bad), Ok(false), "{bad:?}");
            }
        }
    }

    #[test]
    fn conformance_progress_logs_agree() {
        let cases = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/conformance/cases"
        );
        let Some(dir) =
            small_testkit::conformance_path(cases).and_then(|p| std::fs::read_dir(p).ok())
        else {
            return;
        };
        let mut fast_taken = 0;
        for case in dir.flatten() {
            let path = case.path().join(".small/progress.small.yml");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            match agree(text) {
                Ok(true) => fast_taken += 1,
                Ok(false) => {}
                Err(e) => panic!("{}: {e}", path.display()),
            }
        }
        assert!(
            fast_taken > 50,
            "only {fast_taken} corpus logs took the fast path"
        );
    }
}
