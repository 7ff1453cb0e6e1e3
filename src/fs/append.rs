//! Appending to a file in place (`append_file`).
//!
//! Owns: adding bytes at the end of a file without replacing it, so the
//! file keeps its identity (inode, hard links), owner, mode, ACLs and
//! extended attributes. Where the bytes land is found by the one writer's
//! [`Dest::locate`] (parent beneath the root, a final symlink followed hop
//! by hop inside it). A missing file is created through
//! [`Dest::create_new`] (temp file, no-replace rename), so it appears whole.
//!
//! An existing file is opened `O_NOFOLLOW` through the parent handle and
//! must be the very inode that was located; the bytes are written with
//! `pwrite` at the size it had, then fdatasynced. If anything fails after
//! the first byte went out (a short write, `ENOSPC`, the directory moved
//! out of the root meanwhile), the file is truncated back to its old size,
//! so a failed append leaves the old content. A power loss in the middle of
//! the write can leave a prefix of the new bytes on disk: keeping the
//! file's identity rules out the temp-file-and-rename that `write_file`
//! uses, and [`MAX_APPEND_BYTES`] keeps that window short. Appends made by
//! tuls to one file never interleave (one lock in this module serializes
//! them); another process appending to the same file at the same moment is
//! not coordinated with.
//!
//! May touch: what [`Dest`] opens beneath a root.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::fs::atomic::Dest;
use crate::fs::scope::Target;
use crate::limits::MAX_APPEND_BYTES;

/// Serializes tuls's own appends, so two calls appending at once cannot
/// both write at the same old end. Holds nothing; an append is short.
static APPENDING: Mutex<()> = Mutex::new(());

/// Appends `bytes` to the file `t` names, creating it when missing.
pub fn append(t: &Target, bytes: &[u8]) -> Result<()> {
    let size = bytes.len() as u64;
    if size > MAX_APPEND_BYTES {
        return Err(Error::AppendTooLarge {
            path: t.given.clone(),
            size,
            limit: MAX_APPEND_BYTES,
        });
    }
    let _one_at_a_time = APPENDING.lock().unwrap_or_else(|p| p.into_inner());
    let dest = Dest::locate(t)?;
    match dest.open_in_place()? {
        Some((fd, end)) => write_at_end(&dest, &fd, end, bytes),
        None => match dest.create_new(|f| {
            f.write_all(bytes)
                .map_err(|e| Error::io("write", &t.given, &e))
        }) {
            // Created meanwhile by someone else: append to that file.
            Err(Error::DestinationExists { .. }) => {
                let dest = Dest::locate(t)?;
                match dest.open_in_place()? {
                    Some((fd, end)) => write_at_end(&dest, &fd, end, bytes),
                    None => Err(Error::Changed {
                        path: t.given.clone(),
                    }),
                }
            }
            other => other,
        },
    }
}

/// Writes all of `bytes` at offset `end` of `fd`, makes them durable, and
/// checks the directory is still in its root; on any failure, cuts the
/// file back to `end`.
fn write_at_end(dest: &Dest, fd: &OwnedFd, end: u64, bytes: &[u8]) -> Result<()> {
    let given = dest.given();
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
        crate::fs::sys::datasync(fd).map_err(|e| Error::io("fsync", given, &e.into()))?;
        if !dest.still_in_root() {
            return Err(Error::DirectoryMoved {
                path: given.to_owned(),
            });
        }
        Ok(())
    })();
    if result.is_err()
        && let Err(e) = rustix::fs::ftruncate(fd, end)
    {
        tracing::warn!(error = %e, "cannot cut a failed append back");
    }
    result
}
