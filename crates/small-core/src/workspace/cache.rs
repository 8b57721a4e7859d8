//! The files of `.small-cache/`: a JSON body sealed by its BLAKE3 hash on the line before
//! it, so that a damaged or hand-edited file is recognised and ignored. The cache only ever
//! saves time: writing it is best effort, and a file that cannot be read is no cache.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Writes `json` as `dir/file`, sealed, through a temporary file and a rename. Creates `dir`
/// (with a `.gitignore` that ignores everything) when it is missing; never writes through a
/// symbolic link or anything else standing where the directory should be.
pub(crate) fn write_sealed(dir: &Path, file: &str, json: &str) {
    let text = format!("{}\n{json}", blake3::hash(json.as_bytes()).to_hex());
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return,
        Err(_) => {
            if std::fs::create_dir(dir).is_err() {
                return;
            }
            let _ = std::fs::write(
                dir.join(".gitignore"),
                "# the gates' cache; safe to delete\n*\n",
            );
        }
    }
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if tmp.write_all(text.as_bytes()).is_ok() {
        let _ = tmp.persist(dir.join(file));
    }
}

/// The JSON body of `dir/file` when the file is a regular file of at most `max` bytes whose
/// seal matches; `None` otherwise.
pub(crate) fn read_sealed(dir: &Path, file: &str, max: u64) -> Option<String> {
    let path = dir.join(file);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    // Through fsio: no link, no FIFO swapped in after the check above, bounded.
    let mut text = crate::fsio::read_string_bounded(&path, max).ok()?;
    let (hash, json) = text.split_once('\n')?;
    if blake3::hash(json.as_bytes()).to_hex().as_str() != hash {
        return None;
    }
    let at = hash.len() + 1;
    Some(text.split_off(at))
}

/// The key of what a cache's results depend on besides the bytes they vouch for: the cache's
/// name and format, the tool's version and the running binary (another build may check
/// differently), then whatever the caller adds with [`ContextKey::put`].
pub(crate) struct ContextKey(blake3::Hasher);

impl ContextKey {
    /// Start a key for the cache `name` (with its format version).
    pub fn new(name: &str) -> ContextKey {
        let mut key = ContextKey(blake3::Hasher::new());
        key.put(name);
        key.put(crate::spec::consts::TOOL_VERSION);
        let exe = std::env::current_exe()
            .ok()
            .and_then(|p| std::fs::metadata(&p).ok().map(|m| (p, m)));
        match exe {
            Some((p, m)) => {
                key.put(&p.display().to_string());
                key.put(&m.len().to_string());
                key.put(&format!("{:?}", m.modified().ok()));
            }
            None => key.put("unknown binary"),
        }
        key
    }

    /// Add one part (length-prefixed, so parts cannot run into each other).
    pub fn put(&mut self, s: &str) {
        self.0.update(&(s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
    }

    /// The key, in hex.
    pub fn finish(self) -> String {
        self.0.finalize().to_hex().to_string()
    }
}

/// Entries changed less than this long before a proof walk make a tree "racy": it is not
/// cached (coarse file system clocks tick in milliseconds; this is far above a tick).
pub const RACY_MARGIN: Duration = Duration::from_millis(200);

/// How long a writer waits at most for the file system clock to move on.
const CLOCK_WAIT: Duration = Duration::from_millis(100);

/// Wait until the clock the kernel stamps changes with reads later than `newest`: from then
/// on every change gets a later time than any the writer made. `false` when it does not
/// within [`CLOCK_WAIT`] (a time in the future).
pub(crate) fn wait_past(newest: i128) -> bool {
    let deadline = Instant::now() + CLOCK_WAIT;
    loop {
        match stamp_clock() {
            Some(now) if now > newest => return true,
            Some(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            _ => return false,
        }
    }
}

/// The kernel's coarse real-time clock, which stamps file changes, in nanoseconds.
#[cfg(target_os = "linux")]
pub(crate) fn stamp_clock() -> Option<i128> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    (r == 0).then(|| i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec))
}

/// Elsewhere the clock that stamps changes is not known: nothing is carried.
#[cfg(not(target_os = "linux"))]
pub(crate) fn stamp_clock() -> Option<i128> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_body_reads_back_and_a_changed_byte_is_no_cache() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".small-cache");
        write_sealed(&dir, "x.v1", r#"{"a":1}"#);
        assert!(dir.join(".gitignore").is_file());
        assert_eq!(
            read_sealed(&dir, "x.v1", 1 << 20).as_deref(),
            Some(r#"{"a":1}"#)
        );
        let p = dir.join("x.v1");
        let changed = std::fs::read_to_string(&p).unwrap().replace("1}", "2}");
        std::fs::write(&p, changed).unwrap();
        assert_eq!(read_sealed(&dir, "x.v1", 1 << 20), None);
        assert_eq!(read_sealed(&dir, "missing", 1 << 20), None);
        write_sealed(&dir, "x.v1", r#"{"a":1}"#);
        assert_eq!(read_sealed(&dir, "x.v1", 4), None, "over the size limit");
    }

    #[test]
    fn never_writes_through_a_file_standing_for_the_directory() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".small-cache");
        std::fs::write(&dir, "not a directory").unwrap();
        write_sealed(&dir, "x.v1", "{}");
        assert_eq!(std::fs::read_to_string(&dir).unwrap(), "not a directory");
    }

    #[test]
    fn context_keys_tell_their_parts_apart() {
        let key = |name: &str, parts: &[&str]| {
            let mut k = super::ContextKey::new(name);
            for p in parts {
                k.put(p);
            }
            k.finish()
        };
        assert_eq!(key("a v1", &["x", "y"]), key("a v1", &["x", "y"]));
        assert_ne!(key("a v1", &["x"]), key("b v1", &["x"]));
        assert_ne!(key("a v1", &["ab", "c"]), key("a v1", &["a", "bc"]));
        assert_ne!(key("a v1", &[]), key("a v1", &[""]));
    }
}
