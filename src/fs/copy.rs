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
//! The source's size (its apparent size, holes counted) must be within
//! `--max-copy-bytes` ([`crate::limits::MAX_COPY_BYTES`]): a bigger one is
//! refused before anything is made at the destination. Only the source's
//! data is copied, extent by extent, and its holes stay holes
//! ([`crate::fs::sparse`]: `SEEK_DATA`/`SEEK_HOLE`, then `copy_file_range`
//! on Linux, a 64 KiB buffer elsewhere or where it is refused). The copy
//! checks for cancellation between chunks.
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
use crate::fs::sparse::{self, Stop};
use crate::fs::version;

/// Copies the regular file `src` to the new file `dst`, if the source is
/// at most `max_bytes` long (`--max-copy-bytes`). With `ifMatch` (`cond`)
/// the source must be at that version: hashed on the opened handle before
/// the copy and again once the bytes are in the temp file (before it gets
/// its name), so the new file holds exactly the version named, or nothing
/// is created.
pub fn copy(
    src: &Target,
    dst: &Target,
    cond: &Condition<'_>,
    max_bytes: u64,
    cancel: &CancellationToken,
    note: &dyn Recorder,
) -> Result<()> {
    let (from, to) = (src.given.as_str(), dst.given.as_str());
    let (file, md) = open_source(src, to)?;
    if md.len() > max_bytes {
        return Err(Error::TooLarge {
            path: from.to_owned(),
            size: md.len(),
            limit: max_bytes,
            hint: "; files are copied up to --max-copy-bytes; nothing was copied",
        });
    }
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
        sparse::copy(&file, &*out, md.len(), &|| cancel.is_cancelled()).map_err(|e| match e {
            Stop::Cancelled => Error::Cancelled,
            Stop::Io(e) => os("copyfile", e),
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
