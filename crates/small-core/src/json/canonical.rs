//! JSON exactly as JavaScript sees it, and its canonical form (seed 001 / 004).
//!
//! The manifest replay ID hashes `canonicalJson(manifest)` as the reference JavaScript
//! computes it: `JSON.parse` semantics on the way in (correctly rounded doubles, overflow to
//! ±Infinity, last duplicate key wins, unpaired surrogate escapes kept) and `JSON.stringify`
//! with object keys sorted by UTF-16 code units on the way out. `serde_json::Value` can hold
//! neither lone surrogates nor infinities, so this module has its own small value type.
//!
//! Strings are stored as WTF-8 (UTF-8 that may also encode unpaired surrogates as three-byte
//! sequences `ED A0..BF xx`); valid pairs in escapes are combined into one code point, so the
//! representation of every JavaScript string is unique.

use std::cmp::Ordering;
use std::fmt;

/// Default nesting limit for [`parse`]: arrays and objects nested deeper are rejected.
pub const DEFAULT_MAX_DEPTH: usize = 1024;

/// A JavaScript string: WTF-8 bytes (valid UTF-8 unless it holds unpaired surrogates).
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct JsString(Vec<u8>);

impl JsString {
    /// The string as UTF-8, when it holds no unpaired surrogate.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }
    /// The WTF-8 bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    /// True when the string holds at least one unpaired surrogate.
    pub fn has_lone_surrogate(&self) -> bool {
        self.as_str().is_none()
    }
    /// Lossy UTF-8 (unpaired surrogates become U+FFFD), for display.
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
    /// Build from WTF-8 bytes (caller guarantees well-formed WTF-8).
    fn from_wtf8(bytes: Vec<u8>) -> Self {
        JsString(bytes)
    }
    /// Append another JavaScript string (as `+` does; a high surrogate at the end of `self`
    /// followed by a low one at the start of `other` joins into one code point).
    pub fn push_js(&mut self, other: &JsString) {
        let a = &self.0;
        let b = &other.0;
        if a.len() >= 3 && b.len() >= 3 {
            let hi = decode_at(a, a.len() - 3);
            let lo = decode_at(b, 0);
            if let (Some((h, 3)), Some((l, 3))) = (hi, lo) {
                if (0xD800..0xDC00).contains(&h) && (0xDC00..0xE000).contains(&l) {
                    let cp = 0x10000 + ((h - 0xD800) << 10) + (l - 0xDC00);
                    self.0.truncate(self.0.len() - 3);
                    push_code_point(&mut self.0, cp);
                    self.0.extend_from_slice(&other.0[3..]);
                    return;
                }
            }
        }
        self.0.extend_from_slice(&other.0);
    }
    pub fn push_str(&mut self, s: &str) {
        self.0.extend_from_slice(s.as_bytes());
    }
    /// Compare as JavaScript compares strings: by UTF-16 code units.
    pub fn cmp_utf16(&self, other: &JsString) -> Ordering {
        cmp_utf16(&self.0, &other.0)
    }
}

impl From<&str> for JsString {
    fn from(s: &str) -> Self {
        JsString(s.as_bytes().to_vec())
    }
}
impl From<String> for JsString {
    fn from(s: String) -> Self {
        JsString(s.into_bytes())
    }
}

impl fmt::Debug for JsString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        write_json_string(&mut out, self);
        f.write_str(&out)
    }
}

/// A JSON value as `JSON.parse` produces it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// Any double, including ±Infinity from overflowing literals.
    Number(f64),
    String(JsString),
    Array(Vec<Value>),
    /// Members sorted by key in UTF-16 code unit order, keys unique (last duplicate won).
    Object(Vec<(JsString, Value)>),
}

impl Value {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => {
                let k = JsString::from(key);
                members
                    .binary_search_by(|(mk, _)| mk.cmp_utf16(&k))
                    .ok()
                    .map(|i| &members[i].1)
            }
            _ => None,
        }
    }
    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }
    pub fn as_js_str(&self) -> Option<&JsString> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// JavaScript `String(v)`.
    pub fn js_to_string(&self) -> JsString {
        match self {
            Value::Null => JsString::from("null"),
            Value::Bool(b) => JsString::from(if *b { "true" } else { "false" }),
            Value::Number(n) => JsString::from(js_number_to_string(*n)),
            Value::String(s) => s.clone(),
            Value::Object(_) => JsString::from("[object Object]"),
            Value::Array(items) => {
                // Array.prototype.join(","): null and undefined elements become "".
                let mut out = JsString::default();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",");
                    }
                    if !matches!(item, Value::Null) {
                        out.push_js(&item.js_to_string());
                    }
                }
                out
            }
        }
    }
    /// Convert to `serde_json::Value`, replacing unpaired surrogates with U+FFFD and
    /// infinities with `null`.
    pub fn to_serde_lossy(&self) -> serde_json::Value {
        match self {
            Value::String(s) => serde_json::Value::String(s.to_string_lossy()),
            Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(|v| v.to_serde_lossy()).collect())
            }
            Value::Object(members) => serde_json::Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.to_string_lossy(), v.to_serde_lossy()))
                    .collect(),
            ),
            other => other.to_serde().unwrap_or(serde_json::Value::Null),
        }
    }

    /// Convert to `serde_json::Value` when representable (no lone surrogates, finite numbers;
    /// infinities become `null` as in `JSON.stringify`).
    pub fn to_serde(&self) -> Option<serde_json::Value> {
        Some(match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => match serde_json::Number::from_f64(*n) {
                Some(num) if n.fract() != 0.0 || n.abs() >= 9.007_199_254_740_992e15 => {
                    serde_json::Value::Number(num)
                }
                Some(_) => serde_json::Value::Number(serde_json::Number::from(*n as i64)),
                None => serde_json::Value::Null,
            },
            Value::String(s) => serde_json::Value::String(s.as_str()?.to_owned()),
            Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(|v| v.to_serde()).collect::<Option<_>>()?)
            }
            Value::Object(members) => {
                let mut map = serde_json::Map::new();
                for (k, v) in members {
                    map.insert(k.as_str()?.to_owned(), v.to_serde()?);
                }
                serde_json::Value::Object(map)
            }
        })
    }
}

/// A parse error with its position in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    pub message: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
    /// 0-based byte offset.
    pub offset: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The bytes are not UTF-8.
    Encoding,
    /// The text is not JSON.
    Syntax,
    /// Arrays/objects nested deeper than the limit.
    TooDeep,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {}, column {}",
            self.message, self.line, self.column
        )
    }
}

impl std::error::Error for ParseError {}

/// Parse JSON text as `JSON.parse` does, with the default depth limit.
pub fn parse(bytes: &[u8]) -> Result<Value, ParseError> {
    parse_with_depth(bytes, DEFAULT_MAX_DEPTH)
}

/// Parse JSON text as `JSON.parse` does; arrays/objects nested deeper than `max_depth` are an
/// error. A UTF-8 byte order mark is not skipped (JSON.parse rejects it too).
pub fn parse_with_depth(bytes: &[u8], max_depth: usize) -> Result<Value, ParseError> {
    if let Err(e) = std::str::from_utf8(bytes) {
        let mut p = Parser {
            src: bytes,
            pos: e.valid_up_to(),
            max_depth,
            depth: 0,
        };
        return Err(p.error_kind(
            ParseErrorKind::Encoding,
            "the text is not valid UTF-8".into(),
        ));
    }
    let mut p = Parser {
        src: bytes,
        pos: 0,
        max_depth,
        depth: 0,
    };
    p.skip_ws();
    let v = p.value()?;
    p.skip_ws();
    if p.pos < p.src.len() {
        return Err(p.error("unexpected data after the JSON value".into()));
    }
    Ok(v)
}

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    max_depth: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&mut self, message: String) -> ParseError {
        self.error_kind(ParseErrorKind::Syntax, message)
    }

    fn error_kind(&mut self, kind: ParseErrorKind, message: String) -> ParseError {
        let offset = self.pos.min(self.src.len());
        let before = &self.src[..offset];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        // Count characters (not continuation bytes) on this line.
        let column = before[line_start..]
            .iter()
            .filter(|&&b| (b & 0xC0) != 0x80)
            .count()
            + 1;
        ParseError {
            kind,
            message,
            line,
            column,
            offset,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(&b) = self.src.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn describe_here(&self) -> String {
        match self.src.get(self.pos) {
            None => "end of input".into(),
            Some(_) => {
                let rest = std::str::from_utf8(&self.src[self.pos..]).unwrap_or("");
                match rest.chars().next() {
                    Some(c) if c.is_control() => format!("character U+{:04X}", c as u32),
                    Some(c) => format!("'{c}'"),
                    None => "end of input".into(),
                }
            }
        }
    }

    /// Parse one value without recursion (an explicit stack), so deep nesting cannot
    /// exhaust the thread stack; the depth limit bounds the stack's size.
    fn value(&mut self) -> Result<Value, ParseError> {
        enum Frame {
            Array(Vec<Value>),
            Object(Vec<(JsString, Value)>, JsString),
        }
        let mut stack: Vec<Frame> = Vec::new();
        'next_value: loop {
            // Parse a value start: either a scalar (finished below) or an opening bracket.
            let mut done: Value = match self.src.get(self.pos) {
                Some(b'[') => {
                    self.enter()?;
                    self.pos += 1;
                    self.skip_ws();
                    if self.src.get(self.pos) == Some(&b']') {
                        self.pos += 1;
                        self.depth -= 1;
                        Value::Array(Vec::new())
                    } else {
                        stack.push(Frame::Array(Vec::new()));
                        continue 'next_value;
                    }
                }
                Some(b'{') => {
                    self.enter()?;
                    self.pos += 1;
                    self.skip_ws();
                    if self.src.get(self.pos) == Some(&b'}') {
                        self.pos += 1;
                        self.depth -= 1;
                        Value::Object(Vec::new())
                    } else {
                        let key = self.object_key()?;
                        stack.push(Frame::Object(Vec::new(), key));
                        continue 'next_value;
                    }
                }
                Some(b'"') => Value::String(self.string()?),
                Some(b't') => self.literal("true", Value::Bool(true))?,
                Some(b'f') => self.literal("false", Value::Bool(false))?,
                Some(b'n') => self.literal("null", Value::Null)?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                _ => {
                    let what = self.describe_here();
                    return Err(self.error(format!("expected a JSON value, found {what}")));
                }
            };
            // Attach the finished value to its container; close containers as they end.
            loop {
                let Some(top) = stack.pop() else {
                    return Ok(done);
                };
                self.skip_ws();
                match top {
                    Frame::Array(mut items) => {
                        items.push(done);
                        match self.src.get(self.pos) {
                            Some(b',') => {
                                self.pos += 1;
                                self.skip_ws();
                                stack.push(Frame::Array(items));
                                continue 'next_value;
                            }
                            Some(b']') => {
                                self.pos += 1;
                                self.depth -= 1;
                                done = Value::Array(items);
                            }
                            _ => {
                                let what = self.describe_here();
                                return Err(self.error(format!(
                                    "expected ',' or ']' in an array, found {what}"
                                )));
                            }
                        }
                    }
                    Frame::Object(mut members, key) => {
                        members.push((key, done));
                        match self.src.get(self.pos) {
                            Some(b',') => {
                                self.pos += 1;
                                self.skip_ws();
                                let key = self.object_key()?;
                                stack.push(Frame::Object(members, key));
                                continue 'next_value;
                            }
                            Some(b'}') => {
                                self.pos += 1;
                                self.depth -= 1;
                                done = Value::Object(sort_dedupe(members));
                            }
                            _ => {
                                let what = self.describe_here();
                                return Err(self.error(format!(
                                    "expected ',' or '}}' in an object, found {what}"
                                )));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Parse `"key" :` and leave the position at the value.
    fn object_key(&mut self) -> Result<JsString, ParseError> {
        if self.src.get(self.pos) != Some(&b'"') {
            let what = self.describe_here();
            return Err(self.error(format!("expected a string key in an object, found {what}")));
        }
        let key = self.string()?;
        self.skip_ws();
        if self.src.get(self.pos) != Some(&b':') {
            let what = self.describe_here();
            return Err(self.error(format!("expected ':' after an object key, found {what}")));
        }
        self.pos += 1;
        self.skip_ws();
        Ok(key)
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, ParseError> {
        if self.src[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(v)
        } else {
            let what = self.describe_here();
            Err(self.error(format!("expected a JSON value, found {what}")))
        }
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            let limit = self.max_depth;
            return Err(self.error_kind(
                ParseErrorKind::TooDeep,
                format!("arrays and objects are nested deeper than the limit of {limit}"),
            ));
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let s = self.src;
        let mut i = self.pos;
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        match s.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while matches!(s.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            _ => {
                self.pos = i;
                return Err(self.error("expected a digit in a number".into()));
            }
        }
        if s.get(i) == Some(&b'.') {
            i += 1;
            if !matches!(s.get(i), Some(b'0'..=b'9')) {
                self.pos = i;
                return Err(self.error("expected a digit after the decimal point".into()));
            }
            while matches!(s.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(s.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !matches!(s.get(i), Some(b'0'..=b'9')) {
                self.pos = i;
                return Err(self.error("expected a digit in the exponent".into()));
            }
            while matches!(s.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        self.pos = i;
        // The grammar above is ASCII, so this is valid UTF-8; Rust's parser is correctly
        // rounded and gives ±Infinity on overflow and 0 on underflow, as JavaScript does.
        let text = std::str::from_utf8(&s[start..i]).unwrap_or("0");
        let n: f64 = text.parse().unwrap_or(f64::NAN);
        if n.is_nan() {
            self.pos = start;
            return Err(self.error("invalid number".into()));
        }
        Ok(Value::Number(n))
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let s = self.src;
        if self.pos + 4 > s.len() {
            self.pos = s.len();
            return Err(self.error("unfinished \\u escape".into()));
        }
        let mut v = 0u32;
        for k in 0..4 {
            let b = s[self.pos + k];
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => {
                    self.pos += k;
                    return Err(self.error("expected four hex digits after \\u".into()));
                }
            };
            v = (v << 4) | u32::from(d);
        }
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<JsString, ParseError> {
        self.pos += 1; // opening quote
        let s = self.src;
        // Fast path: no escapes.
        let start = self.pos;
        let mut i = start;
        while i < s.len() {
            let b = s[i];
            if b == b'"' {
                self.pos = i + 1;
                return Ok(JsString::from_wtf8(s[start..i].to_vec()));
            }
            if b == b'\\' || b < 0x20 {
                break;
            }
            i += 1;
        }
        let mut out = s[start..i].to_vec();
        self.pos = i;
        loop {
            let Some(&b) = s.get(self.pos) else {
                return Err(self.error("unterminated string".into()));
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(JsString::from_wtf8(out));
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(&e) = s.get(self.pos) else {
                        return Err(self.error("unterminated string".into()));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0C),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let u = self.hex4()?;
                            if (0xD800..0xDC00).contains(&u)
                                && s.get(self.pos) == Some(&b'\\')
                                && s.get(self.pos + 1) == Some(&b'u')
                            {
                                let save = self.pos;
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    push_code_point(
                                        &mut out,
                                        0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00),
                                    );
                                } else {
                                    push_code_point(&mut out, u);
                                    self.pos = save;
                                }
                            } else {
                                push_code_point(&mut out, u);
                            }
                        }
                        _ => {
                            self.pos -= 1;
                            let what = self.describe_here();
                            return Err(
                                self.error(format!("invalid escape \\{}", what.trim_matches('\'')))
                            );
                        }
                    }
                }
                0x00..=0x1F => {
                    return Err(self.error(format!(
                        "control character U+{b:04X} must be escaped inside a string"
                    )));
                }
                _ => {
                    // Copy a run of ordinary bytes.
                    let run_start = self.pos;
                    let mut j = self.pos;
                    while j < s.len() && s[j] != b'"' && s[j] != b'\\' && s[j] >= 0x20 {
                        j += 1;
                    }
                    out.extend_from_slice(&s[run_start..j]);
                    self.pos = j;
                }
            }
        }
    }
}

/// Sort members by key (UTF-16 order) and keep the last of each duplicate key.
fn sort_dedupe(mut members: Vec<(JsString, Value)>) -> Vec<(JsString, Value)> {
    let already = members
        .windows(2)
        .all(|w| w[0].0.cmp_utf16(&w[1].0) == Ordering::Less);
    if already {
        return members;
    }
    // Stable sort keeps source order among equal keys; then keep the last of each run.
    members.sort_by(|a, b| a.0.cmp_utf16(&b.0));
    let mut out: Vec<(JsString, Value)> = Vec::with_capacity(members.len());
    for m in members {
        match out.last_mut() {
            Some(last) if last.0 == m.0 => *last = m,
            _ => out.push(m),
        }
    }
    out
}

/// Encode a code point (surrogates included) as WTF-8.
fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.push(0xC0 | (cp >> 6) as u8);
        out.push(0x80 | (cp & 0x3F) as u8);
    } else if cp < 0x10000 {
        out.push(0xE0 | (cp >> 12) as u8);
        out.push(0x80 | ((cp >> 6) & 0x3F) as u8);
        out.push(0x80 | (cp & 0x3F) as u8);
    } else {
        out.push(0xF0 | (cp >> 18) as u8);
        out.push(0x80 | ((cp >> 12) & 0x3F) as u8);
        out.push(0x80 | ((cp >> 6) & 0x3F) as u8);
        out.push(0x80 | (cp & 0x3F) as u8);
    }
}

/// Decode the (generalised UTF-8) code point starting at `i`: (code point, byte length).
fn decode_at(s: &[u8], i: usize) -> Option<(u32, usize)> {
    let b0 = *s.get(i)? as u32;
    let cont = |k: usize| s.get(i + k).map(|&b| (b & 0x3F) as u32);
    if b0 < 0x80 {
        Some((b0, 1))
    } else if b0 < 0xE0 {
        Some((((b0 & 0x1F) << 6) | cont(1)?, 2))
    } else if b0 < 0xF0 {
        Some((((b0 & 0x0F) << 12) | (cont(1)? << 6) | cont(2)?, 3))
    } else {
        Some((
            ((b0 & 0x07) << 18) | (cont(1)? << 12) | (cont(2)? << 6) | cont(3)?,
            4,
        ))
    }
}

fn first_unit(cp: u32) -> u32 {
    if cp >= 0x10000 {
        0xD800 + ((cp - 0x10000) >> 10)
    } else {
        cp
    }
}

/// Compare two WTF-8 strings by their UTF-16 code units.
pub fn cmp_utf16(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if n == a.len() || n == b.len() {
        return a.len().cmp(&b.len());
    }
    // Back up to the start of the code point holding the first difference; that start lies
    // in the shared prefix (or at n), so it is the same for both strings.
    let mut start = n;
    while start > 0 && (a[start] & 0xC0) == 0x80 {
        start -= 1;
    }
    match (decode_at(a, start), decode_at(b, start)) {
        (Some((ca, _)), Some((cb, _))) => first_unit(ca).cmp(&first_unit(cb)).then(ca.cmp(&cb)),
        _ => a[n].cmp(&b[n]),
    }
}

/// ECMAScript `Number::toString(n)` (shortest round-trip digits).
pub fn js_number_to_string(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else if n == 0.0 {
        "0".into()
    } else {
        ryu_js::Buffer::new().format_finite(n).to_owned()
    }
}

/// `canonicalJson(v)`: JSON.stringify with keys in UTF-16 order and no whitespace.
#[cfg(test)]
pub fn canonical_json(v: &Value) -> JsString {
    let mut out = Vec::with_capacity(128);
    write_canonical(&mut out, v);
    JsString::from_wtf8(out)
}

/// Append the canonical form of `v` to `out` (WTF-8 bytes; the text is valid UTF-8 because
/// lone surrogates are written as escapes). Iterative, so nesting depth cannot exhaust the
/// thread stack.
pub fn write_canonical(out: &mut Vec<u8>, v: &Value) {
    enum Work<'a> {
        Value(&'a Value),
        Byte(u8),
        Key(&'a JsString),
    }
    let mut stack: Vec<Work> = vec![Work::Value(v)];
    while let Some(w) = stack.pop() {
        match w {
            Work::Byte(b) => out.push(b),
            Work::Key(k) => {
                write_json_string_bytes(out, k);
                out.push(b':');
            }
            Work::Value(v) => match v {
                Value::Null => out.extend_from_slice(b"null"),
                Value::Bool(true) => out.extend_from_slice(b"true"),
                Value::Bool(false) => out.extend_from_slice(b"false"),
                Value::Number(n) => write_number(out, *n),
                Value::String(s) => write_json_string_bytes(out, s),
                Value::Array(items) => {
                    out.push(b'[');
                    stack.push(Work::Byte(b']'));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(Work::Value(item));
                        if i > 0 {
                            stack.push(Work::Byte(b','));
                        }
                    }
                }
                Value::Object(members) => {
                    out.push(b'{');
                    stack.push(Work::Byte(b'}'));
                    // Members are kept sorted by the parser; values built elsewhere may not be.
                    let mut refs: Vec<&(JsString, Value)> = members.iter().collect();
                    if !members
                        .windows(2)
                        .all(|w| w[0].0.cmp_utf16(&w[1].0) == Ordering::Less)
                    {
                        refs.sort_by(|a, b| a.0.cmp_utf16(&b.0));
                    }
                    for (i, (k, v)) in refs.into_iter().enumerate().rev() {
                        stack.push(Work::Value(v));
                        stack.push(Work::Key(k));
                        if i > 0 {
                            stack.push(Work::Byte(b','));
                        }
                    }
                }
            },
        }
    }
}

fn write_number(out: &mut Vec<u8>, n: f64) {
    if !n.is_finite() {
        out.extend_from_slice(b"null");
    } else if n == 0.0 {
        out.push(b'0');
    } else {
        out.extend_from_slice(ryu_js::Buffer::new().format_finite(n).as_bytes());
    }
}

/// Write `s` as a JSON string literal exactly as `JSON.stringify` does.
pub fn write_json_string_bytes(out: &mut Vec<u8>, s: &JsString) {
    let b = &s.0;
    out.push(b'"');
    let mut run = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let esc: Option<&[u8]> = match c {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            0x08 => Some(b"\\b"),
            0x0C => Some(b"\\f"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            _ => None,
        };
        if let Some(e) = esc {
            out.extend_from_slice(&b[run..i]);
            out.extend_from_slice(e);
            i += 1;
            run = i;
        } else if c < 0x20 {
            out.extend_from_slice(&b[run..i]);
            out.extend_from_slice(format!("\\u{c:04x}").as_bytes());
            i += 1;
            run = i;
        } else if c == 0xED && b.get(i + 1).is_some_and(|&n| n >= 0xA0) {
            // A surrogate code point: only unpaired ones are stored this way.
            out.extend_from_slice(&b[run..i]);
            let cp = decode_at(b, i).map_or(0xFFFD, |(cp, _)| cp);
            out.extend_from_slice(format!("\\u{cp:04x}").as_bytes());
            i += 3;
            run = i;
        } else {
            i += 1;
        }
    }
    out.extend_from_slice(&b[run..]);
    out.push(b'"');
}

/// Write `s` as a JSON string literal into a `String` (lone surrogates become escapes, so
/// the result is valid UTF-8).
pub fn write_json_string(out: &mut String, s: &JsString) {
    let mut bytes = Vec::with_capacity(s.0.len() + 2);
    write_json_string_bytes(&mut bytes, s);
    out.push_str(&String::from_utf8_lossy(&bytes));
}

/// The canonical text as a Rust string (always valid UTF-8: lone surrogates are escaped).
#[cfg(test)]
pub fn canonical_string(v: &Value) -> String {
    let mut out = Vec::with_capacity(128);
    write_canonical(&mut out, v);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        canonical_string(&parse(text.as_bytes()).expect("parses"))
    }

    #[test]
    fn sorts_keys_by_utf16_units() {
        // U+FF61 sorts after U+1F600 in code points, before it in UTF-16.
        assert_eq!(canon(r#"{"😀":1,"｡":2,"a":3}"#), r#"{"a":3,"😀":1,"｡":2}"#);
        assert_eq!(
            canon(r#"{"b":1,"a":{"d":1,"c":2}}"#),
            r#"{"a":{"c":2,"d":1},"b":1}"#
        );
    }

    #[test]
    fn numbers_as_javascript() {
        assert_eq!(
            canon("[1.0,-0,1e21,1e-7,123456789012345678901,0.1,1e400,-1e400,5e-324,1e-400]"),
            "[1,0,1e+21,1e-7,123456789012345680000,0.1,null,null,5e-324,0]"
        );
        assert_eq!(
            canon("[100,1e20,0.000001,1.7976931348623157e308]"),
            "[100,100000000000000000000,0.000001,1.7976931348623157e+308]"
        );
    }

    #[test]
    fn strings_as_json_stringify() {
        assert_eq!(
            canon(r#""\u0000\u001f\b\f\n\r\t\"\\\/\u007f\u2028""#),
            "\"\\u0000\\u001f\\b\\f\\n\\r\\t\\\"\\\\/\u{7f}\u{2028}\""
        );
        assert_eq!(
            canon(r#""\ud800x\uDFFF\ude00\ud83d\ud83d\ude00""#),
            "\"\\ud800x\\udfff\\ude00\\ud83d😀\""
        );
        // A valid pair written as escapes is one code point, written raw.
        assert_eq!(canon(r#""\ud800\uDFFF""#), "\"\u{103ff}\"");
    }

    #[test]
    fn duplicate_keys_last_wins() {
        assert_eq!(canon(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn rejects_bad_json_with_position() {
        let e = parse(b"{\n  \"a\": tru }").unwrap_err();
        assert_eq!((e.line, e.column), (2, 8));
        assert!(parse(b"[1,]").is_err());
        assert!(parse(b"01").is_err());
        assert!(parse(b"\"\t\"").is_err());
        assert!(parse(b"\xEF\xBB\xBF{}").is_err());
        assert!(parse(b"{} x").is_err());
        assert!(parse(b"\"\\ud800\\u12\"").is_err());
        assert_eq!(
            parse(&[b'['; 2000]).unwrap_err().kind,
            ParseErrorKind::TooDeep
        );
        assert_eq!(parse(b"\xff").unwrap_err().kind, ParseErrorKind::Encoding);
    }

    #[test]
    fn js_string_coercion() {
        let v = parse(br#"[1,[2,null,[3]],{"a":1},true,1e21,"x"]"#).unwrap();
        assert_eq!(
            v.js_to_string().as_str(),
            Some("1,2,,3,[object Object],true,1e+21,x")
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn arb_value() -> impl Strategy<Value = serde_json::Value> {
            let leaf = prop_oneof![
                Just(serde_json::Value::Null),
                any::<bool>().prop_map(serde_json::Value::Bool),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(|f| serde_json::json!(f)),
                any::<i64>().prop_map(|i| serde_json::json!(i)),
                any::<String>().prop_map(serde_json::Value::String),
            ];
            leaf.prop_recursive(4, 64, 8, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
                    prop::collection::vec((any::<String>(), inner), 0..8)
                        .prop_map(|kv| { serde_json::Value::Object(kv.into_iter().collect()) }),
                ]
            })
        }

        proptest! {
            #[test]
            fn canonical_is_a_fixed_point(v in arb_value()) {
                let text = serde_json::to_string_pretty(&v).unwrap();
                let c1 = canonical_string(&parse(text.as_bytes()).unwrap());
                let c2 = canonical_string(&parse(c1.as_bytes()).unwrap());
                prop_assert_eq!(&c1, &c2);
                // Same data as serde_json reads (numbers compared as f64).
                let back: serde_json::Value = serde_json::from_str(&c1).unwrap();
                prop_assert_eq!(parse(back.to_string().as_bytes()).unwrap(), parse(text.as_bytes()).unwrap());
            }

            #[test]
            fn key_order_is_utf16_order(keys in prop::collection::vec(any::<String>(), 0..12)) {
                let mut expected: Vec<String> = keys.clone();
                expected.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
                expected.dedup();
                let obj: serde_json::Map<String, serde_json::Value> =
                    keys.iter().map(|k| (k.clone(), serde_json::Value::Null)).collect();
                let v = parse(serde_json::Value::Object(obj).to_string().as_bytes()).unwrap();
                let Value::Object(members) = v else { panic!("object") };
                let got: Vec<String> = members.iter().map(|(k, _)| k.as_str().unwrap().to_owned()).collect();
                prop_assert_eq!(got, expected);
            }

            #[test]
            fn numbers_round_trip(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
                let s = js_number_to_string(f);
                let back: f64 = s.parse().unwrap();
                prop_assert!(back == f || (f == 0.0 && back == 0.0));
            }

            #[test]
            fn never_panics_on_garbage(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
                let _ = parse(&bytes);
            }

            #[test]
            fn lone_surrogate_escapes_round_trip(units in prop::collection::vec(0xD7F0u32..0xE010, 0..6)) {
                let text: String = std::iter::once("\"".to_string())
                    .chain(units.iter().map(|u| format!("\\u{u:04X}")))
                    .chain(std::iter::once("\"".to_string()))
                    .collect();
                let c1 = canonical_string(&parse(text.as_bytes()).unwrap());
                let c2 = canonical_string(&parse(c1.as_bytes()).unwrap());
                prop_assert_eq!(c1, c2);
            }
        }
    }
}
