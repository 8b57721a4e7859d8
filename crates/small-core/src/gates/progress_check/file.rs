//! The progress log checked straight from its file, never held whole: from the gates' cache
//! when only its tail is new ([`check_file_resumed`]), or read piece by piece by one thread
//! while the others check the pieces ([`check_file_streamed`]). Both report positions in the
//! file's offsets (see [`yaml::Splice`]) and equal [`check_log`] on the whole text (see the
//! differential tests); both give up (`None`) where the whole-text check must decide, and the
//! caller then reads the log whole.

use std::path::Path;

use super::*;

/// A file, read through a small buffer per piece: hashing it never holds it whole (and never
/// makes the kernel zero a buffer the size of the log).
#[cfg(unix)]
pub(super) struct FileInput<'f>(pub(super) &'f std::fs::File);

/// The buffer each piece of a [`FileInput`] is read through.
#[cfg(unix)]
const FILE_READ_BYTES: usize = 256 << 10;

#[cfg(unix)]
impl Input for FileInput<'_> {
    fn feed(&self, offset: u64, len: usize, h: &mut blake3::Hasher) -> Option<()> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; FILE_READ_BYTES.min(len)];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(buf.len());
            self.0
                .read_exact_at(&mut buf[..n], offset + done as u64)
                .ok()?;
            h.update(&buf[..n]);
            done += n;
        }
        Some(())
    }
}

/// Bytes a writer has staged at the end of the log: the log it will leave is the file's
/// first `disk_len` bytes followed by `bytes`. Checked that way, the log is still read from
/// its file, not copied whole with the staged bytes.
#[derive(Debug, Clone, Copy)]
pub struct Appended<'a> {
    pub disk_len: u64,
    pub bytes: &'a [u8],
}

/// The log as a checker reads it: the file, and the bytes staged after it.
#[cfg(unix)]
struct LogSource<'a> {
    file: std::fs::File,
    /// The file's length when opened (with staged bytes, the file must have exactly the
    /// length they were staged after).
    disk: u64,
    /// Staged bytes (empty when nothing is staged).
    staged: &'a [u8],
    /// Whether bytes were staged: the log then ends with them, where a file read alone ends
    /// wherever it ends when read (it may grow).
    fixed: bool,
    /// The file's stat when opened, and when it was opened (see [`carry`]).
    opened: Option<carry::LogStat>,
    started: std::time::SystemTime,
}

#[cfg(unix)]
impl<'a> LogSource<'a> {
    fn open(path: &Path, appended: Option<Appended<'a>>) -> Option<LogSource<'a>> {
        let started = std::time::SystemTime::now();
        let file = crate::fsio::open_read(path).ok()?;
        let meta = file.metadata().ok()?;
        let disk = meta.len();
        let (staged, fixed) = match appended {
            Some(a) if a.disk_len != disk => return None,
            Some(a) => (a.bytes, true),
            None => (&[][..], false),
        };
        Some(LogSource {
            file,
            disk,
            staged,
            fixed,
            opened: carry::LogStat::of(&meta),
            started,
        })
    }

    /// The file's stat to record for what was read from it: unchanged since it was opened,
    /// settled then, and with no staged bytes after it.
    fn settled(&self) -> Option<carry::LogStat> {
        if self.fixed {
            return None;
        }
        let now = self
            .file
            .metadata()
            .ok()
            .and_then(|m| carry::LogStat::of(&m));
        carry::settled(self.opened, now, self.started)
    }

    /// The log's length as it stands.
    fn size(&self) -> u64 {
        self.disk + self.staged.len() as u64
    }

    /// Fill `buf` with the log's bytes from `pos`.
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> Option<()> {
        use std::os::unix::fs::FileExt;
        let on_disk = self.disk.saturating_sub(pos).min(buf.len() as u64) as usize;
        self.file.read_exact_at(&mut buf[..on_disk], pos).ok()?;
        let rest = &mut buf[on_disk..];
        if !rest.is_empty() {
            let from = (pos + on_disk as u64 - self.disk) as usize;
            rest.copy_from_slice(self.staged.get(from..from.checked_add(rest.len())?)?);
        }
        Some(())
    }

    /// Add the log's bytes from `pos` to its end to `out`, at most `room` of them (`None`
    /// when there are more, or on a read error).
    fn read_rest(&mut self, pos: u64, room: u64, out: &mut Vec<u8>) -> Option<()> {
        use std::io::{Read, Seek, SeekFrom};
        let start = out.len();
        if self.fixed {
            let n = self.size().checked_sub(pos)?;
            if n > room {
                return None;
            }
            out.resize(start + n as usize, 0);
            return self.read_exact_at(&mut out[start..], pos);
        }
        self.file.seek(SeekFrom::Start(pos)).ok()?;
        (&mut self.file)
            .take(room.saturating_add(1))
            .read_to_end(out)
            .ok()?;
        ((out.len() - start) as u64 <= room).then_some(())
    }
}

/// The longest tail (the bytes after the cached part) [`check_file_resumed`] checks; a longer
/// one is checked by [`check_log`] on the whole log, which moves the cache up to it.
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) const RESUMED_TAIL_MAX_BYTES: u64 = 256 << 10;

/// The longest head (the lines up to the log's first entry) [`check_file_resumed`] reads.
#[cfg_attr(not(unix), allow(dead_code))]
const RESUMED_HEAD_MAX_BYTES: usize = 64 << 10;

/// The log at `path` checked from the cache without reading it whole: the cached part is
/// trusted when the file's stat is one the cache recorded, or one `progress add` carried
/// from it (see [`carry`]); otherwise it is hashed piece by piece straight from the file
/// (every byte of it is compared, by its BLAKE3 hash, with what the cache vouches for). Only the lines before the first entry
/// and the entries after the cached part are kept in memory, joined (see [`yaml::Splice`]);
/// positions in the results are the file's. The document returned has no entries, as with
/// [`check_log`].
///
/// `appended`: bytes a writer staged after the file's content (see [`Appended`]).
///
/// `None` when this cannot be done (no usable cache, a changed byte, a tail longer than
/// [`RESUMED_TAIL_MAX_BYTES`], a byte-order mark, an unusual shape): the caller then reads the
/// log whole and calls [`check_log`], which reports whatever made this give up. Nothing is
/// written to the cache here.
pub fn check_file_resumed(
    path: &Path,
    appended: Option<Appended>,
    limits: &Limits,
    rules: &EntryRules,
    opts: &ScanOptions,
) -> Option<Checked> {
    let key = cache_key(rules, opts)?;
    let dir = opts.cache_dir.as_deref()?;
    let body = read_cache(dir, &cache_file(rules), &key)?;
    resumed_from_file(dir, path, appended, limits, rules, body)
}

#[cfg(not(unix))]
fn resumed_from_file(
    _: &Path,
    _: &Path,
    _: Option<Appended>,
    _: &Limits,
    _: &EntryRules,
    _: CacheBody,
) -> Option<Checked> {
    None
}

#[cfg(unix)]
fn resumed_from_file(
    dir: &Path,
    path: &Path,
    appended: Option<Appended>,
    limits: &Limits,
    rules: &EntryRules,
    body: CacheBody,
) -> Option<Checked> {
    let mut log = LogSource::open(path, appended)?;
    let size = log.size();
    let n = body.prefix_len;
    let n64 = n as u64;
    // The cached part is hashed from the file alone.
    if size > limits.max_bytes as u64
        || n64 > log.disk
        || size - n64 > RESUMED_TAIL_MAX_BYTES
        || body.resume.0 != n
    {
        return None;
    }
    // The head: up to the end of the line of the log's first entry, inside the cached part.
    let seq_start = pos_in(&body.resume.4).offset as usize;
    let mut head = vec![0u8; n.min(RESUMED_HEAD_MAX_BYTES)];
    log.read_exact_at(&mut head, 0)?;
    if head.starts_with("\u{feff}".as_bytes()) || seq_start >= head.len() {
        return None;
    }
    let h = seq_start + memchr::memchr(b'\n', &head[seq_start..])? + 1;
    if h > n {
        return None;
    }
    head.truncate(h);
    let trusted = match (&body.stat, &log.opened) {
        (Some(recorded), Some(now)) => carry::vouched(dir, recorded, now),
        _ => false,
    };
    if !trusted && hash_parallel(&FileInput(&log.file), n)?.to_hex().as_str() != body.prefix_hash {
        return None;
    }
    // The tail, bounded like the whole file (it may have grown since).
    let room = (limits.max_bytes as u64).saturating_sub(n64);
    let mut text = head;
    log.read_rest(n64, room, &mut text)?;
    let text = String::from_utf8(text).ok()?;
    let (mut r, resume) = runner_from(body, rules)?;
    let walked = yaml::stream_fast_part(
        &text,
        limits,
        "entries",
        Part {
            resume: Some(Resume {
                offset: h,
                ..resume
            }),
            // On `None` the runner is dropped and the log checked in full.
            one_pass: true,
            splice: Some(yaml::Splice {
                at: h,
                skipped: n - h,
            }),
            ..Part::default()
        },
        &mut |i, node| r.push(i, node),
    )?;
    if walked.last_item.is_none_or(|l| l.index < resume.index) {
        return None;
    }
    r.finish_unsnapped();
    Some(Checked {
        root: Ok(walked.root?),
        results: r.results(),
        method: Method::Resumed(resume.index),
    })
}

/// Logs smaller than this are read whole: one read and one walk cost less than a pipeline.
#[cfg(unix)]
const STREAM_MIN_BYTES: u64 = 4 << 20;

/// The size of the pieces a streamed log is read in. At most a piece per thread, one waiting
/// and one being read are held at once.
#[cfg(unix)]
const PIECE_BYTES: usize = 2 << 20;

/// The log at `path` checked without holding it: one thread reads it piece by piece (each
/// piece ends where an entry starts), the others check the pieces as [`check_log`]'s parallel
/// parts are checked, and the results are joined in log order. The cache is written (when
/// `opts` asks) with the hash of the bytes read, as they were read.
///
/// `None` when the log is small, is not of the fast path's shape, has an entry longer than a
/// piece, or changes while it is read: the caller then reads it whole and calls [`check_log`].
/// `appended`: bytes a writer staged after the file's content (see [`Appended`]).
pub fn check_file_streamed(
    path: &Path,
    appended: Option<Appended>,
    limits: &Limits,
    rules: &EntryRules,
    opts: &ScanOptions,
) -> Option<Checked> {
    #[cfg(unix)]
    {
        let (checked, _) = streamed(
            path,
            appended,
            limits,
            rules,
            opts,
            PIECE_BYTES,
            STREAM_MIN_BYTES,
        )?;
        Some(checked)
    }
    #[cfg(not(unix))]
    {
        let _ = (path, appended, limits, rules, opts);
        None
    }
}

/// One piece of the log for a checking thread.
#[cfg(unix)]
struct Job {
    k: usize,
    text: Vec<u8>,
    part: Part,
}

/// What a checking thread gives back: the piece's results, and its text (for reuse, and to
/// finish the cache's hash).
#[cfg(unix)]
type Done = (usize, Option<PartResult>, Vec<u8>);

/// Where the pieces of a streamed log start, and how.
#[cfg(unix)]
struct Piece {
    /// Offset in the file of the piece's first entry line.
    start: u64,
    /// Where the piece's bytes start in its text (the head before them).
    at: usize,
}

/// [`check_file_streamed`] with the piece size and the smallest log streamed given (tests use
/// small ones). Returns the result and the number of pieces.
#[cfg(unix)]
pub(super) fn streamed(
    path: &Path,
    appended: Option<Appended>,
    limits: &Limits,
    rules: &EntryRules,
    opts: &ScanOptions,
    piece: usize,
    min: u64,
) -> Option<(Checked, usize)> {
    use std::sync::{mpsc, Arc, Mutex};
    let limit = limits.max_bytes as u64;
    let mut log = LogSource::open(path, appended)?;
    let size = log.size();
    if size > limit || size < min {
        return None;
    }
    // The lines before the first entry, and the first entry's line.
    let mut head = vec![0u8; (size as usize).min(RESUMED_HEAD_MAX_BYTES)];
    log.read_exact_at(&mut head, 0)?;
    if head.starts_with("\u{feff}".as_bytes()) {
        return None;
    }
    let (first, h) = yaml::head_first_item(&head, limits, "entries")?;
    let l0 = first.offset;
    head.truncate(h);
    let indent = first.seq_indent;
    let cache = match (cache_key(rules, opts), &opts.cache_dir) {
        (Some(key), Some(dir)) if opts.cache_write => Some((key, dir)),
        _ => None,
    };
    let mut hasher = cache.as_ref().map(|_| {
        let mut h = blake3::Hasher::new();
        h.update(&head[..l0]);
        h
    });
    let workers = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
        n => n,
    };
    let (job_tx, job_rx) = mpsc::sync_channel::<Job>(1);
    // Held by the checkers alone: if they all stop (a panic), sending fails instead of
    // waiting for them.
    let job_rx = Arc::new(Mutex::new(job_rx));
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    let mut done: Vec<Done> = Vec::new();
    let read_ok = std::thread::scope(|s| {
        let mut checkers = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (job_rx, done_tx) = (Arc::clone(&job_rx), done_tx.clone());
            // A checker the system refuses is left out; with none, the first piece cannot
            // be handed on and the caller reads the log whole.
            let started = crate::par::start(s, move || loop {
                let job = match job_rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(Job { k, text, part }) = job else {
                    return;
                };
                let result = std::str::from_utf8(&text)
                    .ok()
                    .and_then(|src| check_part(src, limits, rules, part));
                if done_tx.send((k, result, text)).is_err() {
                    return;
                }
            });
            if let Ok(h) = started {
                checkers.push(h);
            }
        }
        drop((done_tx, job_rx));
        // The reader: this thread.
        let mut spare: Vec<Vec<u8>> = Vec::new();
        let (mut pos, mut line, mut index) = (l0 as u64, first.line, 0usize);
        let mut k = 0;
        let ok = loop {
            // Texts given back by the checkers are reused (no new pages to fault in).
            while let Ok(mut d) = done_rx.try_recv() {
                spare.push(std::mem::take(&mut d.2));
                done.push(d);
            }
            let mut text = spare.pop().unwrap_or_default();
            let at = if k == 0 { l0 } else { h };
            // Near the end the pieces shrink, so that the checkers finish together: the
            // last pieces are what one checker may still be working on while the others
            // have nothing left.
            let left = size.saturating_sub(pos);
            let mut now = (left / (2 * workers as u64)).clamp(piece as u64 / 8, piece as u64);
            // Whether this piece is the last (`None`: it could not be read).
            let last = loop {
                let last = pos + now >= size;
                // A reused text keeps its bytes (they are overwritten below): only the part
                // it never had is zeroed, not the whole piece again.
                let want = if last { at } else { at + now as usize };
                if text.len() < want {
                    text.resize(want, 0);
                }
                text.truncate(want);
                text[..at].copy_from_slice(&head[..at]);
                if last {
                    // The rest of the log, bounded like the whole file (it may have grown).
                    if log
                        .read_rest(pos, limit.saturating_sub(pos), &mut text)
                        .is_none()
                    {
                        break None;
                    }
                    break Some(true);
                }
                if log.read_exact_at(&mut text[at..], pos).is_none() {
                    break None;
                }
                // End the piece where its last entry starts; that entry goes with the next.
                match last_item_line(&text[at..], indent) {
                    Some(cut) => {
                        text.truncate(at + cut);
                        break Some(false);
                    }
                    // A shrunk piece that holds no entry's start: a whole piece instead.
                    None if now < piece as u64 => now = piece as u64,
                    None => break None,
                }
            };
            let Some(last) = last else {
                break false;
            };
            let bytes = &text[at..];
            if let Some(hs) = hasher.as_mut().filter(|_| !last) {
                hs.update(bytes);
            }
            let (lines, items) = yaml::count_item_lines(bytes, 0, bytes.len(), indent);
            let end = text.len();
            let part = Part {
                resume: (k > 0).then_some(Resume {
                    offset: h,
                    line,
                    index,
                    ..first
                }),
                stop: (!last).then_some(end),
                splice: (k > 0).then(|| yaml::Splice {
                    at: h,
                    skipped: pos as usize - h,
                }),
                ..Part::default()
            };
            pieces.push(Piece { start: pos, at });
            starts.push(index);
            if job_tx.send(Job { k, text, part }).is_err() {
                break false;
            }
            if last {
                break true;
            }
            pos += (end - at) as u64;
            line += lines;
            index += items;
            k += 1;
        };
        drop(job_tx);
        done.extend(done_rx.iter());
        // Joined here, a checker's panic is an answer (`None`), not this thread's panic.
        let joined = checkers.into_iter().all(|c| c.join().is_ok());
        ok && joined
    });
    if !read_ok || done.len() != pieces.len() {
        return None;
    }
    done.sort_by_key(|d| d.0);
    let n = pieces.len();
    let last_text = std::mem::take(&mut done[n - 1].2);
    let parts: Vec<PartResult> = done.into_iter().map(|d| d.1).collect::<Option<_>>()?;
    let (checked, snap) = merge_parts(parts, &starts, Method::Streamed(n))?;
    // The cache vouches for the bytes read before the last entry: the pieces before the
    // last one were hashed as they were read, the last one is hashed up to that entry.
    if let (Some((key, dir)), Some(mut hs), Some(snap)) = (cache, hasher, snap) {
        let p = &pieces[n - 1];
        let upto = (snap.resume.offset as u64).checked_sub(p.start)? as usize;
        hs.update(last_text.get(p.at..p.at + upto)?);
        let hash = hs.finalize().to_hex().to_string();
        write_cache_hashed(dir, &cache_file(rules), &key, hash, &snap, log.settled());
    }
    Some((checked, n))
}

/// The start of the last line of `bytes` (after the first) that opens an entry at `indent`.
#[cfg(unix)]
fn last_item_line(bytes: &[u8], indent: usize) -> Option<usize> {
    let mut end = bytes.len();
    while let Some(nl) = memchr::memrchr(b'\n', &bytes[..end]) {
        let at = nl + 1;
        if at < bytes.len() && yaml::is_item_line(bytes, at, indent) {
            return Some(at);
        }
        end = nl;
    }
    None
}
