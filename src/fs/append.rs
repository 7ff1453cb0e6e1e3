//! Appending to a file in place (`append_file`).
//!
//! Owns: adding bytes at the end of a file without replacing it, so the
//! file keeps its identity (inode, hard links), owner, mode, ACLs and
//! extended attributes. Where the bytes land is found by the one writer's
//! [`Dest::locate`] (parent beneath the root, a final symlink followed hop
//! by hop inside it). A missing file is created through
//! [`Dest::create_new`] (temp file, no-replace rename), so it appears whole.
//!
//! A file with other names (hard links: `st_nlink` above 1) is never
//! appended to in place, since the bytes would show under every name, a
//! protected one too (`notes.txt` linked to `.git/hooks/post-merge`).
//! Its name is replaced instead, through the one writer as `write_file`
//! replaces a file (temp file and rename; owner, mode, ACLs and extended
//! attributes kept), with its old content read whole (within
//! `--max-read-bytes`, or refused) and the new bytes after it: the other
//! names keep their bytes. The replacement is checked against the content
//! read ([`Guard::Content`]), so an outside write in between is not lost.
//! A link made by another process after the check is not seen.
//!
//! An existing file is opened `O_NOFOLLOW` through the parent handle and
//! must be the very inode that was located; the bytes are written with
//! `pwrite` at the size it had, between two checks that the directory is
//! still in its root, then fdatasynced. If anything fails after the first
//! byte went out (a short write, the directory moved out of the root around
//! the write, `ENOSPC` at the sync), the file is truncated back to its old
//! size, so a failed append leaves the old content. A power loss in the middle of
//! the write can leave a prefix of the new bytes on disk: keeping the
//! file's identity rules out the temp-file-and-rename that `write_file`
//! uses, and [`MAX_APPEND_BYTES`] keeps that window short. Appends made by
//! tuls to one file never interleave (one lock in this module serializes
//! them); another process appending to the same file at the same moment is
//! not coordinated with.
//!
//! With `ifMatch` the file must exist and be at that version: checked under
//! the writer's lock ([`Dest::check`]), then on the handle the bytes go
//! through, which must still have the identity, size and times that were
//! hashed. An append cannot swap the old file out to hash it again, so an
//! outside writer that rewrites the file in place, at the same size and
//! within one timestamp tick, between that check and the `pwrite` is not
//! seen (SECURITY.md).
//!
//! May touch: what [`Dest`] opens beneath a root.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::fs::atomic::{Dest, Guard};
use crate::fs::file;
use crate::fs::ifmatch::{self, Condition};
use crate::fs::io::Io;
use crate::fs::record::{Changed, Op, Recorder};
use crate::fs::scope::Target;
use crate::fs::version::Version;
use crate::limits::{MAX_APPEND_BYTES, MAX_READ_BYTES};

/// Serializes tuls's own appends, so two calls appending at once cannot
/// both write at the same old end. Holds nothing; an append is short.
static APPENDING: Mutex<()> = Mutex::new(());

/// Appends `bytes` to the file `t` names, creating it when missing, if
/// `cond` holds: with `ifMatch` the file must exist and be at that version
/// (checked under the writer's [`crate::fs::ifmatch::WriteLock`], then on
/// the very handle the bytes go through: same identity, size and times as
/// hashed, or the append is refused). A file with other hard links is
/// replaced instead (`append_by_replacing`); its read counts in the
/// call's reply budget (`io`).
pub fn append(t: &Target, bytes: &[u8], cond: &Condition<'_>, io: &Io) -> Result<()> {
    let note: &dyn Recorder = &io.recorder;
    let size = bytes.len() as u64;
    if size > MAX_APPEND_BYTES {
        return Err(Error::AppendTooLarge {
            path: t.given.clone(),
            size,
            limit: MAX_APPEND_BYTES,
        });
    }
    let _one_at_a_time = APPENDING.lock().unwrap_or_else(|p| p.into_inner());
    let mut dest = Dest::locate(t)?;
    let _lock = dest.lock();
    let checked = dest.check(cond)?;
    match dest.open_in_place()? {
        Some((fd, end)) => {
            if checked.is_some() && !dest.still_as_checked(&fd) {
                let now = file::version_in(dest.dir(), dest.leaf(), dest.given(), cond.limit)
                    .ok()
                    .and_then(|(v, _)| v);
                return Err(cond.mismatch(dest.given(), ifmatch::now_is(now.as_ref())));
            }
            if has_other_names(&fd, bytes) {
                drop(fd);
                return append_by_replacing(&dest, bytes, checked, cond, io);
            }
            let before = checked.or_else(|| hash_for_audit(&dest, note));
            write_at_end(&dest, &fd, end, bytes)?;
            noted(&dest, before, end, bytes.len(), note)
        }
        None => match dest.create_new(note, |f| {
            f.write_all(bytes)
                .map_err(|e| Error::io("write", &t.given, &e))
        }) {
            // Created: noted by the writer.
            Ok(()) => Ok(()),
            // Created meanwhile by someone else: append to that file.
            Err(Error::DestinationExists { .. }) => {
                let dest = Dest::locate(t)?;
                match dest.open_in_place()? {
                    Some((fd, _)) if has_other_names(&fd, bytes) => {
                        drop(fd);
                        append_by_replacing(&dest, bytes, None, cond, io)
                    }
                    Some((fd, end)) => {
                        let before = hash_for_audit(&dest, note);
                        write_at_end(&dest, &fd, end, bytes)?;
                        noted(&dest, before, end, bytes.len(), note)
                    }
                    None => Err(Error::Changed {
                        path: t.given.clone(),
                    }),
                }
            }
            Err(e) => Err(e),
        },
    }
}

/// Whether appending `bytes` to the open file would change it under
/// another name too: it has more than one hard link (an empty append
/// changes nothing, and is made in place).
fn has_other_names(fd: &OwnedFd, bytes: &[u8]) -> bool {
    !bytes.is_empty() && rustix::fs::fstat(fd).is_ok_and(|st| st.st_nlink > 1)
}

/// What a refusal to append to a linked file past the read limit adds.
const LINKED_TOO_LARGE: &str = "; it has other hard links, so an append replaces it with a copy of it read whole, and files are read whole up to --max-read-bytes; nothing was written";

/// Appends `bytes` to the file `dest` names, which has other names, by
/// replacing this name with a new file (its old content read whole,
/// within `cond.limit`, then `bytes`), so the other names keep their bytes.
/// With `ifMatch`, `checked` is the version checked under the lock, which
/// the content read must still have; the replacement is refused if the
/// file changes between the read and the rename.
fn append_by_replacing(
    dest: &Dest,
    bytes: &[u8],
    checked: Option<Version>,
    cond: &Condition<'_>,
    io: &Io,
) -> Result<()> {
    let mut all = dest
        .read_all(io, cond.limit)
        .map_err(|e| e.too_large_hint(LINKED_TOO_LARGE))?;
    let version = Version::of(&all);
    if checked.as_ref().is_some_and(|v| *v != version) {
        return Err(cond.mismatch(dest.given(), ifmatch::now_is(Some(&version))));
    }
    all.extend_from_slice(bytes);
    let guard = Guard::Content {
        version,
        limit: cond.limit,
        named: cond.if_match.is_some(),
    };
    dest.replace(&all, guard, &io.recorder).map(drop)
}

/// The version of the file before an append, for the audit record (only
/// when a recorder wants it).
fn hash_for_audit(dest: &Dest, note: &dyn Recorder) -> Option<Version> {
    if !note.before() {
        return None;
    }
    file::version_in(dest.dir(), dest.leaf(), dest.given(), MAX_READ_BYTES)
        .ok()
        .and_then(|(v, _)| v)
}

/// Notes an append to a file of `end` bytes for the undo journal and the
/// audit record: the file's version before (when known) and after.
fn noted(
    dest: &Dest,
    before: Option<Version>,
    end: u64,
    written: usize,
    note: &dyn Recorder,
) -> Result<()> {
    if !note.records() {
        return Ok(());
    }
    let after = file::version_in(dest.dir(), dest.leaf(), dest.given(), MAX_READ_BYTES)
        .ok()
        .and_then(|(v, _)| v);
    note.changed(&Changed {
        op: Op::Append { size_before: end },
        at: dest.place(),
        before,
        after,
        id: crate::fs::record::id_in(dest.dir(), dest.leaf()),
        bytes: written as u64,
        kept: None,
        dir: None,
    })
}

/// Writes all of `bytes` at offset `end` of `fd`, checking just before the
/// first byte and right after the last that the directory is still in its
/// root, then makes them durable. On any failure the file is cut back to
/// `end` at once (in a directory moved out of the root around the write
/// too: the cut-back undoes tuls's own bytes, a few system calls after
/// they landed, before the slow `fdatasync`).
fn write_at_end(dest: &Dest, fd: &OwnedFd, end: u64, bytes: &[u8]) -> Result<()> {
    let given = dest.given();
    let moved = || Error::DirectoryMoved {
        path: given.to_owned(),
    };
    if !dest.still_in_root() {
        return Err(moved());
    }
    let result = (|| {
        let mut done = 0usize;
        while done < bytes.len() {
            let at = end.saturating_add(done as u64);
            match rustix::io::pwrite(fd, &bytes[done..], at) {
                Ok(0) => {
                    return Err(Error::io(
                        "write",
                        given,
                        &std::io::ErrorKind::WriteZero.into(),
                    ));
                }
                Ok(n) => done += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(Error::io("write", given, &e.into())),
            }
        }
        if !dest.still_in_root() {
            return Err(moved());
        }
        crate::fs::sys::datasync(fd).map_err(|e| Error::io("fsync", given, &e.into()))
    })();
    if result.is_err()
        && let Err(e) = rustix::fs::ftruncate(fd, end)
    {
        tracing::warn!(error = %e, "cannot cut a failed append back");
    }
    result
}
