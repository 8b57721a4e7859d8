//! Workspace transactions: the one way `small` changes files under `.small/`.
//!
//! Every command that writes workspace state does so through a [`Transaction`]:
//!
//! ```text
//! let root = std::path::Path::new("."); // the directory that contains `.small/`
//! let mut txn = Transaction::begin(root)?; // exclusive workspace lock (waits, with a timeout)
//! let plan = txn.read_string(".small/plan.small.yml")?; // staged content if written, else disk
//! txn.write(".small/plan.small.yml", plan.replace("pending", "completed"));
//! txn.append(".small/progress.small.yml", b"  - task_id: task-1\n".to_vec())?;
//! let report = txn.commit()?; // every staged change, durably, or none
//! ```
//!
//! Progress entries are appended with `txn.append_progress(..)` (the progress writer of `authoring`),
//! which checks the new entry against the last one and serialises it.
//!
//! # Guarantees
//!
//! * **One writer at a time.** `begin` takes an exclusive advisory lock (`flock`/`LockFileEx`
//!   via `fs4`) on `.small-cache/lock`, outside `.small/`, so the strict layout rule (S4) keeps
//!   holding. The lock is released when the transaction is committed or dropped, and by the
//!   operating system when the process dies, so a crashed `small` never leaves a stale lock.
//!   Waiting is bounded: [`DEFAULT_LOCK_TIMEOUT`], or `SMALL_LOCK_TIMEOUT` (seconds, or a
//!   duration such as `90s` or `2m`).
//! * **Files are old or new, never torn.** A whole-file write goes to a temporary file in
//!   `.small-cache/tmp/` (never inside `.small/`), which is written, fsynced, renamed over the
//!   target, after which the target directory is fsynced. An append writes only the new bytes
//!   at the end of the file and fsyncs them.
//! * **A single append** (the common `progress add` commit) first overwrites an intent note,
//!   `.small-cache/append.note` (file, pre-append length, bytes, checksum, pending/done),
//!   and syncs it; then appends and syncs the bytes; then marks the note done. The next
//!   transaction re-applies a pending note whose file is between its pre-append length and
//!   the end of the append (a torn or missing tail): cut back, write again. Two data syncs,
//!   no rename. See `AppendNote` for why a stale or damaged note is harmless.
//! * **All or nothing across files.** When a commit touches more than one file, or appends
//!   alongside other changes, a redo journal (`.small-cache/txn.journal`) holding every staged change is written
//!   atomically first; its appearance is the commit point. The changes are then applied and the
//!   journal removed. If the process dies part-way, the next transaction (or [`recover`])
//!   finds the journal and re-applies it: whole-file writes are simply written again, and each
//!   append first truncates the file back to the length it had before the append (recorded in
//!   the journal), so a torn or half-applied tail is repaired exactly. A journal whose checksum
//!   does not match was never committed and is discarded (nothing had been applied yet).
//!   A commit of one whole-file write needs no journal: the rename is the commit point.
//! * **Moves too.** Renames staged with [`Transaction::stage_move`] (the runtime-layout repair
//!   moving legacy directories out of `.small/`) go into the same journal and are applied
//!   first; each is redone on recovery unless its source is already gone, so a crash mid-move
//!   is finished by the next transaction, and a crash before the journal moves nothing.
//!
//! Readers need no lock: renames are atomic, and an append in flight only ever adds bytes
//! after the last complete entry. A reader that must not see an append in flight can hold
//! [`read_lock`]; one that wants an interrupted commit finished first calls [`recover`].

use crate::spec::consts::ArtifactKind;
use crate::workspace::carry::AppendCarry;
use crate::workspace::error::code;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::fsio;
use crate::spec::consts::{CACHE_DIR, SMALL_DIR};

/// Largest redo journal recovery reads (it holds whole files, each at most
/// [`fsio::MAX_READ_BYTES`]); a longer one is refused rather than read into memory.
pub const MAX_JOURNAL_BYTES: u64 = 4 * fsio::MAX_READ_BYTES;

/// How long `begin` waits for another `small` process to finish before giving up.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);
/// Environment variable overriding the lock wait, in seconds (fractions allowed).
pub const LOCK_TIMEOUT_ENV: &str = "SMALL_LOCK_TIMEOUT";
/// Lock file, relative to the workspace root.
pub const LOCK_FILE: &str = ".small-cache/lock";
/// Redo journal, relative to the workspace root.
pub const JOURNAL_FILE: &str = ".small-cache/txn.journal";
/// Intent note of single-append commits, relative to the workspace root.
pub const APPEND_NOTE_FILE: &str = ".small-cache/append.note";
/// Staging directory for temporary files, relative to the workspace root.
pub const STAGING_DIR: &str = ".small-cache/tmp";

/// Test hook: when set to a number of milliseconds, commits sleep that long between their
/// steps (journal written, each file applied), so crash tests can kill a writer mid-commit.
/// Unset in normal use; the crash tests also run without it.
pub const SLOW_COMMIT_ENV: &str = "SMALL_TEST_SLOW_COMMIT_MS";

/// Test hook: when set (non-empty), a commit panics at its first step (after the journal or
/// append note is written; before the rename of a single-file commit), so a test can show
/// that a panic mid-write is reported as an internal error and leaves the workspace whole.
/// Unset in normal use.
pub const PANIC_IN_COMMIT_ENV: &str = "SMALL_TEST_PANIC_IN_COMMIT";

/// What can go wrong in a transaction.
#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    #[error("no SMALL workspace at {0} (there is no .small/ directory; run `small init` first)")]
    NoWorkspace(PathBuf),
    #[error(
        "the workspace is locked by another small process ({lock}); gave up after {waited:.1?}. \
         Wait for it to finish, or raise the wait with {env}=<seconds>. \
         (A crashed process releases its lock, so the lock file itself never needs deleting.)"
    )]
    LockTimeout {
        lock: PathBuf,
        waited: Duration,
        env: &'static str,
    },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// The workspace's state refuses the operation (a code from
    /// [`crate::workspace::error::code`], a message, a help line).
    #[error("{}", .0.message)]
    Invalid(Box<crate::diag::Diagnostic>),
}

impl TxnError {
    /// A refusal with a code and a message (add help with [`TxnError::with_help`]).
    pub fn invalid(code: &str, message: impl Into<String>) -> Self {
        TxnError::Invalid(Box::new(crate::diag::Diagnostic::error(code, message)))
    }

    /// Add a help line to a refusal (other errors are returned as they are).
    pub fn with_help(self, help: impl Into<String>) -> Self {
        match self {
            TxnError::Invalid(d) => TxnError::Invalid(Box::new(d.with_help(help))),
            other => other,
        }
    }

    fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        TxnError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

pub type Result<T, E = TxnError> = std::result::Result<T, E>;

/// An append staged in a transaction.
#[derive(Debug, Clone)]
struct StagedAppend {
    /// File length when the append was staged (the lock keeps it stable).
    pre_len: u64,
    bytes: Vec<u8>,
}

/// An exclusive, all-or-nothing change to a workspace. See the module docs.
#[derive(Debug)]
pub struct Transaction {
    root: PathBuf,
    lock: File,
    writes: BTreeMap<String, Vec<u8>>,
    appends: BTreeMap<String, StagedAppend>,
    moves: Vec<StagedMove>,
    recovered: bool,
    /// How often each workspace-relative path was looked up on disk (read, stat or existence
    /// check) through this transaction: lets tests hold an operation to reading each file
    /// once. A mutex rather than a `Cell` so a transaction stays `Sync`.
    disk_reads: std::sync::Mutex<BTreeMap<String, usize>>,
}

/// A rename staged in a transaction (see [`Transaction::stage_move`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum StagedMove {
    /// Rename `from` to `to` (replacing a file at `to`).
    Rename { from: String, to: String },
    /// Remove `dir` if it is empty.
    RemoveEmptyDir(String),
}

/// What a commit changed (relative paths), for the "what changed" report commands print.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitReport {
    pub written: Vec<String>,
    pub appended: Vec<String>,
}

impl CommitReport {
    pub fn is_empty(&self) -> bool {
        self.written.is_empty() && self.appended.is_empty()
    }
}

impl Transaction {
    /// Lock the workspace at `root` (the directory containing `.small/`), waiting up to the
    /// configured timeout, and finish any commit a crashed process left behind.
    pub fn begin(root: impl AsRef<Path>) -> Result<Transaction> {
        Transaction::begin_with_timeout(root, lock_timeout_from_env())
    }

    /// Like [`Transaction::begin`] with an explicit lock wait.
    pub fn begin_with_timeout(root: impl AsRef<Path>, timeout: Duration) -> Result<Transaction> {
        let root = root.as_ref().to_path_buf();
        let small = root.join(SMALL_DIR);
        match fs::symlink_metadata(&small) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(TxnError::invalid(
                    code::REFUSED,
                    format!(
                        "{} is a symbolic link; small works only on a real .small/ directory \
                     (replace the link with the directory it points to)",
                        small.display()
                    ),
                ))
            }
            Ok(m) if m.is_dir() => {}
            _ => return Err(TxnError::NoWorkspace(root)),
        }
        let lock = acquire_lock(&root, timeout)?;
        let mut txn = Transaction {
            root,
            lock,
            writes: BTreeMap::new(),
            appends: BTreeMap::new(),
            moves: Vec::new(),
            recovered: false,
            disk_reads: Default::default(),
        };
        txn.recovered = recover_locked(&txn.root)?;
        cleanup_staging(&txn.root);
        Ok(txn)
    }

    /// The workspace root this transaction works on.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many times this transaction reached the disk for a workspace file (reads, stats
    /// and existence checks; staged content served from memory does not count).
    #[cfg(test)]
    pub fn disk_reads(&self) -> usize {
        self.disk_reads_by_path().values().sum()
    }

    /// [`Transaction::disk_reads`] per workspace-relative path.
    #[cfg(test)]
    pub fn disk_reads_by_path(&self) -> BTreeMap<String, usize> {
        self.disk_reads
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Count one disk lookup of `rel` (see [`Transaction::disk_reads`]).
    fn note_disk_read(&self, rel: &str) {
        let mut counts = self
            .disk_reads
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *counts.entry(rel.to_string()).or_default() += 1;
    }

    /// The content of `rel` as this transaction sees it: staged content (plus staged appends)
    /// if any, else what is on disk. `None` if the file does not exist.
    pub fn read(&self, rel: &str) -> Result<Option<Vec<u8>>> {
        check_rel(rel)?;
        let mut data = match self.writes.get(rel) {
            Some(b) => Some(b.clone()),
            None => {
                self.note_disk_read(rel);
                read_opt(&self.root.join(rel), fsio::MAX_READ_BYTES)?
            }
        };
        if let Some(app) = self.appends.get(rel) {
            let d = data.get_or_insert_with(Vec::new);
            // Exactly: a log read whole fills its buffer, and growing it by doubling would
            // hold twice the log.
            d.reserve_exact(app.bytes.len());
            d.extend_from_slice(&app.bytes);
        }
        Ok(data)
    }

    /// Like [`Transaction::read`], as UTF-8 text; a missing file is an error.
    pub fn read_string(&self, rel: &str) -> Result<String> {
        let bytes = self.read(rel)?.ok_or_else(|| {
            TxnError::io("read", &self.root.join(rel), io::ErrorKind::NotFound.into())
        })?;
        String::from_utf8(bytes)
            .map_err(|_| TxnError::invalid(code::UNEDITABLE, format!("{rel} is not valid UTF-8")))
    }

    /// Total length of `rel` as this transaction sees it (None if absent).
    pub fn len(&self, rel: &str) -> Result<Option<u64>> {
        check_rel(rel)?;
        if let Some(w) = self.writes.get(rel) {
            return Ok(Some(w.len() as u64));
        }
        self.note_disk_read(rel);
        let disk = fsio::regular_metadata(&self.root.join(rel))
            .map_err(|e| TxnError::io("stat", &self.root.join(rel), e))?
            .map(|m| m.len());
        Ok(match (disk, self.appends.get(rel)) {
            (Some(d), Some(a)) => Some(d + a.bytes.len() as u64),
            (d, _) => d,
        })
    }

    /// Up to the first `max` bytes of `rel` as this transaction sees it, without reading the
    /// rest of the file.
    pub fn read_head(&self, rel: &str, max: u64) -> Result<Option<Vec<u8>>> {
        check_rel(rel)?;
        if let Some(w) = self.writes.get(rel) {
            return Ok(Some(w[..w.len().min(max as usize)].to_vec()));
        }
        self.note_disk_read(rel);
        let path = self.root.join(rel);
        let mut f = match fsio::open_read(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(TxnError::io("open", &path, e)),
        };
        let mut buf = Vec::new();
        (&mut f)
            .take(max)
            .read_to_end(&mut buf)
            .map_err(|e| TxnError::io("read", &path, e))?;
        if let Some(a) = self.appends.get(rel) {
            let room = (max as usize).saturating_sub(buf.len());
            buf.extend_from_slice(&a.bytes[..a.bytes.len().min(room)]);
        }
        Ok(Some(buf))
    }

    /// Up to the last `max` bytes of `rel` as this transaction sees it, with the offset they
    /// start at, without reading the rest of the file.
    pub fn read_tail(&self, rel: &str, max: u64) -> Result<Option<(u64, Vec<u8>)>> {
        check_rel(rel)?;
        if let Some(w) = self.writes.get(rel) {
            let start = w.len().saturating_sub(max as usize);
            return Ok(Some((start as u64, w[start..].to_vec())));
        }
        self.note_disk_read(rel);
        let path = self.root.join(rel);
        let Some(meta) =
            fsio::regular_metadata(&path).map_err(|e| TxnError::io("stat", &path, e))?
        else {
            return Ok(None);
        };
        let staged: &[u8] = self
            .appends
            .get(rel)
            .map(|a| a.bytes.as_slice())
            .unwrap_or(&[]);
        if staged.len() as u64 >= max {
            let disk = meta.len();
            let cut = staged.len() - max as usize;
            return Ok(Some((disk + cut as u64, staged[cut..].to_vec())));
        }
        let (start, mut buf) = read_tail(&path, max - staged.len() as u64)?;
        buf.extend_from_slice(staged);
        Ok(Some((start, buf)))
    }

    /// What this transaction has staged for `rel`, without reading the file: its whole new
    /// content, or the bytes to add after the file's length when they were staged.
    pub fn staged(&self, rel: &str) -> Option<crate::workspace::StagedLog> {
        use crate::workspace::StagedLog;
        if let Some(w) = self.writes.get(rel) {
            return Some(StagedLog::Whole(w.clone()));
        }
        self.appends.get(rel).map(|a| StagedLog::Appended {
            disk_len: a.pre_len,
            bytes: a.bytes.clone(),
        })
    }

    /// Whether this transaction has staged a write or an append to `rel`.
    pub fn is_staged(&self, rel: &str) -> bool {
        self.writes.contains_key(rel) || self.appends.contains_key(rel)
    }

    /// Whether `rel` exists as this transaction sees it.
    pub fn exists(&self, rel: &str) -> bool {
        if self.is_staged(rel) {
            return true;
        }
        self.note_disk_read(rel);
        fs::symlink_metadata(self.root.join(rel)).is_ok()
    }

    /// Stage the whole new content of `rel`. Replaces earlier staged writes and appends.
    pub fn write(&mut self, rel: impl Into<String>, bytes: impl Into<Vec<u8>>) {
        let rel = rel.into();
        self.appends.remove(&rel);
        self.writes.insert(rel, bytes.into());
    }

    /// Stage bytes to add at the end of `rel` (which must exist, unless it was staged with
    /// [`Transaction::write`], in which case the bytes join the staged content).
    pub fn append(&mut self, rel: &str, bytes: Vec<u8>) -> Result<()> {
        check_rel(rel)?;
        if let Some(w) = self.writes.get_mut(rel) {
            w.extend_from_slice(&bytes);
            return Ok(());
        }
        if let Some(a) = self.appends.get_mut(rel) {
            a.bytes.extend_from_slice(&bytes);
            return Ok(());
        }
        self.note_disk_read(rel);
        let path = self.root.join(rel);
        let pre_len = fsio::regular_metadata(&path)
            .and_then(|m| m.ok_or_else(|| io::ErrorKind::NotFound.into()))
            .map_err(|e| TxnError::io("stat", &path, e))?
            .len();
        self.appends
            .insert(rel.to_string(), StagedAppend { pre_len, bytes });
        Ok(())
    }

    /// Drop whatever is staged for `rel` (write or append).
    pub fn discard(&mut self, rel: &str) {
        self.writes.remove(rel);
        self.appends.remove(rel);
    }

    /// Stage the rename of the file or directory `from` to `to` (both workspace-relative; a
    /// file at `to` is replaced, missing parents of `to` are created). Moves are applied at
    /// commit, in the order staged and before the writes, through the redo journal: a crash
    /// part-way is finished by the next transaction (a move whose `from` is gone is done).
    pub fn stage_move(&mut self, from: &str, to: &str) -> Result<()> {
        check_rel(from)?;
        check_rel(to)?;
        self.moves.push(StagedMove::Rename {
            from: from.to_string(),
            to: to.to_string(),
        });
        Ok(())
    }

    /// Stage the removal of the directory `rel` if it is empty by then (after the moves
    /// staged before it).
    pub fn stage_remove_empty_dir(&mut self, rel: &str) -> Result<()> {
        check_rel(rel)?;
        self.moves.push(StagedMove::RemoveEmptyDir(rel.to_string()));
        Ok(())
    }

    /// Whether anything is staged.
    pub fn is_dirty(&self) -> bool {
        !self.writes.is_empty() || !self.appends.is_empty() || !self.moves.is_empty()
    }

    /// Apply every staged change durably (see the module docs), then release the lock.
    pub fn commit(mut self) -> Result<CommitReport> {
        let report = CommitReport {
            written: self.writes.keys().cloned().collect(),
            appended: self.appends.keys().cloned().collect(),
        };
        if !self.is_dirty() {
            return Ok(report);
        }
        let writes = std::mem::take(&mut self.writes);
        let appends = std::mem::take(&mut self.appends);
        let moves = std::mem::take(&mut self.moves);
        if moves.is_empty() && writes.is_empty() && appends.len() == 1 {
            // One append: an intent note (fsynced before the append) is enough to repair a
            // torn tail; see `AppendNote`.
            for (rel, app) in &appends {
                let note = AppendNote {
                    rel: rel.clone(),
                    app: app.clone(),
                };
                note.write(&self.root)?;
                slow_point();
                // A check's proof of the progress log is carried across the append (see
                // `workspace::carry`); any other file is not.
                let path = self.root.join(rel);
                let is_log = *rel == ArtifactKind::Progress.rel_path();
                let carry = is_log
                    .then(|| AppendCarry::begin(&self.root.join(CACHE_DIR), &path, app.pre_len))
                    .flatten();
                apply_append(&self.root, rel, app)?;
                AppendNote::mark_done(&self.root);
                if let Some(carry) = carry {
                    carry.finish(&path, app.bytes.len() as u64);
                }
            }
            return Ok(report);
        }
        // Other commits may replace a file an earlier append note describes: make its
        // "done" mark durable first, so recovery can never mistake it for a torn append.
        AppendNote::settle(&self.root);
        if moves.is_empty() && appends.is_empty() && writes.len() == 1 {
            // One rename is atomic on its own: no journal needed.
            for (rel, bytes) in &writes {
                slow_point();
                write_via_staging(&self.root, rel, bytes)?;
            }
            return Ok(report);
        }
        let journal = Journal {
            writes,
            appends,
            moves,
        };
        let encoded = journal.encode();
        let jpath = self.root.join(JOURNAL_FILE);
        atomic_write(&jpath, &encoded)?;
        slow_point();
        journal.apply(&self.root)?;
        remove_journal(&self.root)?;
        Ok(report)
    }

    /// Drop every staged change and release the lock.
    #[cfg(test)]
    pub fn abort(self) {}
}

impl Drop for Transaction {
    fn drop(&mut self) {
        let _ = fs4::FileExt::unlock(&self.lock);
    }
}

/// Finish a commit that a crashed process left behind, taking the lock briefly. Returns
/// whether anything was repaired. Cheap when there is nothing to do (one `stat`).
pub fn recover(root: impl AsRef<Path>) -> Result<bool> {
    let root = root.as_ref();
    if !root.join(JOURNAL_FILE).exists() && !AppendNote::pending(root) {
        return Ok(false);
    }
    let txn = Transaction::begin(root)?;
    Ok(txn.recovered)
}

/// Replace the file at `path` with `bytes` atomically and durably: a temporary file in the
/// same directory is written and fsynced, renamed over `path`, and the directory is fsynced.
/// For files outside `.small/` (AGENTS.md, `.small-cache/`, snapshots). Creates missing
/// parent directories. Keeps the permissions of an existing file.
pub fn atomic_write(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    let path = path.as_ref();
    let dir = parent_dir(path);
    fs::create_dir_all(&dir).map_err(|e| TxnError::io("create directory", &dir, e))?;
    atomic_write_staged(path, bytes, &dir)
}

// ---------------------------------------------------------------------------------------------

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn temp_name(path: &Path) -> String {
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{base}.small-tmp-{}-{n}", std::process::id())
}

/// Write `bytes` to a temp file in `staging`, fsync, rename onto `path`, fsync `path`'s dir.
fn atomic_write_staged(path: &Path, bytes: &[u8], staging: &Path) -> Result<()> {
    let tmp = staging.join(temp_name(path));
    let result = (|| -> Result<io::Result<()>> {
        // A new file never follows a planted link; it takes the mode of the regular file it
        // replaces, else 0644 under the umask.
        let mut f = fsio::create_temp(&tmp, path).map_err(|e| TxnError::io("create", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| TxnError::io("write", &tmp, e))?;
        f.sync_all().map_err(|e| TxnError::io("fsync", &tmp, e))?;
        drop(f);
        Ok(fs::rename(&tmp, path))
    })();
    match result {
        Ok(Ok(())) => {
            sync_dir(&parent_dir(path));
            Ok(())
        }
        Ok(Err(e)) => {
            let _ = fs::remove_file(&tmp);
            Err(TxnError::io("rename", path, e))
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Whole-file write of a workspace file, staged in `.small-cache/tmp/` so that no temporary
/// file ever appears under `.small/` (even after a crash). Falls back to a temp file next to
/// the target if the cache is on another file system.
fn write_via_staging(root: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
    let path = root.join(rel);
    // The file replaced must be a regular file (or absent): a link is refused, not replaced.
    fsio::regular_metadata(&path).map_err(|e| TxnError::io("replace", &path, e))?;
    let dir = parent_dir(&path);
    fs::create_dir_all(&dir).map_err(|e| TxnError::io("create directory", &dir, e))?;
    let staging = root.join(STAGING_DIR);
    check_cache_dirs(root)?;
    if fs::create_dir_all(&staging).is_ok() {
        match atomic_write_staged(&path, bytes, &staging) {
            Err(TxnError::Io {
                op: "rename",
                source,
                ..
            }) if is_cross_device(&source) => {}
            other => return other,
        }
    }
    atomic_write_staged(&path, bytes, &dir)
}

fn is_cross_device(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(18) // EXDEV
    }
    #[cfg(not(unix))]
    {
        e.kind() == io::ErrorKind::CrossesDevices || e.raw_os_error() == Some(17)
        // ERROR_NOT_SAME_DEVICE
    }
}

/// Apply one staged move; idempotent, so that recovery can apply a journal again: a rename
/// whose source is gone was done (or its source removed since, which leaves nothing to do).
fn apply_move(root: &Path, m: &StagedMove) -> Result<()> {
    match m {
        StagedMove::Rename { from, to } => {
            let (src, dst) = (root.join(from), root.join(to));
            if fs::symlink_metadata(&src).is_err() {
                return Ok(());
            }
            let dir = parent_dir(&dst);
            fs::create_dir_all(&dir).map_err(|e| TxnError::io("create directory", &dir, e))?;
            fs::rename(&src, &dst).map_err(|e| TxnError::io("rename", &src, e))?;
            sync_dir(&dir);
            sync_dir(&parent_dir(&src));
        }
        StagedMove::RemoveEmptyDir(rel) => {
            let dir = root.join(rel);
            if fs::remove_dir(&dir).is_ok() {
                sync_dir(&parent_dir(&dir));
            }
        }
    }
    Ok(())
}

/// Append `bytes` to `rel`, first cutting the file back to `pre_len` (a no-op in the normal
/// case; after a crash it removes a torn or already-applied tail), then fsync.
fn apply_append(root: &Path, rel: &str, app: &StagedAppend) -> Result<()> {
    let path = root.join(rel);
    let mut f = fsio::open_write(&path).map_err(|e| TxnError::io("open", &path, e))?;
    let len = f
        .metadata()
        .map_err(|e| TxnError::io("stat", &path, e))?
        .len();
    if len < app.pre_len {
        return Err(TxnError::invalid(
            code::JOURNAL,
            format!(
                "{} is shorter ({len} bytes) than when an interrupted commit started ({} bytes); \
             it was changed outside small. Inspect it, then delete {JOURNAL_FILE} to continue.",
                path.display(),
                app.pre_len
            ),
        ));
    }
    if len > app.pre_len {
        f.set_len(app.pre_len)
            .map_err(|e| TxnError::io("truncate", &path, e))?;
    }
    f.seek(SeekFrom::Start(app.pre_len))
        .map_err(|e| TxnError::io("seek", &path, e))?;
    f.write_all(&app.bytes)
        .map_err(|e| TxnError::io("append", &path, e))?;
    f.sync_data().map_err(|e| TxnError::io("fsync", &path, e))?;
    Ok(())
}

#[cfg(unix)]
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) {}

fn read_opt(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    fsio::read_bounded_opt(path, limit).map_err(|e| TxnError::io("read", path, e))
}

/// `.small-cache/` and its staging directory must be real directories (or absent): a link
/// there could redirect the lock, journal or temporary files outside the workspace.
fn check_cache_dirs(root: &Path) -> Result<()> {
    for dir in [CACHE_DIR, STAGING_DIR] {
        let path = root.join(dir);
        fsio::check_dir(&path).map_err(|e| TxnError::io("use", &path, e))?;
    }
    Ok(())
}

/// Workspace-relative paths only: no absolute paths, no `..`.
fn check_rel(rel: &str) -> Result<()> {
    let p = Path::new(rel);
    let ok = !rel.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if ok {
        Ok(())
    } else {
        Err(TxnError::invalid(
            code::REFUSED,
            format!("not a workspace-relative path: {rel}"),
        ))
    }
}

/// The process's lock wait when a front end was told one (a `--lock-timeout` flag), in
/// milliseconds; `u64::MAX` when none was given.
static LOCK_TIMEOUT_OVERRIDE: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(u64::MAX);

/// The lock wait: the one set by [`set_lock_timeout`], else `SMALL_LOCK_TIMEOUT`, else the
/// default (60 s).
pub fn lock_timeout_from_env() -> Duration {
    let ms = LOCK_TIMEOUT_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed);
    if ms != u64::MAX {
        return Duration::from_millis(ms);
    }
    std::env::var(LOCK_TIMEOUT_ENV)
        .ok()
        .and_then(|s| parse_lock_timeout(&s))
        .unwrap_or(DEFAULT_LOCK_TIMEOUT)
}

/// Seconds (`90`, `0.5`) or a `humantime` duration (`90s`, `2m`, `1m 30s`).
pub fn parse_lock_timeout(s: &str) -> Option<Duration> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Duration::try_from_secs_f64(secs).ok(),
        Ok(_) => None,
        Err(_) => humantime::parse_duration(t).ok(),
    }
}

fn acquire_lock(root: &Path, timeout: Duration) -> Result<File> {
    let cache = root.join(CACHE_DIR);
    check_cache_dirs(root)?;
    fs::create_dir_all(&cache).map_err(|e| TxnError::io("create directory", &cache, e))?;
    let path = root.join(LOCK_FILE);
    let file = fsio::open_or_create(&path).map_err(|e| TxnError::io("open lock file", &path, e))?;
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => return Ok(file),
        Err(fs4::TryLockError::WouldBlock) => {}
        Err(fs4::TryLockError::Error(e)) => return Err(TxnError::io("lock", &path, e)),
    }
    wait_for_lock(file, path, timeout)
}

/// Unix: block in `flock` on a duplicate of the descriptor in a helper thread, so waiters
/// wake the moment the lock is free (in the kernel's order) instead of polling. If the wait
/// times out, the helper keeps waiting; once it gets the lock it drops its duplicate, and
/// since our own descriptor is gone by then, the lock is released at once.
#[cfg(unix)]
fn wait_for_lock(file: File, path: PathBuf, timeout: Duration) -> Result<File> {
    let start = Instant::now();
    let dup = file
        .try_clone()
        .map_err(|e| TxnError::io("lock", &path, e))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let helper = std::thread::Builder::new().spawn(move || {
        let r = fs4::FileExt::lock(&dup);
        let _ = tx.send(r);
    });
    if helper.is_err() {
        // No thread can be started: poll instead.
        return poll_for_lock(file, path, timeout);
    }
    match rx.recv_timeout(timeout) {
        Ok(Ok(())) => Ok(file),
        Ok(Err(e)) => Err(TxnError::io("lock", &path, e)),
        Err(_) => Err(TxnError::LockTimeout {
            lock: path,
            waited: start.elapsed(),
            env: LOCK_TIMEOUT_ENV,
        }),
    }
}

/// Elsewhere: poll with a short backoff.
#[cfg(not(unix))]
fn wait_for_lock(file: File, path: PathBuf, timeout: Duration) -> Result<File> {
    poll_for_lock(file, path, timeout)
}

/// Take the lock by trying again and again with a short backoff, until `timeout`.
fn poll_for_lock(file: File, path: PathBuf, timeout: Duration) -> Result<File> {
    let start = Instant::now();
    let mut pause = Duration::from_micros(500);
    loop {
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => return Ok(file),
            Err(fs4::TryLockError::WouldBlock) => {}
            Err(fs4::TryLockError::Error(e)) => return Err(TxnError::io("lock", &path, e)),
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(TxnError::LockTimeout {
                lock: path,
                waited,
                env: LOCK_TIMEOUT_ENV,
            });
        }
        std::thread::sleep(pause.min(timeout - waited));
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// Remove temp files a crashed process left in the staging directory (we hold the lock, so
/// no live writer owns them). Best effort.
fn cleanup_staging(root: &Path) {
    if check_cache_dirs(root).is_err() {
        return;
    }
    // In the cache root only our own journal temp files: others may write there without
    // the workspace lock.
    for (dir, prefix) in [(STAGING_DIR, "."), (CACHE_DIR, ".txn.journal.small-tmp-")] {
        if let Ok(rd) = fs::read_dir(root.join(dir)) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(prefix) && name.contains(".small-tmp-") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
    }
}

fn remove_journal(root: &Path) -> Result<()> {
    let jpath = root.join(JOURNAL_FILE);
    match fs::remove_file(&jpath) {
        Ok(()) => {
            sync_dir(&parent_dir(&jpath));
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(TxnError::io("remove", &jpath, e)),
    }
}

/// With the lock held: re-apply a committed journal, or discard an uncommitted one.
fn recover_locked(root: &Path) -> Result<bool> {
    let noted = AppendNote::recover(root)?;
    let jpath = root.join(JOURNAL_FILE);
    let Some(bytes) = read_opt(&jpath, MAX_JOURNAL_BYTES)? else {
        return Ok(noted);
    };
    match Journal::decode(&bytes) {
        Some(journal) => {
            journal.apply(root)?;
            remove_journal(root)?;
            Ok(true)
        }
        None => {
            // Never committed (it is written atomically, so this only happens if it was
            // damaged outside small): nothing was applied from it.
            remove_journal(root)?;
            Ok(false)
        }
    }
}

fn slow_point() {
    if std::env::var_os(PANIC_IN_COMMIT_ENV).is_some_and(|v| !v.is_empty()) {
        panic!("test hook {PANIC_IN_COMMIT_ENV}: a panic between the steps of a commit");
    }
    if let Some(ms) = std::env::var(SLOW_COMMIT_ENV)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// The redo journal. Binary layout (all integers little-endian u64):
/// `MAGIC`, sha256(body), body; body = count, then per item: kind (0 write, 1 append,
/// 2 move, 3 remove an empty directory), path length, path, pre_len, data length, data (for
/// a move: the destination path).
struct Journal {
    writes: BTreeMap<String, Vec<u8>>,
    appends: BTreeMap<String, StagedAppend>,
    moves: Vec<StagedMove>,
}

const MAGIC: &[u8; 16] = b"small-journal-v1";

impl Journal {
    fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let put = |b: &mut Vec<u8>, n: u64| b.extend_from_slice(&n.to_le_bytes());
        put(
            &mut body,
            (self.writes.len() + self.appends.len() + self.moves.len()) as u64,
        );
        for m in &self.moves {
            let (kind, rel, data) = match m {
                StagedMove::Rename { from, to } => (2, from, to.as_bytes()),
                StagedMove::RemoveEmptyDir(dir) => (3, dir, &b""[..]),
            };
            put(&mut body, kind);
            put(&mut body, rel.len() as u64);
            body.extend_from_slice(rel.as_bytes());
            put(&mut body, 0);
            put(&mut body, data.len() as u64);
            body.extend_from_slice(data);
        }
        for (rel, data) in &self.writes {
            put(&mut body, 0);
            put(&mut body, rel.len() as u64);
            body.extend_from_slice(rel.as_bytes());
            put(&mut body, 0);
            put(&mut body, data.len() as u64);
            body.extend_from_slice(data);
        }
        for (rel, app) in &self.appends {
            put(&mut body, 1);
            put(&mut body, rel.len() as u64);
            body.extend_from_slice(rel.as_bytes());
            put(&mut body, app.pre_len);
            put(&mut body, app.bytes.len() as u64);
            body.extend_from_slice(&app.bytes);
        }
        let mut out = Vec::with_capacity(body.len() + 48);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&Sha256::digest(&body));
        out.extend_from_slice(&body);
        out
    }

    fn decode(bytes: &[u8]) -> Option<Journal> {
        let rest = bytes.strip_prefix(MAGIC.as_slice())?;
        if rest.len() < 32 {
            return None;
        }
        let (sum, body) = rest.split_at(32);
        if Sha256::digest(body).as_slice() != sum {
            return None;
        }
        let mut r = Reader(body);
        let mut journal = Journal {
            writes: BTreeMap::new(),
            appends: BTreeMap::new(),
            moves: Vec::new(),
        };
        let count = r.u64()?;
        for _ in 0..count {
            let kind = r.u64()?;
            let plen = usize::try_from(r.u64()?).ok()?;
            let rel = String::from_utf8(r.take(plen)?.to_vec()).ok()?;
            check_rel(&rel).ok()?;
            let pre_len = r.u64()?;
            let dlen = usize::try_from(r.u64()?).ok()?;
            let data = r.take(dlen)?.to_vec();
            match kind {
                0 => {
                    journal.writes.insert(rel, data);
                }
                1 => {
                    journal.appends.insert(
                        rel,
                        StagedAppend {
                            pre_len,
                            bytes: data,
                        },
                    );
                }
                2 => {
                    let to = String::from_utf8(data).ok()?;
                    check_rel(&to).ok()?;
                    journal.moves.push(StagedMove::Rename { from: rel, to });
                }
                3 => journal.moves.push(StagedMove::RemoveEmptyDir(rel)),
                _ => return None,
            }
        }
        Some(journal)
    }

    fn apply(&self, root: &Path) -> Result<()> {
        for m in &self.moves {
            apply_move(root, m)?;
            slow_point();
        }
        for (rel, bytes) in &self.writes {
            write_via_staging(root, rel, bytes)?;
            slow_point();
        }
        for (rel, app) in &self.appends {
            apply_append(root, rel, app)?;
            slow_point();
        }
        Ok(())
    }
}

/// The intent record of a single-append commit, kept at [`APPEND_NOTE_FILE`] and
/// overwritten in place by every such commit (so after the first one, a commit costs two
/// data syncs: the note, then the appended bytes; no directory sync, no rename).
///
/// Layout: `NOTE_MAGIC`, one state byte (`P` pending, `D` done), body length, sha256(body),
/// body = path length, path, pre-append length, byte count, bytes; zero padding to 4 KiB. The state byte is outside the
/// checksum. Recovery re-applies a *pending* note whose checksum matches and whose file
/// length lies between the pre-append length and the end of the append (a torn or missing
/// tail): it cuts the file back and writes the bytes again. A note that is done, damaged
/// (then the append never started: the note is synced first), or that does not fit the
/// file (the file was replaced since) is ignored.
struct AppendNote {
    rel: String,
    app: StagedAppend,
}

const NOTE_MAGIC: &[u8; 16] = b"small-append-v1\n";
const NOTE_STATE_AT: u64 = 16;

impl AppendNote {
    fn body(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.app.bytes.len() + self.rel.len() + 24);
        b.extend_from_slice(&(self.rel.len() as u64).to_le_bytes());
        b.extend_from_slice(self.rel.as_bytes());
        b.extend_from_slice(&self.app.pre_len.to_le_bytes());
        b.extend_from_slice(&(self.app.bytes.len() as u64).to_le_bytes());
        b.extend_from_slice(&self.app.bytes);
        b
    }

    fn write(&self, root: &Path) -> Result<()> {
        let path = root.join(APPEND_NOTE_FILE);
        let body = self.body();
        let mut out = Vec::with_capacity(body.len() + 4096);
        out.extend_from_slice(NOTE_MAGIC);
        out.push(b'P');
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&Sha256::digest(&body));
        out.extend_from_slice(&body);
        // Pad to whole 4 KiB blocks so the file size rarely changes: then syncing the note
        // needs no metadata update.
        out.resize(out.len().div_ceil(4096) * 4096, 0);
        let created = fs::symlink_metadata(&path).is_err();
        // Never through a link or into a FIFO: the note is always a regular file in
        // `.small-cache/`.
        let mut f = fsio::open_or_create(&path).map_err(|e| TxnError::io("open", &path, e))?;
        f.write_all(&out)
            .map_err(|e| TxnError::io("write", &path, e))?;
        f.set_len(out.len() as u64)
            .map_err(|e| TxnError::io("truncate", &path, e))?;
        f.sync_data().map_err(|e| TxnError::io("fsync", &path, e))?;
        if created {
            sync_dir(&parent_dir(&path));
        }
        Ok(())
    }

    /// Best effort: a lost "done" mark only makes recovery re-check a complete append.
    fn mark_done(root: &Path) {
        if let Ok(mut f) = fsio::open_write(&root.join(APPEND_NOTE_FILE)) {
            if f.seek(SeekFrom::Start(NOTE_STATE_AT)).is_ok() {
                let _ = f.write_all(b"D");
            }
        }
    }

    /// Mark the note done and sync it (if there is one).
    fn settle(root: &Path) {
        if let Ok(mut f) = fsio::open_write(&root.join(APPEND_NOTE_FILE)) {
            if f.seek(SeekFrom::Start(NOTE_STATE_AT)).is_ok() && f.write_all(b"D").is_ok() {
                let _ = f.sync_data();
            }
        }
    }

    fn pending(root: &Path) -> bool {
        let mut b = [0u8; 17];
        fsio::open_read(&root.join(APPEND_NOTE_FILE))
            .and_then(|mut f| f.read_exact(&mut b))
            .is_ok()
            && &b[..16] == NOTE_MAGIC
            && b[16] == b'P'
    }

    fn decode(bytes: &[u8]) -> Option<(bool, AppendNote)> {
        let rest = bytes.strip_prefix(NOTE_MAGIC.as_slice())?;
        let (&state, rest) = rest.split_first()?;
        let mut head = Reader(rest);
        let body_len = usize::try_from(head.u64()?).ok()?;
        let sum = head.take(32)?;
        let body = head.take(body_len)?;
        if Sha256::digest(body).as_slice() != sum {
            return None;
        }
        let mut r = Reader(body);
        let plen = usize::try_from(r.u64()?).ok()?;
        let rel = String::from_utf8(r.take(plen)?.to_vec()).ok()?;
        check_rel(&rel).ok()?;
        let pre_len = r.u64()?;
        let n = usize::try_from(r.u64()?).ok()?;
        let bytes = r.take(n)?.to_vec();
        Some((
            state == b'P',
            AppendNote {
                rel,
                app: StagedAppend { pre_len, bytes },
            },
        ))
    }

    /// With the lock held: finish a pending append. Returns whether a repair was made.
    fn recover(root: &Path) -> Result<bool> {
        let Some(bytes) = read_opt(&root.join(APPEND_NOTE_FILE), MAX_JOURNAL_BYTES)? else {
            return Ok(false);
        };
        let Some((true, note)) = AppendNote::decode(&bytes) else {
            return Ok(false);
        };
        let path = root.join(&note.rel);
        let len = fsio::regular_metadata(&path)
            .map_err(|e| TxnError::io("stat", &path, e))?
            .map(|m| m.len())
            .unwrap_or(0);
        let end = note.app.pre_len + note.app.bytes.len() as u64;
        let mut repaired = false;
        if len >= note.app.pre_len && len <= end {
            let complete = len == end && {
                let (_, tail) = read_tail(&path, note.app.bytes.len() as u64)?;
                tail == note.app.bytes
            };
            if !complete {
                apply_append(root, &note.rel, &note.app)?;
                repaired = true;
            }
        }
        AppendNote::mark_done(root);
        Ok(repaired)
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// Read up to the last `max` bytes of a file, returning them with the offset they start at.
pub fn read_tail(path: &Path, max: u64) -> Result<(u64, Vec<u8>)> {
    let mut f = fsio::open_read(path).map_err(|e| TxnError::io("open", path, e))?;
    let len = f
        .metadata()
        .map_err(|e| TxnError::io("stat", path, e))?
        .len();
    let start = len.saturating_sub(max);
    f.seek(SeekFrom::Start(start))
        .map_err(|e| TxnError::io("seek", path, e))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    f.read_to_end(&mut buf)
        .map_err(|e| TxnError::io("read", path, e))?;
    Ok((start, buf))
}

/// A transaction's failure as an authoring error: a refusal keeps its diagnostic, the rest
/// are system errors (no workspace, the lock, I/O).
impl From<TxnError> for crate::workspace::error::Error {
    fn from(e: TxnError) -> crate::workspace::error::Error {
        match e {
            TxnError::Invalid(d) => crate::workspace::error::Error {
                kind: crate::workspace::error::ErrorKind::Invalid,
                diagnostic: d,
            },
            TxnError::NoWorkspace(_) => {
                crate::workspace::error::Error::system(code::NO_WORKSPACE, e.to_string())
                    .with_help("run `small init` to create a workspace here, or pass --dir")
            }
            TxnError::LockTimeout { .. } => {
                crate::workspace::error::Error::system(code::LOCK, e.to_string())
            }
            TxnError::Io { .. } => crate::workspace::error::Error::system(code::IO, e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_timeout_in_seconds_or_humantime() {
        assert_eq!(parse_lock_timeout("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_lock_timeout("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_lock_timeout("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_lock_timeout("1m 30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_lock_timeout("-1"), None);
        assert_eq!(parse_lock_timeout("soon"), None);
    }

    fn ws() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join(".small")).unwrap();
        d
    }

    #[test]
    fn no_workspace_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(
            Transaction::begin(d.path()),
            Err(TxnError::NoWorkspace(_))
        ));
    }

    #[test]
    fn write_and_append_commit_together() {
        let d = ws();
        fs::write(d.path().join(".small/p.yml"), b"a\n").unwrap();
        let mut t = Transaction::begin(d.path()).unwrap();
        t.write(".small/q.yml", b"q\n".to_vec());
        t.append(".small/p.yml", b"b\n".to_vec()).unwrap();
        assert_eq!(t.read(".small/p.yml").unwrap().unwrap(), b"a\nb\n");
        let r = t.commit().unwrap();
        assert_eq!(r.written, vec![".small/q.yml"]);
        assert_eq!(fs::read(d.path().join(".small/p.yml")).unwrap(), b"a\nb\n");
        assert_eq!(fs::read(d.path().join(".small/q.yml")).unwrap(), b"q\n");
        assert!(!d.path().join(JOURNAL_FILE).exists());
        // nothing but our files under .small/
        let names: Vec<_> = fs::read_dir(d.path().join(".small"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn journal_is_replayed_after_a_crash_and_torn_tail_cut() {
        let d = ws();
        let p = d.path().join(".small/p.yml");
        fs::write(&p, b"entries:\n  - a\n").unwrap();
        let mut appends = BTreeMap::new();
        appends.insert(
            ".small/p.yml".to_string(),
            StagedAppend {
                pre_len: 15,
                bytes: b"  - b\n".to_vec(),
            },
        );
        let mut writes = BTreeMap::new();
        writes.insert(".small/q.yml".to_string(), b"new\n".to_vec());
        let j = Journal {
            writes,
            appends,
            moves: Vec::new(),
        };
        fs::create_dir_all(d.path().join(CACHE_DIR)).unwrap();
        fs::write(d.path().join(JOURNAL_FILE), j.encode()).unwrap();
        // simulate a torn append
        fs::write(&p, b"entries:\n  - a\n  - ").unwrap();
        assert!(recover(d.path()).unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"entries:\n  - a\n  - b\n");
        assert_eq!(fs::read(d.path().join(".small/q.yml")).unwrap(), b"new\n");
        assert!(!recover(d.path()).unwrap());
    }

    #[test]
    fn staged_moves_are_journaled_and_finished_after_a_crash() {
        let d = ws();
        let legacy = d.path().join(".small/archive");
        fs::create_dir_all(legacy.join("run-1")).unwrap();
        fs::write(legacy.join("a.txt"), b"a").unwrap();
        fs::write(legacy.join("run-1/b.txt"), b"b").unwrap();
        fs::write(d.path().join(".small/p.yml"), b"entries:\n").unwrap();
        let moves = vec![
            StagedMove::Rename {
                from: ".small/archive/a.txt".into(),
                to: ".small-archive/a.txt".into(),
            },
            StagedMove::Rename {
                from: ".small/archive/run-1".into(),
                to: ".small-archive/run-1".into(),
            },
            StagedMove::RemoveEmptyDir(".small/archive".into()),
        ];
        let mut appends = BTreeMap::new();
        appends.insert(
            ".small/p.yml".to_string(),
            StagedAppend {
                pre_len: 9,
                bytes: b"  - moved\n".to_vec(),
            },
        );
        let j = Journal {
            writes: BTreeMap::new(),
            appends,
            moves,
        };
        let bytes = j.encode();
        assert_eq!(Journal::decode(&bytes).unwrap().moves, j.moves);
        // The crash: the journal is written and the first move is done, nothing else.
        fs::create_dir_all(d.path().join(CACHE_DIR)).unwrap();
        fs::write(d.path().join(JOURNAL_FILE), bytes).unwrap();
        fs::create_dir_all(d.path().join(".small-archive")).unwrap();
        fs::rename(legacy.join("a.txt"), d.path().join(".small-archive/a.txt")).unwrap();
        assert!(recover(d.path()).unwrap());
        assert!(!legacy.exists());
        assert_eq!(
            fs::read(d.path().join(".small-archive/a.txt")).unwrap(),
            b"a"
        );
        assert_eq!(
            fs::read(d.path().join(".small-archive/run-1/b.txt")).unwrap(),
            b"b"
        );
        assert_eq!(
            fs::read(d.path().join(".small/p.yml")).unwrap(),
            b"entries:\n  - moved\n"
        );
        assert!(!d.path().join(JOURNAL_FILE).exists());
    }

    #[test]
    fn staged_moves_apply_at_commit_and_not_before() {
        let d = ws();
        fs::create_dir_all(d.path().join(".small/runs")).unwrap();
        fs::write(d.path().join(".small/runs/x"), b"x").unwrap();
        let mut txn = Transaction::begin(d.path()).unwrap();
        txn.stage_move(".small/runs/x", ".small-runs/x").unwrap();
        txn.stage_remove_empty_dir(".small/runs").unwrap();
        assert!(txn.stage_move("../x", ".small-runs/y").is_err());
        assert!(txn.is_dirty());
        assert!(
            d.path().join(".small/runs/x").exists(),
            "nothing moves before commit"
        );
        txn.commit().unwrap();
        assert!(!d.path().join(".small/runs").exists());
        assert_eq!(fs::read(d.path().join(".small-runs/x")).unwrap(), b"x");
        // An aborted transaction moves nothing.
        fs::create_dir_all(d.path().join(".small/runs")).unwrap();
        fs::write(d.path().join(".small/runs/z"), b"z").unwrap();
        let mut txn = Transaction::begin(d.path()).unwrap();
        txn.stage_move(".small/runs/z", ".small-runs/z").unwrap();
        txn.abort();
        assert!(d.path().join(".small/runs/z").exists());
    }

    #[test]
    fn torn_single_append_is_repaired_from_the_note() {
        let d = ws();
        let p = d.path().join(".small/p.yml");
        fs::write(&p, b"entries:\n  - a\n").unwrap();
        let mut t = Transaction::begin(d.path()).unwrap();
        t.append(".small/p.yml", b"  - b\n".to_vec()).unwrap();
        t.commit().unwrap();
        assert!(!AppendNote::pending(d.path()));
        // a pending note and a torn tail, as a crash mid-append leaves them
        let note = AppendNote {
            rel: ".small/p.yml".into(),
            app: StagedAppend {
                pre_len: 21,
                bytes: b"  - c\n".to_vec(),
            },
        };
        note.write(d.path()).unwrap();
        fs::write(&p, b"entries:\n  - a\n  - b\n  -").unwrap();
        assert!(recover(d.path()).unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"entries:\n  - a\n  - b\n  - c\n");
        // a pending note whose append completed changes nothing
        note.write(d.path()).unwrap();
        assert!(!recover(d.path()).unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"entries:\n  - a\n  - b\n  - c\n");
        // a stale note (the file was replaced since) is ignored
        note.write(d.path()).unwrap();
        fs::write(&p, b"entries:\n  - x\n  - y\n  - z\n  - w\n").unwrap();
        assert!(!recover(d.path()).unwrap());
        assert_eq!(
            fs::read(&p).unwrap(),
            b"entries:\n  - x\n  - y\n  - z\n  - w\n"
        );
    }

    #[test]
    fn damaged_journal_is_discarded() {
        let d = ws();
        fs::create_dir_all(d.path().join(CACHE_DIR)).unwrap();
        fs::write(d.path().join(JOURNAL_FILE), b"small-journal-v1garbage").unwrap();
        assert!(!recover(d.path()).unwrap());
        assert!(!d.path().join(JOURNAL_FILE).exists());
    }

    #[test]
    fn lock_times_out_with_clear_message() {
        let d = ws();
        let _held = Transaction::begin(d.path()).unwrap();
        let err = Transaction::begin_with_timeout(d.path(), Duration::from_millis(50)).unwrap_err();
        assert!(
            err.to_string().contains("locked by another small process"),
            "{err}"
        );
    }

    #[test]
    fn atomic_write_replaces_and_keeps_dir_clean() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/AGENTS.md");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(d.path().join("sub")).unwrap().count(), 1);
    }

    #[test]
    fn rejects_escaping_paths() {
        let d = ws();
        let mut t = Transaction::begin(d.path()).unwrap();
        assert!(t.append("../x", vec![]).is_err());
        assert!(t.read("/etc/passwd").is_err());
    }
}
