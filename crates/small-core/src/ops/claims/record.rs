//! The lease record a claim ref points to (a JSON blob), its times, and the ref names: the
//! format other checkouts read, kept apart from how it is stored.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The record's format version.
pub const RECORD_VERSION: u32 = 1;

/// The JSON a claim ref's blob holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub version: u32,
    /// The task's id.
    pub task: String,
    /// The task's alias (2.0.0), when it has one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub alias: String,
    /// The checkout (or worktree) that holds it: its random holder id.
    pub holder: String,
    /// Who works there, as people read it (`--as`, `$SMALL_AGENT`, `$USER@host`).
    pub label: String,
    pub host: String,
    /// The 2.0.0 session open in that checkout when it was taken or renewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// When this holder took it (RFC 3339 UTC); kept by renewals.
    pub taken: String,
    /// When it was last taken or renewed.
    pub renewed: String,
    /// When it ends, by the holder's clock: `renewed` + `ttl_seconds`.
    pub ends: String,
    pub ttl_seconds: u64,
    /// 1 when first taken; one more on every renewal and take-over.
    pub generation: u64,
}

impl Record {
    /// The name people use for the task: its alias, else its id.
    pub fn name(&self) -> &str {
        if self.alias.is_empty() {
            &self.task
        } else {
            &self.alias
        }
    }

    /// The end as a time (an unreadable one is long past: the lease can be taken over).
    pub fn ends_at(&self) -> OffsetDateTime {
        parse_time(&self.ends).unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }

    /// Whether another checkout treats the lease as held at `now`: until its end plus the
    /// allowed clock skew.
    pub fn live_at(&self, now: OffsetDateTime, skew: Duration) -> bool {
        now < after(self.ends_at(), skew)
    }

    /// The record as stored: compact JSON and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec(self).unwrap_or_default();
        b.push(b'\n');
        b
    }

    /// A stored record; one that is not a record reads as an ended lease of nobody.
    pub fn from_bytes(task: &str, bytes: &[u8]) -> Record {
        serde_json::from_slice(bytes).unwrap_or_else(|_| Record {
            version: RECORD_VERSION,
            task: task.to_string(),
            alias: String::new(),
            holder: String::new(),
            label: "(unreadable record)".to_string(),
            host: String::new(),
            session: None,
            taken: String::new(),
            renewed: String::new(),
            ends: format_time(OffsetDateTime::UNIX_EPOCH),
            ttl_seconds: 0,
            generation: 0,
        })
    }
}

/// `t` plus `d`, held at the last representable time: a record or a flag may name a
/// duration or an end no clock reaches, and that must not overflow.
pub fn after(t: OffsetDateTime, d: Duration) -> OffsetDateTime {
    time::Duration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d))
        .unwrap_or_else(|| time::PrimitiveDateTime::MAX.assume_utc())
}

/// Now, to the second (the records' precision).
pub fn now() -> OffsetDateTime {
    let t = OffsetDateTime::now_utc();
    t.replace_nanosecond(0).unwrap_or(t)
}

/// RFC 3339 UTC, `2026-11-29T04:00:00Z`.
pub fn format_time(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_default()
}

pub fn parse_time(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s.trim(), &Rfc3339).ok()
}

/// `s` as one valid ref component: bytes other than ASCII letters, digits, `-`, `_` and
/// `.` are written `%XX` (a `/` too, so a path is one component), as is a leading `.`; a
/// trailing `.lock` or `.` cannot remain, and the name `_` (the top level's) is written
/// `%5F`.
pub fn ref_component(s: &str) -> String {
    let mut out = String::new();
    for (i, b) in s.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        // `..` is not allowed in a ref: the second dot is encoded.
        if plain && !(b == b'.' && out.ends_with('.')) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.ends_with('.') {
        out.pop();
        out.push_str("%2E");
    }
    if let Some(stem) = out.strip_suffix(".lock") {
        out = format!("{stem}%2Elock");
    }
    if out == "_" || out.is_empty() {
        out = format!("%{:02X}", b'_');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_components_are_single_and_valid() {
        assert_eq!(ref_component("task-1"), "task-1");
        assert_eq!(ref_component("services/api"), "services%2Fapi");
        assert_eq!(ref_component(".hidden"), "%2Ehidden");
        assert_eq!(ref_component("a..b"), "a.%2Eb");
        assert_eq!(ref_component("x.lock"), "x%2Elock");
        assert_eq!(ref_component("end."), "end%2E");
        assert_eq!(ref_component("_"), "%5F");
        assert_eq!(ref_component("a b~c"), "a%20b%7Ec");
    }

    #[test]
    fn a_lease_is_live_until_its_end_plus_the_skew() {
        let t0 = parse_time("2026-11-29T04:00:00Z").unwrap();
        let r = Record {
            ends: format_time(t0),
            ..Record::from_bytes("t", b"")
        };
        let skew = Duration::from_secs(30);
        assert!(r.live_at(t0 - Duration::from_secs(1), Duration::ZERO));
        assert!(!r.live_at(t0, Duration::ZERO));
        assert!(r.live_at(t0 + Duration::from_secs(29), skew));
        assert!(!r.live_at(t0 + Duration::from_secs(30), skew));
        assert!(!Record::from_bytes("t", b"not json").live_at(t0, skew));
    }

    #[test]
    fn ends_and_durations_no_clock_reaches_do_not_overflow() {
        let far = Record::from_bytes(
            "t",
            br#"{"version":1,"task":"t","alias":"","holder":"h","label":"l","host":"","taken":"","renewed":"9999-12-31T23:59:59Z","ends":"9999-12-31T23:59:59Z","ttl_seconds":18446744073709551615,"generation":1}"#,
        );
        assert_eq!(far.holder, "h");
        assert!(far.live_at(now(), Duration::MAX));
        assert!(format_time(after(now(), Duration::MAX)).starts_with("9999-12-31"));
        let renewed = parse_time(&far.renewed).unwrap();
        assert!(after(renewed, Duration::from_secs(far.ttl_seconds) / 2) >= renewed);
    }

    proptest::proptest! {
        /// A stored record is whatever a remote holds: any bytes read as a record (or an
        /// ended lease of nobody) and answer liveness without a panic.
        #[test]
        fn any_stored_bytes_read_as_a_record(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
                                              skew in proptest::num::u64::ANY) {
            let r = Record::from_bytes("task-1", &bytes);
            let _ = r.live_at(now(), Duration::from_secs(skew));
            let _ = after(r.ends_at(), Duration::from_secs(r.ttl_seconds));
        }

        /// Records in the right shape with any times and numbers.
        #[test]
        fn any_times_and_numbers_in_a_record(ends in "[0-9T:Z-]{0,24}", ttl in proptest::num::u64::ANY,
                                              generation in proptest::num::u64::ANY) {
            let text = format!(r#"{{"version":1,"task":"t","alias":"","holder":"h","label":"l","host":"","taken":"","renewed":"{ends}","ends":"{ends}","ttl_seconds":{ttl},"generation":{generation}}}"#);
            let r = Record::from_bytes("t", text.as_bytes());
            let _ = r.live_at(now(), Duration::from_secs(ttl));
            let _ = format_time(after(r.ends_at(), Duration::from_secs(ttl)));
        }
    }
}
