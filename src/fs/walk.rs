//! Listing directories and walking trees beneath a root, without following
//! symlinks.
//!
//! Owns: reading directory entries with `getdents64` on a directory fd the
//! caller owns (type from `d_type`; `lstat` — `fstatat(AT_SYMLINK_NOFOLLOW)`
//! on one entry name — only when the kernel does not say or when sizes are
//! asked for), and the bounds of a walk. The walks themselves are in
//! [`crate::fs::tree`].
//!
//! May touch: directory fds opened beneath a root, by single entry names
//! only (names from `getdents`, never `.` or `..`, never containing `/`).

use std::ffi::{OsStr, OsString};
use std::ops::ControlFlow;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use rustix::fs::{AtFlags, FileType};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::fs::scope::Target;
pub use crate::text::fmt::Truncation;

/// What an entry is, never following a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (its target is never looked at).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// One directory entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name, lossily decoded if it is not UTF-8.
    pub name: String,
    /// The name as the kernel gave it, only when it is not UTF-8.
    pub raw: Option<OsString>,
    /// Its kind.
    pub kind: Kind,
    /// Its `lstat` size, when asked for (regular files and directories;
    /// a directory's size is used only for sorting, as in the reference).
    pub size: Option<u64>,
}

impl Entry {
    /// The name as the kernel gave it, for further `*at` calls.
    pub fn os_name(&self) -> &OsStr {
        self.raw
            .as_deref()
            .unwrap_or_else(|| OsStr::new(self.name.as_str()))
    }
}

/// Reads the entries of the directory `t` names, sorted by name in byte
/// order, at most `max` of them (the flag says whether there were more).
/// With `sizes`, regular files and directories get their size from `lstat`.
pub fn read_entries(t: &Target, sizes: bool, max: usize) -> Result<(Vec<Entry>, bool)> {
    let given = t.given.as_str();
    let dir = t.open_dir("scandir")?;
    // cap-std's directory handles may be `O_PATH`, which `getdents` refuses:
    // open the directory itself (`.`) for reading.
    let fd = rustix::fs::openat(
        &dir,
        c".",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| Error::io("scandir", given, &std::io::Error::from(e)))?;
    read_entries_fd(&fd, sizes, max, given)
}

/// Reads the entries of the directory `fd`, which the caller owns (its file
/// offset moves), sorted by name in byte order. One `getdents64` buffer, no
/// re-opening of the directory on Linux (see [`super::sys::read_dir`]).
pub fn read_entries_fd(
    fd: &OwnedFd,
    sizes: bool,
    max: usize,
    given: &str,
) -> Result<(Vec<Entry>, bool)> {
    let scandir = |e: rustix::io::Errno| Error::io("scandir", given, &std::io::Error::from(e));
    let mut out = Vec::new();
    let mut truncated = false;
    super::sys::read_dir(fd, |file_name, ft| {
        let bytes = file_name.to_bytes();
        if bytes == b"." || bytes == b".." {
            return ControlFlow::Continue(());
        }
        if out.len() >= max {
            truncated = true;
            return ControlFlow::Break(());
        }
        let mut kind = kind_of(ft);
        let mut size = None;
        if ft == FileType::Unknown || (sizes && matches!(kind, Kind::File | Kind::Dir)) {
            // lstat of one entry name: fstatat(fd, name, AT_SYMLINK_NOFOLLOW).
            if let Ok(st) = rustix::fs::statat(fd, file_name, AtFlags::SYMLINK_NOFOLLOW) {
                kind = kind_of(FileType::from_raw_mode(st.st_mode));
                if matches!(kind, Kind::File | Kind::Dir) {
                    size = Some(u64::try_from(st.st_size).unwrap_or(0));
                }
            }
        }
        let (name, raw) = match std::str::from_utf8(bytes) {
            Ok(s) => (s.to_owned(), None),
            Err(_) => (
                String::from_utf8_lossy(bytes).into_owned(),
                Some(OsString::from_vec(bytes.to_vec())),
            ),
        };
        out.push(Entry {
            name,
            raw,
            kind,
            size,
        });
        ControlFlow::Continue(())
    })
    .map_err(scandir)?;
    // Names in one directory are distinct, so an unstable sort gives the
    // same order, without the scratch buffer a stable one allocates.
    out.sort_unstable_by(|a, b| a.os_name().as_bytes().cmp(b.os_name().as_bytes()));
    Ok((out, truncated))
}

fn kind_of(ft: FileType) -> Kind {
    match ft {
        FileType::Symlink => Kind::Symlink,
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        _ => Kind::Other,
    }
}

/// Bounds and cancellation for one walk.
#[derive(Debug, Clone)]
pub struct WalkLimits {
    /// Entries to visit before stopping.
    pub max_entries: usize,
    /// Depth to descend to (the start directory's children are depth 1).
    pub max_depth: usize,
    /// Stops the walk when cancelled.
    pub cancel: CancellationToken,
    /// Told the number of entries seen so far, when the client asked.
    pub progress: Option<crate::progress::Progress>,
}
