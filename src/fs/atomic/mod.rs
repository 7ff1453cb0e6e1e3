//! The one writer: every content replacement (`write_file`, `edit_file`)
//! goes through [`Dest`].
//!
//! Owns: finding where a write lands and replacing the file there
//! atomically. The destination is a parent directory opened beneath a root
//! plus one plain name; a final symlink is followed by tuls itself, one
//! `readlinkat` at a time, each hop's directory opened *beneath the root
//! handle* (never through `/proc`), so the link stays a link and its in-root
//! target is written, while a link that leaves the root, an absolute one or
//! a dangling one is refused. The replacement is a temp file created
//! unnamed (`O_TMPFILE`) in that same directory, written, given the old
//! file's owner (best effort), permission bits (without setuid/setgid) and
//! extended attributes (POSIX ACLs, security labels, `user.*`, `trusted.*`)
//! on its own handle, and fsynced; nothing of it shows in the directory
//! until then. Then the parent handle is checked to still be the directory
//! a fresh resolve beneath the root reaches (and, for a client root, the
//! client root still where it was beneath the operator's root), and right
//! after that the temp file is linked under a random dot-name and renamed
//! over the name, and the directory fsynced. A rename that landed in a
//! directory moved out of the root in that window of a few system calls is
//! undone at once. On any failure before the rename the target is left
//! byte-identical; a kill at any moment leaves the old or the new content,
//! never a mix (at worst a stray `.<name>.tuls-<hex>.tmp`, only in the
//! instant between the link and the rename). Where the filesystem has no
//! unnamed files, or the kernel will not let this process link one (before
//! Linux 6.10 without `CAP_DAC_READ_SEARCH`), the temp file is named from
//! the start (`O_CREAT|O_EXCL`).
//!
//! Hand-written on purpose: cap-tempfile 4.0.3's `TempFile::replace` needs
//! `/proc`, which Landlock denies (it fails with `EOPNOTSUPP`), and resets the
//! mode.
//!
//! Rooms: this file locates the destination ([`Dest`]) and checks it;
//! `replace` replaces content, `create` makes a file that must not exist,
//! `temp` makes and names temp files, `xattr` carries extended attributes.
//!
//! May touch: root `Dir`s and `Dir`s opened beneath them, by single names.

use std::ffi::CStr;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

use cap_std::fs::PermissionsExt;
use cap_std::fs::{Dir, Metadata, MetadataExt, OpenOptions, OpenOptionsExt, Permissions};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, XattrFlags, renameat_with};
use rustix::io::Errno;

use crate::error::{Error, OsPaths, Result};
use crate::fs::file;
use crate::fs::ifmatch::{self, Condition, WriteLock};
use crate::fs::record::{Changed, Kept, Op, Place, Recorder};
use crate::fs::roots::Root;
use crate::fs::scope::Target;
use crate::fs::version::Version;
use crate::limits::MAX_XATTR_BYTES;
use crate::text::fmt::printable;

/// Whether [`Dest::replace`] first checks that the file is still the one
/// [`Dest::locate`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Replace whatever is there (`write_file`).
    None,
    /// Refuse if the file was replaced or modified since it was located
    /// (its identity, size and times).
    Unchanged,
    /// As [`Guard::Unchanged`], and the replaced file must have had this
    /// content: it is swapped out with `RENAME_EXCHANGE`, hashed again (up
    /// to the given bytes) and swapped back if an outside writer changed it
    /// in between (`ifMatch`; `edit_file`, whose new content was computed
    /// from the old).
    Content {
        /// The version the replaced file must have.
        version: Version,
        /// The most bytes hashed to tell (`--max-read-bytes`).
        limit: u64,
        /// Whether the client named the version (`ifMatch`): a refusal then
        /// says which version the file has now; otherwise it is
        /// [`Error::Changed`].
        named: bool,
    },
}

/// The identity and state of an existing regular file, from `lstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
    uid: u32,
    gid: u32,
}

impl Stamp {
    fn of(md: &Metadata) -> Self {
        Self {
            dev: md.dev(),
            ino: md.ino(),
            len: md.len(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
            mode: md.mode(),
            uid: md.uid(),
            gid: md.gid(),
        }
    }
}

/// Where a content write lands: a directory opened beneath a root and a
/// plain entry name in it (never empty, `.`, `..`, or containing `/`).
#[derive(Debug)]
pub struct Dest {
    /// The root the write was resolved from.
    root: Arc<Root>,
    /// The parent's path beneath `root`, for the check before the rename.
    parent_rel: String,
    parent: Dir,
    leaf: String,
    existing: Option<Stamp>,
    given: String,
    /// Set when an old file swapped out could not be swapped back: its
    /// temp name then holds it and is not removed.
    keep_temp: std::cell::Cell<bool>,
}

impl Dest {
    /// Where a write to `t` lands when `leaf` does not exist in `parent`:
    /// a new file (refused when the path ends in a slash).
    fn absent(t: &Target, parent_rel: String, parent: Dir, leaf: String) -> Result<Dest> {
        if t.trailing_slash {
            return Err(is_a_directory(&t.given));
        }
        Ok(Dest {
            root: t.root.clone(),
            parent_rel,
            parent,
            leaf,
            existing: None,
            given: t.given.clone(),
            keep_temp: Default::default(),
        })
    }

    /// Finds where a write to `t` lands, from what the walk backend made of
    /// it (every write is walked: [`Target::walked_for_write`]).
    ///
    /// # Security
    ///
    /// The walk resolved every symlink beneath the root, a final one
    /// included, and matched the rules; an escape, an absolute link or a
    /// link into another root was [`Error::OutsideRoots`] there. A dangling
    /// in-root link is [`Error::DanglingSymlink`], and no error says where a
    /// link points. The parent is the walk's handle, and the final name is
    /// looked at without following a link: one swapped in since the walk is
    /// [`Error::Changed`].
    pub fn locate(t: &Target) -> Result<Dest> {
        let given = t.given.as_str();
        let w = t.walked_for_write()?;
        // A path ending in `.` or `..` names a directory.
        split(t)?;
        // A hidden name reads as a missing one: through a link, a dangling
        // link.
        let hidden = w.effect == crate::rules::Effect::Hidden;
        if w.void.is_none() || hidden {
            if w.held.is_some() && !hidden {
                t.check_write("open")?;
                return Err(is_a_directory(given));
            }
            if w.via_link && w.missing {
                return Err(Error::DanglingSymlink {
                    path: given.to_owned(),
                });
            }
        }
        t.check_write("open")?;
        let (_, leaf) = t.parent_and_leaf()?;
        let parent = t
            .dir()
            .and_then(Dir::try_clone)
            .map_err(|e| Error::io("open", given, &e))?;
        let parent_rel = t.parent_local().unwrap_or_else(|| ".".to_owned());
        let md = match parent.symlink_metadata(&leaf) {
            Ok(md) => md,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Dest::absent(t, parent_rel, parent, leaf);
            }
            Err(e) => return Err(Error::io("open", given, &e)),
        };
        if md.file_type().is_symlink() {
            // Swapped in since the walk: never followed.
            return Err(Error::Changed {
                path: given.to_owned(),
            });
        }
        Dest::existing(
            &t.root,
            parent_rel,
            parent,
            leaf,
            &md,
            t.trailing_slash,
            given,
        )
    }

    fn existing(
        root: &Arc<Root>,
        parent_rel: String,
        parent: Dir,
        leaf: String,
        md: &Metadata,
        slash: bool,
        given: &str,
    ) -> Result<Dest> {
        let ft = md.file_type();
        if ft.is_dir() {
            return Err(is_a_directory(given));
        }
        if !ft.is_file() {
            return Err(Error::NotARegularFile {
                path: given.to_owned(),
                kind: file::kind_name(ft),
            });
        }
        if slash {
            return Err(Error::os(Errno::NOTDIR, "open", OsPaths::one(given)));
        }
        Ok(Dest {
            root: root.clone(),
            parent_rel,
            parent,
            leaf,
            existing: Some(Stamp::of(md)),
            given: given.to_owned(),
            keep_temp: Default::default(),
        })
    }

    /// Reads the current file, of at most `limit` bytes, through the
    /// parent handle the write will go through, within the call's reply
    /// budget (`io`).
    pub fn read_all(&self, io: &crate::fs::io::Io, limit: u64) -> Result<Vec<u8>> {
        file::read_all_in(io, &self.parent, &self.leaf, &self.given, limit)
    }

    /// The directory the file lives in (opened beneath its root).
    pub fn dir(&self) -> &Dir {
        &self.parent
    }

    /// The file's plain name in [`Dest::dir`].
    pub fn leaf(&self) -> &str {
        &self.leaf
    }

    /// Whether a file is there now (otherwise the write creates it).
    pub fn exists(&self) -> bool {
        self.existing.is_some()
    }

    /// Refuses a target whose permission bits grant no write access, as an
    /// editor's read-only warning would, even when running as root.
    pub fn check_writable(&self) -> Result<()> {
        match self.existing {
            Some(s) if s.mode & 0o222 == 0 => Err(Error::ReadOnly {
                path: self.given.clone(),
                mode: s.mode & 0o7777,
            }),
            _ => Ok(()),
        }
    }

    /// Takes the lock that makes a check and the replacement one step for
    /// writers through tuls (see [`crate::fs::ifmatch`]); hold it across
    /// [`Dest::check`] (or the read a new content is computed from) and
    /// [`Dest::replace`].
    pub fn lock(&self) -> WriteLock {
        WriteLock::take(&self.parent, &self.leaf)
    }

    /// The check of a conditional change, under [`Dest::lock`]: refuses a
    /// change to an existing file without `ifMatch` where one is required,
    /// and a change whose file is not (or no longer) the version `ifMatch`
    /// names. Returns the version checked, for a [`Guard::Content`]; from
    /// here on the write is refused if the file is replaced or modified.
    ///
    /// For `write_file`, and for any writer that does not read the file
    /// first (one that does compares with [`Condition::compare`]).
    pub fn check(&mut self, cond: &Condition<'_>) -> Result<Option<Version>> {
        cond.require_for_existing(&self.given, self.exists())?;
        let Some(want) = cond.if_match else {
            return Ok(None);
        };
        if !self.exists() {
            return Err(cond.mismatch(&self.given, "; it does not exist".to_owned()));
        }
        let (v, md) = file::version_in(&self.parent, &self.leaf, &self.given, cond.limit)?;
        // What was hashed is what the write must replace.
        self.existing = Some(Stamp::of(&md));
        match v {
            Some(v) if v.matches(want) => Ok(Some(v)),
            v => Err(cond.mismatch(&self.given, ifmatch::now_is(v.as_ref()))),
        }
    }

    /// Where the file is, for the change recorder.
    pub fn place(&self) -> Place {
        self.root
            .place_in(&self.parent_rel, &self.leaf, &self.given)
    }

    /// Refuses when the parent handle is no longer the directory a fresh
    /// resolve beneath the root reaches (it was moved, out of the root or
    /// elsewhere, or replaced).
    fn check_parent(&self) -> Result<()> {
        if self.still_in_root() {
            Ok(())
        } else {
            Err(Error::DirectoryMoved {
                path: self.given.clone(),
            })
        }
    }
}

impl Dest {
    /// Opens the located existing file for writing in place (`append_file`):
    /// never following a link, never blocking, and only the very inode
    /// [`Dest::locate`] saw; anything else there now (a symbolic link
    /// swapped in, another file) is [`Error::Changed`]. Returns the file and
    /// its size now. `None` when no file was there.
    pub fn open_in_place(&self) -> Result<Option<(OwnedFd, u64)>> {
        let Some(old) = self.existing else {
            return Ok(None);
        };
        let given = self.given.as_str();
        self.check_writable()?;
        self.check_parent()?;
        let flags =
            OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let changed = || Error::Changed {
            path: given.to_owned(),
        };
        let fd = match rustix::fs::openat(&self.parent, self.leaf.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::LOOP | Errno::NXIO) => return Err(changed()),
            Err(e) => return Err(Error::io("open", given, &e.into())),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| Error::io("open", given, &e.into()))?;
        if crate::fs::sys::dev_ino(&st) != (old.dev, old.ino)
            || FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
        {
            return Err(changed());
        }
        Ok(Some((fd, u64::try_from(st.st_size).unwrap_or(0))))
    }

    /// Whether the file opened by [`Dest::open_in_place`] is still exactly
    /// as [`Dest::check`] hashed it (identity, size, modification and change
    /// times): a writer in place (`append_file` with `ifMatch`) cannot swap
    /// the old file out to hash it again, so it compares the open handle
    /// with the state the check saw.
    pub fn still_as_checked(&self, fd: &OwnedFd) -> bool {
        let (Some(old), Ok(st)) = (self.existing, rustix::fs::fstat(fd)) else {
            return false;
        };
        #[allow(clippy::unnecessary_cast)] // not unnecessary on every platform
        let now = (
            u64::try_from(st.st_size).unwrap_or(u64::MAX),
            (st.st_mtime as i64, st.st_mtime_nsec as i64),
            (st.st_ctime as i64, st.st_ctime_nsec as i64),
        );
        crate::fs::sys::dev_ino(&st) == (old.dev, old.ino) && now == (old.len, old.mtime, old.ctime)
    }

    /// Whether the directory is still where the root leads: checked just
    /// before a write's visible step, and right after it (to undo one that
    /// landed in a directory moved out meanwhile).
    pub fn still_in_root(&self) -> bool {
        self.root.still_reaches(&self.parent_rel, &self.parent)
    }

    /// The path as the client gave it.
    pub fn given(&self) -> &str {
        &self.given
    }
}

/// Refuses a path that names a root or ends in `.` / `..`: a directory.
fn split(t: &Target) -> Result<()> {
    match t.segs.last().map(String::as_str) {
        None | Some(".") | Some("..") => Err(is_a_directory(&t.given)),
        Some(_) => Ok(()),
    }
}

fn is_a_directory(given: &str) -> Error {
    Error::os(Errno::ISDIR, "open", OsPaths::one(given))
}

/// fsyncs a directory so a rename in it survives a crash.
///
/// cap-std holds directories as `O_PATH` handles, which `fsync` refuses
/// (`EBADF`), so this opens the directory itself (`.`, read-only) beneath
/// the handle and fsyncs that.
fn sync_dir(dir: &Dir) -> io::Result<()> {
    let this = dir.open(".")?;
    rustix::fs::fsync(&this).map_err(io::Error::from)
}

mod create;
mod replace;
mod temp;
#[cfg(test)]
mod tests;
mod xattr;

pub use replace::{write, write_if};
use temp::Temp;
use xattr::{copy_xattrs, strip_extra_xattrs};
