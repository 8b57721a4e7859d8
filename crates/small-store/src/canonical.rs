//! The store's canonical JSON, with exact numbers.
//!
//! Records are stored as canonical JSON text so that equal records have equal bytes and
//! hashes. This form differs on purpose from the protocol's canonical JSON
//! ([`small_core::ops::formats::canonical`]), which follows JavaScript (`JSON.parse` and
//! `JSON.stringify`: every number an IEEE double) because the manifest replay ID must match
//! the reference's bytes. A store must never change a value it was given, so here a number
//! keeps the exact text serde_json parsed (large integers and long decimals included), and
//! only the key order and whitespace are normalised.

use serde_json::Value;

/// Canonical JSON with exact numbers: object keys sorted by UTF-16 code unit, no
/// insignificant whitespace, strings and numbers as serde_json writes them.
pub fn exact_canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                write_canonical(&map[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}
