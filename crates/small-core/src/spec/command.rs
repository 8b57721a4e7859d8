//! Captured commands: the bounded display a progress entry shows (`command`,
//! `command_summary`), the marker of the current display format (`command_summary_version`),
//! and where the exact bytes of a command live (`command_ref`, `command_sha256`).
//!
//! A display is the command with whitespace normalised, at most [`SUMMARY_CAP`] bytes. A
//! longer one is cut at `SUMMARY_CAP - 3` bytes and ends in `...`; the cut never splits a
//! whitespace-separated token holding an `http://` or `https://` URL (it moves before that
//! token), so a display cannot turn a local URL into one that looks external. A cut display
//! is marked with `command_summary_version: 2` and must be proven by the exact bytes (see
//! the proofs of the gates).

use crate::diag::Span;
use crate::spec::consts::CACHE_DIR;
use crate::spec::timestamp::Instant;
use crate::yaml::{Node, Value};

/// Longest display, in bytes.
pub const SUMMARY_CAP: usize = 200;
/// The value of `command_summary_version` for the display [`summarize`] writes.
pub const SUMMARY_VERSION: i64 = 2;
/// The key of the marker.
pub const SUMMARY_VERSION_KEY: &str = "command_summary_version";
/// The store of reviewed command proofs that may be committed (beside `.small/`), mirroring
/// the paths below [`CACHE_DIR`].
pub const PROOF_DIR: &str = ".small-command-proofs";
/// The largest command proof read.
pub const MAX_PROOF_BYTES: u64 = 1 << 20;

/// The command with invalid UTF-8 replaced (one U+FFFD per run of bad bytes) and runs of
/// Unicode whitespace collapsed to one space, trimmed.
pub fn normalize(command: &[u8]) -> String {
    let mut text = String::with_capacity(command.len());
    let mut after_bad = false;
    for chunk in command.utf8_chunks() {
        if !chunk.valid().is_empty() {
            text.push_str(chunk.valid());
            after_bad = false;
        }
        if !chunk.invalid().is_empty() && !after_bad {
            text.push('\u{FFFD}');
            after_bad = true;
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The display of `command`: [`normalize`]d, and when longer than [`SUMMARY_CAP`] bytes, cut
/// at `SUMMARY_CAP - 3` (moved before a URL token it would split, and back to a character
/// boundary) with `...` appended.
pub fn summarize(command: &[u8]) -> String {
    summarize_capped(command, SUMMARY_CAP)
}

/// [`summarize`] with another cap (the cap must leave room for `...`).
pub fn summarize_capped(command: &[u8], cap: usize) -> String {
    let normalized = normalize(command);
    if normalized.len() <= cap {
        return normalized;
    }
    if cap <= 3 {
        return ".".repeat(cap);
    }
    let mut cut = cap - 3;
    let mut offset = 0;
    for token in normalized.split(' ') {
        if offset > cut {
            break;
        }
        let end = offset + token.len();
        if end >= cut && holds_url(token) {
            cut = offset;
            break;
        }
        offset = end + 1;
    }
    while cut > 0 && !normalized.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &normalized[..cut])
}

/// Whether a display of `command` is cut (and so carries the marker).
pub fn needs_marker(command: &[u8]) -> bool {
    normalize(command).len() > SUMMARY_CAP
}

/// A token holding an `http://` or `https://` URL (any case).
fn holds_url(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    lower.contains("http://") || lower.contains("https://")
}

/// Whether a display holds a backtick-quoted local URL literal (`` `http://127.0.0.1:${port}` ``),
/// which only the proven command can clear of the link rule (see the proofs of the gates).
pub fn has_local_literal(display: &str) -> bool {
    matches!(
        crate::spec::url::quote_local_literals(display),
        std::borrow::Cow::Owned(ref q) if q != display
    )
}

/// The display older tools wrote (before the marker): whitespace collapsed, cut at exactly
/// `SUMMARY_CAP - 3` bytes wherever that falls. Used only to verify such old receipts; never
/// written.
pub fn legacy_summary(command: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(command);
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let bytes = joined.into_bytes();
    if bytes.len() <= SUMMARY_CAP {
        return bytes;
    }
    let mut out = bytes[..SUMMARY_CAP - 3].to_vec();
    out.extend_from_slice(b"...");
    out
}

/// The file name of a command captured at `t`: `YYYYMMDDTHHMMSS.nnnnnnnnnZ.txt` (UTC, nine
/// fraction digits), the same instant as the entry's timestamp.
pub fn proof_file_name(t: Instant) -> String {
    let full = crate::spec::timestamp::format_utc(t);
    let compact: String = full.chars().filter(|c| *c != '-' && *c != ':').collect();
    format!("{compact}.txt")
}

/// The `command_ref` of a command captured at `t` in the run `replay_id`.
pub fn command_ref(replay_id: &str, t: Instant) -> String {
    format!(
        "{CACHE_DIR}/logs/{replay_id}/commands/{}",
        proof_file_name(t)
    )
}

/// A `command_ref` of a supported form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandRef<'a> {
    /// `.small-cache/logs/<replayId>/commands/<YYYYMMDDTHHMMSS.nnnnnnnnnZ>.txt`.
    Log { replay_id: &'a str, file: &'a str },
    /// `.small-cache/commands/<sha256>.txt` (content-addressed).
    Content { sha256: &'a str },
}

/// Parse a `command_ref`: only the two relative forms under [`CACHE_DIR`] are supported, so
/// absolute paths, `..`, and any other store are refused by construction.
pub fn parse_command_ref(r: &str) -> Option<CommandRef<'_>> {
    let rest = r.strip_prefix(CACHE_DIR)?.strip_prefix('/')?;
    if let Some(rest) = rest.strip_prefix("logs/") {
        let (replay_id, rest) = rest.split_once('/')?;
        let file = rest.strip_prefix("commands/")?;
        return (is_hex64(replay_id) && is_log_file_name(file))
            .then_some(CommandRef::Log { replay_id, file });
    }
    let name = rest.strip_prefix("commands/")?.strip_suffix(".txt")?;
    is_hex64(name).then_some(CommandRef::Content { sha256: name })
}

/// 64 lower-case hex digits.
pub fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `YYYYMMDDTHHMMSS.nnnnnnnnnZ.txt`.
fn is_log_file_name(f: &str) -> bool {
    let b = f.as_bytes();
    b.len() == 30
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'.'
        && b[16..25].iter().all(u8::is_ascii_digit)
        && &b[25..] == b"Z.txt"
}

/// The path of the portable proof of a reference: the same path below [`PROOF_DIR`].
pub fn portable_path(r: &str) -> String {
    match r.strip_prefix(CACHE_DIR) {
        Some(rest) => format!("{PROOF_DIR}{rest}"),
        None => format!("{PROOF_DIR}/{r}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The long-local-url command of the conformance corpus (253 bytes, three spaces).
    const LOCAL: &str = "echo relay-smoke   --target http://127.0.0.1:8787/relay/v1/hooks/flush?wait=true --retries 3 --backoff 250ms --jitter 0.2 --timeout 5s --log-level debug --policy-doc https://docs.example.org/relay/retry-policy/v2#backoff-and-jitter --owner platform-team";

    #[test]
    fn a_short_command_is_only_normalised() {
        assert_eq!(summarize(b"  cargo \t test\n --all "), "cargo test --all");
        assert!(!needs_marker(b"  cargo \t test\n --all "));
        let exactly = "x".repeat(SUMMARY_CAP);
        assert_eq!(summarize(exactly.as_bytes()), exactly);
        assert!(!needs_marker(exactly.as_bytes()));
    }

    #[test]
    fn a_long_command_is_cut_at_197_bytes_with_an_ellipsis() {
        let long = format!("echo {}", "a".repeat(300));
        let s = summarize(long.as_bytes());
        assert_eq!(s.len(), SUMMARY_CAP);
        assert!(s.ends_with("..."));
        assert_eq!(&s[..197], &long[..197]);
        assert!(needs_marker(long.as_bytes()));
    }

    #[test]
    fn a_url_token_is_never_split() {
        let s = summarize(LOCAL.as_bytes());
        assert_eq!(s.len(), 167, "{s}");
        assert!(s.ends_with("--policy-doc ..."), "{s}");
        assert!(!s.contains("https://"));
        assert!(s.contains("http://127.0.0.1:8787/relay/v1/hooks/flush?wait=true"));
        // Any case of the scheme counts, and a token ending exactly at the cut moves too.
        let pad = "a".repeat(180);
        let upper = format!("{pad} HTTPS://example.org/a/b/c/d/e/f/g/h/i/j");
        assert_eq!(summarize(upper.as_bytes()), format!("{pad} ..."));
        let at_cut = format!("{} http://h/{}", "b".repeat(180), "c".repeat(7));
        assert_eq!(at_cut.len(), 197);
        let at_cut = format!("{at_cut} {}", "d".repeat(10));
        assert_eq!(
            summarize(at_cut.as_bytes()),
            format!("{} ...", "b".repeat(180))
        );
    }

    #[test]
    fn a_plain_token_may_be_cut_mid_word() {
        let cmd = format!("{} policy-document-name", "a".repeat(193));
        let s = summarize(cmd.as_bytes());
        assert_eq!(s, format!("{} pol...", "a".repeat(193)));
    }

    #[test]
    fn the_cut_keeps_characters_whole_and_bad_bytes_are_replaced() {
        let cmd = format!("{}é{}", "a".repeat(196), "b".repeat(20));
        let s = summarize(cmd.as_bytes());
        assert_eq!(s, format!("{}...", "a".repeat(196)));
        assert_eq!(normalize(b"a\xff\xfe b\n\xffc"), "a\u{FFFD} b \u{FFFD}c");
    }

    #[test]
    fn the_legacy_display_cuts_anywhere() {
        let legacy = legacy_summary(LOCAL.as_bytes());
        assert_eq!(legacy.len(), SUMMARY_CAP);
        let normalized = normalize(LOCAL.as_bytes());
        assert_eq!(&legacy[..197], &normalized.as_bytes()[..197]);
        assert!(legacy.ends_with(b"..."));
        assert_ne!(legacy, summarize(LOCAL.as_bytes()).into_bytes());
    }

    #[test]
    fn refs_of_the_supported_forms_only() {
        let id = "7e217f28d9d46fdaadec3f4df4cf41893ad885104e3d4c076d07d8898e98355f";
        let ok = format!(".small-cache/logs/{id}/commands/20260310T100100.100001001Z.txt");
        assert_eq!(
            parse_command_ref(&ok),
            Some(CommandRef::Log {
                replay_id: id,
                file: "20260310T100100.100001001Z.txt"
            })
        );
        let content = format!(".small-cache/commands/{id}.txt");
        assert_eq!(
            parse_command_ref(&content),
            Some(CommandRef::Content { sha256: id })
        );
        for bad in [
            format!("/abs/.small-cache/logs/{id}/commands/20260310T100100.100001001Z.txt"),
            format!(".small-cache/logs/{id}/commands/../../x/20260310T100100.100001001Z.txt"),
            ".small-cache/logs/../commands/20260310T100100.100001001Z.txt".to_string(),
            format!(".small-cache/logs/{id}/commands/20260310T100100.1Z.txt"),
            format!(
                ".small-cache/logs/{}/commands/20260310T100100.100001001Z.txt",
                id.to_uppercase()
            ),
            ".small-cache/commands/x.txt".to_string(),
            "https://example.com/x.txt".to_string(),
        ] {
            assert_eq!(parse_command_ref(&bad), None, "{bad}");
        }
        assert_eq!(
            portable_path(&ok),
            format!(".small-command-proofs/logs/{id}/commands/20260310T100100.100001001Z.txt")
        );
    }

    #[test]
    fn the_file_name_is_the_entry_instant() {
        let t = crate::spec::timestamp::parse("2026-03-10T10:01:00.1000010Z").unwrap();
        assert_eq!(proof_file_name(t), "20260310T100100.100001000Z.txt");
    }
}

/// What an entry claims about its command, gathered while the log is checked (the proof
/// files are read afterwards, every time: they are not part of the log).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandClaim {
    /// The entry's index.
    pub index: usize,
    /// Where to point: the entry's `command_ref`, else the entry.
    pub span: Span,
    /// `command_summary_version` is present: `Some(true)` when it is 2.
    pub marker: Option<bool>,
    pub command_ref: Option<String>,
    pub sha256: Option<String>,
    pub summary: Option<String>,
    pub command: Option<String>,
    pub timestamp: Option<String>,
    pub replay_id: Option<String>,
    /// The notes of a dry run's entry (`status: pending`, evidence [`DRY_RUN_EVIDENCE`]),
    /// which wrap its display: `apply --dry-run (cmd: "<display>")`.
    pub dry_run_notes: Option<String>,
}

/// The evidence of the entry `apply --dry-run` records.
pub const DRY_RUN_EVIDENCE: &str = "Dry-run: no command executed";

impl CommandClaim {
    /// The claim of an entry, when it makes one (a marker, a ref or a hash, or a display of
    /// the older summarizer's length).
    pub fn of(index: usize, entry: &Node) -> Option<CommandClaim> {
        let map = entry.as_map()?;
        let mut c = CommandClaim {
            index,
            span: entry.span,
            ..Default::default()
        };
        let text = |n: &Node| match &n.value {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        };
        let mut seen_ref = false;
        let (mut status, mut evidence, mut notes) = (None, None, None);
        for e in map {
            let v = &e.value;
            match &*e.key {
                SUMMARY_VERSION_KEY if c.marker.is_none() => {
                    c.marker = Some(matches!(v.value, Value::Int(n) if n == SUMMARY_VERSION));
                }
                "command_ref" if !seen_ref => {
                    seen_ref = true;
                    c.span = v.span;
                    c.command_ref = text(v);
                }
                "command_sha256" if c.sha256.is_none() => c.sha256 = text(v),
                "command_summary" if c.summary.is_none() => c.summary = text(v),
                "command" if c.command.is_none() => c.command = text(v),
                "timestamp" if c.timestamp.is_none() => c.timestamp = text(v),
                "replayId" if c.replay_id.is_none() => c.replay_id = text(v),
                "status" if status.is_none() => status = text(v),
                "evidence" if evidence.is_none() => evidence = text(v),
                "notes" if notes.is_none() => notes = text(v),
                _ => {}
            }
        }
        if status.as_deref() == Some("pending") && evidence.as_deref() == Some(DRY_RUN_EVIDENCE) {
            c.dry_run_notes = notes;
        }
        let display = c.summary.as_deref().unwrap_or_default();
        let long_display = display.len() == SUMMARY_CAP && display.ends_with("...");
        let claims = c.marker.is_some() || seen_ref || c.sha256.is_some();
        (claims || long_display || has_local_literal(display)).then_some(c)
    }
}
