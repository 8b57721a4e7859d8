//! Durations and sizes on the command line, parsed the same way by every flag that takes one.
//!
//! Durations use `humantime` spellings (`500ms`, `30s`, `1m`, `1m 30s`, `2h`); a bare number
//! is seconds. Sizes use `bytesize` spellings (`1048576`, `512KiB`, `1MiB`, `1MB`, `2 GB`):
//! `K`/`KB`/`M`/`MB` are powers of 1000, `KiB`/`MiB`/`GiB` powers of 1024.

use std::time::Duration;

/// A positive duration: `500ms`, `30s`, `1m`, `1h 30m`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a duration (e.g. 500ms, 30s, 1m, 1h 30m)");
    let d = match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => {
            Duration::try_from_secs_f64(secs).map_err(|_| bad())?
        }
        Ok(_) => return Err(bad()),
        Err(_) => humantime::parse_duration(t).map_err(|e| format!("{}: {e}", bad()))?,
    };
    if d.is_zero() {
        return Err(format!("`{s}` is zero; give a positive duration"));
    }
    Ok(d)
}

/// A positive size in bytes: `1048576`, `512KiB`, `1MiB`, `1MB`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let bad = || format!("`{s}` is not a size (e.g. 1048576, 512KiB, 1MiB, 1MB)");
    let n = s
        .trim()
        .parse::<bytesize::ByteSize>()
        .map_err(|_| bad())?
        .as_u64();
    if n == 0 {
        return Err(format!("`{s}` is zero; give a positive size"));
    }
    usize::try_from(n).map_err(|_| format!("`{s}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_the_usual_spellings() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1min"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("NaN").is_err());
    }

    #[test]
    fn sizes_in_the_usual_spellings() {
        assert_eq!(parse_size("1MiB"), Ok(1024 * 1024));
        assert_eq!(parse_size("512KiB"), Ok(512 * 1024));
        assert_eq!(parse_size("1MB"), Ok(1_000_000));
        assert_eq!(parse_size("1 mib"), Ok(1024 * 1024));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("1XB").is_err());
    }
}
