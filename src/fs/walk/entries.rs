//! Reading a directory's entries, for a listing or a walk.
//!
//! Owns: reading directory entries with `getdents64` on a directory fd the
//! caller owns (type from `d_type`; `lstat` — `fstatat(AT_SYMLINK_NOFOLLOW)`
//! on one entry name — only when the kernel does not say or when sizes are
//! asked for), sorted by name in byte order, into [`Entry`] values or a
//! reused [`Listing`].
//! May touch: directory fds opened beneath a root, by single entry names
//! only (names from `getdents`, never `.` or `..`, never containing `/`).

use std::ffi::{OsStr, OsString};
use std::ops::ControlFlow;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;

use rustix::fs::{AtFlags, FileType};

use crate::error::{Error, Result};
use crate::fs::scope::Target;

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
    let start = t.walk_start("scandir")?;
    let dir = start.dir;
    // cap-std's directory handles may be `O_PATH`, which `getdents` refuses:
    // open the directory itself (`.`) for reading.
    let fd = rustix::fs::openat(
        &dir,
        c".",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| Error::io("scandir", given, &std::io::Error::from(e)))?;
    let (mut entries, truncated) = read_entries_fd(&fd, sizes, max, given)?;
    if let Some(hide) = &start.hide {
        // Path rules: a hidden entry is not listed, counted or sized.
        let mut hide = hide.in_dir("");
        entries.retain(|e| !hide.hides(&e.name, e.kind == Kind::Dir));
    }
    Ok((entries, truncated))
}

/// Reads the entries of the directory `fd`, which the caller owns (its file
/// offset moves), sorted by name in byte order. One `getdents64` buffer, no
/// re-opening of the directory on Linux (see [`crate::fs::sys::read_dir`]).
pub fn read_entries_fd(
    fd: &OwnedFd,
    sizes: bool,
    max: usize,
    given: &str,
) -> Result<(Vec<Entry>, bool)> {
    let scandir = |e: rustix::io::Errno| Error::io("scandir", given, &std::io::Error::from(e));
    with_listing(fd, max, |listing, truncated| {
        let entries = listing
            .iter()
            .map(|(bytes, mut kind)| {
                let mut size = None;
                if sizes && matches!(kind, Kind::File | Kind::Dir) {
                    // lstat of one entry name: fstatat(fd, name, AT_SYMLINK_NOFOLLOW).
                    if let Ok(st) = rustix::fs::statat(fd, bytes, AtFlags::SYMLINK_NOFOLLOW) {
                        kind = kind_of(FileType::from_raw_mode(st.st_mode));
                        if matches!(kind, Kind::File | Kind::Dir) {
                            size = Some(u64::try_from(st.st_size).unwrap_or(0));
                        }
                    }
                }
                let mut entry = Entry::from_bytes(bytes, kind);
                entry.size = size;
                entry
            })
            .collect();
        (entries, truncated)
    })
    .map_err(scandir)
}

impl Entry {
    /// An entry (without a size) named by the raw `bytes` of a name.
    pub fn from_bytes(bytes: &[u8], kind: Kind) -> Self {
        let mut entry = Self {
            name: String::new(),
            raw: None,
            kind,
            size: None,
        };
        entry.set(bytes, kind);
        entry
    }

    /// Makes this entry (without a size) the one named by `bytes`, reusing
    /// its name's buffer.
    pub fn set(&mut self, bytes: &[u8], kind: Kind) {
        self.name.clear();
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                self.name.push_str(s);
                self.raw = None;
            }
            Err(_) => {
                self.name.push_str(&String::from_utf8_lossy(bytes));
                self.raw = Some(OsString::from_vec(bytes.to_vec()));
            }
        }
        self.kind = kind;
        self.size = None;
    }
}

/// The entries of one directory (never `.` or `..`), sorted by name in
/// byte order, with their names in one buffer: reading a directory into a
/// reused `Listing` allocates nothing per entry.
#[derive(Debug, Default)]
pub struct Listing {
    /// The `getdents64` buffer.
    buf: Vec<u8>,
    /// The names, one after another.
    names: Vec<u8>,
    /// Each entry's name (a range of `names`) and kind, sorted by name.
    ents: Vec<(usize, usize, Kind)>,
}

/// A thread's reused [`Listing`] is dropped after reading a directory that
/// made it hold more than this (names and index), so a huge directory does
/// not leave its buffers resident.
const KEEP_LISTING_BYTES: usize = 1 << 20;

impl Listing {
    /// Reads the entries of the directory `fd` (its file offset moves), at
    /// most `max` of them; `true` when there were more. Entries whose type
    /// the kernel does not give are `lstat`ed by name.
    fn read(&mut self, fd: &OwnedFd, max: usize) -> std::result::Result<bool, rustix::io::Errno> {
        self.names.clear();
        self.ents.clear();
        let mut truncated = false;
        let (names, ents) = (&mut self.names, &mut self.ents);
        crate::fs::sys::read_dir(fd, &mut self.buf, |file_name, ft| {
            let bytes = file_name.to_bytes();
            if bytes == b"." || bytes == b".." {
                return ControlFlow::Continue(());
            }
            if ents.len() >= max {
                truncated = true;
                return ControlFlow::Break(());
            }
            let mut kind = kind_of(ft);
            if ft == FileType::Unknown {
                // lstat of one entry name: fstatat(fd, name, AT_SYMLINK_NOFOLLOW).
                if let Ok(st) = rustix::fs::statat(fd, file_name, AtFlags::SYMLINK_NOFOLLOW) {
                    kind = kind_of(FileType::from_raw_mode(st.st_mode));
                }
            }
            ents.push((names.len(), bytes.len(), kind));
            names.extend_from_slice(bytes);
            ControlFlow::Continue(())
        })
        // Out of descriptors (where listing duplicates the descriptor), the
        // walk must hear of it, not see an empty directory.
        .map_err(super::note_open_error)?;
        // Names in one directory are distinct, so an unstable sort gives the
        // same order, without the scratch buffer a stable one allocates.
        let names = &self.names;
        let name = |&(at, len, _): &(usize, usize, Kind)| names.get(at..at + len);
        self.ents.sort_unstable_by(|a, b| name(a).cmp(&name(b)));
        Ok(truncated)
    }

    /// Reads the entries of the directory `fd` (its file offset moves)
    /// into a new listing.
    pub fn of(fd: &OwnedFd) -> std::result::Result<Self, rustix::io::Errno> {
        let mut l = Self::default();
        l.read(fd, usize::MAX)?;
        Ok(l)
    }

    /// Reads the directory `fd` into this listing, replacing its entries.
    pub fn reread(&mut self, fd: &OwnedFd) -> std::result::Result<(), rustix::io::Errno> {
        self.read(fd, usize::MAX).map(|_| ())
    }

    /// The `i`th entry's raw name and kind, in name order.
    pub fn get(&self, i: usize) -> Option<(&[u8], Kind)> {
        let &(at, len, kind) = self.ents.get(i)?;
        Some((self.names.get(at..at + len)?, kind))
    }

    /// Where `name` is or would be in name order, and whether it is there.
    pub fn position(&self, name: &[u8]) -> (usize, bool) {
        let names = &self.names;
        match self
            .ents
            .binary_search_by(|&(at, len, _)| names.get(at..at + len).unwrap_or_default().cmp(name))
        {
            Ok(i) => (i, true),
            Err(i) => (i, false),
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.ents.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.ents.is_empty()
    }

    /// The total bytes of the names.
    pub fn name_bytes(&self) -> usize {
        self.names.len()
    }

    /// Each entry's raw name and kind, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Kind)> + '_ {
        self.ents
            .iter()
            .map(|&(at, len, kind)| (self.names.get(at..at + len).unwrap_or_default(), kind))
    }

    fn held_bytes(&self) -> usize {
        self.buf.capacity()
            + self.names.capacity()
            + self.ents.capacity() * std::mem::size_of::<(usize, usize, Kind)>()
    }
}

/// Reads the directory `fd` (at most `max` entries; the flag says whether
/// there were more) into this thread's reused [`Listing`] and calls `f`
/// with it. `f` must not walk further itself (a nested call reads into a
/// fresh listing, correct but not reused).
pub fn with_listing<R>(
    fd: &OwnedFd,
    max: usize,
    f: impl FnOnce(&Listing, bool) -> R,
) -> std::result::Result<R, rustix::io::Errno> {
    thread_local! {
        static LISTING: std::cell::RefCell<Listing> = std::cell::RefCell::default();
    }
    LISTING.with(|cell| match cell.try_borrow_mut() {
        Ok(mut listing) => {
            let read = listing.read(fd, max);
            let out = read.map(|truncated| f(&listing, truncated));
            if listing.held_bytes() > KEEP_LISTING_BYTES {
                *listing = Listing::default();
            }
            out
        }
        Err(_) => {
            let mut listing = Listing::default();
            let truncated = listing.read(fd, max)?;
            Ok(f(&listing, truncated))
        }
    })
}

fn kind_of(ft: FileType) -> Kind {
    match ft {
        FileType::Symlink => Kind::Symlink,
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        _ => Kind::Other,
    }
}
