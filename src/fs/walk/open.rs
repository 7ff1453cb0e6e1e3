//! Opening what a file walk listed, beneath the walk's start.
//!
//! Owns: how a listed file is opened (`O_NOFOLLOW|O_NONBLOCK|O_NOCTTY`, then refused
//! unless the handle is a regular file), re-opening a listed path one
//! component at a time (with a small cache of the last directories), and
//! reading a file through its fd.
//! May touch: directory fds opened beneath a root, by single entry names.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{FileType, OFlags};

use super::fds::{dir_flags, open_at};

/// Opens the regular file `name` in `dir`: `O_NOFOLLOW` (a symlink is
/// refused), `O_NONBLOCK|O_NOCTTY` (a FIFO or device never blocks the open),
/// then refused unless the handle is a regular file.
pub(super) fn open_file_at<P: rustix::path::Arg>(
    dir: rustix::fd::BorrowedFd<'_>,
    name: P,
) -> std::io::Result<FdReader> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = open_at(dir, name, flags)?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(FdReader(fd, u64::try_from(st.st_size).unwrap_or(0)))
}

/// A regular file's fd as a reader (reads with `read(2)`; no memory map),
/// with its size when it was opened.
#[derive(Debug)]
pub(super) struct FdReader(OwnedFd, u64);

impl FdReader {
    /// Reads the whole file into `buf` (cleared first) when it holds at
    /// most `max` bytes: true if `buf` holds it all, false if it is bigger
    /// (`buf` then holds what was read, to be searched before the rest).
    /// A file of its opened size takes one `read(2)`: a short read of a
    /// regular file is its end.
    pub(super) fn read_small(&mut self, buf: &mut Vec<u8>, max: usize) -> std::io::Result<bool> {
        buf.clear();
        let size = usize::try_from(self.1).unwrap_or(usize::MAX);
        if size > max {
            return Ok(false);
        }
        // One byte more than the size, to see a file that grew.
        buf.resize(size + 1, 0);
        let mut got = 0;
        loop {
            let n = match rustix::io::read(&self.0, buf.get_mut(got..).unwrap_or_default()) {
                Ok(n) => n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    buf.truncate(got);
                    return Err(e.into());
                }
            };
            got += n;
            if n == 0 || got < buf.len() {
                buf.truncate(got);
                return Ok(true);
            }
            if buf.len() > max {
                buf.truncate(got);
                return Ok(false);
            }
            let more = (buf.len() * 2).min(max + 1);
            buf.resize(more, 0);
        }
    }
}

impl Read for FdReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        Ok(rustix::io::read(&self.0, buf)?)
    }
}

/// Opens the listed file `rel` beneath `start`: each directory component
/// `O_DIRECTORY|O_NOFOLLOW` from the last, the file as `open_file_at` opens it.
/// Fails (and the file is skipped) if anything was swapped since the walk.
pub(super) fn open_listed(start: &OwnedFd, rel: &[u8]) -> std::io::Result<FdReader> {
    let mut parts = rel.split(|&b| b == b'/').peekable();
    let mut held: Option<OwnedFd> = None;
    while let Some(name) = parts.next() {
        if name.is_empty() || name == b"." || name == b".." {
            return Err(std::io::Error::other("bad listed name"));
        }
        let from = held.as_ref().map_or(start.as_fd(), |f| f.as_fd());
        let name = OsStr::from_bytes(name);
        if parts.peek().is_none() {
            return open_file_at(from, name);
        }
        held = Some(open_at(from, name, dir_flags())?);
    }
    Err(std::io::Error::other("empty listed path"))
}

/// Directory levels [`DirCache`] keeps open: the fds a search thread holds.
const DIR_CACHE_LEVELS: usize = 4;

/// The directories [`open_listed_in`] opened last, to open the next file
/// from (the files come in path order, so neighbours share directories):
/// the first `DIR_CACHE_LEVELS` levels of the last parent path, one fd
/// per level, and the last parent itself when it is deeper.
#[derive(Debug, Default)]
pub(super) struct DirCache {
    levels: Vec<(Vec<u8>, OwnedFd)>,
    deep: Option<(Vec<u8>, OwnedFd)>,
}

fn bad_name(name: &[u8]) -> bool {
    name.is_empty() || name == b"." || name == b".."
}

/// [`open_listed`], opening the file from the cached directories: only the
/// components past what the last file shared with this one are opened
/// (each cached fd was opened the same way, one component at a time with
/// `O_NOFOLLOW`, from the start).
pub(super) fn open_listed_in(
    cache: &mut DirCache,
    start: &OwnedFd,
    rel: &[u8],
) -> std::io::Result<FdReader> {
    let Some(slash) = rel.iter().rposition(|&b| b == b'/') else {
        return open_listed(start, rel);
    };
    let (parent, name) = (
        rel.get(..slash).unwrap_or_default(),
        rel.get(slash + 1..).unwrap_or_default(),
    );
    if bad_name(name) {
        return Err(std::io::Error::other("bad listed name"));
    }
    let name = OsStr::from_bytes(name);
    if let Some((p, dir)) = &cache.deep
        && p.as_slice() == parent
    {
        return open_file_at(dir.as_fd(), name);
    }
    let comps: Vec<&[u8]> = parent.split(|&b| b == b'/').collect();
    if comps.iter().any(|c| bad_name(c)) {
        return Err(std::io::Error::other("bad listed name"));
    }
    let shared = cache
        .levels
        .iter()
        .zip(&comps)
        .take_while(|(l, c)| l.0.as_slice() == **c)
        .count();
    cache.levels.truncate(shared);
    cache.deep = None;
    let mut held: Option<OwnedFd> = None;
    for (i, comp) in comps.iter().enumerate().skip(shared) {
        let from = match (&held, cache.levels.last()) {
            (Some(fd), _) => fd.as_fd(),
            (None, Some(l)) => l.1.as_fd(),
            (None, None) => start.as_fd(),
        };
        let fd = open_at(from, OsStr::from_bytes(comp), dir_flags())?;
        if i < DIR_CACHE_LEVELS && held.is_none() {
            cache.levels.push((comp.to_vec(), fd));
        } else {
            held = Some(fd);
        }
    }
    if let Some(fd) = held {
        let file = open_file_at(fd.as_fd(), name);
        cache.deep = Some((parent.to_vec(), fd));
        return file;
    }
    match cache.levels.last() {
        Some((_, dir)) => open_file_at(dir.as_fd(), name),
        None => open_file_at(start.as_fd(), name),
    }
}
