//! Progress timestamps: RFC 3339 date-times with fractional seconds (the "RFC3339Nano" form
//! the protocol uses), compared as instants so that entries written with different UTC
//! offsets still order correctly.
//!
//! The grammar accepted is `YYYY-MM-DDTHH:MM:SS.F[F...](Z|+HH:MM|-HH:MM)`: a literal `T`, a
//! `.` before the fraction (1 to 9 digits are significant; further digits are accepted and
//! truncated, as Go's parser does), and either `Z` or a numeric offset. Leading and trailing
//! blanks are ignored, as the reference does.

use std::fmt;

/// A parsed progress timestamp: the instant (nanoseconds since the Unix epoch, UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Instant {
    nanos: i128,
}

impl Instant {
    /// Nanoseconds since 1970-01-01T00:00:00Z.
    pub fn unix_nanos(self) -> i128 {
        self.nanos
    }

    /// Build an instant from nanoseconds since the epoch.
    pub fn from_unix_nanos(nanos: i128) -> Instant {
        Instant { nanos }
    }
}

/// Why a timestamp is not acceptable. The `Display` text is one clause that completes
/// "timestamp ... is ..." in a diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimestampError {
    /// Empty or only blanks.
    Missing,
    /// A valid RFC 3339 date-time, but with no fractional seconds.
    NoFraction,
    /// The fraction uses `,` instead of `.`.
    CommaFraction,
    /// Date and time are separated by something other than `T`.
    NoTSeparator,
    /// Anything else: the text says what was expected where.
    Malformed(String),
}

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimestampError::Missing => f.write_str("missing"),
            TimestampError::NoFraction => {
                f.write_str("missing fractional seconds (write e.g. `12:00:00.000000Z`)")
            }
            TimestampError::CommaFraction => {
                f.write_str("using `,` before the fraction; RFC 3339 requires `.`")
            }
            TimestampError::NoTSeparator => {
                f.write_str("not RFC 3339: date and time must be separated by `T`")
            }
            TimestampError::Malformed(why) => write!(f, "not RFC 3339: {why}"),
        }
    }
}

impl std::error::Error for TimestampError {}

/// Parse a progress timestamp (RFC 3339 with mandatory fractional seconds).
pub fn parse(text: &str) -> Result<Instant, TimestampError> {
    let s = super::trim(text);
    if s.is_empty() {
        return Err(TimestampError::Missing);
    }
    if let Some(t) = parse_utc_fixed(s.as_bytes()) {
        return Ok(t);
    }
    parse_general(s)
}

/// The form `small` writes and nearly every log holds, `YYYY-MM-DDTHH:MM:SS.fZ` with 1 to 9
/// fraction digits, read at its fixed places with no error to build: a progress gate parses
/// one per entry. `None` for anything else, valid or not, which [`parse_general`] then reads
/// (and explains). It accepts nothing [`parse_general`] refuses, with the same instant (a
/// property test compares them).
fn parse_utc_fixed(b: &[u8]) -> Option<Instant> {
    let n = b.len();
    if !(22..=30).contains(&n) || b[n - 1] != b'Z' {
        return None;
    }
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if b[19] != b'.' {
        return None;
    }
    let number = |digits: &[u8]| {
        digits.iter().try_fold(0u64, |acc, &c| {
            let d = c.wrapping_sub(b'0');
            (d < 10).then_some(acc * 10 + u64::from(d))
        })
    };
    let year = number(&b[0..4])? as i64;
    let month = number(&b[5..7])? as u32;
    let day = number(&b[8..10])? as u32;
    let hour = number(&b[11..13])?;
    let minute = number(&b[14..16])?;
    let second = number(&b[17..19])?;
    let fraction = &b[20..n - 1];
    let nanos = number(fraction)? * 10u64.pow(9 - fraction.len() as u32);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let secs =
        days_from_civil(year, month, day) * 86_400 + (hour * 3600 + minute * 60 + second) as i64;
    Some(Instant {
        nanos: i128::from(secs) * 1_000_000_000 + i128::from(nanos),
    })
}

/// [`parse`] of any text (trimmed and not empty), saying what is wrong with it.
fn parse_general(s: &str) -> Result<Instant, TimestampError> {
    let b = s.as_bytes();
    let mut p = Cursor { b, i: 0 };
    let year = p.digits(4, "a four-digit year")? as i64;
    p.expect(b'-', "`-` after the year")?;
    let month = p.digits(2, "a two-digit month")?;
    p.expect(b'-', "`-` after the month")?;
    let day = p.digits(2, "a two-digit day")?;
    match p.peek() {
        Some(b'T') => p.i += 1,
        Some(b't') | Some(b' ') => return Err(TimestampError::NoTSeparator),
        Some(_) => return Err(TimestampError::NoTSeparator),
        None => {
            return Err(TimestampError::Malformed(
                "the time of day is missing".into(),
            ))
        }
    }
    let hour = p.digits(2, "a two-digit hour")?;
    p.expect(b':', "`:` after the hour")?;
    let minute = p.digits(2, "two-digit minutes")?;
    p.expect(b':', "`:` after the minutes")?;
    let second = p.digits(2, "two-digit seconds")?;
    let mut nanos: i128 = 0;
    let mut has_fraction = false;
    match p.peek() {
        Some(b'.') => {
            p.i += 1;
            let start = p.i;
            while let Some(c) = p.peek() {
                if c.is_ascii_digit() {
                    p.i += 1;
                } else {
                    break;
                }
            }
            let digits = &b[start..p.i];
            if digits.is_empty() {
                return Err(TimestampError::Malformed("no digits after `.`".into()));
            }
            has_fraction = true;
            // Nanoseconds: the first nine digits, scaled up when there are fewer.
            let nine = &digits[..digits.len().min(9)];
            let n = nine.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
            nanos = i128::from(n * 10i64.pow(9 - nine.len() as u32));
        }
        Some(b',') => return Err(TimestampError::CommaFraction),
        _ => {}
    }
    let offset_secs: i64 = match p.peek() {
        Some(b'Z') => {
            p.i += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            p.i += 1;
            let oh = p.digits(2, "a two-digit offset hour")? as i64;
            p.expect(b':', "`:` inside the UTC offset")?;
            let om = p.digits(2, "two-digit offset minutes")? as i64;
            if oh > 23 || om > 59 {
                return Err(TimestampError::Malformed("UTC offset out of range".into()));
            }
            let total = oh * 3600 + om * 60;
            if sign == b'-' {
                -total
            } else {
                total
            }
        }
        Some(b'z') => {
            return Err(TimestampError::Malformed(
                "write the UTC designator as `Z`".into(),
            ))
        }
        Some(c) => {
            return Err(TimestampError::Malformed(format!(
                "unexpected `{}` where `Z` or a UTC offset was expected",
                char::from(c).escape_default()
            )))
        }
        None => {
            return Err(TimestampError::Malformed(
                "the UTC offset (`Z` or `+HH:MM`) is missing".into(),
            ))
        }
    };
    if p.i != b.len() {
        return Err(TimestampError::Malformed(format!(
            "unexpected text `{}` after the UTC offset",
            &s[p.i..]
        )));
    }
    if !(1..=12).contains(&month) {
        return Err(TimestampError::Malformed(format!(
            "month {month:02} out of range"
        )));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(TimestampError::Malformed(format!(
            "day {day:02} out of range"
        )));
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(TimestampError::Malformed("time of day out of range".into()));
    }
    if !has_fraction {
        return Err(TimestampError::NoFraction);
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)
        - offset_secs;
    Ok(Instant {
        nanos: i128::from(secs) * 1_000_000_000 + nanos,
    })
}

/// Now, from the system clock.
pub fn now() -> Instant {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    Instant::from_unix_nanos(nanos)
}

/// Format an instant in UTC with `digits` fraction digits (0 to 9, truncated; 0 writes no
/// fraction): `2026-01-01T00:00:00Z`, `2026-01-01T00:00:00.123Z`.
pub fn format_utc_digits(t: Instant, digits: u32) -> String {
    let digits = digits.min(9);
    let full = format_utc(t);
    let dot = full.rfind('.').unwrap_or(full.len() - 1);
    let keep = if digits == 0 {
        dot
    } else {
        dot + 1 + digits as usize
    };
    format!("{}Z", &full[..keep])
}

/// Format an instant in UTC as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` (always nine fraction digits,
/// so the result is itself a valid progress timestamp).
pub fn format_utc(t: Instant) -> String {
    let secs = t.nanos.div_euclid(1_000_000_000);
    let frac = t.nanos.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400) as i64;
    let rem = secs.rem_euclid(86_400) as i64;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:09}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn digits(&mut self, n: usize, what: &str) -> Result<u32, TimestampError> {
        let end = self.i + n;
        let chunk = self
            .b
            .get(self.i..end)
            .filter(|c| c.iter().all(u8::is_ascii_digit));
        match chunk {
            Some(c) => {
                self.i = end;
                Ok(c.iter().fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')))
            }
            None => Err(TimestampError::Malformed(format!("expected {what}"))),
        }
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), TimestampError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(TimestampError::Malformed(format!("expected {what}")))
        }
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn format_with_fewer_digits_truncates() {
        let t = parse("2026-03-01T10:30:00.123456789Z").unwrap();
        assert_eq!(format_utc_digits(t, 0), "2026-03-01T10:30:00Z");
        assert_eq!(format_utc_digits(t, 3), "2026-03-01T10:30:00.123Z");
        assert_eq!(format_utc_digits(t, 9), "2026-03-01T10:30:00.123456789Z");
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_fractional_utc_and_offsets() {
        assert!(parse("2026-03-02T09:15:04.118203Z").is_ok());
        assert!(parse("2026-06-19T07:45:12.500000001Z").is_ok());
        assert!(parse(" 2026-06-19T07:45:12.5+02:00 ").is_ok());
        assert!(parse("2026-06-19T07:45:12.123456789123-05:30").is_ok());
    }

    #[test]
    fn rejects_what_the_protocol_forbids() {
        assert_eq!(parse(""), Err(TimestampError::Missing));
        assert_eq!(
            parse("2026-03-02T09:15:04Z"),
            Err(TimestampError::NoFraction)
        );
        assert_eq!(
            parse("2026-03-02T09:15:04,5Z"),
            Err(TimestampError::CommaFraction)
        );
        assert_eq!(
            parse("2026-04-14 09:30:45.991802"),
            Err(TimestampError::NoTSeparator)
        );
        assert!(matches!(
            parse("2026-02-30T09:15:04.1Z"),
            Err(TimestampError::Malformed(_))
        ));
        assert!(matches!(
            parse("2026-03-02T09:15:04.1"),
            Err(TimestampError::Malformed(_))
        ));
        assert!(matches!(
            parse("2026-03-02T24:00:00.1Z"),
            Err(TimestampError::Malformed(_))
        ));
        assert!(matches!(
            parse("yesterday"),
            Err(TimestampError::Malformed(_))
        ));
        assert!(matches!(
            parse("2026-03-02T09:15:04.1Zjunk"),
            Err(TimestampError::Malformed(_))
        ));
    }

    #[test]
    fn offsets_compare_as_instants() {
        let a = parse("2026-07-01T22:00:00.000000Z").unwrap();
        let b = parse("2026-07-02T00:00:00.000001+02:00").unwrap();
        assert!(b > a);
        assert_eq!(
            parse("2026-07-01T22:00:00.5Z").unwrap(),
            parse("2026-07-01T20:00:00.5-02:00").unwrap()
        );
    }

    #[test]
    fn fixed_places_read_the_protocol_form() {
        for text in [
            "2026-01-01T00:00:00.000000Z",
            "2024-02-29T23:59:59.999999999Z",
            "1970-01-01T00:00:00.1Z",
            "2026-12-31T12:34:56.5Z",
        ] {
            assert_eq!(
                parse_utc_fixed(text.as_bytes()),
                parse_general(text).ok(),
                "{text}"
            );
            assert!(parse_utc_fixed(text.as_bytes()).is_some(), "{text}");
        }
        // Left to the general parser: other offsets, more digits, and errors to explain.
        for text in [
            "2026-01-01T00:00:00.000000+00:00",
            "2026-01-01T00:00:00.1234567891Z",
            "2023-02-29T00:00:00.1Z",
            "2026-01-01T24:00:00.1Z",
            "2026-01-01T00:60:00.1Z",
            "2026-01-01T00:00:60.1Z",
            "2026-13-01T00:00:00.1Z",
            "2026-00-01T00:00:00.1Z",
            "2026-01-00T00:00:00.1Z",
            "2026-01-01t00:00:00.1Z",
            "2026-01-01T00:00:00,1Z",
            "2026-01-01T00:00:0x.1Z",
        ] {
            assert_eq!(parse_utc_fixed(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn epoch_and_format_round_trip() {
        assert_eq!(
            parse("1970-01-01T00:00:00.000000001Z")
                .unwrap()
                .unix_nanos(),
            1
        );
        let t = parse("2024-02-29T23:59:59.999999999+00:00").unwrap();
        assert_eq!(format_utc(t), "2024-02-29T23:59:59.999999999Z");
    }

    fn offset_text(mins: i64) -> String {
        if mins == 0 {
            "Z".to_string()
        } else {
            let sign = if mins < 0 { '-' } else { '+' };
            format!("{sign}{:02}:{:02}", mins.abs() / 60, mins.abs() % 60)
        }
    }

    /// Render an instant in a given offset, with `digits` fraction digits (truncating).
    fn render(nanos: i128, offset_min: i64, digits: u32) -> String {
        let local = nanos + i128::from(offset_min) * 60 * 1_000_000_000;
        let full = format_utc(Instant::from_unix_nanos(local));
        let (head, frac) = full.split_at(20);
        format!(
            "{head}{}{}",
            &frac[..digits as usize],
            offset_text(offset_min)
        )
    }

    proptest! {
        // Ordering of parsed timestamps equals the ordering of the instants they denote,
        // whatever offsets they were written in.
        #[test]
        fn ordering_matches_instants(
            a in 0i128..4_000_000_000_000_000_000i128,
            b in 0i128..4_000_000_000_000_000_000i128,
            oa in -1439i64..1440,
            ob in -1439i64..1440,
        ) {
            let ta = parse(&render(a, oa, 9)).unwrap();
            let tb = parse(&render(b, ob, 9)).unwrap();
            prop_assert_eq!(ta.unix_nanos(), a);
            prop_assert_eq!(tb.unix_nanos(), b);
            prop_assert_eq!(ta.cmp(&tb), a.cmp(&b));
        }

        // Fewer fraction digits truncate toward the earlier instant, never later.
        #[test]
        fn truncated_fraction_is_not_later(a in 0i128..4_000_000_000_000_000_000i128, d in 1u32..10) {
            let t = parse(&render(a, 0, d)).unwrap();
            prop_assert!(t.unix_nanos() <= a);
        }

        // Arbitrary text never panics.
        #[test]
        fn never_panics(s in ".{0,40}") {
            let _ = parse(&s);
        }

        // The fixed-place reading accepts only what the general parser accepts, as the same
        // instant: on the protocol's form, on near misses of it, and on text of its bytes.
        #[test]
        fn fixed_places_agree_with_the_general_parser(
            s in prop_oneof![
                "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{0,11}Z",
                "[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\\.[0-9]{1,9}[Zz+]",
                "[0-9T:.Z+-]{20,31}",
            ]
        ) {
            let general = parse_general(&s);
            match parse_utc_fixed(s.as_bytes()) {
                Some(t) => prop_assert_eq!(Ok(t), general),
                None => {
                    // What it leaves is either refused, or outside its form.
                    let n = s.len();
                    let in_form = (22..=30).contains(&n) && s.ends_with('Z');
                    prop_assert!(general.is_err() || !in_form || s.as_bytes()[19] != b'.');
                }
            }
        }
    }
}
