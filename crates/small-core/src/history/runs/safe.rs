//! File-system helpers shared by the run store and the archives: names that may become paths,
//! reads that refuse symbolic links, hashing, and directories published in one rename.
//!
//! Everything a snapshot or an archive holds is written into a temporary directory next to
//! its final place, synced to disk, and then renamed into place, so a reader sees either
//! nothing or the complete directory, never half of it.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::RunError;
use crate::fsio;

/// Largest file the run store or an archive reads into memory (64 MiB).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Is `s` a full replay ID (64 hex digits, either case)?
pub fn is_replay_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Check that `name` is one plain file name: not empty, no separators, not `.` or `..`, not
/// absolute, no NUL. Used for every name read from a manifest or given on the command line
/// before it is joined to a directory.
pub fn check_file_name(name: &str, what: &str) -> Result<(), RunError> {
    let bad = |why: &str| {
        Err(RunError::usage(format!(
            "{what} `{}` is not allowed: {why}",
            name.escape_debug()
        ))
        .with_help("use a plain file name such as `plan.small.yml`"))
    };
    if name.is_empty() {
        return bad("the name is empty");
    }
    if name.contains('\0') {
        return bad("it contains a NUL byte");
    }
    if name.contains('/') || name.contains('\\') {
        return bad("it contains a path separator");
    }
    if name == "." || name == ".." {
        return bad("it names a directory, not a file");
    }
    let path = Path::new(name);
    if path.is_absolute() || path.components().count() != 1 {
        return bad("it is not a single file name");
    }
    match path.components().next() {
        Some(Component::Normal(_)) => Ok(()),
        _ => bad("it is not a single file name"),
    }
}

/// What is at `path`, without following a symbolic link there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Missing,
    File,
    Dir,
    Symlink,
    Other,
}

pub fn entry_type(path: &Path) -> Result<Entry, RunError> {
    match fs::symlink_metadata(path) {
        Ok(m) => {
            let t = m.file_type();
            Ok(if t.is_symlink() {
                Entry::Symlink
            } else if t.is_file() {
                Entry::File
            } else if t.is_dir() {
                Entry::Dir
            } else {
                Entry::Other
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Entry::Missing),
        Err(e) => Err(RunError::io("cannot inspect", path, &e)),
    }
}

/// Whether a regular file exists inside a store or archive directory, with the same refusals
/// as [`read_stored_file`] (a symbolic link or a non-file is an error), without reading it.
pub fn stored_file_exists(path: &Path) -> Result<bool, RunError> {
    match entry_type(path)? {
        Entry::Missing => Ok(false),
        Entry::File => Ok(true),
        _ => read_stored_file(path).map(|_| true),
    }
}

/// Read a regular file inside a store or archive directory. A symbolic link, a directory or
/// a special file where a file should be is refused with `damaged(...)`; a missing file is
/// `Ok(None)`.
pub fn read_stored_file(path: &Path) -> Result<Option<Vec<u8>>, RunError> {
    match entry_type(path)? {
        Entry::Missing => Ok(None),
        Entry::File => read_limited(path).map(Some),
        Entry::Symlink => Err(RunError::invalid(format!(
            "{} is a symbolic link; stored snapshots and archives hold regular files only, \
             so it is not followed",
            path.display()
        ))
        .with_help("remove the link, or take the snapshot again")),
        Entry::Dir | Entry::Other => Err(RunError::invalid(format!(
            "{} is not a regular file",
            path.display()
        ))),
    }
}

/// Read a regular file through [`fsio`]: a link or special file is refused at open (without
/// blocking), and at most [`MAX_FILE_BYTES`] + 1 bytes are read.
pub fn read_limited(path: &Path) -> Result<Vec<u8>, RunError> {
    fsio::read_bounded(path, MAX_FILE_BYTES).map_err(|e| read_error(path, &e))
}

fn read_error(path: &Path, e: &std::io::Error) -> RunError {
    match e.kind() {
        std::io::ErrorKind::FileTooLarge => RunError::invalid(format!(
            "{} is larger than {} MiB; refusing to load it",
            path.display(),
            MAX_FILE_BYTES / (1024 * 1024)
        )),
        std::io::ErrorKind::InvalidInput => {
            RunError::invalid(format!("cannot read {}: {e}", path.display()))
        }
        _ => RunError::io("cannot read", path, e),
    }
}

/// Read a file of the live workspace: `Ok(None)` when it does not exist. Canonical files
/// must be regular files: a symbolic link (whose target may lie outside the workspace), a
/// FIFO or a device is refused, so a snapshot or archive never copies outside content.
pub fn read_live_file(path: &Path) -> Result<Option<Vec<u8>>, RunError> {
    match fsio::read_bounded_opt(path, MAX_FILE_BYTES) {
        Ok(b) => Ok(b),
        Err(e) => Err(read_error(path, &e)),
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Size of the buffer files are copied and hashed through: the whole file is never held.
const CHUNK: usize = 1 << 20;

/// Read `src` to its end through fixed buffers, at most [`MAX_FILE_BYTES`], hashing it and
/// handing each chunk to `out`. Returns the lower-case hex SHA-256 and the length.
///
/// A file longer than one chunk is hashed on a second thread while the next chunk is read
/// and handed on (SHA-256 is the slower half of a copy): the hasher gets every chunk, in
/// order, after `out` has had it, and gives the buffer back for reuse, so at most
/// [`CHUNKS_IN_FLIGHT`] chunks are held. Where no thread can be started, it is hashed here.
fn stream_hashed(
    src: &mut File,
    path: &Path,
    out: &mut dyn FnMut(&[u8]) -> Result<(), RunError>,
) -> Result<(String, u64), RunError> {
    // A small file gets a buffer its size (plus one byte to see its end), not a whole
    // chunk to zero: a 2.0.0 tree is thousands of files of a few hundred bytes.
    let cap = src
        .metadata()
        .map(|m| m.len().saturating_add(1).min(CHUNK as u64) as usize)
        .unwrap_or(CHUNK)
        .max(4096);
    let mut buf = vec![0u8; cap];
    let mut len = 0u64;
    let Some(n) = read_chunk(src, path, &mut buf, &mut len)? else {
        return Ok((hex::encode(Sha256::digest([])), 0));
    };
    out(&buf[..n])?;
    // One short read is usually the whole file: it is hashed here.
    if n == CHUNK {
        if let Some(r) = hash_on_a_thread(src, path, out, &mut buf, n, &mut len) {
            return r;
        }
    }
    let mut hasher = Sha256::new();
    hasher.update(&buf[..n]);
    loop {
        match read_chunk(src, path, &mut buf, &mut len)? {
            Some(n) => {
                out(&buf[..n])?;
                hasher.update(&buf[..n]);
            }
            None => return Ok((hex::encode(hasher.finalize()), len)),
        }
    }
}

/// The rest of [`stream_hashed`] with the hashing on a second thread, from the first chunk
/// (`buf[..n]`, already handed to `out`). `None`, with `buf` untouched, when no thread can be
/// started.
fn hash_on_a_thread(
    src: &mut File,
    path: &Path,
    out: &mut dyn FnMut(&[u8]) -> Result<(), RunError>,
    buf: &mut Vec<u8>,
    n: usize,
    len: &mut u64,
) -> Option<Result<(String, u64), RunError>> {
    use std::sync::mpsc;
    let (to_hasher, chunks) = mpsc::sync_channel::<(Vec<u8>, usize)>(CHUNKS_IN_FLIGHT - 2);
    let (give_back, spare) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|s| {
        let hasher = crate::par::start(s, move || {
            let mut hasher = Sha256::new();
            for (b, n) in chunks {
                hasher.update(&b[..n]);
                // The reader may have finished; a buffer it no longer wants is dropped.
                let _ = give_back.send(b);
            }
            hasher.finalize()
        })
        .ok()?;
        let mut pending = Some((std::mem::take(buf), n));
        let read = (|| {
            while let Some((b, n)) = pending.take() {
                if to_hasher.send((b, n)).is_err() {
                    // The hasher stopped (it panicked): its join below reports it.
                    return Ok(());
                }
                let mut b = spare.try_recv().unwrap_or_else(|_| vec![0u8; CHUNK]);
                if let Some(n) = read_chunk(src, path, &mut b, len)? {
                    out(&b[..n])?;
                    pending = Some((b, n));
                }
            }
            Ok(())
        })();
        drop(to_hasher);
        let digest = hasher.join();
        Some(read.and_then(|()| match digest {
            Ok(d) => Ok((hex::encode(d), *len)),
            Err(_) => Err(RunError::usage(format!(
                "{}: hashing stopped unexpectedly",
                path.display()
            ))),
        }))
    })
}

/// Chunks a copy holds at once: one being hashed, one queued, one being read.
const CHUNKS_IN_FLIGHT: usize = 3;

/// Fill `buf` from `src` (a short read only at the end), adding to `len` and refusing a file
/// past [`MAX_FILE_BYTES`]. `None` at the end of the file.
fn read_chunk(
    src: &mut File,
    path: &Path,
    buf: &mut [u8],
    len: &mut u64,
) -> Result<Option<usize>, RunError> {
    use std::io::Read;
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(path, &e)),
        }
    }
    if n == 0 {
        return Ok(None);
    }
    *len += n as u64;
    if *len > MAX_FILE_BYTES {
        return Err(read_error(path, &fsio::too_large(MAX_FILE_BYTES)));
    }
    Ok(Some(n))
}

/// The SHA-256 (lower-case hex) and length of a regular file inside a store or archive
/// directory, read through a fixed buffer, with the refusals of [`read_stored_file`]
/// (`Ok(None)`: missing).
pub fn hash_stored_file(path: &Path) -> Result<Option<(String, u64)>, RunError> {
    match entry_type(path)? {
        Entry::File => {}
        // The same errors (or `None`) as reading it.
        _ => return read_stored_file(path).map(|b| b.map(|b| (sha256_hex(&b), b.len() as u64))),
    }
    let mut f = fsio::open_read(path).map_err(|e| read_error(path, &e))?;
    stream_hashed(&mut f, path, &mut |_| Ok(())).map(Some)
}

/// Open a file of the live workspace for copying: `Ok(None)` when it does not exist. The
/// refusals of [`read_live_file`] apply (links, FIFOs, devices).
pub fn open_live_file(path: &Path) -> Result<Option<File>, RunError> {
    match fsio::open_read(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(read_error(path, &e)),
    }
}

/// Read an opened live file whole (a small one: the handoff), at most [`MAX_FILE_BYTES`].
pub fn read_open_file(src: &mut File, path: &Path) -> Result<Vec<u8>, RunError> {
    use std::io::{Seek, SeekFrom};
    src.seek(SeekFrom::Start(0))
        .map_err(|e| RunError::io("cannot read", path, &e))?;
    let mut out = Vec::new();
    stream_hashed(src, path, &mut |b| {
        out.extend_from_slice(b);
        Ok(())
    })?;
    Ok(out)
}

/// Write a new file (it must not exist yet) and sync it to disk.
pub fn write_new_file(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let mut f =
        fsio::create_new(path, None).map_err(|e| RunError::io("cannot create", path, &e))?;
    f.write_all(bytes)
        .map_err(|e| RunError::io("cannot write", path, &e))?;
    f.sync_all()
        .map_err(|e| RunError::io("cannot sync", path, &e))?;
    Ok(())
}

/// Ask the kernel to start writing `len` bytes of `file` at `offset` to disk now, without
/// waiting, so that the `fsync` ending a long copy waits for the last chunks only rather
/// than for the whole file. A hint: where it is not supported nothing changes.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: usize) {
    use std::os::fd::AsRawFd;
    // SAFETY: sync_file_range only reads its integer arguments; the descriptor is open for
    // as long as `file` is borrowed. Its result is ignored: it is only a hint.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            offset as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &File, _: u64, _: usize) {}

/// Mark a stored file read-only: snapshots and archives are never modified once written.
pub fn make_read_only(path: &Path) {
    if let Ok(meta) = fs::metadata(path) {
        let mut perms = meta.permissions();
        perms.set_readonly(true);
        // Best effort: a file system without permissions still gets a complete snapshot.
        let _ = fs::set_permissions(path, perms);
    }
}

/// Sync a directory's entries to disk (no-op where directories cannot be opened).
pub fn sync_dir(path: &Path) {
    if let Ok(d) = File::open(path) {
        let _ = d.sync_all();
    }
}

/// A directory being filled in a temporary place beside its destination, published with one
/// rename. Dropped without `publish`, it is removed.
pub struct StagedDir {
    dir: Option<tempfile::TempDir>,
    parent: PathBuf,
}

impl StagedDir {
    /// Start a staged directory inside `parent` (created if needed).
    pub fn new(parent: &Path, prefix: &str) -> Result<Self, RunError> {
        fs::create_dir_all(parent).map_err(|e| RunError::io("cannot create", parent, &e))?;
        clean_stale(parent);
        // The process id in the name tells a later process whether the writer is gone.
        let prefix = format!("{prefix}{}-", std::process::id());
        let dir = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(parent)
            .map_err(|e| RunError::io("cannot create a temporary directory in", parent, &e))?;
        Ok(StagedDir {
            dir: Some(dir),
            parent: parent.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        match &self.dir {
            Some(d) => d.path(),
            None => &self.parent,
        }
    }

    /// Write one file into the staged directory, synced and read-only.
    pub fn add_file(&self, name: &str, bytes: &[u8]) -> Result<(), RunError> {
        let path = self.path().join(name);
        write_new_file(&path, bytes)?;
        make_read_only(&path);
        Ok(())
    }

    /// Copy the opened file `src` (from its start) into the staged directory as `name`,
    /// hashing it on the way through a fixed buffer, so the copy holds exactly the bytes
    /// hashed and memory stays small whatever the size. Returns the lower-case hex SHA-256
    /// and the length. The copy is synced and read-only, as [`StagedDir::add_file`] leaves it.
    pub fn copy_in(
        &self,
        name: &str,
        src: &mut File,
        src_path: &Path,
    ) -> Result<(String, u64), RunError> {
        self.copy_hashed(name, src, src_path, true)
    }

    /// [`StagedDir::copy_in`] without syncing the copy: for many files at once, made durable
    /// together by [`StagedDir::sync_all`] before publishing.
    pub fn copy_in_unsynced(
        &self,
        name: &str,
        src: &mut File,
        src_path: &Path,
    ) -> Result<(String, u64), RunError> {
        self.copy_hashed(name, src, src_path, false)
    }

    /// The copy of [`StagedDir::copy_in`], its write-back started and the file synced when
    /// `sync`.
    fn copy_hashed(
        &self,
        name: &str,
        src: &mut File,
        src_path: &Path,
        sync: bool,
    ) -> Result<(String, u64), RunError> {
        use std::io::{Seek, SeekFrom};
        src.seek(SeekFrom::Start(0))
            .map_err(|e| RunError::io("cannot read", src_path, &e))?;
        let path = self.path().join(name);
        let mut out =
            fsio::create_new(&path, None).map_err(|e| RunError::io("cannot create", &path, &e))?;
        let mut written = 0u64;
        let r = stream_hashed(src, src_path, &mut |b| {
            out.write_all(b)
                .map_err(|e| RunError::io("cannot write", &path, &e))?;
            if sync {
                start_writeback(&out, written, b.len());
            }
            written += b.len() as u64;
            Ok(())
        })?;
        if sync {
            out.sync_all()
                .map_err(|e| RunError::io("cannot sync", &path, &e))?;
        }
        drop(out);
        make_read_only(&path);
        Ok(r)
    }

    /// Make every file and directory of the staged tree durable: one `syncfs` on Linux
    /// (one flush instead of one per file), elsewhere each file and directory in turn.
    pub fn sync_all(&self) -> Result<(), RunError> {
        let root = self.path();
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let d = File::open(root).map_err(|e| RunError::io("cannot open", root, &e))?;
            // SAFETY: syncfs takes an open descriptor, which `d` holds for the call.
            if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
                let e = std::io::Error::last_os_error();
                return Err(RunError::io("cannot sync", root, &e));
            }
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        {
            let mut stack = vec![root.to_path_buf()];
            while let Some(dir) = stack.pop() {
                let rd = fs::read_dir(&dir).map_err(|e| RunError::io("cannot read", &dir, &e))?;
                for e in rd {
                    let e = e.map_err(|e| RunError::io("cannot read", &dir, &e))?;
                    let p = e.path();
                    match entry_type(&p)? {
                        Entry::Dir => stack.push(p),
                        Entry::File => {
                            if let Ok(f) = File::open(&p) {
                                f.sync_all()
                                    .map_err(|e| RunError::io("cannot sync", &p, &e))?;
                            }
                        }
                        _ => {}
                    }
                }
                sync_dir(&dir);
            }
            Ok(())
        }
    }

    /// Move the staged directory to `dest`. When `replace` is set and `dest` exists, the old
    /// directory is moved aside first and deleted only once the new one is in place; if the
    /// second rename fails the old one is put back.
    pub fn publish(mut self, dest: &Path, replace: bool) -> Result<(), RunError> {
        let staged = self.path().to_path_buf();
        sync_dir(&staged);
        let already = || RunError::invalid(format!("{} already exists", dest.display()));
        let exists = entry_type(dest)? != Entry::Missing;
        if exists && !replace {
            return Err(already());
        }
        let mut aside = None;
        if exists {
            let name = dest
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let trash = unique_sibling(&self.parent, &format!(".replaced-{name}-"));
            match fs::rename(dest, &trash) {
                Ok(()) => aside = Some(trash),
                // Another writer moved it first: nothing to put aside.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(RunError::io("cannot move aside", dest, &e)),
            }
        }
        if let Err(e) = fs::rename(&staged, dest) {
            if let Some(trash) = &aside {
                if fs::rename(trash, dest).is_err() {
                    remove_tree(trash);
                }
            }
            // Lost a race with another writer that published the same directory.
            if entry_type(dest)? != Entry::Missing {
                return Err(already());
            }
            return Err(RunError::io("cannot move the new directory to", dest, &e));
        }
        // The temporary directory now lives at `dest`: keep TempDir from deleting it.
        if let Some(d) = self.dir.take() {
            let _ = d.keep();
        }
        if let Some(parent) = dest.parent() {
            sync_dir(parent);
        }
        if let Some(trash) = aside {
            remove_tree(&trash);
        }
        Ok(())
    }
}

/// Temporary entries older than this are removed even when their writer cannot be told
/// (names without a process id, from older versions).
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// The process id in the name of one of our temporary entries in a run store or archive
/// directory: `Some(Some(pid))` when the name has one, `Some(None)` when it is ours but has
/// none, `None` when it is not one of ours.
fn temp_owner(name: &str) -> Option<Option<u32>> {
    let leading_pid = |rest: &str| rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
    for prefix in [".tmp-snapshot-", ".tmp-archive-"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return Some(leading_pid(rest));
        }
    }
    if name.starts_with(".replaced-") {
        // `.replaced-{name}-{pid}-{nanos}-{n}`
        let parts: Vec<&str> = name.rsplitn(4, '-').collect();
        return Some(parts.get(2).and_then(|p| p.parse().ok()));
    }
    if let Some((_, rest)) = name.split_once(".small-tmp-") {
        return Some(leading_pid(rest));
    }
    None
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // Signal 0 checks for existence; EPERM means it exists under another user.
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
}

/// Remove what a killed `small` left in a run store or archive directory: staged snapshot
/// and archive directories, directories moved aside during a replace, and temporary index
/// files, once their writer is gone (or, without a recorded writer, after an hour). Links
/// are removed, never followed. Best effort.
pub fn clean_stale(dir: &Path) {
    let Ok(rd) = fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = temp_owner(&name) else {
            continue;
        };
        let Ok(meta) = fs::symlink_metadata(e.path()) else {
            continue;
        };
        let stale = match owner {
            Some(pid) => pid != std::process::id() && !process_alive(pid),
            None => meta
                .modified()
                .ok()
                .and_then(|m| m.elapsed().ok())
                .is_some_and(|age| age > STALE_AFTER),
        };
        if !stale {
            continue;
        }
        if meta.is_dir() {
            remove_tree(&e.path());
        } else {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// A name beside `dir` that does not exist yet.
fn unique_sibling(dir: &Path, prefix: &str) -> PathBuf {
    let pid = std::process::id();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut n = 0u32;
    loop {
        let candidate = dir.join(format!("{prefix}{pid}-{nanos}-{n}"));
        if !candidate.exists() {
            return candidate;
        }
        n += 1;
    }
}

/// Delete a directory tree we created (its files are read-only, so make them writable first
/// where the platform needs it).
pub fn remove_tree(path: &Path) {
    if fs::remove_dir_all(path).is_ok() {
        return;
    }
    if let Ok(entries) = fs::read_dir(path) {
        for e in entries.flatten() {
            if let Ok(meta) = fs::symlink_metadata(e.path()) {
                if meta.is_file() {
                    let mut p = meta.permissions();
                    #[allow(clippy::permissions_set_readonly_false)]
                    p.set_readonly(false);
                    let _ = fs::set_permissions(e.path(), p);
                }
            }
        }
    }
    let _ = fs::remove_dir_all(path);
}

pub use crate::fsio::canonical_or_planned;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_file_names_pass_and_paths_do_not() {
        for ok in ["plan.small.yml", "a", "..x", "x..", "notes.md"] {
            assert!(check_file_name(ok, "name").is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "../x", "a/b", "/etc/passwd", "a\\b", "a\0b"] {
            assert!(check_file_name(bad, "name").is_err(), "{bad}");
        }
    }

    #[test]
    fn replay_ids_are_64_hex_digits() {
        assert!(is_replay_id(&"a".repeat(64)));
        assert!(is_replay_id(&"A".repeat(64)));
        assert!(!is_replay_id(&"a".repeat(63)));
        assert!(!is_replay_id(&"g".repeat(64)));
        assert!(!is_replay_id(&format!("../{}", "a".repeat(61))));
    }

    #[test]
    fn a_staged_directory_appears_whole_or_not_at_all() {
        let parent = tempfile::tempdir().unwrap();
        let dest = parent.path().join("run");
        let staged = StagedDir::new(parent.path(), ".tmp-").unwrap();
        staged.add_file("a.txt", b"one").unwrap();
        assert!(!dest.exists());
        staged.publish(&dest, false).unwrap();
        assert_eq!(std::fs::read(dest.join("a.txt")).unwrap(), b"one");

        let again = StagedDir::new(parent.path(), ".tmp-").unwrap();
        again.add_file("b.txt", b"two").unwrap();
        assert!(again.publish(&dest, false).is_err(), "no silent overwrite");
        assert!(!dest.join("b.txt").exists());

        let replace = StagedDir::new(parent.path(), ".tmp-").unwrap();
        replace.add_file("c.txt", b"three").unwrap();
        replace.publish(&dest, true).unwrap();
        assert!(!dest.join("a.txt").exists() && dest.join("c.txt").exists());
        let left: Vec<_> = std::fs::read_dir(parent.path())
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(
            left.len(),
            1,
            "temporary and replaced directories are cleaned up"
        );
    }

    /// Every size around the buffer's: empty, one byte, one chunk exactly (hashed on the
    /// reading thread), one chunk and a byte, two exactly (the second thread).
    #[test]
    fn copies_of_every_size_around_the_buffer_hash_what_they_hold() {
        let parent = tempfile::tempdir().unwrap();
        let staged = StagedDir::new(parent.path(), ".tmp-").unwrap();
        for (i, size) in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK]
            .into_iter()
            .enumerate()
        {
            let bytes: Vec<u8> = (0..size).map(|i| (i * 7 % 253) as u8).collect();
            let src_path = parent.path().join(format!("src-{i}"));
            std::fs::write(&src_path, &bytes).unwrap();
            let mut src = open_live_file(&src_path).unwrap().unwrap();
            let name = format!("copy-{i}");
            let got = staged.copy_in(&name, &mut src, &src_path).unwrap();
            assert_eq!(got, (sha256_hex(&bytes), size as u64), "size {size}");
            assert_eq!(std::fs::read(staged.path().join(&name)).unwrap(), bytes);
        }
    }

    /// Where no thread can be started, a long copy is hashed on the reading thread.
    #[test]
    fn a_copy_without_threads_hashes_the_same() {
        let parent = tempfile::tempdir().unwrap();
        let staged = StagedDir::new(parent.path(), ".tmp-").unwrap();
        let bytes: Vec<u8> = (0..(CHUNK * 3 + 5)).map(|i| (i * 13 % 241) as u8).collect();
        let src_path = parent.path().join("src");
        std::fs::write(&src_path, &bytes).unwrap();
        let mut src = open_live_file(&src_path).unwrap().unwrap();
        let got = crate::par::without_threads(|| staged.copy_in("c", &mut src, &src_path)).unwrap();
        assert_eq!(got, (sha256_hex(&bytes), bytes.len() as u64));
        assert_eq!(std::fs::read(staged.path().join("c")).unwrap(), bytes);
    }

    /// A chunk the copy cannot take stops the copy with that error, whichever thread hashes.
    #[test]
    fn a_failed_write_stops_the_copy_and_the_hasher() {
        let parent = tempfile::tempdir().unwrap();
        let src_path = parent.path().join("src");
        std::fs::write(&src_path, vec![b'x'; CHUNK * 4]).unwrap();
        for fail_at in [0, 2] {
            let mut src = open_live_file(&src_path).unwrap().unwrap();
            let mut seen = 0;
            let err = stream_hashed(&mut src, &src_path, &mut |_| {
                seen += 1;
                if seen > fail_at {
                    Err(RunError::usage("disk full"))
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
            assert_eq!(err.message, "disk full");
            assert_eq!(seen, fail_at + 1);
        }
    }

    #[test]
    fn a_copy_through_the_buffer_is_the_file_and_its_hash() {
        let parent = tempfile::tempdir().unwrap();
        let src_path = parent.path().join("big.yml");
        // Larger than the buffer, not a multiple of it.
        let bytes: Vec<u8> = (0..(CHUNK * 3 + 12_345))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        std::fs::write(&src_path, &bytes).unwrap();
        let staged = StagedDir::new(parent.path(), ".tmp-").unwrap();
        let mut src = open_live_file(&src_path).unwrap().unwrap();
        // The handoff is read first from the same descriptor: the copy starts at 0 anyway.
        assert_eq!(read_open_file(&mut src, &src_path).unwrap(), bytes);
        let (sha, len) = staged.copy_in("big.yml", &mut src, &src_path).unwrap();
        assert_eq!(
            (sha.as_str(), len),
            (sha256_hex(&bytes).as_str(), bytes.len() as u64)
        );
        let copy = staged.path().join("big.yml");
        assert_eq!(std::fs::read(&copy).unwrap(), bytes);
        assert_eq!(
            hash_stored_file(&copy).unwrap(),
            Some((sha256_hex(&bytes), bytes.len() as u64))
        );
        assert_eq!(hash_stored_file(&parent.path().join("none")).unwrap(), None);
        assert!(open_live_file(&parent.path().join("none"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn an_abandoned_staged_directory_is_removed() {
        let parent = tempfile::tempdir().unwrap();
        {
            let staged = StagedDir::new(parent.path(), ".tmp-").unwrap();
            staged.add_file("a.txt", b"one").unwrap();
        }
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }
}
