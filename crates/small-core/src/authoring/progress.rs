//! The progress log: append-only, one entry at a time, never re-serialised.
//!
//! `progress.small.yml` grows with every piece of recorded work. Appending an entry here
//! writes **only the new entry's bytes at the end of the file** (inside a workspace
//! [`Transaction`], which makes the append crash-safe: see `crate::workspace::txn`). The rest of the log
//! is never parsed or rewritten, so the cost of an append does not grow with the log:
//!
//! 1. The **head** of the file (its first 64 KiB) locates the top-level `entries:` key and the
//!    column at which its items start (`  - `).
//! 2. The **tail** is read backwards until the line that starts the last item at that column.
//!    Nothing after it may sit at or left of that column (other than comments), which proves
//!    `entries` is the last key and the item really is the last entry. Only that entry is
//!    parsed, to learn its timestamp.
//! 3. The new entry is serialised with every string double-quoted (so it reads back exactly),
//!    at the same indentation and with the same line endings as the file, and appended. A
//!    missing final newline is supplied first.
//!
//! Special shapes: `entries: []` (how every new workspace starts) is rewritten into block
//! form on that one line — the file is tiny then; a missing file is created. Anything
//! unusual (a key after `entries`, the list far from the top of the file) falls back to
//! parsing the whole file and inserting the entry after the last item, still without
//! changing any other byte. A flow-style list with items is refused with a pointer to
//! `small progress migrate`, the only command that rewrites the log.
//!
//! Timestamps are generated here: RFC 3339 UTC with nine fraction digits, strictly after the
//! previous entry (if the clock is behind or equal, one nanosecond after it).

use crate::spec::model::TaskStatus;
use crate::workspace::error::code;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value as Json};

use crate::authoring::templates::yaml_quote;
use crate::spec::consts::{ArtifactKind, EVIDENCE_FIELDS, PROTOCOL_VERSION};
use crate::spec::timestamp::{self, Instant};
use crate::workspace::txn::{Transaction, TxnError};
use crate::yaml::{self, Limits, Style};

/// Workspace-relative path of the progress log.
pub fn progress_rel() -> String {
    ArtifactKind::Progress.rel_path()
}

/// Statuses a progress entry may carry.
pub const STATUSES: [&str; 5] = [
    TaskStatus::Pending.as_str(),
    TaskStatus::InProgress.as_str(),
    TaskStatus::Completed.as_str(),
    TaskStatus::Blocked.as_str(),
    TaskStatus::Cancelled.as_str(),
];

const HEAD_BYTES: u64 = 64 * 1024;
const TAIL_START: u64 = 16 * 1024;

/// A value of an entry field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    Str(String),
    Int(i64),
    Bool(bool),
    /// A mapping, written in block style (keys in the order given).
    Map(Vec<(String, FieldValue)>),
}

impl FieldValue {
    /// The value after `key:` on one line (a scalar); `None` for a mapping.
    fn render_scalar(&self) -> Option<String> {
        match self {
            FieldValue::Str(s) => Some(yaml_quote(s)),
            FieldValue::Int(i) => Some(i.to_string()),
            FieldValue::Bool(b) => Some(b.to_string()),
            FieldValue::Map(_) => None,
        }
    }

    /// `key: value` lines at `pad`, nested mappings two columns further in.
    fn render_lines(&self, key: &str, pad: &str, eol: &str, out: &mut String) {
        out.push_str(pad);
        out.push_str(key);
        out.push(':');
        match (self.render_scalar(), self) {
            (Some(v), _) => {
                out.push(' ');
                out.push_str(&v);
                out.push_str(eol);
            }
            (None, FieldValue::Map(items)) => {
                if items.is_empty() {
                    out.push_str(" {}");
                }
                out.push_str(eol);
                let inner = format!("{pad}  ");
                for (k, v) in items {
                    v.render_lines(k, &inner, eol, out);
                }
            }
            (None, _) => out.push_str(eol),
        }
    }

    pub fn to_json(&self) -> Json {
        match self {
            FieldValue::Str(s) => Json::String(s.clone()),
            FieldValue::Int(i) => Json::from(*i),
            FieldValue::Bool(b) => Json::Bool(*b),
            FieldValue::Map(items) => Json::Object(
                items
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// Every string inside the value, with its JSON pointer below `base`.
    fn strings<'a>(&'a self, base: String, out: &mut Vec<(String, String, &'a str)>) {
        match self {
            FieldValue::Str(s) => {
                let key = base.rsplit('/').next().unwrap_or("").to_string();
                out.push((base, key, s));
            }
            FieldValue::Map(items) => {
                for (k, v) in items {
                    v.strings(format!("{base}/{k}"), out);
                }
            }
            _ => {}
        }
    }
}

impl From<&str> for FieldValue {
    fn from(s: &str) -> Self {
        FieldValue::Str(s.to_string())
    }
}
impl From<String> for FieldValue {
    fn from(s: String) -> Self {
        FieldValue::Str(s)
    }
}

/// How the new entry's timestamp is chosen.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TimestampRule {
    /// The current time, or one nanosecond after the last entry if the clock is not ahead.
    #[default]
    Now,
    /// Exactly this time (`--at`); it must be after the last entry.
    At(String),
    /// One nanosecond after this time, and after the last entry (`--after`).
    After(String),
}

/// An entry to append. The timestamp is set by [`Transaction::append_progress`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewEntry {
    pub task_id: String,
    pub status: Option<String>,
    /// Further fields in the order they are written: `evidence`, `notes`, `command`, ...
    pub fields: Vec<(String, FieldValue)>,
}

impl NewEntry {
    pub fn new(task_id: impl Into<String>, status: Option<&str>) -> Self {
        NewEntry {
            task_id: task_id.into(),
            status: status.map(str::to_string),
            fields: Vec::new(),
        }
    }

    /// Add (or replace) a field.
    pub fn field(mut self, key: &str, value: impl Into<FieldValue>) -> Self {
        self.set(key, value);
        self
    }

    /// Add (or replace) a field in place.
    pub fn set(&mut self, key: &str, value: impl Into<FieldValue>) {
        let value = value.into();
        match self.fields.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.fields.push((key.to_string(), value)),
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.fields.iter().any(|(k, _)| k == key)
    }

    /// Check the entry before it is written: task id, status, and evidence (invariant 2).
    /// Refuse an entry whose text holds a secret (INV1), before anything is written.
    pub fn refuse_secrets(&self, file: &str) -> Result<(), Box<crate::diag::Diagnostic>> {
        let mut strings = vec![(
            "/entries/-/task_id".to_string(),
            "task_id".to_string(),
            self.task_id.as_str(),
        )];
        for (k, v) in &self.fields {
            v.strings(format!("/entries/-/{k}"), &mut strings);
        }
        crate::secrets::refuse_secrets(
            file,
            strings
                .iter()
                .map(|(path, key, v)| (path.clone(), Some(key.as_str()), *v)),
        )
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.task_id.trim().is_empty() {
            return Err("a progress entry needs a task id (--task)".into());
        }
        if let Some(s) = &self.status {
            if !STATUSES.contains(&s.as_str()) {
                return Err(format!(
                    "invalid status {s:?}: use one of {}",
                    STATUSES.join(", ")
                ));
            }
        }
        let has_evidence = self.fields.iter().any(|(k, v)| {
            EVIDENCE_FIELDS.contains(&k.as_str())
                && !matches!(v, FieldValue::Str(s) if s.trim().is_empty())
        });
        if !has_evidence {
            return Err("a progress entry needs evidence (one of: evidence, verification, command, test, link, commit)".into());
        }
        for (k, _) in &self.fields {
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("invalid progress field name {k:?}"));
            }
        }
        Ok(())
    }

    /// The entry as it is written, with its timestamp (for `--json` output).
    pub fn to_json(&self, timestamp: &str) -> Map<String, Json> {
        let mut m = Map::new();
        m.insert("task_id".into(), Json::String(self.task_id.clone()));
        if let Some(s) = &self.status {
            m.insert("status".into(), Json::String(s.clone()));
        }
        m.insert("timestamp".into(), Json::String(timestamp.to_string()));
        for (k, v) in &self.fields {
            m.insert(k.clone(), v.to_json());
        }
        m
    }

    /// The entry as a block sequence item whose dash is at column `indent`.
    pub fn render(&self, timestamp: &str, indent: usize, eol: &str) -> String {
        let pad = " ".repeat(indent);
        let mut out = format!("{pad}- task_id: {}{eol}", yaml_quote(&self.task_id));
        let inner = format!("{pad}  ");
        if let Some(s) = &self.status {
            FieldValue::Str(s.clone()).render_lines("status", &inner, eol, &mut out);
        }
        FieldValue::Str(timestamp.to_string()).render_lines("timestamp", &inner, eol, &mut out);
        for (k, v) in &self.fields {
            if k != "task_id" && k != "status" && k != "timestamp" {
                v.render_lines(k, &inner, eol, &mut out);
            }
        }
        out
    }
}

/// What an append wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    pub timestamp: String,
    pub entry: Map<String, Json>,
}

/// The current time as a progress instant.
pub fn now() -> Instant {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    Instant::from_unix_nanos(nanos)
}

/// Choose the new entry's timestamp given the last one.
pub fn resolve_timestamp(
    last: Option<Instant>,
    rule: &TimestampRule,
    now: Instant,
) -> Result<Instant, String> {
    let after_last = |t: Instant| match last {
        Some(l) if t <= l => Instant::from_unix_nanos(l.unix_nanos() + 1),
        _ => t,
    };
    match rule {
        TimestampRule::Now => Ok(after_last(now)),
        TimestampRule::At(s) => {
            let t = timestamp::parse(s).map_err(|e| format!("--at {s:?} is {e}"))?;
            if let Some(l) = last {
                if t <= l {
                    return Err(format!(
                        "--at {s:?} is not after the last progress entry ({}); timestamps must increase",
                        timestamp::format_utc(l)
                    ));
                }
            }
            Ok(t)
        }
        TimestampRule::After(s) => {
            let t = timestamp::parse(s).map_err(|e| format!("--after {s:?} is {e}"))?;
            Ok(after_last(Instant::from_unix_nanos(t.unix_nanos() + 1)))
        }
    }
}

/// Where and how the next entry goes.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    /// Append at the end of the file: items at this column, last timestamp, newline needed.
    Append {
        indent: usize,
        last: Option<String>,
        needs_newline: bool,
        eol: &'static str,
    },
    /// `entries: []` (or `entries:` with nothing) at this byte range of the line's value.
    ReplaceEmpty {
        value_start: usize,
        value_end: usize,
        eol: &'static str,
    },
    /// Insert at this byte offset of the whole file (slow path).
    Insert {
        at: usize,
        indent: usize,
        last: Option<String>,
        prefix_newline: bool,
        eol: &'static str,
    },
    /// No file yet.
    Create,
}

impl Transaction {
    /// Append one progress entry: check it, choose its timestamp (strictly after the last
    /// entry), and stage the bytes. Several appends in one transaction are fine.
    pub fn append_progress(
        &mut self,
        entry: &NewEntry,
        rule: &TimestampRule,
    ) -> Result<Appended, TxnError> {
        entry
            .validate()
            .map_err(|m| TxnError::invalid(code::ENTRY, m))?;
        let rel = progress_rel();
        entry.refuse_secrets(&rel).map_err(TxnError::Invalid)?;
        let plan = plan_append(self, &rel)?;
        let last_text = match &plan {
            Plan::Append { last, .. } | Plan::Insert { last, .. } => last.clone(),
            _ => None,
        };
        let last = match &last_text {
            Some(t) => Some(timestamp::parse(t).map_err(|e| {
                TxnError::invalid(code::PROGRESS_LOG, format!(
                    "the last progress entry's timestamp {t:?} is {e}; run `small progress migrate` to repair the log"
                ))
            })?),
            None => None,
        };
        let ts =
            resolve_timestamp(last, rule, now()).map_err(|m| TxnError::invalid(code::ENTRY, m))?;
        let ts = timestamp::format_utc(ts);
        match plan {
            Plan::Append {
                indent,
                needs_newline,
                eol,
                ..
            } => {
                let mut bytes = String::new();
                if needs_newline {
                    bytes.push_str(eol);
                }
                bytes.push_str(&entry.render(&ts, indent, eol));
                self.append(&rel, bytes.into_bytes())?;
            }
            Plan::ReplaceEmpty {
                value_start,
                value_end,
                eol,
            } => {
                let src = self.read_string(&rel)?;
                let mut out = String::with_capacity(src.len() + 256);
                out.push_str(src[..value_start].trim_end_matches(' '));
                // Keep any comment after `[]` on the `entries:` line.
                let rest_of_line_end = src[value_end..]
                    .find('\n')
                    .map_or(src.len(), |i| value_end + i);
                let rest = src[value_end..rest_of_line_end].trim_end_matches('\r');
                out.push_str(rest.trim_end());
                out.push_str(eol);
                out.push_str(&entry.render(&ts, 2, eol));
                let after = &src[rest_of_line_end..];
                let after = after.strip_prefix('\n').unwrap_or(after);
                out.push_str(after);
                self.write(rel.clone(), out.into_bytes());
            }
            Plan::Insert {
                at,
                indent,
                prefix_newline,
                eol,
                ..
            } => {
                let src = self.read_string(&rel)?;
                let mut out = String::with_capacity(src.len() + 256);
                out.push_str(&src[..at]);
                if prefix_newline {
                    out.push_str(eol);
                }
                out.push_str(&entry.render(&ts, indent, eol));
                out.push_str(&src[at..]);
                self.write(rel.clone(), out.into_bytes());
            }
            Plan::Create => {
                let text = format!(
                    "small_version: \"{PROTOCOL_VERSION}\"\nowner: \"agent\"\nentries:\n{}",
                    entry.render(&ts, 2, "\n")
                );
                self.write(rel.clone(), text.into_bytes());
            }
        }
        Ok(Appended {
            entry: entry.to_json(&ts),
            timestamp: ts,
        })
    }

    /// The timestamp of the last progress entry, read from the tail of the log.
    pub fn last_progress_timestamp(&self) -> Result<Option<String>, TxnError> {
        Ok(match plan_append(self, &progress_rel())? {
            Plan::Append { last, .. } | Plan::Insert { last, .. } => last,
            _ => None,
        })
    }
}

fn detect_eol(bytes: &[u8]) -> &'static str {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(i) if i > 0 && bytes[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// Strip a trailing comment (`#` at the start or after a blank) and blanks.
fn strip_comment(s: &str) -> &str {
    let b = s.as_bytes();
    let mut in_quote: Option<u8> = None;
    for i in 0..b.len() {
        let c = b[i];
        match in_quote {
            Some(q) if c == q => in_quote = None,
            Some(_) => {}
            None if c == b'"' || c == b'\'' => in_quote = Some(c),
            None if c == b'#' && (i == 0 || b[i - 1] == b' ' || b[i - 1] == b'\t') => {
                return s[..i].trim_end();
            }
            None => {}
        }
    }
    s.trim_end()
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// A sequence item line at exactly column `indent`: `- ...` or a lone `-`.
fn is_item_at(line: &str, indent: usize) -> bool {
    indent_of(line) == indent && {
        let rest = &line[indent..];
        rest == "-" || rest.starts_with("- ") || rest.starts_with("-\t")
    }
}

fn plan_append(txn: &Transaction, rel: &str) -> Result<Plan, TxnError> {
    let Some(head) = txn.read_head(rel, HEAD_BYTES)? else {
        return Ok(Plan::Create);
    };
    let total = txn.len(rel)?.unwrap_or(0);
    let eol = detect_eol(&head);
    match scan_head(&head, total) {
        Head::Items { indent } => fast_tail(txn, rel, indent, eol),
        Head::Empty {
            value_start,
            value_end,
        } => Ok(Plan::ReplaceEmpty {
            value_start,
            value_end,
            eol,
        }),
        Head::Unknown => slow_plan(txn, rel, eol),
    }
}

enum Head {
    Items {
        indent: usize,
    },
    Empty {
        value_start: usize,
        value_end: usize,
    },
    Unknown,
}

/// Find the top-level `entries:` key in the head of the file.
fn scan_head(head: &[u8], total: u64) -> Head {
    // Only whole lines: drop a partial last line unless the head is the whole file.
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => match std::str::from_utf8(&head[..e.valid_up_to()]) {
            Ok(t) => t,
            Err(_) => return Head::Unknown,
        },
    };
    let whole = head.len() as u64 >= total;
    let text = text.strip_prefix('\u{feff}').map_or(text, |t| t);
    let bom = head.len() - text.len();
    let mut offset = bom;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(raw) = lines.next() {
        let line_start = offset;
        offset += raw.len();
        let complete = raw.ends_with('\n') || whole;
        if !complete {
            return Head::Unknown;
        }
        let line = raw.trim_end_matches(['\n', '\r']);
        if is_blank_or_comment(line) || line.starts_with(' ') {
            continue;
        }
        let Some(rest) = line.strip_prefix("entries:") else {
            continue;
        };
        let value = strip_comment(rest).trim();
        let value_start = line_start + "entries:".len();
        if value == "[]" {
            let off = rest.find("[]").unwrap_or(0);
            return Head::Empty {
                value_start,
                value_end: value_start + off + 2,
            };
        }
        if !value.is_empty() {
            return Head::Unknown;
        }
        // Block form: the next meaningful line decides.
        for raw in lines.by_ref() {
            if !(raw.ends_with('\n') || whole) {
                return Head::Unknown;
            }
            let l = raw.trim_end_matches(['\n', '\r']);
            if is_blank_or_comment(l) {
                continue;
            }
            let ind = indent_of(l);
            if is_item_at(l, ind) {
                return Head::Items { indent: ind };
            }
            return Head::Unknown;
        }
        // `entries:` with nothing after it, at the end of the file: same as `[]`.
        return if whole {
            Head::Empty {
                value_start,
                value_end: value_start,
            }
        } else {
            Head::Unknown
        };
    }
    Head::Unknown
}

/// Read backwards from the end to the start of the last item at `indent`.
fn fast_tail(
    txn: &Transaction,
    rel: &str,
    indent: usize,
    eol: &'static str,
) -> Result<Plan, TxnError> {
    let total = txn.len(rel)?.unwrap_or(0);
    let mut want = TAIL_START;
    loop {
        let Some((start, tail)) = txn.read_tail(rel, want)? else {
            return Ok(Plan::Create);
        };
        let at_file_start = start == 0;
        // Skip a partial first line (unless the tail is the whole file).
        let body_start = if at_file_start {
            0
        } else {
            match tail.iter().position(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => tail.len(),
            }
        };
        let body = &tail[body_start..];
        let Ok(text) = std::str::from_utf8(body) else {
            return slow_plan(txn, rel, eol);
        };
        // Walk lines backwards.
        let mut lines: Vec<(usize, &str)> = Vec::new();
        let mut off = 0;
        for raw in text.split_inclusive('\n') {
            lines.push((off, raw));
            off += raw.len();
        }
        let mut found = None;
        for (i, (off, raw)) in lines.iter().enumerate().rev() {
            let line = raw.trim_end_matches(['\n', '\r']);
            if is_item_at(line, indent) {
                found = Some((i, *off));
                break;
            }
            if is_blank_or_comment(line) {
                continue;
            }
            let ind = indent_of(line);
            if ind <= indent || line.starts_with("---") || line.starts_with("...") {
                // Something other than the entries list ends the file.
                return slow_plan(txn, rel, eol);
            }
        }
        match found {
            Some((_, off)) => {
                let item = &text[off..];
                let last = last_timestamp_of_item(item, indent)
                    .map_err(|m| TxnError::invalid(code::PROGRESS_LOG, m))?;
                let needs_newline = !text.ends_with('\n') && !text.is_empty();
                return Ok(Plan::Append {
                    indent,
                    last,
                    needs_newline,
                    eol,
                });
            }
            None if at_file_start || want >= total => return slow_plan(txn, rel, eol),
            None => want = (want * 4).min(total),
        }
    }
}

/// Parse one sequence item (text starting at its dash) and return its timestamp.
fn last_timestamp_of_item(item: &str, indent: usize) -> Result<Option<String>, String> {
    let doc = yaml::parse_str(item, &Limits::default()).map_err(|e| {
        format!(
            "the last entry of progress.small.yml cannot be read ({e}); fix it by hand or run `small check` for details"
        )
    })?;
    let _ = indent;
    let entry = doc.root.as_seq().and_then(|s| s.last());
    Ok(entry
        .and_then(|e| e.get("timestamp"))
        .and_then(|t| t.as_str())
        .map(str::to_string)
        .or_else(|| {
            // A timestamp that is present but not a string still has to be reported.
            entry
                .and_then(|e| e.get("timestamp"))
                .map(|_| String::new())
        }))
}

/// Parse the whole log and insert after its last item (no other byte changes).
fn slow_plan(txn: &Transaction, rel: &str, eol: &'static str) -> Result<Plan, TxnError> {
    let bytes = txn.read(rel)?.unwrap_or_default();
    let doc = yaml::parse_bytes(&bytes, &Limits::default()).map_err(|e| {
        TxnError::invalid(
            code::UNEDITABLE,
            format!("progress.small.yml is not valid YAML ({e}); fix it before appending"),
        )
    })?;
    let src = &doc.source;
    let Some(entries) = doc.root.get("entries") else {
        return Err(TxnError::invalid(
            code::PROGRESS_LOG,
            "progress.small.yml has no `entries` list; fix it before appending",
        ));
    };
    let Some(items) = entries.as_seq() else {
        return Err(TxnError::invalid(
            code::PROGRESS_LOG,
            "progress.small.yml `entries` is not a list",
        ));
    };
    if entries.style == Style::Flow {
        let key_at_col0 = doc.root.entry("entries").is_some_and(|e| {
            let k = e.key_span.start.offset as usize;
            line_start(src, k) == k
        });
        if items.is_empty() && key_at_col0 {
            let r = entries.span.byte_range();
            return Ok(Plan::ReplaceEmpty {
                value_start: r.start,
                value_end: r.end,
                eol,
            });
        }
        return Err(TxnError::invalid(code::PROGRESS_LOG,
            "progress.small.yml writes `entries` as a flow list ([...]); run `small progress migrate` to rewrite it in block form, then append",
        ));
    }
    let Some(last) = items.last() else {
        return Err(TxnError::invalid(
            code::PROGRESS_LOG,
            "progress.small.yml `entries` is empty but not `[]`",
        ));
    };
    let last_ts = last
        .get("timestamp")
        .map(|t| t.as_str().unwrap_or("").to_string());
    // The item's dash column: the first item's column equals the sequence's.
    let seq_start = entries.span.start.offset as usize;
    let indent = seq_start - line_start(src, seq_start);
    let end = last.span.end.offset as usize;
    let (at, prefix_newline) = crate::authoring::edit::line_end_after(src, end);
    Ok(Plan::Insert {
        at,
        indent,
        last: last_ts,
        prefix_newline,
        eol,
    })
}

fn line_start(src: &str, at: usize) -> usize {
    src[..at].rfind('\n').map_or(0, |i| i + 1)
}

// ---------------------------------------------------------------------------------------------
// `progress migrate`: the one command that rewrites the log.

/// What `progress migrate` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MigrateReport {
    pub entries: usize,
    pub rewritten: usize,
    /// The list was in flow style (`[...]`) and was rewritten in block form.
    pub converted_flow: bool,
}

fn plain_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !k.starts_with('-')
    {
        k.to_string()
    } else {
        yaml_quote(k)
    }
}

fn scalar_json(v: &Json) -> Option<String> {
    Some(match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => yaml_quote(s),
        Json::Array(a) if a.is_empty() => "[]".into(),
        Json::Object(o) if o.is_empty() => "{}".into(),
        _ => return None,
    })
}

/// Render a JSON value as block YAML lines at `indent` (sequences as `- ` items).
fn render_json_lines(v: &Json, indent: usize) -> Vec<String> {
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    match v {
        Json::Array(items) => {
            for it in items {
                match scalar_json(it) {
                    Some(s) => out.push(format!("{pad}- {s}")),
                    None => {
                        let inner = render_json_lines(it, indent + 2);
                        for (i, l) in inner.into_iter().enumerate() {
                            if i == 0 {
                                out.push(format!("{pad}- {}", l.trim_start()));
                            } else {
                                out.push(l);
                            }
                        }
                    }
                }
            }
        }
        Json::Object(map) => {
            for (k, val) in map {
                match scalar_json(val) {
                    Some(s) => out.push(format!("{pad}{}: {s}", plain_key(k))),
                    None => {
                        out.push(format!("{pad}{}:", plain_key(k)));
                        out.extend(render_json_lines(val, indent + 2));
                    }
                }
            }
        }
        other => out.push(format!("{pad}{}", scalar_json(other).unwrap_or_default())),
    }
    out
}

/// Parse a timestamp as leniently as migration allows: RFC 3339 with or without a fraction,
/// a space or lower-case `t` instead of `T`, a comma before the fraction.
pub fn parse_lenient(s: &str) -> Option<Instant> {
    if let Ok(t) = timestamp::parse(s) {
        return Some(t);
    }
    let mut fixed = s.trim().replace(',', ".");
    if fixed.len() > 10 {
        let b = fixed.as_bytes()[10];
        if b == b' ' || b == b't' {
            fixed.replace_range(10..11, "T");
        }
    }
    if let Ok(t) = timestamp::parse(&fixed) {
        return Some(t);
    }
    // Add a zero fraction before the zone: after HH:MM:SS (position 19).
    if fixed.len() >= 19 && fixed.is_char_boundary(19) {
        let mut with = fixed.clone();
        with.insert_str(19, ".0");
        if let Ok(t) = timestamp::parse(&with) {
            return Some(t);
        }
    }
    None
}

/// Rewrite the log's timestamps into canonical, strictly increasing form, editing only the
/// timestamp values (comments and every other byte stay). Returns the new text if changed.
pub fn migrate_text(src_bytes: &[u8]) -> Result<(MigrateReport, Option<String>), String> {
    let doc = yaml::parse_bytes(src_bytes, &Limits::default())
        .map_err(|e| format!("progress.small.yml is not valid YAML: {e}"))?;
    let entries = doc
        .root
        .get("entries")
        .and_then(|e| e.as_seq())
        .ok_or("progress.small.yml has no `entries` list")?;
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut last: Option<Instant> = None;
    for (i, e) in entries.iter().enumerate() {
        let Some(ts) = e.get("timestamp") else {
            return Err(format!("progress entry {i} has no timestamp"));
        };
        let text = ts
            .as_str()
            .ok_or(format!("progress entry {i}: timestamp is not a string"))?;
        let mut t = parse_lenient(text).ok_or(format!(
            "progress entry {i}: timestamp {text:?} cannot be read as RFC 3339"
        ))?;
        if let Some(l) = last {
            if t <= l {
                t = Instant::from_unix_nanos(l.unix_nanos() + 1);
            }
        }
        let canonical = timestamp::format_utc(t);
        if canonical != text {
            edits.push((ts.span.byte_range(), yaml_quote(&canonical)));
        }
        last = Some(t);
    }
    let entries_node = doc
        .root
        .get("entries")
        .ok_or("progress.small.yml has no `entries` list")?;
    if entries_node.style == Style::Flow && !entries.is_empty() {
        // Convert the flow list into block form, timestamps canonical.
        let mut list = Vec::new();
        let mut lastf: Option<Instant> = None;
        for e in entries {
            let text = e.get("timestamp").and_then(|t| t.as_str()).unwrap_or("");
            let mut t = parse_lenient(text)
                .ok_or(format!("timestamp {text:?} cannot be read as RFC 3339"))?;
            if let Some(l) = lastf {
                if t <= l {
                    t = Instant::from_unix_nanos(l.unix_nanos() + 1);
                }
            }
            lastf = Some(t);
            let mut j = e.to_json();
            if let Some(m) = j.as_object_mut() {
                m.insert("timestamp".into(), Json::String(timestamp::format_utc(t)));
            }
            list.push(j);
        }
        let src = &doc.source;
        let key = doc.root.entry("entries").ok_or("no entries key")?;
        let key_col = crate::authoring::edit::column_of(src, key.key_span.start.offset as usize);
        let eol = crate::authoring::edit::eol_of(src);
        let mut block = String::new();
        for line in render_json_lines(&Json::Array(list), key_col + 2) {
            block.push_str(eol);
            block.push_str(&line);
        }
        let r = entries_node.span.byte_range();
        let mut start = r.start;
        while start > 0 && src.as_bytes()[start - 1] == b' ' {
            start -= 1;
        }
        let end = src[..r.end].rfind(']').map_or(r.end, |i| i + 1);
        let out = format!("{}{}{}", &src[..start], block, &src[end..]);
        let report = MigrateReport {
            entries: entries.len(),
            rewritten: edits.len(),
            converted_flow: true,
        };
        return Ok((report, Some(out)));
    }
    let report = MigrateReport {
        entries: entries.len(),
        rewritten: edits.len(),
        converted_flow: false,
    };
    if edits.is_empty() {
        return Ok((report, None));
    }
    let src = &doc.source;
    let mut out = String::with_capacity(src.len() + edits.len() * 16);
    let mut pos = 0;
    for (range, text) in edits {
        out.push_str(&src[pos..range.start]);
        out.push_str(&text);
        pos = range.end;
    }
    out.push_str(&src[pos..]);
    Ok((report, Some(out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn ws(progress: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join(".small")).unwrap();
        fs::write(d.path().join(".small/progress.small.yml"), progress).unwrap();
        d
    }

    fn add(d: &tempfile::TempDir, task: &str, rule: TimestampRule) -> Result<Appended, TxnError> {
        let mut t = Transaction::begin(d.path())?;
        let e =
            NewEntry::new(task, Some("completed")).field("evidence", "ran \"tests\": ok\nline2");
        let a = t.append_progress(&e, &rule)?;
        t.commit()?;
        Ok(a)
    }

    fn read(d: &tempfile::TempDir) -> String {
        fs::read_to_string(d.path().join(".small/progress.small.yml")).unwrap()
    }

    fn entries(d: &tempfile::TempDir) -> Vec<serde_json::Value> {
        let doc = yaml::parse_str(&read(d), &Limits::default()).unwrap();
        doc.root
            .get("entries")
            .unwrap()
            .to_json()
            .as_array()
            .unwrap()
            .clone()
    }

    #[test]
    fn flow_empty_becomes_block_and_comments_stay() {
        let d = ws(
            "# head comment\nsmall_version: \"1.0.0\"\nowner: \"agent\"\nentries: [] # none yet\n",
        );
        add(&d, "task-1", TimestampRule::Now).unwrap();
        add(&d, "task-2", TimestampRule::Now).unwrap();
        let text = read(&d);
        assert!(text.starts_with("# head comment\n"));
        assert!(
            text.contains("entries: # none yet\n  - task_id: \"task-1\""),
            "{text}"
        );
        let e = entries(&d);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0]["evidence"], "ran \"tests\": ok\nline2");
        assert!(e[0]["timestamp"].as_str() < e[1]["timestamp"].as_str());
    }

    #[test]
    fn appends_only_at_end_matching_indent_and_fixes_missing_newline() {
        let base = "small_version: \"1.0.0\"\nowner: agent\nentries:\n    - task_id: a\n      timestamp: '2099-01-01T00:00:00.5Z' # future\n      evidence: x";
        let d = ws(base);
        let a = add(&d, "task-1", TimestampRule::Now).unwrap();
        assert_eq!(a.timestamp, "2099-01-01T00:00:00.500000001Z");
        let text = read(&d);
        assert!(text.starts_with(base), "{text}");
        assert!(text[base.len()..].starts_with("\n    - task_id: \"task-1\""));
        assert_eq!(entries(&d).len(), 2);
    }

    #[test]
    fn at_and_after() {
        let d = ws("small_version: \"1.0.0\"\nowner: agent\nentries:\n- task_id: a\n  timestamp: \"2026-01-01T00:00:00.000000000Z\"\n  evidence: x\n");
        let err = add(&d, "t", TimestampRule::At("2025-01-01T00:00:00.1Z".into())).unwrap_err();
        assert!(err.to_string().contains("not after"), "{err}");
        let a = add(
            &d,
            "t",
            TimestampRule::At("2026-02-01T00:00:00.1+01:00".into()),
        )
        .unwrap();
        assert_eq!(a.timestamp, "2026-01-31T23:00:00.100000000Z");
        let a = add(
            &d,
            "t",
            TimestampRule::After("2020-01-01T00:00:00.0Z".into()),
        )
        .unwrap();
        assert_eq!(a.timestamp, "2026-01-31T23:00:00.100000001Z");
        assert_eq!(entries(&d).len(), 3);
    }

    #[test]
    fn key_after_entries_uses_slow_path_without_touching_other_bytes() {
        let d = ws("entries:\n  - task_id: a\n    timestamp: \"2026-01-01T00:00:00.0Z\"\n    evidence: x\nsmall_version: \"1.0.0\"\nowner: agent\n");
        add(&d, "task-9", TimestampRule::Now).unwrap();
        let text = read(&d);
        assert!(
            text.ends_with("small_version: \"1.0.0\"\nowner: agent\n"),
            "{text}"
        );
        assert_eq!(entries(&d).len(), 2);
    }

    #[test]
    fn missing_file_is_created_and_bad_last_timestamp_refused() {
        let d = ws("");
        fs::remove_file(d.path().join(".small/progress.small.yml")).unwrap();
        add(&d, "x", TimestampRule::Now).unwrap();
        assert_eq!(entries(&d).len(), 1);
        let d = ws("entries:\n  - task_id: a\n    timestamp: \"yesterday\"\n    evidence: x\n");
        let err = add(&d, "x", TimestampRule::Now).unwrap_err();
        assert!(err.to_string().contains("progress migrate"), "{err}");
    }

    #[test]
    fn crlf_files_get_crlf_entries() {
        let d = ws("entries:\r\n  - task_id: a\r\n    timestamp: \"2026-01-01T00:00:00.0Z\"\r\n    evidence: x\r\n");
        add(&d, "b", TimestampRule::Now).unwrap();
        assert!(!read(&d).replace("\r\n", "").contains('\n'));
        assert_eq!(entries(&d).len(), 2);
    }

    #[test]
    fn migrate_converts_flow_lists() {
        let src = "small_version: \"1.0.0\"\nentries: [{task_id: a, timestamp: \"2026-01-01T00:00:00Z\", evidence: {k: [1, x]}}, {task_id: b, timestamp: \"2025-01-01T00:00:00.5Z\", notes: \"n\"}]\nowner: agent\n";
        let (r, out) = migrate_text(src.as_bytes()).unwrap();
        assert!(r.converted_flow);
        let out = out.unwrap();
        let d = yaml::parse_str(&out, &Limits::default()).unwrap();
        let e = d.root.get("entries").unwrap();
        assert_eq!(e.style, Style::Block);
        assert_eq!(
            e.to_json()[0]["evidence"],
            serde_json::json!({"k": [1, "x"]})
        );
        assert_eq!(
            e.to_json()[1]["timestamp"],
            "2026-01-01T00:00:00.000000001Z"
        );
        assert_eq!(d.root.get("owner").unwrap().as_str(), Some("agent"));
        // and appends work afterwards (fast path needs entries last; slow path otherwise)
        let (r2, _) = migrate_text(out.as_bytes()).unwrap();
        assert_eq!(r2.rewritten, 0);
    }

    #[test]
    fn migrate_rewrites_only_timestamps() {
        let src = "# c\nentries:\n  - task_id: a # keep\n    timestamp: 2026-01-01T00:00:00Z\n    evidence: x\n  - task_id: b\n    timestamp: \"2025-01-01 00:00:00.5Z\"\n    evidence: y\n";
        let (r, out) = migrate_text(src.as_bytes()).unwrap();
        assert_eq!(r.rewritten, 2);
        let out = out.unwrap();
        assert!(
            out.contains("task_id: a # keep\n    timestamp: \"2026-01-01T00:00:00.000000000Z\""),
            "{out}"
        );
        assert!(out.contains("\"2026-01-01T00:00:00.000000001Z\""), "{out}");
        let (r2, out2) = migrate_text(out.as_bytes()).unwrap();
        assert_eq!(r2.rewritten, 0);
        assert!(out2.is_none());
    }
}
