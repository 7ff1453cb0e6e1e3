//! Opening what a walk reaches, and noticing when it could not.
//!
//! Owns: how a walked directory is opened (`O_DIRECTORY|O_NOFOLLOW`, one
//! entry name beneath its parent's fd, so a directory swapped for a
//! symlink mid-walk is never entered), a walk's own handle on its start
//! directory, and the count of opens that ran out of descriptors.
//! May touch: directory fds opened beneath a root, by single entry names.

use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};

use crate::error::{Error, Result};

/// How each directory is opened: read-only, must be a directory, and
/// `O_NOFOLLOW`, so a directory swapped for a symlink is never entered.
pub(super) fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// A handle of the walk's own on the directory `dir` (its read offset
/// moves; cap-std's handles may be `O_PATH`, which `getdents` refuses);
/// `given` names it in an error.
pub(super) fn open_start(dir: &cap_std::fs::Dir, given: &str) -> Result<OwnedFd> {
    rustix::fs::openat(dir, c".", dir_flags(), Mode::empty())
        .map_err(|e| Error::io("scandir", given, &std::io::Error::from(e)))
}

/// Times any walk failed to open a directory or file because the process
/// (or system) was out of descriptors (`EMFILE`, `ENFILE`). A walk compares
/// it before and after ([`descriptors_ran_out_since`]): a directory it
/// could not open for want of a descriptor would otherwise vanish from its
/// result without a word (finding F4 of the session fuzzer: a search over
/// a deep tree under a low `ulimit -n` said "No matches found").
static OUT_OF_DESCRIPTORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Notes `e` when it is `EMFILE` or `ENFILE`; gives it back.
pub fn note_open_error(e: rustix::io::Errno) -> rustix::io::Errno {
    if matches!(e, rustix::io::Errno::MFILE | rustix::io::Errno::NFILE) {
        OUT_OF_DESCRIPTORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    e
}

/// `openat(dir, name, flags)` for a walk: an error is noted
/// ([`note_open_error`]) before it is given back.
pub fn open_at(
    dir: impl rustix::fd::AsFd,
    name: impl rustix::path::Arg,
    flags: rustix::fs::OFlags,
) -> std::result::Result<OwnedFd, rustix::io::Errno> {
    rustix::fs::openat(dir, name, flags, rustix::fs::Mode::empty()).map_err(note_open_error)
}

/// A mark to compare with later ([`descriptors_ran_out_since`]).
pub(super) fn descriptor_mark() -> u64 {
    OUT_OF_DESCRIPTORS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Fails with [`Error::OutOfDescriptors`] when some open ran out of
/// descriptors since `mark` (in this walk or one running beside it: either
/// way this walk may have missed a directory).
pub(super) fn descriptors_ran_out_since(mark: u64) -> Result<()> {
    if descriptor_mark() != mark {
        return Err(Error::OutOfDescriptors);
    }
    Ok(())
}
