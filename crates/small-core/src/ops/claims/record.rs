//! The lease record a claim ref points to (a JSON blob), its times, and the ref names: the
//! format other checkouts read, kept apart from how it is stored.
//!
//! Any peer with push access writes under `refs/small/claims/`, so a stored record is
//! untrusted bytes: [`Record::parse`] bounds its size, requires it to name its ref's task,
//! and keeps only bounded, single-line texts; anything else is a damaged record, reported
//! as such and treated as an ended lease of nobody.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The record's format version.
pub const RECORD_VERSION: u32 = 1;
/// The largest record read; ours are a few hundred bytes.
pub const MAX_RECORD_BYTES: usize = 4096;
/// The longest label or host kept (characters); a longer one is cut.
pub const MAX_TEXT_CHARS: usize = 100;
/// The longest holder id accepted (bytes of printable ASCII).
const MAX_HOLDER_BYTES: usize = 64;

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
    /// When it ends, by the holder's clock: `renewed` + `ttl_seconds` (a done record:
    /// its time plus the TTL, so that a reader that knows no done records holds it too).
    pub ends: String,
    pub ttl_seconds: u64,
    /// 1 when first taken; one more on every renewal, take-over and completion.
    pub generation: u64,
    /// Set when the holder finished the task: the lease then holds it until the remote's
    /// default branch shows the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Done>,
    /// Set on a lease taken with `--reopen` over a done record: the completion it set aside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reopened: Option<Reopened>,
}

/// How the holder finished a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    /// `completed` or `cancelled`.
    pub outcome: String,
    /// When (RFC 3339 UTC).
    pub at: String,
    /// v1: the timestamp of the progress entry that completed it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub entry: String,
    /// 2.0.0: the id of the event that completed it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub event: String,
    /// The commit that carries the completion, once `small sync` pushed it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
    /// The branch it was pushed to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub branch: String,
}

/// The completion a reopened lease set aside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reopened {
    pub holder: String,
    pub label: String,
    pub outcome: String,
    /// When that completion was recorded.
    pub done_at: String,
    /// When it was reopened.
    pub at: String,
}

/// The outcomes a done record may carry.
pub const OUTCOMES: [&str; 2] = ["completed", "cancelled"];

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
    /// allowed clock skew. A done record is not a live lease (it holds the task for good,
    /// see [`Record::done`]).
    pub fn live_at(&self, now: OffsetDateTime, skew: Duration) -> bool {
        self.done.is_none() && now < after(self.ends_at(), skew)
    }

    /// The record as stored: compact JSON and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec(self).unwrap_or_default();
        b.push(b'\n');
        b
    }

    /// A stored record of the ref for `task` (its id): the record, or why it is damaged.
    pub fn parse(task: &str, bytes: &[u8]) -> Result<Record, String> {
        if bytes.len() > MAX_RECORD_BYTES {
            return Err(format!(
                "{} bytes, over the {MAX_RECORD_BYTES} a record may have",
                bytes.len()
            ));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
        let mut r: Record = serde_json::from_str(text).map_err(|e| {
            let mut m = format!("not a lease record ({e})");
            m.truncate(160);
            m
        })?;
        if r.task != task {
            return Err(format!(
                "names the task {:?}, not its ref's",
                one_line(&r.task, 40)
            ));
        }
        let holder_ok = !r.holder.is_empty()
            && r.holder.len() <= MAX_HOLDER_BYTES
            && r.holder.bytes().all(|b| b.is_ascii_graphic());
        if !holder_ok {
            return Err("its holder id is not a short printable word".into());
        }
        if let Some(d) = &r.done {
            if !OUTCOMES.contains(&d.outcome.as_str()) {
                return Err(format!("an unknown outcome {:?}", one_line(&d.outcome, 20)));
            }
            // A commit id, which readers shorten by bytes.
            if d.commit.len() > 64 || !d.commit.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err("its commit is not a commit id".into());
            }
        }
        r.clean();
        Ok(r)
    }

    /// Every text as one bounded line, control characters escaped.
    fn clean(&mut self) {
        let short = |s: &mut String, max: usize| *s = one_line(s, max);
        short(&mut self.alias, MAX_TEXT_CHARS);
        short(&mut self.label, MAX_TEXT_CHARS);
        short(&mut self.host, MAX_TEXT_CHARS);
        if let Some(s) = &mut self.session {
            short(s, MAX_TEXT_CHARS);
        }
        for t in [&mut self.taken, &mut self.renewed, &mut self.ends] {
            short(t, 40);
        }
        if let Some(d) = &mut self.done {
            for t in [
                &mut d.at,
                &mut d.entry,
                &mut d.event,
                &mut d.commit,
                &mut d.branch,
            ] {
                short(t, MAX_TEXT_CHARS);
            }
        }
        if let Some(r) = &mut self.reopened {
            for t in [
                &mut r.holder,
                &mut r.label,
                &mut r.outcome,
                &mut r.done_at,
                &mut r.at,
            ] {
                short(t, MAX_TEXT_CHARS);
            }
        }
    }
}

/// `s` on one line of at most `max` characters: control characters written `\n`, `\t` or
/// `\u{1b}`, a longer text cut with `…`.
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n >= max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202e}') => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

/// A label or host given for a new record: one line of printable text, at most
/// [`MAX_TEXT_CHARS`] characters.
pub fn check_text(what: &str, s: &str) -> Result<(), String> {
    if s.chars().any(char::is_control) {
        return Err(format!(
            "the {what} {:?} has a control character (a newline, say); give one line",
            one_line(s, 40)
        ));
    }
    let n = s.chars().count();
    if n > MAX_TEXT_CHARS {
        return Err(format!(
            "the {what} is {n} characters long; at most {MAX_TEXT_CHARS} are kept"
        ));
    }
    Ok(())
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

/// A ref component back to the name it encodes; `None` when it is not one
/// [`ref_component`] writes (a nested name, or bytes that are not UTF-8).
pub fn decode_component(s: &[u8]) -> Option<String> {
    if s.contains(&b'/') {
        return None;
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let hex = s
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        if let (b'%', Some(hex)) = (s[i], hex) {
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(extra: &str) -> String {
        format!(
            r#"{{"version":1,"task":"t","holder":"h1","label":"alice","host":"box","taken":"2026-11-29T04:00:00Z","renewed":"2026-11-29T04:00:00Z","ends":"2026-11-29T04:30:00Z","ttl_seconds":1800,"generation":1{extra}}}"#
        )
    }

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
        for s in ["task-1", "services/api", ".h", "a..b", "x.lock", "_", "é"] {
            assert_eq!(decode_component(ref_component(s).as_bytes()).unwrap(), s);
        }
        assert_eq!(decode_component(b"a/b"), None);
        assert_eq!(decode_component(b"%FF"), None);
    }

    #[test]
    fn a_lease_is_live_until_its_end_plus_the_skew() {
        let r = Record::parse("t", record("").as_bytes()).unwrap();
        let t0 = parse_time("2026-11-29T04:30:00Z").unwrap();
        let skew = Duration::from_secs(30);
        assert!(r.live_at(t0 - Duration::from_secs(1), Duration::ZERO));
        assert!(!r.live_at(t0, Duration::ZERO));
        assert!(r.live_at(t0 + Duration::from_secs(29), skew));
        assert!(!r.live_at(t0 + Duration::from_secs(30), skew));
        let done = record(r#","done":{"outcome":"completed","at":"2026-11-29T04:10:00Z"}"#);
        let done = Record::parse("t", done.as_bytes()).unwrap();
        assert!(!done.live_at(t0 - Duration::from_secs(60), skew));
    }

    #[test]
    fn damaged_records_say_why() {
        let why = |task: &str, b: &[u8]| Record::parse(task, b).unwrap_err();
        assert_eq!(why("t", b"\xff\xfe"), "not UTF-8");
        assert!(why("t", b"not json").starts_with("not a lease record"));
        assert!(why("other", record("").as_bytes()).contains("not its ref's"));
        assert!(why("t", &vec![b' '; MAX_RECORD_BYTES + 1]).contains("over the"));
        let bad_holder = record("").replace(r#""h1""#, r#""h 1""#);
        assert!(why("t", bad_holder.as_bytes()).contains("holder"));
        let bad = record(r#","done":{"outcome":"exploded","at":""}"#);
        assert!(why("t", bad.as_bytes()).contains("outcome"));
        let bad = record(r#","done":{"outcome":"completed","at":"","commit":"aéééééé"}"#);
        assert!(why("t", bad.as_bytes()).contains("commit"));
    }

    #[test]
    fn texts_are_one_bounded_line() {
        let forged = record("").replace("alice", "alice\\n  task-9  mallory  live");
        let r = Record::parse("t", forged.as_bytes()).unwrap();
        assert!(!r.label.contains('\n'));
        assert!(r.label.contains("\\n"));
        let long = record("").replace("alice", &"a".repeat(3000));
        let r = Record::parse("t", long.as_bytes()).unwrap();
        assert_eq!(r.label.chars().count(), MAX_TEXT_CHARS + 1);
        assert!(check_text("label", "a\nb").is_err());
        assert!(check_text("label", &"x".repeat(101)).is_err());
        assert!(check_text("label", "builder-2").is_ok());
    }

    #[test]
    fn ends_and_durations_no_clock_reaches_do_not_overflow() {
        let far = Record::parse(
            "t",
            br#"{"version":1,"task":"t","alias":"","holder":"h","label":"l","host":"","taken":"","renewed":"9999-12-31T23:59:59Z","ends":"9999-12-31T23:59:59Z","ttl_seconds":18446744073709551615,"generation":18446744073709551615}"#,
        )
        .unwrap();
        assert_eq!(far.holder, "h");
        assert!(far.live_at(now(), Duration::MAX));
        assert!(format_time(after(now(), Duration::MAX)).starts_with("9999-12-31"));
        let renewed = parse_time(&far.renewed).unwrap();
        assert!(after(renewed, Duration::from_secs(far.ttl_seconds) / 2) >= renewed);
    }

    proptest::proptest! {
        /// A stored record is whatever a remote holds: any bytes read as a record or as
        /// damaged, without a panic, and a record's texts are single lines.
        #[test]
        fn any_stored_bytes_read_as_a_record(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
                                              skew in proptest::num::u64::ANY) {
            if let Ok(r) = Record::parse("task-1", &bytes) {
                let _ = r.live_at(now(), Duration::from_secs(skew));
                let _ = after(r.ends_at(), Duration::from_secs(r.ttl_seconds));
                proptest::prop_assert!(!r.label.contains('\n'));
            }
            let _ = decode_component(&bytes);
        }

        /// Records in the right shape with any times and numbers.
        #[test]
        fn any_times_and_numbers_in_a_record(ends in "[0-9T:Z-]{0,24}", ttl in proptest::num::u64::ANY,
                                              generation in proptest::num::u64::ANY) {
            let text = format!(r#"{{"version":1,"task":"t","alias":"","holder":"h","label":"l","host":"","taken":"","renewed":"{ends}","ends":"{ends}","ttl_seconds":{ttl},"generation":{generation}}}"#);
            let r = Record::parse("t", text.as_bytes()).unwrap();
            let _ = r.live_at(now(), Duration::from_secs(ttl));
            let _ = format_time(after(r.ends_at(), Duration::from_secs(ttl)));
        }
    }
}
