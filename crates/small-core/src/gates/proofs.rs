//! Command proofs (rule `PROOF`, strict mode): a progress entry's `command_ref` and
//! `command_sha256` bind its bounded display (`command`, `command_summary`, see
//! [`crate::spec::command`]) to the exact bytes of the command, kept in the local cache
//! (`.small-cache/...`, never committed) or, for a fresh checkout, as a reviewed copy at the
//! same path below `.small-command-proofs/`.
//!
//! - The cache file is used when it exists; only when it is missing is the portable copy
//!   read. A cache file that exists but is wrong never falls back.
//! - An entry marked with `command_summary_version` must be proven: its proof must exist and
//!   hash to `command_sha256`, its file name must be the entry's timestamp (and its replay id
//!   the entry's `replayId`, when it has one), and its display must be what the summarizer
//!   makes of the proven bytes. A 200-byte display of the older summarizer that looks like it
//!   holds an external `http://` link is held to the same rules, with the older summarizer,
//!   and so is a display holding a backtick-quoted local URL literal
//!   (`` `http://127.0.0.1:${port}` ``, see [`quote_local_literals`]): the link rule reads the
//!   proven command with such literals quoted, so the closing backtick and a port written as
//!   a source expression do not make the link external.
//! - Any other entry with a `command_ref` and `command_sha256` is verified when its proof can
//!   be found: removing the marker does not switch the check off. A missing proof is then no
//!   error (the cache is private and a fresh checkout has none).
//! - The proven bytes are checked as a whole: a credential (`INV1`) or an external `http://`
//!   link (`LINK`) anywhere in them fails, even past the display's cap.
//! - The notes a dry run wraps around a proven display, `apply --dry-run (cmd: "<display>")`,
//!   are judged with the display: their `LINK` finding is dropped too.
//!
//! Reads stay inside the workspace: only the two relative ref forms are accepted, a proof
//! must be a regular file (never a symlink) of at most 1 MiB, and the directory holding it
//! must resolve inside the workspace (a directory symlink within the workspace is fine).
//! Diagnostics name paths and rules, never the command's bytes.

use std::io::Read as _;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::diag::{Diagnostic, Span};
use crate::gates::invariants::{has_external_http, quote_local_literals};
use crate::spec::command::{self, CommandRef, MAX_PROOF_BYTES, SUMMARY_CAP, SUMMARY_VERSION};
use crate::spec::consts::ArtifactKind;

/// The rule code of command proofs.
pub const CODE: &str = "PROOF";

pub use crate::spec::command::CommandClaim;

/// A display of the older summarizer that looks like it holds an external link: proven with
/// the older summarizer, or failing.
fn legacy_candidate(c: &CommandClaim) -> bool {
    c.marker.is_none()
        && c.summary
            .as_deref()
            .is_some_and(|s| s.len() == SUMMARY_CAP && s.ends_with("...") && has_external_http(s))
}

/// A display that must be proven: one of the older summarizer that looks like it holds an
/// external link, or one holding a backtick-quoted local URL literal.
fn needs_proof(c: &CommandClaim) -> bool {
    c.marker.is_some()
        || legacy_candidate(c)
        || c.summary.as_deref().is_some_and(command::has_local_literal)
}

/// What verifying the claims found.
#[derive(Debug, Default)]
pub struct ProofResults {
    pub diagnostics: Vec<Diagnostic>,
    /// Entries whose display was proven against the exact bytes: their `command` and
    /// `command_summary` are judged by the full command instead (a `LINK` finding on those
    /// fields, made by a cut inside a URL, is replaced by the check of the proven bytes).
    pub proven_displays: Vec<usize>,
    /// Proven entries of a dry run whose notes only wrap the display: their `LINK` finding
    /// is dropped as well.
    pub wrapped_notes: Vec<usize>,
}

/// The outcome of looking for one proof file.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Neither the cache file nor the portable copy exists.
    Missing,
    /// A file is there but may not be read (or could not be): why, naming only the path.
    Refused(String),
    /// The bytes, and the workspace-relative path they came from.
    Found(Vec<u8>, String),
}

/// Find the proof of `command_ref` below `root`: the cache file when it exists, else the
/// portable copy.
pub fn lookup(root: &Path, command_ref: &str) -> Lookup {
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    match read_proof(root, &real_root, command_ref) {
        Lookup::Missing => read_proof(root, &real_root, &command::portable_path(command_ref)),
        other => other,
    }
}

/// Read one proof file (`rel` is one of the supported relative forms).
fn read_proof(root: &Path, real_root: &Path, rel: &str) -> Lookup {
    let path = root.join(rel);
    let parent = path
        .parent()
        .map_or_else(|| root.to_path_buf(), Path::to_path_buf);
    match std::fs::canonicalize(&parent) {
        Ok(real) if real.starts_with(real_root) => {}
        Ok(_) => {
            return Lookup::Refused(format!(
                "the directory of command proof {rel} resolves outside the workspace"
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Missing,
        Err(e) => return Lookup::Refused(format!("cannot read command proof {rel}: {e}")),
    }
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Missing,
        Err(e) => return Lookup::Refused(format!("cannot read command proof {rel}: {e}")),
    };
    if !meta.file_type().is_file() {
        return Lookup::Refused(format!(
            "command proof must be a regular non-symlink file: {rel}"
        ));
    }
    if meta.len() > MAX_PROOF_BYTES {
        return Lookup::Refused(too_big(rel));
    }
    match read_regular(&path) {
        Ok(Some(bytes)) => Lookup::Found(bytes, rel.to_string()),
        Ok(None) => Lookup::Refused(too_big(rel)),
        Err(e) => Lookup::Refused(format!("cannot read command proof {rel}: {e}")),
    }
}

fn too_big(rel: &str) -> String {
    format!("command proof exceeds the {MAX_PROOF_BYTES}-byte limit: {rel}")
}

/// Open without following a symlink put there since the check, and read at most the limit
/// (`None`: the file is larger).
fn read_regular(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let file = crate::fsio::open_nofollow(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_PROOF_BYTES + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_PROOF_BYTES).then_some(bytes))
}

/// Verify every claim against the proof files of the workspace at `root`.
pub fn check_claims(root: &Path, claims: &[CommandClaim]) -> ProofResults {
    let mut out = ProofResults::default();
    for c in claims {
        check_claim(root, c, &mut out);
    }
    out
}

fn check_claim(root: &Path, c: &CommandClaim, out: &mut ProofResults) {
    let i = c.index;
    let required = needs_proof(c);
    let mut fail = |msg: String, help: &str| {
        out.diagnostics
            .push(proof_diag(i, c.span, "/command_ref", msg).with_help(help));
    };
    if c.marker == Some(false) {
        return fail(
            format!(
                "entries[{i}]: unsupported command_summary_version; expected {SUMMARY_VERSION}"
            ),
            "the marker names the summarizer that made the display; only 2 exists",
        );
    }
    let digest = c.sha256.as_deref().filter(|d| command::is_hex64(d));
    let parsed = c
        .command_ref
        .as_deref()
        .and_then(|r| Some((r, command::parse_command_ref(r)?)));
    let (Some(digest), Some((r, form))) = (digest, parsed) else {
        if required {
            fail(
                format!("entries[{i}]: a bounded command display needs command_sha256 (64 lower-case hex digits) and a command_ref of the form .small-cache/logs/<replayId>/commands/<timestamp>.txt or .small-cache/commands/<sha256>.txt"),
                "do not edit receipts; record the command again with `small apply`",
            );
        }
        return;
    };
    if let CommandRef::Content { sha256 } = form {
        if sha256 != digest {
            return fail(
                format!("entries[{i}]: command_ref {r} names another digest than command_sha256"),
                "do not edit receipts",
            );
        }
    }
    let portable = command::portable_path(r);
    let bytes = match lookup(root, r) {
        Lookup::Missing if required => {
            return fail(
                format!("entries[{i}]: command proof unavailable for {r}: neither it nor {portable} exists"),
                &format!("supply the exact non-secret command bytes at {portable} (see docs/rules.md, PROOF); do not edit receipts"),
            )
        }
        Lookup::Missing => return,
        Lookup::Refused(why) => {
            return fail(
                format!("entries[{i}]: {why}"),
                &format!("put the exact command bytes in a regular file at {r} or {portable}; do not edit receipts"),
            )
        }
        Lookup::Found(bytes, _) => bytes,
    };
    if hex::encode(Sha256::digest(&bytes)) != digest {
        return fail(
            format!("entries[{i}]: command proof SHA256 mismatch for {r}"),
            "restore the exact original bytes (no added newline); do not edit receipts",
        );
    }
    if required {
        if let CommandRef::Log { replay_id, file } = form {
            if c.replay_id.as_deref().is_some_and(|id| id != replay_id) {
                return fail(
                    format!("entries[{i}]: command_ref {r} is filed under another replayId than the entry's"),
                    "do not edit receipts",
                );
            }
            let named = c
                .timestamp
                .as_deref()
                .and_then(|t| crate::spec::timestamp::parse(t).ok())
                .map(command::proof_file_name);
            if c.timestamp.is_some() && named.as_deref() != Some(file) {
                return fail(
                    format!("entries[{i}]: the file name of command_ref {r} is not the entry's timestamp"),
                    "the command file is named for the instant of its entry; do not edit receipts",
                );
            }
        }
        let expected = if c.marker.is_some() {
            command::summarize(&bytes).into_bytes()
        } else {
            command::legacy_summary(&bytes)
        };
        if c.summary.as_deref().map(str::as_bytes) != Some(&expected[..]) {
            return fail(
                format!("entries[{i}]: command_summary is not the summarizer's display of the proven command"),
                "do not edit receipts; displays are written by `small apply`",
            );
        }
        if c.command
            .as_deref()
            .is_some_and(|s| s.as_bytes() != &expected[..])
        {
            return fail(
                format!(
                    "entries[{i}]: command is not the summarizer's display of the proven command"
                ),
                "do not edit receipts; displays are written by `small apply`",
            );
        }
        out.proven_displays.push(i);
        if wraps_display(c.dry_run_notes.as_deref(), &expected) {
            out.wrapped_notes.push(i);
        }
    }
    let full = String::from_utf8_lossy(&bytes);
    let mut kinds: Vec<&str> = crate::secrets::scan_all(Some("command"), &full)
        .into_iter()
        .map(|f| f.kind)
        .collect();
    kinds.dedup();
    if !kinds.is_empty() {
        out.diagnostics.push(
            content_diag(
                "INV1",
                i,
                c.span,
                format!(
                    "entries[{i}]: possible secret ({}) in the captured command behind {r}",
                    kinds.join(", ")
                ),
            )
            .with_help("remove credentials from commands (pass them through the environment); never rewrite historical receipts"),
        );
    }
    if has_external_http(&quote_local_literals(&full)) {
        out.diagnostics.push(
            content_diag(
                "LINK",
                i,
                c.span,
                format!("entries[{i}]: insecure http:// link in the captured command behind {r}"),
            )
            .with_help(
                "use https:// (http://localhost and loopback addresses are fine in progress)",
            ),
        );
    }
}

fn proof_diag(i: usize, span: Span, field: &str, msg: String) -> Diagnostic {
    Diagnostic::error(CODE, msg)
        .in_file(ArtifactKind::Progress.rel_path())
        .at(Some(span))
        .with_path(format!("/entries/{i}{field}"))
}

fn content_diag(code: &str, i: usize, span: Span, msg: String) -> Diagnostic {
    Diagnostic::error(code, msg)
        .in_file(ArtifactKind::Progress.rel_path())
        .at(Some(span))
        .with_path(format!("/entries/{i}/command_ref"))
}

/// Whether a dry run's notes are `apply --dry-run (cmd: "<display>")` of exactly `display`
/// (the quoting of either implementation: Go's `%q` or small's).
fn wraps_display(notes: Option<&str>, display: &[u8]) -> bool {
    notes
        .and_then(|n| n.strip_prefix("apply --dry-run (cmd: ")?.strip_suffix(')'))
        .and_then(unquote)
        .is_some_and(|d| d.as_bytes() == display)
}

/// The text of a double-quoted string with Go's escapes (`\"`, `\\`, `\n`, `\t`, `\xNN`,
/// `\uNNNN`, ...); `None` when it is not one.
fn unquote(q: &str) -> Option<String> {
    let body = q.strip_prefix('"')?.strip_suffix('"')?;
    let mut out: Vec<u8> = Vec::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\n' => return None,
            '\\' => unescape(&mut chars, &mut out)?,
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    String::from_utf8(out).ok()
}

/// One escape after its backslash, appended to `out`.
fn unescape(chars: &mut std::str::Chars<'_>, out: &mut Vec<u8>) -> Option<()> {
    let c = match chars.next()? {
        'a' => '\x07',
        'b' => '\x08',
        'f' => '\x0c',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\x0b',
        '\\' => '\\',
        '"' => '"',
        'x' => {
            out.push(u8::try_from(hex(chars, 2)?).ok()?);
            return Some(());
        }
        'u' => char::from_u32(hex(chars, 4)?)?,
        'U' => char::from_u32(hex(chars, 8)?)?,
        _ => return None,
    };
    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    Some(())
}

/// The next `n` characters as a hex number.
fn hex(chars: &mut std::str::Chars<'_>, n: usize) -> Option<u32> {
    let digits: String = chars.by_ref().take(n).collect();
    if digits.len() != n || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(&digits, 16).ok()
}

/// Drop the `LINK` findings on the displays of entries proven against their full command
/// (see [`ProofResults::proven_displays`]) and on the dry-run notes wrapping them.
pub fn drop_proven_display_links(diags: &mut Vec<Diagnostic>, proofs: &ProofResults) {
    if proofs.proven_displays.is_empty() {
        return;
    }
    let displays = proofs.proven_displays.iter().flat_map(|i| {
        [
            format!("/entries/{i}/command"),
            format!("/entries/{i}/command_summary"),
        ]
    });
    let notes = proofs
        .wrapped_notes
        .iter()
        .map(|i| format!("/entries/{i}/notes"));
    let fields: Vec<String> = displays.chain(notes).collect();
    diags.retain(|d| {
        d.code != "LINK"
            || !d
                .path
                .as_deref()
                .is_some_and(|p| fields.iter().any(|f| f == p))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{parse_str, Limits};

    const ID: &str = "7e217f28d9d46fdaadec3f4df4cf41893ad885104e3d4c076d07d8898e98355f";
    const TS: &str = "2026-03-10T10:01:00.100001001Z";
    const FILE: &str = "20260310T100100.100001001Z.txt";

    fn cache_ref() -> String {
        format!(".small-cache/logs/{ID}/commands/{FILE}")
    }

    fn put(root: &Path, rel: &str, bytes: &[u8]) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    /// The claim of an entry for `cmd` as `small apply` writes it (`marked` adds the marker
    /// whatever the length).
    fn claim(cmd: &[u8], marked: bool) -> CommandClaim {
        let summary = command::summarize(cmd);
        let mut yaml = format!(
            "task_id: task-1\ntimestamp: \"{TS}\"\ncommand: {summary:?}\ncommand_summary: {summary:?}\ncommand_sha256: {}\ncommand_ref: {}\nevidence: x\n",
            hex::encode(Sha256::digest(cmd)),
            cache_ref()
        );
        if marked {
            yaml.push_str("command_summary_version: 2\n");
        }
        let doc = parse_str(&yaml, &Limits::default()).unwrap();
        CommandClaim::of(0, &doc.root).unwrap()
    }

    fn codes(root: &Path, c: &CommandClaim) -> Vec<String> {
        let r = check_claims(root, std::slice::from_ref(c));
        r.diagnostics.iter().map(|d| d.code.clone()).collect()
    }

    fn messages(root: &Path, c: &CommandClaim) -> String {
        let r = check_claims(root, std::slice::from_ref(c));
        r.diagnostics
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("\n")
    }

    const LONG: &[u8] = b"echo relay-smoke --target http://127.0.0.1:8787/relay/v1/hooks/flush?wait=true --retries 3 --backoff 250ms --jitter 0.2 --timeout 5s --log-level debug --policy-doc https://docs.example.org/relay/retry-policy/v2#backoff-and-jitter --owner platform-team";

    #[test]
    fn the_cache_is_read_first_and_the_portable_copy_only_when_it_is_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let c = claim(LONG, true);
        assert_eq!(codes(root, &c), ["PROOF"], "no proof anywhere");
        assert!(messages(root, &c).contains("unavailable"));
        let portable = command::portable_path(&cache_ref());
        put(root, &portable, LONG);
        assert_eq!(codes(root, &c), Vec::<String>::new(), "portable copy");
        // A wrong cache file does not fall back to the right portable copy.
        let mut wrong = LONG.to_vec();
        wrong[0] = b'E';
        put(root, &cache_ref(), &wrong);
        assert_eq!(codes(root, &c), ["PROOF"]);
        assert!(messages(root, &c).contains("SHA256 mismatch"));
        put(root, &cache_ref(), LONG);
        assert_eq!(codes(root, &c), Vec::<String>::new(), "cache");
        // An appended newline is other bytes.
        put(root, &cache_ref(), &[LONG, b"\n"].concat());
        assert!(messages(root, &c).contains("SHA256 mismatch"));
    }

    #[test]
    fn an_unmarked_entry_is_verified_when_its_proof_is_there() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let cmd = format!("{} --hook http://example.com/x", "a".repeat(200));
        let c = claim(cmd.as_bytes(), false);
        assert!(c.marker.is_none());
        assert_eq!(codes(root, &c), Vec::<String>::new(), "missing: no error");
        put(root, &cache_ref(), cmd.as_bytes());
        assert_eq!(codes(root, &c), ["LINK"], "the full command is checked");
        assert!(!messages(root, &c).contains("example.com"));
        put(root, &cache_ref(), b"other");
        assert_eq!(codes(root, &c), ["PROOF"]);
    }

    #[test]
    fn a_credential_past_the_cap_fails_and_is_never_shown() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let token = ["ghp_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"].concat();
        let cmd = format!("{} --auth {token}", "b".repeat(230));
        let c = claim(cmd.as_bytes(), true);
        assert!(!c.summary.as_deref().unwrap().contains("ghp_"));
        put(root, &cache_ref(), cmd.as_bytes());
        assert_eq!(codes(root, &c), ["INV1"]);
        let shown = format!("{:?}", check_claims(root, &[c]).diagnostics);
        assert!(!shown.contains(&token[4..]), "{shown}");
    }

    #[test]
    fn symlinks_big_files_and_directories_leaving_the_workspace_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let c = claim(LONG, true);
        // A file symlink, even to the right bytes inside the workspace.
        put(&root, "proof-bytes/x", LONG);
        let link = root.join(cache_ref());
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(root.join("proof-bytes/x"), &link).unwrap();
        assert!(messages(&root, &c).contains("regular non-symlink file"));
        std::fs::remove_file(&link).unwrap();
        // A directory, where a file should be.
        std::fs::create_dir(&link).unwrap();
        assert!(messages(&root, &c).contains("regular non-symlink file"));
        std::fs::remove_dir(&link).unwrap();
        // Too big.
        let big = vec![b'a'; MAX_PROOF_BYTES as usize + 1];
        put(&root, &cache_ref(), &big);
        assert!(messages(&root, &c).contains("byte limit"));
        std::fs::remove_dir_all(root.join(".small-cache")).unwrap();
        // A directory symlink inside the workspace is followed; one leaving it is not.
        put(&root, &format!("proof-dir/logs/{ID}/commands/{FILE}"), LONG);
        std::fs::create_dir(root.join(".small-command-proofs")).unwrap();
        std::os::unix::fs::symlink("../proof-dir/logs", root.join(".small-command-proofs/logs"))
            .unwrap();
        assert_eq!(codes(&root, &c), Vec::<String>::new());
        put(
            tmp.path(),
            &format!("outside/logs/{ID}/commands/{FILE}"),
            LONG,
        );
        std::fs::remove_file(root.join(".small-command-proofs/logs")).unwrap();
        std::os::unix::fs::symlink(
            tmp.path().join("outside/logs"),
            root.join(".small-command-proofs/logs"),
        )
        .unwrap();
        assert!(messages(&root, &c).contains("outside the workspace"));
    }

    #[test]
    fn refs_outside_the_supported_forms_are_never_read() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        put(root, "secret.txt", LONG);
        for bad in ["../secret.txt", "/etc/passwd", ".small-cache/../secret.txt"] {
            let mut c = claim(LONG, true);
            c.command_ref = Some(bad.to_string());
            assert_eq!(codes(root, &c), ["PROOF"], "{bad}");
            assert!(messages(root, &c).contains("needs command_sha256"), "{bad}");
            c.marker = None;
            assert_eq!(
                codes(root, &c),
                Vec::<String>::new(),
                "{bad}: not a proof ref"
            );
        }
    }

    #[test]
    fn a_marked_display_must_be_the_summarizers_and_named_for_its_instant() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        put(root, &cache_ref(), LONG);
        let mut c = claim(LONG, true);
        c.summary = Some(String::from_utf8(command::legacy_summary(LONG)).unwrap());
        assert!(messages(root, &c).contains("command_summary is not the summarizer's"));
        let mut c = claim(LONG, true);
        c.command = Some("echo".into());
        assert!(messages(root, &c).contains("command is not"));
        let mut c = claim(LONG, true);
        c.timestamp = Some("2026-03-10T10:01:00.2Z".into());
        assert!(messages(root, &c).contains("not the entry's timestamp"));
        let mut c = claim(LONG, true);
        c.replay_id = Some("f".repeat(64));
        assert!(messages(root, &c).contains("another replayId"));
        let mut c = claim(LONG, true);
        c.marker = Some(false);
        assert!(messages(root, &c).contains("unsupported command_summary_version"));
        // A short command with the marker added needs its proof too.
        let short = claim(b"echo ok", true);
        assert_eq!(codes(root, &short), ["PROOF"]);
    }

    #[test]
    fn an_old_display_cut_inside_a_local_url_is_proven_with_the_old_summarizer() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let cmd = format!(
            "echo {} --target http://127.0.0.1:8787/x/y/z",
            "c".repeat(171)
        );
        let old = String::from_utf8(command::legacy_summary(cmd.as_bytes())).unwrap();
        assert!(old.ends_with("http://127...."), "{old}");
        let mut c = claim(cmd.as_bytes(), false);
        c.summary = Some(old.clone());
        c.command = Some(old);
        assert_eq!(codes(root, &c), ["PROOF"], "proof required");
        put(root, &cache_ref(), cmd.as_bytes());
        let r = check_claims(root, std::slice::from_ref(&c));
        assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
        assert_eq!(r.proven_displays, [0]);
        let mut link = vec![Diagnostic::error("LINK", "x").with_path("/entries/0/command")];
        drop_proven_display_links(&mut link, &r);
        assert!(link.is_empty());
    }

    #[test]
    fn a_display_with_a_local_literal_must_be_proven_and_is_read_through_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let cmd = b"node -e 'fetch(`http://127.0.0.1:${port}/health`)'";
        let c = claim(cmd, false);
        assert!(command::has_local_literal(c.summary.as_deref().unwrap()));
        assert_eq!(
            codes(root, &c),
            ["PROOF"],
            "an unmarked literal needs its proof"
        );
        put(root, &cache_ref(), cmd);
        let r = check_claims(root, std::slice::from_ref(&c));
        assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
        assert_eq!(r.proven_displays, [0]);
        // Outside backticks the same URL is an external link of the proven command.
        let bare = b"curl http://127.0.0.1:${port}/health `http://localhost:1`";
        let c = claim(bare, false);
        put(root, &cache_ref(), bare);
        assert_eq!(codes(root, &c), ["LINK"]);
        // A forged display is not the older summarizer's.
        let mut c = claim(cmd, false);
        put(root, &cache_ref(), cmd);
        c.summary = Some("fetch(`http://127.0.0.1:${port}/x`)".into());
        assert!(messages(root, &c).contains("command_summary is not"));
    }

    #[test]
    fn a_claim_is_made_by_a_literal_alone() {
        let yaml = "task_id: t\ncommand_summary: \"curl `http://localhost:${port}`\"\n";
        let doc = parse_str(yaml, &Limits::default()).unwrap();
        let c = CommandClaim::of(0, &doc.root).unwrap();
        assert_eq!(codes(Path::new("/nonexistent"), &c), ["PROOF"]);
        let plain = parse_str("task_id: t\ncommand_summary: curl x\n", &Limits::default());
        assert!(CommandClaim::of(0, &plain.unwrap().root).is_none());
    }

    fn dry_run(cmd: &[u8], notes: &str) -> CommandClaim {
        let mut c = claim(cmd, false);
        c.dry_run_notes = Some(notes.to_string());
        c
    }

    #[test]
    fn the_dry_run_notes_wrapping_a_proven_display_are_exempt() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let cmd = b"node -e \"fetch(`http://127.0.0.1:${port}/x`)\"";
        put(root, &cache_ref(), cmd);
        let shown = command::summarize(cmd);
        let go = format!("apply --dry-run (cmd: {shown:?})");
        let r = check_claims(root, &[dry_run(cmd, &go)]);
        assert_eq!(r.wrapped_notes, [0], "{go}");
        let mut link = vec![
            Diagnostic::error("LINK", "x").with_path("/entries/0/notes"),
            Diagnostic::error("LINK", "x").with_path("/entries/0/evidence"),
        ];
        drop_proven_display_links(&mut link, &r);
        assert_eq!(link.len(), 1, "only the notes are exempt");
        for other in [
            format!("apply --dry-run (cmd: {shown:?}) http://evil.example"),
            format!("apply --dry-run (cmd: {:?})", format!("{shown} ")),
            format!("apply --dry-run (cmd: {shown})"),
        ] {
            let r = check_claims(root, &[dry_run(cmd, &other)]);
            assert!(r.wrapped_notes.is_empty(), "{other}");
        }
        // Not proven: nothing is exempt.
        std::fs::remove_file(root.join(cache_ref())).unwrap();
        let r = check_claims(root, &[dry_run(cmd, &go)]);
        assert!(r.wrapped_notes.is_empty());
    }

    #[test]
    fn go_quoted_strings_are_read_back() {
        for (q, want) in [
            (r#""a \"b\" \\ c""#, Some("a \"b\" \\ c")),
            (r#""\x41\u00e9\U0001F600\t""#, Some("A\u{e9}\u{1F600}\t")),
            (r#""caf\u00e9""#, Some("caf\u{e9}")),
            (r#""unterminated"#, None),
            (r#""bad \q""#, None),
            (r#""raw " quote""#, None),
            (r#""\xff""#, None),
            (r#""\u12""#, None),
        ] {
            assert_eq!(unquote(q).as_deref(), want, "{q}");
        }
    }
}
