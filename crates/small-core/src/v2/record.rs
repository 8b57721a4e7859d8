//! Writing 2.0.0 records: their bytes (the reference's member order and encoding, sealed
//! with their digest), fresh identities and timestamps, and publishing a record so that it
//! never appears torn and is never replaced.
//!
//! A record is compact JSON plus a final newline; `digest` (last member) is the SHA-256 of
//! the record's compact JSON without it. The migration and every writing operation build
//! their records here.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::v2::gojson::{self, GoValue};
use crate::v2::json::sha256_hex;
use crate::v2::load::{MAX_RECORD_BYTES, PROFILE_VERSION};

/// A record that cannot be sealed (over the 1 MiB limit).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("record exceeds {MAX_RECORD_BYTES}-byte limit")]
pub struct TooLarge(pub usize);

/// Members of a JSON object, in order.
pub type Members = Vec<(String, GoValue)>;

fn checked(mut text: String) -> Result<Vec<u8>, TooLarge> {
    if text.len() as u64 > MAX_RECORD_BYTES {
        return Err(TooLarge(text.len()));
    }
    text.push('\n');
    Ok(text.into_bytes())
}

/// The record's bytes with its `digest` member appended, and that digest.
///
/// The compact JSON without the digest is encoded once: the sealed record is those bytes
/// with `,"digest":"…"` put before the closing brace (a digest is hex, so it needs no
/// escaping).
pub fn seal(members: Members) -> Result<(Vec<u8>, String), TooLarge> {
    let mut text = String::with_capacity(512);
    gojson::write_compact(&mut text, &GoValue::Obj(members));
    let digest = sha256_hex(text.as_bytes());
    text.pop(); // the closing brace
    if text.len() > 1 {
        text.push(',');
    }
    text.push_str("\"digest\":\"");
    text.push_str(&digest);
    text.push_str("\"}");
    Ok((checked(text)?, digest))
}

/// A record without a digest member (`profile.json`, a manifest): its bytes, and the
/// SHA-256 of its compact JSON.
pub fn unsealed(members: Members) -> Result<(Vec<u8>, String), TooLarge> {
    let body = gojson::compact(&GoValue::Obj(members));
    let digest = sha256_hex(body.as_bytes());
    Ok((checked(body)?, digest))
}

/// The frontier of a set of events given as (event id, digest): SHA-256 over the sorted
/// `id:digest` lines.
pub fn frontier_of(events: &[(String, String)]) -> String {
    let mut lines: Vec<String> = events.iter().map(|(id, d)| format!("{id}:{d}")).collect();
    lines.sort();
    lines.dedup();
    sha256_hex(lines.join("\n").as_bytes())
}

/// A fresh identity: `prefix_` and 32 random hex digits (the reference's form).
pub fn new_id(prefix: &str) -> String {
    #[cfg(test)]
    if let Some(id) = fixed::id(prefix) {
        return id;
    }
    let mut buf = [0u8; 16];
    if getrandom::fill(&mut buf).is_err() {
        // No entropy source: fall back on time, process and a counter (still unique here).
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let seed = format!(
            "{:?}{}{}",
            std::time::SystemTime::now(),
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let h = sha256_hex(seed.as_bytes());
        return format!("{prefix}_{}", &h[..32]);
    }
    format!("{prefix}_{}", crate::v2::json::hex_lower(&buf))
}

/// Now, as Go's `time.RFC3339Nano` prints a UTC time (fraction without trailing zeros).
pub fn now() -> String {
    #[cfg(test)]
    if let Some(t) = fixed::now() {
        return rfc3339_nano(t);
    }
    rfc3339_nano(time::OffsetDateTime::now_utc())
}

/// Identities and times a test fixes for its thread, so that the same operation on two
/// copies of a tree writes the same bytes.
#[cfg(test)]
pub(crate) mod fixed {
    use std::cell::Cell;

    thread_local! {
        /// The next identity number and the next time (seconds since the epoch).
        static NEXT: Cell<Option<(u64, i64)>> = const { Cell::new(None) };
    }

    /// From now on in this thread, identities count from `id` and times from `secs`, one
    /// second apart; `None` turns it off.
    pub(crate) fn set(start: Option<(u64, i64)>) {
        NEXT.with(|n| n.set(start));
    }

    pub(super) fn id(prefix: &str) -> Option<String> {
        NEXT.with(|n| {
            let (id, t) = n.get()?;
            n.set(Some((id + 1, t)));
            Some(format!("{prefix}_{id:032x}"))
        })
    }

    pub(super) fn now() -> Option<time::OffsetDateTime> {
        NEXT.with(|n| {
            let (id, t) = n.get()?;
            n.set(Some((id, t + 1)));
            time::OffsetDateTime::from_unix_timestamp(t).ok()
        })
    }
}

/// `t` (in UTC) as Go's `time.RFC3339Nano`.
pub fn rfc3339_nano(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let nanos = t.nanosecond();
    if nanos > 0 {
        let frac = format!("{nanos:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

/// The identity every record of a workspace carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ids {
    pub project_id: String,
    pub lineage_id: String,
}

/// An event before it is sealed. Empty strings and a zero task revision are left out, as
/// the reference leaves them out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventDraft {
    pub session_id: String,
    pub event_id: String,
    pub kind: String,
    pub sequence: i64,
    pub previous_event: String,
    /// Sorted, without `previous_event`.
    pub parents: Vec<String>,
    pub occurred_at: String,
    pub task_id: String,
    pub task_revision: i64,
    pub policy_revision: String,
    pub source_digest: String,
    /// Payload members (sorted by key when written, as Go prints a map).
    pub payload: Members,
}

fn push_str(m: &mut Members, key: &str, v: &str) {
    if !v.is_empty() {
        m.push((key.into(), GoValue::str(v)));
    }
}

impl EventDraft {
    /// The members in the reference's order (without `digest`).
    pub fn members(&self, ids: &Ids) -> Members {
        let mut m = self.head(ids);
        m.push(("payload".into(), GoValue::map(self.payload.clone())));
        m
    }

    /// [`EventDraft::members`], moving the payload instead of copying it.
    pub fn into_members(mut self, ids: &Ids) -> Members {
        let payload = std::mem::take(&mut self.payload);
        let mut m = self.head(ids);
        m.push(("payload".into(), GoValue::map(payload)));
        m
    }

    /// Every member before the payload.
    fn head(&self, ids: &Ids) -> Members {
        let s = GoValue::str;
        let mut m: Members = vec![
            ("small_version".into(), s(PROFILE_VERSION)),
            ("project_id".into(), s(&ids.project_id)),
            ("lineage_id".into(), s(&ids.lineage_id)),
            ("session_id".into(), s(&self.session_id)),
            ("event_id".into(), s(&self.event_id)),
            ("kind".into(), s(&self.kind)),
            ("sequence".into(), GoValue::Int(self.sequence)),
        ];
        push_str(&mut m, "previous_event", &self.previous_event);
        if !self.parents.is_empty() {
            m.push((
                "parents".into(),
                GoValue::Arr(self.parents.iter().map(|p| s(p)).collect()),
            ));
        }
        m.push(("occurred_at".into(), s(&self.occurred_at)));
        push_str(&mut m, "task_id", &self.task_id);
        if self.task_revision != 0 {
            m.push(("task_revision".into(), GoValue::Int(self.task_revision)));
        }
        push_str(&mut m, "policy_revision", &self.policy_revision);
        push_str(&mut m, "source_digest", &self.source_digest);
        m
    }

    /// Where the event lives, relative to `.small/`.
    pub fn rel_path(&self) -> String {
        format!("events/{}/{}.json", self.session_id, self.event_id)
    }
}

/// A session record before it is sealed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionDraft {
    pub session_id: String,
    pub label: String,
    pub actor_label: String,
    pub model_label: String,
    pub parent_session_id: String,
    pub from_handoff: String,
    pub observed_frontier: String,
    pub tool_version: String,
    pub created_at: String,
}

impl SessionDraft {
    pub fn members(&self, ids: &Ids) -> Members {
        let s = GoValue::str;
        let mut m: Members = vec![
            ("small_version".into(), s(PROFILE_VERSION)),
            ("project_id".into(), s(&ids.project_id)),
            ("lineage_id".into(), s(&ids.lineage_id)),
            ("session_id".into(), s(&self.session_id)),
        ];
        push_str(&mut m, "label", &self.label);
        push_str(&mut m, "actor_label", &self.actor_label);
        push_str(&mut m, "model_label", &self.model_label);
        push_str(&mut m, "parent_session_id", &self.parent_session_id);
        push_str(&mut m, "from_handoff", &self.from_handoff);
        m.push(("observed_frontier".into(), s(&self.observed_frontier)));
        m.push(("tool_version".into(), s(&self.tool_version)));
        m.push(("created_at".into(), s(&self.created_at)));
        m
    }

    pub fn rel_path(&self) -> String {
        format!("sessions/{}.json", self.session_id)
    }
}

/// An evidence receipt before it is sealed. It is stored under its digest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReceiptDraft {
    pub receipt_id: String,
    pub strength: String,
    pub availability: String,
    /// Producer members (sorted when written); none = left out.
    pub producer: Members,
    pub task_id: String,
    pub task_revision: i64,
    pub policy_revision: String,
    pub source_digest: String,
    pub validator: String,
    pub outcome: String,
    pub artifact_path: String,
    pub artifact_digest: String,
    pub artifact_size: i64,
    /// Metadata members (sorted when written); none = left out.
    pub metadata: Members,
}

impl ReceiptDraft {
    pub fn members(&self, project_id: &str) -> Members {
        let s = GoValue::str;
        let mut m: Members = vec![
            ("small_version".into(), s(PROFILE_VERSION)),
            ("project_id".into(), s(project_id)),
            ("receipt_id".into(), s(&self.receipt_id)),
            ("strength".into(), s(&self.strength)),
            ("availability".into(), s(&self.availability)),
        ];
        if !self.producer.is_empty() {
            m.push(("producer".into(), GoValue::map(self.producer.clone())));
        }
        push_str(&mut m, "task_id", &self.task_id);
        if self.task_revision != 0 {
            m.push(("task_revision".into(), GoValue::Int(self.task_revision)));
        }
        push_str(&mut m, "policy_revision", &self.policy_revision);
        push_str(&mut m, "source_digest", &self.source_digest);
        push_str(&mut m, "validator", &self.validator);
        push_str(&mut m, "outcome", &self.outcome);
        push_str(&mut m, "artifact_path", &self.artifact_path);
        push_str(&mut m, "artifact_digest", &self.artifact_digest);
        if self.artifact_size != 0 {
            m.push(("artifact_size".into(), GoValue::Int(self.artifact_size)));
        }
        if !self.metadata.is_empty() {
            m.push(("metadata".into(), GoValue::map(self.metadata.clone())));
        }
        m
    }
}

/// Where staged record bytes wait before they are linked into place (cleaned by every
/// writer that takes the workspace lock).
pub const STAGING: &str = ".small-cache/tmp";

/// Test hook: sleep this many milliseconds after staging a record, before publishing it
/// (so that a crash test can kill the writer between the two).
pub const SLOW_PUBLISH_ENV: &str = "SMALL_TEST_SLOW_PUBLISH_MS";

/// What [`publish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// The record is new.
    Created,
    /// The same bytes were already there (idempotent).
    Present,
}

/// Why [`publish`] failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("immutable record {0} already holds different bytes")]
    Different(PathBuf),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> PublishError + 'a {
    move |source| PublishError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

fn sync_dir(dir: &Path) -> Result<(), PublishError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("sync directory", dir))
}

/// Create the directories of `rel` under `small_dir`, refusing to pass through a symlink or
/// a non-directory (a record is never written outside `.small/`).
fn make_dirs(small_dir: &Path, rel: &str) -> Result<PathBuf, PublishError> {
    let mut dir = small_dir.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        if part.is_empty() || *part == "." || *part == ".." {
            return Err(PublishError::Io {
                what: "refuse path",
                path: small_dir.join(rel),
                source: std::io::Error::other("not a plain relative path"),
            });
        }
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(PublishError::Io {
                    what: "refuse",
                    path: dir.clone(),
                    source: std::io::Error::other("a symlink or a file where a directory belongs"),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&dir).map_err(io("create directory", &dir))?;
                if let Some(p) = dir.parent() {
                    sync_dir(p)?;
                }
            }
            Err(e) => return Err(io("read", &dir)(e)),
        }
    }
    Ok(dir)
}

/// Publish `bytes` as the immutable file `rel` under `small_dir` (`root/.small`): staged in
/// [`STAGING`], fsynced, then hard-linked into place (an exclusive create: an existing file
/// is never replaced), the staged name removed and the directory fsynced. A reader sees the
/// whole record or none. Identical bytes already in place are [`Published::Present`];
/// different ones are refused. The caller holds the workspace lock.
pub fn publish(
    root: &Path,
    small_dir: &Path,
    rel: &str,
    bytes: &[u8],
) -> Result<Published, PublishError> {
    let dir = make_dirs(small_dir, rel)?;
    let target = small_dir.join(rel);
    if let Some(found) = existing(&target, bytes.len())? {
        return if found == bytes {
            Ok(Published::Present)
        } else {
            Err(PublishError::Different(target))
        };
    }
    let staging = root.join(STAGING);
    std::fs::create_dir_all(&staging).map_err(io("create directory", &staging))?;
    let tmp = staging.join(format!(".v2-record.small-tmp-{}", &new_id("t")[2..]));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io("write", &tmp)(e));
    }
    if let Some(ms) = std::env::var(SLOW_PUBLISH_ENV)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let linked = std::fs::hard_link(&tmp, &target);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return match existing(&target, bytes.len())? {
                Some(found) if found == bytes => Ok(Published::Present),
                _ => Err(PublishError::Different(target)),
            };
        }
        Err(e) => return Err(io("publish", &target)(e)),
    }
    sync_dir(&dir)?;
    Ok(Published::Created)
}

/// The bytes of an existing record, read up to one byte more than `len` (enough to tell
/// whether they are the same); a symlink or non-file is an error.
fn existing(path: &Path, len: usize) -> Result<Option<Vec<u8>>, PublishError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(PublishError::Different(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path)(e)),
    }
    use std::io::Read;
    let f = crate::fsio::open_read(path).map_err(io("read", path))?;
    let mut data = Vec::new();
    f.take(len as u64 + 1)
        .read_to_end(&mut data)
        .map_err(io("read", path))?;
    Ok(Some(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_like_go() {
        let t = time::macros::datetime!(2026-11-26 13:33:38.525805450 UTC);
        assert_eq!(rfc3339_nano(t), "2026-11-26T13:33:38.52580545Z");
        let t = time::macros::datetime!(2026-01-02 03:04:05 UTC);
        assert_eq!(rfc3339_nano(t), "2026-01-02T03:04:05Z");
    }

    #[test]
    fn a_sealed_record_is_its_members_then_the_digest_of_them() {
        for members in [
            vec![],
            vec![("a".to_string(), GoValue::Int(1))],
            vec![
                ("k".to_string(), GoValue::str("<x>")),
                (
                    "p".to_string(),
                    GoValue::map(vec![("z".into(), GoValue::Null)]),
                ),
            ],
        ] {
            let body = gojson::compact(&GoValue::Obj(members.clone()));
            let digest = sha256_hex(body.as_bytes());
            let mut whole = members.clone();
            whole.push(("digest".into(), GoValue::str(&digest)));
            let expected = format!("{}\n", gojson::compact(&GoValue::Obj(whole)));
            let (bytes, d) = seal(members).unwrap();
            assert_eq!(d, digest);
            assert_eq!(String::from_utf8(bytes).unwrap(), expected);
        }
    }

    #[test]
    fn ids_are_random_and_shaped() {
        let a = new_id("event");
        let b = new_id("event");
        assert_ne!(a, b);
        assert_eq!(a.len(), "event_".len() + 32);
        assert!(a[6..].bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn publish_is_exclusive_and_idempotent() {
        let d = tempfile::tempdir().unwrap();
        let small = d.path().join(".small");
        std::fs::create_dir(&small).unwrap();
        let rel = "events/s/e.json";
        assert_eq!(
            publish(d.path(), &small, rel, b"{}\n").unwrap(),
            Published::Created
        );
        assert_eq!(
            publish(d.path(), &small, rel, b"{}\n").unwrap(),
            Published::Present
        );
        assert!(matches!(
            publish(d.path(), &small, rel, b"{\"a\":1}\n"),
            Err(PublishError::Different(_))
        ));
        assert_eq!(std::fs::read(small.join(rel)).unwrap(), b"{}\n");
        // Nothing staged is left behind.
        let left: Vec<_> = std::fs::read_dir(d.path().join(STAGING))
            .unwrap()
            .flatten()
            .collect();
        assert!(left.is_empty());
    }

    #[test]
    fn publish_refuses_a_symlinked_directory() {
        let d = tempfile::tempdir().unwrap();
        let small = d.path().join(".small");
        std::fs::create_dir_all(small.join("x")).unwrap();
        std::os::unix::fs::symlink(d.path(), small.join("events")).unwrap();
        assert!(publish(d.path(), &small, "events/s/e.json", b"{}\n").is_err());
        assert!(!d.path().join("s").exists());
    }
}
