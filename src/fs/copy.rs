//! Copying one regular file (`copy_file`).
//!
//! Owns: making a new file with another file's content, mode and
//! modification time. The source is opened beneath its root (an in-root
//! symbolic link is followed, as reads follow it) and must be a regular
//! file, checked on the opened handle. The destination must not exist in
//! any form ([`Dest::locate_new`]); the bytes go into a temp file in the
//! destination's directory, which [`Dest::create_new`] renames with
//! `RENAME_NOREPLACE`, so no reader sees half a copy and a name created
//! during the copy is never replaced.
//!
//! On Linux the bytes move with `copy_file_range`, so the kernel copies
//! them (or shares the blocks: a reflink on Btrfs and XFS, a server-side
//! copy on NFS) without passing them through tuls; where it is refused
//! (some older kernels across filesystems) a 64 KiB buffer carries them.
//! The copy checks for cancellation between chunks.
//!
//! `ifMatch` names the source's version (as for `move_file`): the source
//! is hashed on the handle the bytes are read from, before the copy and
//! again after it, so the copy holds exactly that version or is not made.
//! It never protects a destination: a copy never replaces one (an
//! existing name, even a dangling link, is refused whatever `ifMatch`
//! says).
//!
//! May touch: what [`Dest`] opens beneath a root, and the source, opened
//! beneath its root.

use std::io::{Read, Write};

use cap_std::fs::PermissionsExt;
use cap_std::fs::{File, Metadata, MetadataExt, OpenOptions, OpenOptionsExt, Permissions};
use rustix::fs::{Timespec, Timestamps};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::fs::atomic::Dest;
use crate::fs::file::kind_name;
use crate::fs::ifmatch::{self, Condition};
use crate::fs::record::Recorder;
use crate::fs::scope::Target;
use crate::fs::version;

/// Bytes of the buffer that carries a copy the kernel cannot do itself.
const BUFFER_BYTES: usize = 64 * 1024;

/// Copies the regular file `src` to the new file `dst`. With `ifMatch`
/// (`cond`) the source must be at that version: hashed on the opened
/// handle before the copy and again once the bytes are in the temp file
/// (before it gets its name), so the new file holds exactly the version
/// named, or nothing is created.
pub fn copy(
    src: &Target,
    dst: &Target,
    cond: &Condition<'_>,
    cancel: &CancellationToken,
    note: &dyn Recorder,
) -> Result<()> {
    let (from, to) = (src.given.as_str(), dst.given.as_str());
    let (file, md) = open_source(src, to)?;
    let source_version = || version::of_file(&file, cond.limit, from);
    let checked = match cond.if_match {
        Some(want) => match source_version()? {
            Some(v) if v.matches(want) => Some(v),
            v => return Err(cond.mismatch(from, ifmatch::now_is(v.as_ref()))),
        },
        None => None,
    };
    let dest = Dest::locate_new(dst)?;
    let os = |op: &'static str, e: std::io::Error| Error::io2(op, from, to, to, &e);
    dest.create_new(note, |out| {
        copy_bytes(&file, out, md.len(), cancel).map_err(|e| match e {
            Copy::Cancelled => Error::Cancelled,
            Copy::Io(e) => os("copyfile", e),
        })?;
        out.set_permissions(Permissions::from_mode(md.mode() & 0o777))
            .map_err(|e| os("chmod", e))?;
        let times = Timestamps {
            last_access: Timespec {
                tv_sec: md.atime(),
                tv_nsec: md.atime_nsec() as _,
            },
            last_modification: Timespec {
                tv_sec: md.mtime(),
                tv_nsec: md.mtime_nsec() as _,
            },
        };
        rustix::fs::futimens(&*out, &times).map_err(|e| os("utime", e.into()))?;
        // The source, changed in place while it was copied, is refused.
        if let Some(v) = &checked {
            let now = source_version()?;
            if now.as_ref() != Some(v) {
                return Err(cond.mismatch(from, ifmatch::now_is(now.as_ref())));
            }
        }
        Ok(())
    })
}

/// Opens the source beneath its root: a regular file, or a refusal naming
/// both paths as the reference words it (`EISDIR ..., copyfile 'a' -> 'b'`).
fn open_source(t: &Target, to: &str) -> Result<(File, Metadata)> {
    let (rel, given) = (t.rel(), t.given.as_str());
    let err = |e: std::io::Error| Error::io2("copyfile", given, to, given, &e);
    // The directory `rel` is beneath: the root's, or the one the path-rule
    // walk opened (a hidden source is missing, as every tool says).
    let base = t.dir().map_err(err)?;
    let md = base.metadata(&rel).map_err(err)?;
    if md.is_dir() {
        return Err(err(rustix::io::Errno::ISDIR.into()));
    }
    if !md.is_file() {
        return Err(Error::NotARegularFile {
            path: given.to_owned(),
            kind: kind_name(md.file_type()),
        });
    }
    let mut opts = OpenOptions::new();
    opts.read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32);
    let file = base.open_with(&rel, &opts).map_err(err)?;
    let fmd = file.metadata().map_err(err)?;
    if !fmd.is_file() || fmd.dev() != md.dev() || fmd.ino() != md.ino() {
        return Err(Error::Changed {
            path: given.to_owned(),
        });
    }
    Ok((file, fmd))
}

enum Copy {
    Cancelled,
    Io(std::io::Error),
}

impl From<std::io::Error> for Copy {
    fn from(e: std::io::Error) -> Self {
        Copy::Io(e)
    }
}

/// Copies the first `len` bytes of `src` (fewer if it shrinks) to `out`.
fn copy_bytes(
    src: &File,
    out: &mut File,
    len: u64,
    cancel: &CancellationToken,
) -> std::result::Result<(), Copy> {
    #[allow(unused_mut)]
    let mut done = 0u64;
    #[cfg(target_os = "linux")]
    while done < len {
        if cancel.is_cancelled() {
            return Err(Copy::Cancelled);
        }
        let want = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(crate::limits::COPY_CHUNK_BYTES);
        match rustix::fs::copy_file_range(src, None, &*out, None, want) {
            Ok(0) => return Ok(()),
            Ok(n) => done += n as u64,
            Err(rustix::io::Errno::INTR) => {}
            // Not offered between these two files: carry the bytes.
            Err(
                rustix::io::Errno::XDEV
                | rustix::io::Errno::INVAL
                | rustix::io::Errno::NOSYS
                | rustix::io::Errno::OPNOTSUPP,
            ) if done == 0 => break,
            Err(e) => return Err(Copy::Io(e.into())),
        }
    }
    let mut buf = vec![0u8; BUFFER_BYTES];
    let mut reader = src;
    while done < len {
        if cancel.is_cancelled() {
            return Err(Copy::Cancelled);
        }
        let want = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(BUFFER_BYTES);
        let n = match reader.read(&mut buf[..want]) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        out.write_all(&buf[..n])?;
        done += n as u64;
    }
    Ok(())
}
