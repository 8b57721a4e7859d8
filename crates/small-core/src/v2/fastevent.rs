//! A faster way to read a sound event record, tried before the general one.
//!
//! Why: reading a 2.0.0 workspace is dominated by its events (100 000 files in a large
//! project), and the general path ([`crate::v2::load`]'s `parse_record`) builds every record
//! as an owned [`Jv`] tree (a `String` per member name and per value) so that it can report
//! each problem precisely. A sound record needs none of that: here the record is
//! deserialised straight into the members the loader keeps, names matched without
//! allocating, the payload's members checked as strictly as [`crate::v2::json::parse`] checks
//! them (duplicate names, integers only) but built only when the reducer reads them
//! ([`PAYLOAD_KEPT`]).
//!
//! This path only ever says "sound, and here are its members" or "not sure": any record it
//! does not accept (a syntax error, a duplicate or unknown member, a wrong type, a number
//! with a fraction, anything) goes through the general path, which finds and reports the
//! problems. Its answers are tested against the general path's on sound records and on
//! every kind of damage (`tests_fastevent.rs`, a property test).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::v2::json::Jv;

/// The payload members kept in memory for every event: what the reducer folds (task
/// definitions and outcomes, mode and policy changes, resolutions, ownership claims and
/// take-overs, the handoff summary), what a conflict's heads are described by, and what the
/// writers look up on the events they build on; and a recorded command's digest and display
/// marker (checked against the event's `source_digest`, rule `V2-COMMAND`).
pub const PAYLOAD_KEPT: &[&str] = &[
    "acceptance",
    "action",
    "alias",
    "candidate_digest",
    "command_sha256",
    "command_summary_version",
    "conflict_id",
    "constraints_digest",
    "dependencies",
    "evidence",
    "evidence_digests",
    "expected_frontier",
    "heads",
    "intent_digest",
    "new_mode",
    "new_revision",
    "owner_session",
    "policy_revision",
    "prior_session",
    "scope",
    "selected_event",
    "source_digest",
    "status",
    "summary",
    "title",
];

/// The members of an event record as the loader keeps them: strings trimmed, `parents`
/// without empty names, absent optional members empty, the payload's kept members only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventFields {
    pub small_version: String,
    pub project_id: String,
    pub lineage_id: String,
    pub session_id: String,
    pub event_id: String,
    pub kind: String,
    pub sequence: i64,
    pub previous_event: String,
    pub parents: Vec<String>,
    pub occurred_at: String,
    pub task_id: String,
    pub task_revision: i64,
    pub policy_revision: String,
    pub source_digest: String,
    pub payload: Jv,
}

/// The record's members, borrowed from its bytes where they need no unescaping.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw<'a> {
    #[serde(borrow)]
    small_version: Cow<'a, str>,
    #[serde(borrow)]
    project_id: Cow<'a, str>,
    #[serde(borrow)]
    lineage_id: Cow<'a, str>,
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    event_id: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    sequence: i64,
    #[serde(borrow, default)]
    previous_event: Cow<'a, str>,
    #[serde(default)]
    parents: Vec<String>,
    #[serde(borrow)]
    occurred_at: Cow<'a, str>,
    #[serde(borrow, default)]
    task_id: Cow<'a, str>,
    #[serde(default)]
    task_revision: i64,
    #[serde(borrow, default)]
    policy_revision: Cow<'a, str>,
    #[serde(borrow, default)]
    source_digest: Cow<'a, str>,
    payload: Kept,
    /// Checked against the bytes by the loader, which reads it from there.
    #[serde(borrow)]
    #[allow(dead_code)]
    digest: Cow<'a, str>,
}

/// The members of an event record that is sound JSON with the event's members of the right
/// types; `None` when it may not be (the general path then reads it).
pub(crate) fn parse(bytes: &[u8]) -> Option<EventFields> {
    // A derived struct also accepts an array of its members in order: only an object here.
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let raw: Raw = serde_json::from_slice(bytes).ok()?;
    let trim = |s: Cow<str>| s.trim().to_string();
    Some(EventFields {
        small_version: trim(raw.small_version),
        project_id: trim(raw.project_id),
        lineage_id: trim(raw.lineage_id),
        session_id: trim(raw.session_id),
        event_id: trim(raw.event_id),
        kind: trim(raw.kind),
        sequence: raw.sequence,
        previous_event: trim(raw.previous_event),
        parents: raw
            .parents
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect(),
        occurred_at: trim(raw.occurred_at),
        task_id: trim(raw.task_id),
        task_revision: raw.task_revision,
        policy_revision: trim(raw.policy_revision),
        source_digest: trim(raw.source_digest),
        payload: Jv::Obj(raw.payload.0),
    })
}

/// A member name, borrowed when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The payload object: every member checked ([`Strict`]), the kept ones built.
struct Kept(Vec<(String, Jv)>);

impl<'de> Deserialize<'de> for Kept {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Kept;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kept, A::Error> {
                let mut seen: Vec<Cow<'de, str>> = Vec::new();
                let mut out = Vec::new();
                while let Some(Key(k)) = map.next_key()? {
                    if seen.contains(&k) {
                        return Err(de::Error::custom("duplicate member"));
                    }
                    if PAYLOAD_KEPT.contains(&k.as_ref()) {
                        let v: Jv = map.next_value()?;
                        out.push((k.to_string(), v));
                    } else {
                        map.next_value::<Strict>()?;
                    }
                    seen.push(k);
                }
                // Held for every event: no room beyond the one or two members most keep (a
                // vector grown by `push` has room for four, 160 bytes more an event).
                out.shrink_to_fit();
                Ok(Kept(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Any JSON value a record may hold (integers only, no duplicate member names), checked
/// and dropped.
struct Strict;

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Strict, E> {
        i64::try_from(n)
            .map(|_| Strict)
            .map_err(|_| E::custom("not a 64-bit integer"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Strict, E> {
        Err(E::custom("not an integer"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut seen: Vec<Cow<'de, str>> = Vec::new();
        while let Some(Key(k)) = map.next_key()? {
            if seen.contains(&k) {
                return Err(de::Error::custom("duplicate member"));
            }
            map.next_value::<Strict>()?;
            seen.push(k);
        }
        Ok(Strict)
    }
}
