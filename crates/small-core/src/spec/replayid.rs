//! Handoff replay IDs: the identity of a run, derived from the files that define it.
//!
//! For `replayId.source: auto` the ID is the lower-case hex SHA-256 of
//! `LF(intent.small.yml) + "\n" + LF(plan.small.yml)`, followed by `"\n" +
//! LF(constraints.small.yml)` when that file exists. `LF()` works on the raw bytes (no YAML
//! parsing, a UTF-8 BOM is kept): every CRLF becomes LF, then every remaining CR becomes LF.
//! This is the formula the reference CLI uses, so IDs computed here and there agree; it also
//! means that reformatting a file (comments, quoting) gives a new ID.

use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::io;
use std::path::Path;

use crate::spec::consts::ArtifactKind;

/// Length of a replay ID in hex characters.
pub const REPLAY_ID_HEX_LEN: usize = 64;

/// Replace CRLF, then lone CR, by LF. Borrows when there is no CR at all.
pub fn normalize_line_endings(bytes: &[u8]) -> Cow<'_, [u8]> {
    if !bytes.contains(&b'\r') {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\r' {
            out.push(b'\n');
            if bytes.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    Cow::Owned(out)
}

/// The auto replay ID of a run defined by these file contents (raw bytes as on disk).
pub fn auto_replay_id(intent: &[u8], plan: &[u8], constraints: Option<&[u8]>) -> String {
    let mut h = Sha256::new();
    h.update(normalize_line_endings(intent));
    h.update(b"\n");
    h.update(normalize_line_endings(plan));
    if let Some(c) = constraints {
        h.update(b"\n");
        h.update(normalize_line_endings(c));
    }
    hex::encode(h.finalize())
}

/// Compute the auto replay ID from a `.small/` directory. Intent and plan are required;
/// constraints are hashed only when the file exists.
pub fn auto_replay_id_in(small_dir: &Path) -> io::Result<String> {
    let read = |k: ArtifactKind| {
        crate::fsio::read_bounded(&small_dir.join(k.file_name()), crate::fsio::MAX_READ_BYTES)
    };
    let intent = read(ArtifactKind::Intent)?;
    let plan = read(ArtifactKind::Plan)?;
    let constraints = match read(ArtifactKind::Constraints) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok(auto_replay_id(&intent, &plan, constraints.as_deref()))
}

/// True if `s` is a well-formed replay ID: exactly 64 hex digits (either case, as the schema
/// allows). Compare IDs with [`same_replay_id`], not `==`.
pub fn is_well_formed(s: &str) -> bool {
    s.len() == REPLAY_ID_HEX_LEN && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// Two replay IDs name the same run if they are equal ignoring case and surrounding blanks.
pub fn same_replay_id(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_crlf_and_lone_cr() {
        assert_eq!(&*normalize_line_endings(b"a\r\nb\rc\n"), b"a\nb\nc\n");
        assert_eq!(&*normalize_line_endings(b"a\r\r\n"), b"a\n\n");
        assert!(matches!(
            normalize_line_endings(b"plain\n"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn hash_joins_with_newlines() {
        let expected = hex::encode(Sha256::digest(b"I\nP\nC"));
        assert_eq!(auto_replay_id(b"I", b"P", Some(b"C")), expected);
        let expected = hex::encode(Sha256::digest(b"I\nP"));
        assert_eq!(auto_replay_id(b"I", b"P", None), expected);
        assert_eq!(
            auto_replay_id(b"I\r\n", b"P", None),
            auto_replay_id(b"I\n", b"P", None)
        );
    }

    #[test]
    fn well_formed_ids() {
        assert!(is_well_formed(&"a".repeat(64)));
        assert!(is_well_formed(&"AbC0".repeat(16)));
        assert!(!is_well_formed(&"a".repeat(63)));
        assert!(!is_well_formed(&"g".repeat(64)));
        assert!(same_replay_id(&"AB".repeat(32), &"ab".repeat(32)));
    }
}
