//! Safe file access for an untrusted workspace.
//!
//! A workspace arrives by `git clone`: any file in it may be a symbolic link, a FIFO, a device
//! or something huge. Every read and write of a canonical file, `AGENTS.md`, `.gitignore`,
//! `.small-cache/*`, run store and archive copies, and `store` input files goes through this
//! module, which holds one rule **at the moment of use** (on the opened descriptor, not by a
//! check made before it):
//!
//! * **No links where a file is named.** A file is opened with `O_NOFOLLOW`: when its last
//!   component is a symbolic link the open fails, and the error says so
//!   ([`ErrorKind::InvalidInput`], "is a symbolic link"). Callers that deliberately follow a
//!   link (`AGENTS.md` pointing at `CLAUDE.md` inside the workspace) resolve and check it
//!   first, then open the resolved path through here.
//! * **Regular files only.** Opens never block (`O_NONBLOCK`, so a FIFO with no writer opens
//!   at once); the opened descriptor is then checked with `fstat` and anything that is not a
//!   regular file (FIFO, socket, device such as `/dev/zero`, directory) is refused with an
//!   error naming its type.
//! * **Bounded reads.** [`read_bounded`] reads at most `limit + 1` bytes, whatever the size the
//!   file claims, and refuses a file longer than `limit` ([`ErrorKind::FileTooLarge`]).
//! * **New files get a sane mode.** [`create_temp`] creates with `O_CREAT | O_EXCL |
//!   O_NOFOLLOW` (never opens an existing file or a planted link); the new file gets the mode
//!   of the file it will replace when that is a regular file, else 0644 under the umask.
//!
//! Errors are `io::Error`s whose message says what is wrong without repeating the path;
//! every caller wraps them with the path it opened.

use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Read};
use std::path::Path;

/// Default bound for reading one workspace file into memory (the YAML loader's limit).
pub const MAX_READ_BYTES: u64 = 256 * 1024 * 1024;

/// Mode of newly created files when there is no regular file to take the mode from (the
/// process umask still applies).
pub const NEW_FILE_MODE: u32 = 0o644;

fn symlink_error() -> io::Error {
    io::Error::new(
        ErrorKind::InvalidInput,
        "it is a symbolic link; small does not follow links to workspace files \
         (replace the link with a regular file)",
    )
}

fn not_regular(what: &str) -> io::Error {
    io::Error::new(
        ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file; small reads and writes regular files only"),
    )
}

/// What kind of non-regular file `meta` describes, for error messages.
fn kind_name(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    if t.is_symlink() {
        return "a symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    "a special file"
}

/// Map an `open` error: `ELOOP` from `O_NOFOLLOW` means the path is a link; `ENXIO` means a
/// FIFO (or socket) opened for writing without a reader.
fn map_open_error(e: io::Error) -> io::Error {
    #[cfg(unix)]
    {
        match e.raw_os_error() {
            Some(libc::ELOOP) => return symlink_error(),
            Some(libc::ENXIO) => return not_regular("a FIFO or socket"),
            _ => {}
        }
    }
    e
}

fn check_regular(f: File) -> io::Result<File> {
    let meta = f.metadata()?;
    if meta.is_file() {
        Ok(f)
    } else {
        Err(not_regular(kind_name(&meta)))
    }
}

fn base_options() -> OpenOptions {
    #[allow(unused_mut)]
    let mut o = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    o
}

/// Where `O_NOFOLLOW` does not exist, check the path itself first (best effort).
#[cfg(not(unix))]
fn precheck(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(symlink_error()),
        Ok(m) if !m.is_file() => Err(not_regular(kind_name(&m))),
        _ => Ok(()),
    }
}
#[cfg(unix)]
fn precheck(_path: &Path) -> io::Result<()> {
    Ok(())
}

/// Open `path` for reading without following a link in its last component and without
/// blocking on a FIFO, leaving the error as the system gave it (`ELOOP` for a link on unix;
/// elsewhere the best-effort check's "is a symbolic link", see [`is_link_refusal`]). For
/// readers that classify errors and check the file type themselves.
pub fn open_nofollow(path: &Path) -> io::Result<File> {
    precheck(path)?;
    base_options().read(true).open(path)
}

/// Whether an error of [`open_nofollow`] means the path is a symbolic link.
pub fn is_link_refusal(e: &io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return true;
    }
    e.kind() == ErrorKind::InvalidInput
        && e.get_ref()
            .is_some_and(|inner| inner.to_string() == symlink_error().to_string())
}

/// Open an existing regular file for reading. Never follows a link in the last component,
/// never blocks, refuses anything but a regular file.
pub fn open_read(path: &Path) -> io::Result<File> {
    precheck(path)?;
    let f = base_options()
        .read(true)
        .open(path)
        .map_err(map_open_error)?;
    check_regular(f)
}

/// Open an existing regular file for writing (appends, in-place updates): same refusals as
/// [`open_read`].
pub fn open_write(path: &Path) -> io::Result<File> {
    precheck(path)?;
    let f = base_options()
        .write(true)
        .open(path)
        .map_err(map_open_error)?;
    check_regular(f)
}

/// Open a regular file for reading and writing, creating it (mode 0644 under the umask) when
/// it does not exist. For the lock file and the append note.
pub fn open_or_create(path: &Path) -> io::Result<File> {
    precheck(path)?;
    let mut o = base_options();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(NEW_FILE_MODE);
    }
    let f = o.open(path).map_err(map_open_error)?;
    check_regular(f)
}

/// Read all of an open file, at most `limit` bytes: reads `limit + 1` at most and refuses a
/// longer file, whatever size it claims.
pub fn read_all_bounded(f: File, limit: u64) -> io::Result<Vec<u8>> {
    let meta = f.metadata().ok();
    let size = meta.as_ref().map_or(0, |m| m.len());
    #[cfg(unix)]
    if size >= PARALLEL_READ_MIN_BYTES && size <= limit && meta.is_some_and(|m| m.is_file()) {
        if let Some(buf) = read_parallel(&f, size, limit)? {
            return Ok(buf);
        }
    }
    let hint = size.min(limit) as usize;
    let mut buf = Vec::with_capacity(hint);
    f.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(buf)
}

/// Regular files at least this large are read on two threads (the copy from the page cache
/// and the page faults of the buffer are most of the time a large read takes).
#[cfg_attr(not(unix), allow(dead_code))]
const PARALLEL_READ_MIN_BYTES: u64 = 8 << 20;

/// Read the regular file `f` of `size` bytes (`size <= limit`) on two threads, each filling
/// its half of the buffer. Bytes appended meanwhile are read after it; `None` when the file
/// got shorter (the caller then reads it the ordinary way, from the start).
#[cfg(unix)]
fn read_parallel(f: &File, size: u64, limit: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::{Seek, SeekFrom};
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(size).map_err(|_| too_large(limit))?;
    let mut buf = vec![0u8; len];
    #[cfg(target_os = "linux")]
    advise_huge_pages(&mut buf);
    let half = len / 2;
    let (a, b) = buf.split_at_mut(half);
    let (first, second) = std::thread::scope(|s| {
        let h = crate::par::spawn(s, || f.read_exact_at(b, half as u64));
        let first = f.read_exact_at(a, 0);
        (first, h.join())
    });
    let second = second.unwrap_or_else(|_| Err(io::Error::other("a reading thread failed")));
    for r in [first, second] {
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                let mut f = f;
                f.seek(SeekFrom::Start(0))?;
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    }
    // Whatever was appended since the size was taken (bounded like the rest).
    let mut f = f;
    f.seek(SeekFrom::Start(size))?;
    f.take(limit.saturating_add(1) - size)
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(Some(buf))
}

/// Ask the kernel to back a large buffer about to be filled with huge pages: a few hundred
/// times fewer page faults. Only advice; nothing changes if it is not followed.
#[cfg(target_os = "linux")]
fn advise_huge_pages(buf: &mut [u8]) {
    const PAGE: usize = 4096;
    let start = buf.as_mut_ptr() as usize;
    let end = start + buf.len();
    let (from, to) = ((start + PAGE - 1) & !(PAGE - 1), end & !(PAGE - 1));
    if to > from {
        // SAFETY: the range lies inside `buf`, borrowed mutably here; MADV_HUGEPAGE changes
        // only how the kernel backs those pages, never their contents.
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
        }
    }
}

/// The error of a file longer than `limit` bytes.
pub fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        ErrorKind::FileTooLarge,
        format!("it is larger than the limit of {limit} bytes"),
    )
}

/// Read a regular file whole, refusing links, special files and files over `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_all_bounded(open_read(path)?, limit)
}

/// [`read_bounded`], with `Ok(None)` for a file that does not exist.
pub fn read_bounded_opt(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    match read_bounded(path, limit) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Read a file the user named on the command line (or standard input, for `-`): links are
/// followed and a pipe is read as the user asked, but never more than `limit` bytes.
pub fn read_user_input(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut buf = Vec::new();
        io::stdin()
            .lock()
            .take(limit.saturating_add(1))
            .read_to_end(&mut buf)?;
        if buf.len() as u64 > limit {
            return Err(too_large(limit));
        }
        return Ok(buf);
    }
    read_all_bounded(File::open(path)?, limit)
}

/// Like [`read_bounded`] for a text file (UTF-8 required).
pub fn read_string_bounded(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_bounded(path, limit)?)
        .map_err(|_| io::Error::new(ErrorKind::InvalidData, "it is not valid UTF-8"))
}

/// What is at `path` without following a link there: `Ok(None)` when nothing is; an error
/// for a link or anything but a regular file; else the file's metadata.
pub fn regular_metadata(path: &Path) -> io::Result<Option<std::fs::Metadata>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(symlink_error()),
        Ok(m) if m.is_file() => Ok(Some(m)),
        Ok(m) => Err(not_regular(kind_name(&m))),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Check that `path` is a real directory (not a link to one) or does not exist.
pub fn check_dir(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(io::Error::new(
            ErrorKind::InvalidInput,
            "it is a symbolic link; small does not follow links for its own directories \
             (replace the link with a directory)",
        )),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) => Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!("it is {}, not a directory", kind_name(&m)),
        )),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The mode a file replacing `target` should get: the target's permission bits when it is a
/// regular file (not a link), else `None` (then [`NEW_FILE_MODE`] under the umask).
pub fn replacement_mode(target: &Path) -> Option<u32> {
    let m = std::fs::symlink_metadata(target).ok()?;
    if !m.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Some(m.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Create a new file at `path` for writing (it must not exist; a planted link there is not
/// followed). Its mode is `mode` exactly when given (see [`replacement_mode`]), else
/// [`NEW_FILE_MODE`] under the umask.
pub fn create_new(path: &Path, mode: Option<u32>) -> io::Result<File> {
    let mut o = base_options();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(if mode.is_some() { 0o600 } else { NEW_FILE_MODE });
    }
    let f = o.open(path).map_err(map_open_error)?;
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    Ok(f)
}

/// Create a temporary file that will replace `target`: [`create_new`] with the target's mode
/// (see [`replacement_mode`]).
pub fn create_temp(tmp: &Path, target: &Path) -> io::Result<File> {
    create_new(tmp, replacement_mode(target))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn a_large_file_read_on_two_threads_is_read_whole() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("big");
        let len = PARALLEL_READ_MIN_BYTES as usize + 12_345;
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        assert_eq!(read_bounded(&path, len as u64).unwrap(), data);
        assert_eq!(read_bounded(&path, u64::MAX).unwrap(), data);
        assert_eq!(
            read_bounded(&path, len as u64 - 1).unwrap_err().kind(),
            ErrorKind::FileTooLarge
        );
        // Appended after the size was taken: read too, within the limit.
        let f = open_read(&path).unwrap();
        let size = f.metadata().unwrap().len();
        let mut w = OpenOptions::new().append(true).open(&path).unwrap();
        io::Write::write_all(&mut w, b"more").unwrap();
        let got = read_parallel(&f, size, u64::MAX).unwrap().unwrap();
        assert_eq!(&got[..len], &data[..]);
        assert_eq!(&got[len..], b"more");
        assert_eq!(
            read_parallel(&f, size, size + 2).unwrap_err().kind(),
            ErrorKind::FileTooLarge
        );
        // Cut short after the size was taken: not read here (the caller starts again).
        std::fs::write(&path, &data[..100]).unwrap();
        assert!(read_parallel(&f, size, u64::MAX).unwrap().is_none());
        assert_eq!(read_all_bounded(f, u64::MAX).unwrap(), &data[..100]);
    }

    #[test]
    fn links_are_refused_at_open() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("real"), b"x").unwrap();
        symlink("real", d.path().join("link")).unwrap();
        for r in [
            open_read(&d.path().join("link")).map(drop),
            open_write(&d.path().join("link")).map(drop),
            open_or_create(&d.path().join("link")).map(drop),
            create_new(&d.path().join("link"), None).map(drop),
        ] {
            let e = r.unwrap_err();
            assert!(
                e.to_string().contains("symbolic link") || e.kind() == ErrorKind::AlreadyExists,
                "{e}"
            );
        }
        assert!(regular_metadata(&d.path().join("link")).is_err());
        assert_eq!(std::fs::read(d.path().join("real")).unwrap(), b"x");
    }

    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        mkfifo(&fifo);
        let e = open_read(&fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = open_write(&fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = open_or_create(&fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.to_string().contains("device"), "{e}");
        let e = read_bounded(d.path(), 10).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn reads_are_bounded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_bounded(&p, 10).unwrap(), b"0123456789");
        let e = read_bounded(&p, 9).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileTooLarge);
        assert_eq!(read_bounded_opt(&d.path().join("none"), 9).unwrap(), None);
    }

    #[test]
    fn new_files_take_the_replaced_files_mode_or_0644() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("t");
        std::fs::write(&target, b"x").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        create_temp(&d.path().join("a"), &target).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&d.path().join("a")), 0o640);
        // A link to a world-writable file: its mode is not copied.
        let outside = d.path().join("o");
        std::fs::write(&outside, b"x").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o666)).unwrap();
        symlink(&outside, d.path().join("l")).unwrap();
        create_temp(&d.path().join("b"), &d.path().join("l")).unwrap();
        assert_eq!(mode(&d.path().join("b")) & 0o022, 0, "no group/other write");
        assert_eq!(mode(&d.path().join("b")) & 0o600, 0o600);
    }

    #[test]
    fn directories_must_not_be_links() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("real")).unwrap();
        symlink("real", d.path().join("link")).unwrap();
        assert!(check_dir(&d.path().join("real")).is_ok());
        assert!(check_dir(&d.path().join("missing")).is_ok());
        assert!(check_dir(&d.path().join("link"))
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
    }
}

/// Canonical form of `path` if it exists, else of its nearest existing ancestor joined with
/// the rest (so a directory about to be created can be compared with another one).
pub fn canonical_or_planned(path: &Path) -> std::path::PathBuf {
    let mut rest = Vec::new();
    let mut cur = path.to_path_buf();
    loop {
        if let Ok(c) = std::fs::canonicalize(&cur) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (cur.file_name().map(|n| n.to_os_string()), cur.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                cur = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}
