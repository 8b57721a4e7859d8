//! Strict JSON for profile 2.0.0 records: duplicate keys and non-integer numbers are
//! refused while parsing (serde_json would keep the last duplicate and accept `0.5`), members
//! keep their file order, and the record digest is recomputed from the stored bytes.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use sha2::{Digest, Sha256};

/// A JSON value as a 2.0.0 record may hold it: integers only, objects in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jv {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    Arr(Vec<Jv>),
    Obj(Vec<(String, Jv)>),
}

impl Jv {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Jv> {
        match self {
            Jv::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The member `key` as a trimmed string ("" when absent or not a string).
    pub fn str_of(&self, key: &str) -> &str {
        match self.get(key) {
            Some(Jv::Str(s)) => s.trim(),
            _ => "",
        }
    }

    /// The member `key` as a list of non-empty trimmed strings.
    pub fn strs_of(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Jv::Arr(items)) => items
                .iter()
                .filter_map(|v| match v {
                    Jv::Str(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Jv::Null => "null",
            Jv::Bool(_) => "a boolean",
            Jv::Int(_) => "an integer",
            Jv::Str(_) => "a string",
            Jv::Arr(_) => "an array",
            Jv::Obj(_) => "an object",
        }
    }
}

/// Why a record is not strict JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// A member name appears twice in one object.
    DuplicateKey(String),
    /// A number with a fraction or exponent, or outside the 64-bit integers.
    NotInteger(String),
    /// Anything else: not JSON at all, truncated, trailing bytes.
    Syntax(String),
}

const DUP: &str = "\u{0}dup:";
const NUM: &str = "\u{0}num:";

/// Parse one record.
pub fn parse(bytes: &[u8]) -> Result<Jv, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = Jv::deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    v.map_err(|e| {
        let msg = e.to_string();
        if let Some(rest) = msg.strip_prefix(DUP) {
            JsonError::DuplicateKey(cut_position(rest))
        } else if let Some(rest) = msg.strip_prefix(NUM) {
            JsonError::NotInteger(cut_position(rest))
        } else {
            JsonError::Syntax(msg)
        }
    })
}

/// serde_json appends " at line L column C" to custom errors; keep the payload only.
fn cut_position(s: &str) -> String {
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s.to_string(),
    }
}

impl Serialize for Jv {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Jv::Null => s.serialize_unit(),
            Jv::Bool(b) => s.serialize_bool(*b),
            Jv::Int(n) => s.serialize_i64(*n),
            Jv::Str(v) => s.serialize_str(v),
            Jv::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Jv::Obj(members) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (k, v) in members {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Jv {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Jv, D::Error> {
        d.deserialize_any(JvVisitor)
    }
}

struct JvVisitor;

impl<'de> Visitor<'de> for JvVisitor {
    type Value = Jv;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Jv, E> {
        Ok(Jv::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Jv, E> {
        Ok(Jv::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Jv, E> {
        Ok(Jv::Int(n))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Jv, E> {
        i64::try_from(n)
            .map(Jv::Int)
            .map_err(|_| E::custom(format!("{NUM}{n}")))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Jv, E> {
        Err(E::custom(format!("{NUM}{n}")))
    }
    fn visit_str<E>(self, s: &str) -> Result<Jv, E> {
        Ok(Jv::Str(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Jv, E> {
        Ok(Jv::Str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Jv, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Jv::Arr(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Jv, A::Error> {
        let mut out: Vec<(String, Jv)> = Vec::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.iter().any(|(seen, _)| *seen == k) {
                return Err(de::Error::custom(format!("{DUP}{k}")));
            }
            let v = map.next_value()?;
            out.push((k, v));
        }
        Ok(Jv::Obj(out))
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex_lower(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`, written into one buffer: `hex::encode` collects the digits a
/// `char` at a time, and a digest is turned into hex for every record read or written.
pub fn hex_lower(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    match hex::encode_to_slice(bytes, &mut out) {
        Ok(()) => String::from_utf8(out).unwrap_or_else(|_| hex::encode(bytes)),
        Err(_) => hex::encode(bytes),
    }
}

/// The digest a record's bytes call for: SHA-256 of the record without its
/// `,"digest":"<64 hex>"` member, which must be the last member of the top-level object
/// (compact form, one optional trailing newline). Returns `(stored, computed)`, or `None`
/// when the bytes have no such final member.
pub fn record_digest(bytes: &[u8]) -> Option<(String, String)> {
    const KEY: &[u8] = b",\"digest\":\"";
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let tail_len = KEY.len() + 64 + 2; // key, hex, closing quote and brace
    if body.len() < tail_len + 1 {
        return None;
    }
    let at = body.len() - tail_len;
    let tail = &body[at..];
    let hex = &tail[KEY.len()..KEY.len() + 64];
    if !tail.starts_with(KEY)
        || !tail.ends_with(b"\"}")
        || !hex
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    {
        return None;
    }
    let mut hasher = Sha256::new();
    hasher.update(&body[..at]);
    hasher.update(b"}");
    Some((
        String::from_utf8_lossy(hex).into_owned(),
        hex_lower(&hasher.finalize()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_lower_is_the_hex_crates_encoding() {
        let bytes: Vec<u8> = (0..=255).collect();
        for len in [0, 1, 16, 32, 256] {
            assert_eq!(hex_lower(&bytes[..len]), hex::encode(&bytes[..len]));
        }
        assert_eq!(hex_lower(&[0x0f, 0xa0]), "0fa0");
    }

    #[test]
    fn v2_json_refuses_duplicate_keys() {
        assert_eq!(
            parse(br#"{"a":1,"b":{"k":1,"k":2}}"#),
            Err(JsonError::DuplicateKey("k".into()))
        );
        assert!(parse(br#"{"a":1,"b":{"k":1}}"#).is_ok());
    }

    #[test]
    fn v2_json_refuses_fractions_and_huge_numbers() {
        assert!(matches!(
            parse(br#"{"a":0.5}"#),
            Err(JsonError::NotInteger(_))
        ));
        assert!(matches!(
            parse(br#"{"a":1e3}"#),
            Err(JsonError::NotInteger(_))
        ));
        assert!(matches!(
            parse(br#"{"a":18446744073709551615}"#),
            Err(JsonError::NotInteger(_))
        ));
        assert_eq!(
            parse(br#"{"a":-3}"#),
            Ok(Jv::Obj(vec![("a".into(), Jv::Int(-3))]))
        );
    }

    #[test]
    fn v2_json_refuses_truncated_and_trailing_bytes() {
        assert!(matches!(parse(br#"{"a":"#), Err(JsonError::Syntax(_))));
        assert!(matches!(parse(br#"{"a":1} x"#), Err(JsonError::Syntax(_))));
    }

    #[test]
    fn v2_json_keeps_member_order() {
        let v = parse(br#"{"z":1,"a":"x"}"#).unwrap();
        let Jv::Obj(m) = v else { panic!() };
        assert_eq!(m[0].0, "z");
        assert_eq!(m[1].0, "a");
    }

    #[test]
    fn v2_digest_is_over_the_bytes_without_the_final_member() {
        let body = br#"{"a":1,"b":"x"}"#;
        let want = sha256_hex(body);
        let rec = format!(r#"{{"a":1,"b":"x","digest":"{want}"}}"#);
        let (stored, computed) = record_digest(format!("{rec}\n").as_bytes()).unwrap();
        assert_eq!(stored, want);
        assert_eq!(computed, want);
        // One byte changed: the stored digest no longer matches.
        let bad = rec.replace("\"x\"", "\"y\"");
        let (stored, computed) = record_digest(bad.as_bytes()).unwrap();
        assert_ne!(stored, computed);
        // No final digest member.
        assert!(record_digest(br#"{"a":1}"#).is_none());
        assert!(record_digest(format!(r#"{{"digest":"{want}","a":1}}"#).as_bytes()).is_none());
    }
}
