//! The JSON shape the reference writes for 2.0.0 records: what Go's `encoding/json` prints.
//!
//! Objects keep the member order they are built with (struct fields in declaration order;
//! a Go map is built with its keys sorted). Strings escape `<`, `>`, `&`, U+2028 and U+2029
//! as `\u....`; control characters use `\b`, `\f`, `\n`, `\r`, `\t` or `\u00XX`.

/// A JSON value in the reference's encoding.
#[derive(Debug, Clone, PartialEq)]
pub enum GoValue {
    Null,
    Bool(bool),
    Int(i64),
    /// A YAML float; Go prints it in its shortest form (an integral float prints as an
    /// integer).
    Float(f64),
    Str(String),
    Arr(Vec<GoValue>),
    Obj(Vec<(String, GoValue)>),
}

impl GoValue {
    pub fn str(s: impl Into<String>) -> GoValue {
        GoValue::Str(s.into())
    }

    /// An object whose members are sorted by key, as Go prints a `map[string]any`.
    pub fn map(mut members: Vec<(String, GoValue)>) -> GoValue {
        members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        GoValue::Obj(members)
    }

    /// The first number in this value that a 2.0.0 record may not hold (the reference's
    /// reader refuses any number written with a fraction or an exponent), as printed.
    pub fn first_non_integer(&self) -> Option<String> {
        match self {
            GoValue::Float(f) => {
                let text = go_float(*f);
                text.contains(['.', 'e', 'E']).then_some(text)
            }
            GoValue::Arr(items) => items.iter().find_map(GoValue::first_non_integer),
            GoValue::Obj(members) => members.iter().find_map(|(_, v)| v.first_non_integer()),
            _ => None,
        }
    }

    /// A number Go cannot encode at all (infinity, NaN).
    pub fn has_unsupported_float(&self) -> bool {
        match self {
            GoValue::Float(f) => !f.is_finite(),
            GoValue::Arr(items) => items.iter().any(GoValue::has_unsupported_float),
            GoValue::Obj(members) => members.iter().any(|(_, v)| v.has_unsupported_float()),
            _ => false,
        }
    }
}

/// Go's `strconv.FormatFloat(f, 'f' or 'e', -1, 64)` as `encoding/json` chooses it.
pub fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Exponent form: Go writes e-07 / e+21 (at least two exponent digits).
        let s = format!("{f:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        let digits = if digits.len() < 2 {
            format!("0{digits}")
        } else {
            digits.to_string()
        };
        return format!("{mant}e{sign}{digits}");
    }
    // Rust's Display is the shortest round-trip form without an exponent.
    let s = format!("{f}");
    if s == "-0" {
        return "-0".to_string();
    }
    s
}

/// Whether a byte of a UTF-8 string is copied as it is. U+2028 and U+2029 start with 0xE2,
/// which is escaped only when the whole character is one of them.
fn plain_byte(b: u8) -> bool {
    b >= 0x20 && !matches!(b, b'"' | b'\\' | b'<' | b'>' | b'&' | 0xE2)
}

fn push_str(out: &mut String, s: &str) {
    out.push('"');
    // Runs of bytes that need no escape are copied whole; only the others go character by
    // character (most strings of a record are ids and plain text).
    let mut rest = s;
    while !rest.is_empty() {
        let run = rest.bytes().take_while(|&b| plain_byte(b)).count();
        out.push_str(&rest[..run]);
        rest = &rest[run..];
        let Some(c) = rest.chars().next() else {
            break;
        };
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => push_unicode_escape(out, c),
            c if (c as u32) < 0x20 => push_unicode_escape(out, c),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out.push('"');
}

fn push_unicode_escape(out: &mut String, c: char) {
    use std::fmt::Write;
    let _ = write!(out, "\\u{:04x}", c as u32);
}

fn push_scalar(out: &mut String, v: &GoValue) -> bool {
    match v {
        GoValue::Null => out.push_str("null"),
        GoValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        GoValue::Int(i) => {
            use std::fmt::Write;
            let _ = write!(out, "{i}");
        }
        GoValue::Float(f) => out.push_str(&go_float(*f)),
        GoValue::Str(s) => push_str(out, s),
        _ => return false,
    }
    true
}

/// Compact encoding (`json.Marshal`).
pub fn compact(v: &GoValue) -> String {
    let mut out = String::new();
    write_compact(&mut out, v);
    out
}

/// Compact encoding of `v`, appended to `out`.
pub fn write_compact(out: &mut String, v: &GoValue) {
    if push_scalar(out, v) {
        return;
    }
    match v {
        GoValue::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(out, item);
            }
            out.push(']');
        }
        GoValue::Obj(members) => {
            out.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_str(out, k);
                out.push(':');
                write_compact(out, item);
            }
            out.push('}');
        }
        _ => {}
    }
}

/// Indented encoding (`json.MarshalIndent(v, "", "  ")`), without a final newline.
pub fn indented(v: &GoValue) -> String {
    let mut out = String::new();
    write_indented(&mut out, v, 0);
    out
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_indented(out: &mut String, v: &GoValue, depth: usize) {
    if push_scalar(out, v) {
        return;
    }
    match v {
        GoValue::Arr(items) if items.is_empty() => out.push_str("[]"),
        GoValue::Obj(members) if members.is_empty() => out.push_str("{}"),
        GoValue::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                write_indented(out, item, depth + 1);
            }
            newline(out, depth);
            out.push(']');
        }
        GoValue::Obj(members) => {
            out.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                push_str(out, k);
                out.push_str(": ");
                write_indented(out, item, depth + 1);
            }
            newline(out, depth);
            out.push('}');
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's escaping, one character at a time (the definition the fast path must equal).
    fn escaped_slowly(s: &str) -> String {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                    out.push_str(&format!("\\u{:04x}", c as u32))
                }
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    proptest::proptest! {
        #[test]
        fn the_fast_escape_equals_the_slow_one(s in "(\\PC|[\\x00-\\x1f<>&\"\\\\\u{2028}\u{2029}\u{2027}\u{20ac}])*") {
            proptest::prop_assert_eq!(compact(&GoValue::str(s.as_str())), escaped_slowly(&s));
        }
    }

    #[test]
    fn escapes_like_go() {
        let v = GoValue::str("a<b>&\u{2028}\u{8}\u{1}\"é");
        assert_eq!(compact(&v), r#""a\u003cb\u003e\u0026\u2028\b\u0001\"é""#);
    }

    #[test]
    fn floats_like_go() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(0.02), "0.02");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e-7), "1e-07");
        assert_eq!(GoValue::Float(2.0).first_non_integer(), None);
        assert_eq!(
            GoValue::Float(0.5).first_non_integer().as_deref(),
            Some("0.5")
        );
    }

    #[test]
    fn indents_like_go() {
        let v = GoValue::Obj(vec![
            ("a".into(), GoValue::Arr(vec![])),
            ("b".into(), GoValue::Arr(vec![GoValue::Int(1)])),
            ("c".into(), GoValue::Null),
        ]);
        assert_eq!(
            indented(&v),
            "{\n  \"a\": [],\n  \"b\": [\n    1\n  ],\n  \"c\": null\n}"
        );
    }
}
