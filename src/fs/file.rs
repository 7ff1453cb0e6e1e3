//! Opening and reading regular files beneath a root, bounded.
//!
//! Owns: the "is this a regular file" check and bounded whole-file reads
//! (with the reply-budget cover of what is held, asked of the grant in the
//! call's [`Io`], which every reader takes as a parameter, and the reused
//! buffer of large reads, [`crate::fs::io::Spare`], the server's, handed in the same
//! [`Io`]); reading part of a file by lines (head, tail, a range) is in
//! `part`. A FIFO, socket or device is refused without being
//! opened for reading, and no open ever blocks: the file is stat'ed through
//! the root handle, refused unless regular, then opened `O_NONBLOCK|O_NOCTTY`
//! and checked again on the handle (same device and inode), so a swap in
//! between is caught. Limits are enforced while reading, not from `st_size`.
//!
//! May touch: a root `Dir`, by relative path.

use cap_fs_ext::FileTypeExt;
use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, File, FileType, MetadataExt, OpenOptions, OpenOptionsExt};

use crate::error::{Error, OsPaths, Result};
use crate::fs::io::Io;
use crate::fs::record::Recorder;
use crate::fs::scope::Target;
use crate::fs::version::{self, Version};

mod part;
mod rest;

pub use part::{Ranged, head_of, read_head, read_range, read_tail, tail_of};
pub use rest::{Rest, read_rest};

const CHUNK: usize = 64 * 1024;

/// What kind of non-regular file this is, for messages.
pub fn kind_name(ft: FileType) -> &'static str {
    if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_char_device() {
        "character device"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

/// Opens the file `t` names for reading, refusing anything but a regular
/// file, once the call's reply budget (`io`) covers its size. Returns the
/// file and its size.
pub fn open_regular(io: &Io, t: &Target) -> Result<(File, u64)> {
    let dir = t.dir().map_err(|e| Error::io("open", &t.given, &e))?;
    // A walked target's final name: no trailing slash, which would make
    // the kernel follow a link swapped in since the walk.
    let rel = match t.walked() {
        Some(w) if t.trailing_slash && w.held.is_none() => {
            let errno = if w.missing {
                rustix::io::Errno::NOENT
            } else {
                rustix::io::Errno::NOTDIR
            };
            return Err(Error::io("open", &t.given, &errno.into()));
        }
        Some(_) => t.rel().trim_end_matches('/').to_owned(),
        None => t.rel(),
    };
    open_regular_at(io, dir, &rel, &t.given, t.walked().is_some()).map_err(|e| match e {
        // The kernel found nothing: the walk tells a missing parent.
        Error::Os { code: "ENOENT", .. } if t.walked().is_none() => {
            t.io_error("open", &std::io::ErrorKind::NotFound.into())
        }
        e => e,
    })
}

/// [`open_regular`] of the final name `rel` beneath `dir`, for the writer,
/// which reads through the parent directory it will replace the file in
/// (having followed any final symlink itself: one found there now is
/// refused).
pub(crate) fn open_regular_in(io: &Io, dir: &Dir, rel: &str, given: &str) -> Result<(File, u64)> {
    open_regular_at(io, dir, rel, given, true)
}

/// Opens `rel` beneath `dir` for a read the agent asked for, and asks the
/// call's reply budget (`io`) for what the read may hold before a byte is
/// read; with
/// `walked`, `rel` is a final name already resolved (by the rule walk or
/// the writer), so a symlink found there now is refused, never followed.
fn open_regular_at(
    io: &Io,
    dir: &Dir,
    rel: &str,
    given: &str,
    walked: bool,
) -> Result<(File, u64)> {
    let (file, size) = open_checked(dir, rel, given, walked, Atime::Update)?;
    // Before a byte is read: the reply budget this read may hold.
    io.grant.file_opened(size)?;
    Ok((file, size))
}

/// The version of the whole regular file `t` names (`None` above `limit`
/// bytes or when it changed while hashed), read in constant memory: what
/// `get_file_info` reports.
pub fn version(t: &Target, limit: u64) -> Result<Option<Version>> {
    let dir = t.dir().map_err(|e| Error::io("open", &t.given, &e))?;
    let walked = t.walked().is_some();
    let rel = if walked {
        t.rel().trim_end_matches('/').to_owned()
    } else {
        t.rel()
    };
    let (file, _) = open_checked(dir, &rel, &t.given, walked, Atime::Keep)?;
    version::of_file(&file, limit, &t.given)
}

/// The version of the regular file `leaf` in `dir` and the file's
/// metadata as hashed (for the writer's conditional writes).
pub(crate) fn version_in(
    dir: &Dir,
    leaf: &str,
    given: &str,
    limit: u64,
) -> Result<(Option<Version>, cap_std::fs::Metadata)> {
    let (file, _) = open_checked(dir, leaf, given, true, Atime::Keep)?;
    let v = version::of_file(&file, limit, given)?;
    let md = file.metadata().map_err(|e| Error::io("open", given, &e))?;
    Ok((v, md))
}

/// `O_NOATIME`, where there is one (Linux).
#[cfg(target_os = "linux")]
const NOATIME: rustix::fs::OFlags = rustix::fs::OFlags::NOATIME;
#[cfg(not(target_os = "linux"))]
const NOATIME: rustix::fs::OFlags = rustix::fs::OFlags::empty();

/// Whether hashing a file for its version may update its access time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Atime {
    /// A read the agent asked for: as any read.
    Update,
    /// Only hashed (`get_file_info`, a write's check): `O_NOATIME` where the
    /// process may use it (it owns the file, or has `CAP_FOWNER`), so a
    /// metadata tool leaves the access time as it was.
    Keep,
}

/// Opens a regular file for reading (never blocking on a FIFO, refusing
/// anything but a regular file, the handle checked to be what was looked
/// up), without asking the reply budget; with `walked`, a final symlink is
/// refused, never followed.
fn open_checked(
    dir: &Dir,
    rel: &str,
    given: &str,
    walked: bool,
    atime: Atime,
) -> Result<(File, u64)> {
    let md = if walked {
        dir.symlink_metadata(rel)
    } else {
        dir.metadata(rel)
    }
    .map_err(|e| Error::io("open", given, &e))?;
    if md.is_dir() {
        return Err(Error::os(rustix::io::Errno::ISDIR, "read", OsPaths::None));
    }
    if !md.is_file() {
        return Err(Error::NotARegularFile {
            path: given.to_owned(),
            kind: kind_name(md.file_type()),
        });
    }
    let base = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let open = |flags: rustix::fs::OFlags| {
        let mut opts = OpenOptions::new();
        opts.read(true).custom_flags(flags.bits() as i32);
        if walked {
            opts.follow(FollowSymlinks::No);
        }
        dir.open_with(rel, &opts)
    };
    let file = match atime {
        Atime::Update => open(base),
        // EPERM: not the owner; read as any read does.
        Atime::Keep => match open(base | NOATIME) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(base),
            other => other,
        },
    }
    .map_err(|e| Error::io("open", given, &e))?;
    let fmd = file.metadata().map_err(|e| Error::io("open", given, &e))?;
    if !fmd.is_file() || fmd.dev() != md.dev() || fmd.ino() != md.ino() {
        return Err(Error::NotARegularFile {
            path: given.to_owned(),
            kind: kind_name(fmd.file_type()),
        });
    }
    Ok((file, fmd.len()))
}

/// Reads the whole regular file `t` names, of at most `limit` bytes, within
/// the call's reply budget (`io`).
pub fn read_all(io: &Io, t: &Target, limit: u64) -> Result<Vec<u8>> {
    let (file, size) = open_regular(io, t)?;
    read_opened(io, file, size, &t.given, limit)
}

/// [`read_all`] of `rel` beneath `dir` (see [`open_regular_in`]).
pub(crate) fn read_all_in(
    io: &Io,
    dir: &Dir,
    rel: &str,
    given: &str,
    limit: u64,
) -> Result<Vec<u8>> {
    let (file, size) = open_regular_in(io, dir, rel, given)?;
    read_opened(io, file, size, given, limit)
}

fn read_opened(io: &Io, file: File, size: u64, given: &str, limit: u64) -> Result<Vec<u8>> {
    let too_large = |size| Error::TooLarge {
        path: given.to_owned(),
        size,
        limit,
        hint: "",
    };
    if size > limit {
        return Err(too_large(size));
    }
    let mut buf = io.spare.buffer(usize::try_from(size).unwrap_or(0));
    let mut covered = Covered::new(io, size);
    // Read into the buffer's spare capacity (never zero-filled first), one
    // more byte than the limit allows to see a file that grew past it.
    let cap = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    loop {
        if buf.len() >= cap {
            break;
        }
        if buf.len() == buf.capacity() {
            let add = (buf.capacity() / 2).max(CHUNK).min(cap - buf.len());
            covered.cover(buf.len().saturating_add(add) as u64)?;
            buf.reserve_exact(add);
        }
        let got = match rustix::io::read(&file, rustix::buffer::spare_capacity(&mut buf)) {
            Ok(r) => r,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(Error::io("read", given, &std::io::Error::from(e))),
        };
        if got == 0 {
            break;
        }
        // (A reused buffer may have had room past what was covered.)
        covered.cover(buf.len() as u64)?;
    }
    if buf.len() as u64 > limit {
        return Err(too_large(buf.len() as u64));
    }
    io.recorder.read(buf.len() as u64);
    Ok(buf)
}

/// The bytes of an open file that the call's reply budget covers
/// ([`crate::reply_budget`]): its size when it was opened, grown before more is
/// held. A file can hold more than its size at open (a log appended to
/// meanwhile); each byte past the size is covered before it is kept.
struct Covered<'a> {
    grant: &'a dyn crate::reply_budget::Grant,
    bytes: u64,
}

impl<'a> Covered<'a> {
    /// `bytes` (the size at open) covered by the grant of `io`.
    fn new(io: &'a Io, bytes: u64) -> Self {
        Covered {
            grant: &*io.grant,
            bytes,
        }
    }

    /// Covers `total` bytes held (asking for at least a chunk more at a
    /// time), waiting for the budget like
    /// [`crate::reply_budget::Grant::file_opened`].
    fn cover(&mut self, total: u64) -> Result<()> {
        if total <= self.bytes {
            return Ok(());
        }
        let more = (total - self.bytes).max(CHUNK as u64);
        self.grant.file_opened(more)?;
        self.bytes = self.bytes.saturating_add(more);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that grows after it was opened (and measured) is covered by
    /// the call's reply budget before its bytes are held: the grant asked
    /// for is at least what each reader returns (for a numbered range, the
    /// text it holds: [`crate::reply_budget::Grant::will_hold`]).
    #[test]
    fn bytes_past_the_size_at_open_are_covered_before_they_are_held() {
        use std::io::Write as _;
        use std::sync::{Arc, Mutex};

        use crate::sync::lock;

        struct Growing {
            root: Arc<crate::fs::roots::Root>,
            granted: Mutex<u64>,
            text: Mutex<u64>,
            grown: Mutex<bool>,
        }
        impl crate::reply_budget::Grant for Growing {
            fn file_opened(&self, bytes: u64) -> Result<()> {
                *lock(&self.granted) += bytes;
                let mut grown = lock(&self.grown);
                if !*grown {
                    // After the size was taken, before the first read.
                    *grown = true;
                    let mut opts = OpenOptions::new();
                    opts.append(true);
                    let mut f = self.root.dir.open_with("f", &opts).expect("open");
                    f.write_all(&vec![b'a'; 3 << 20]).expect("append");
                }
                Ok(())
            }

            fn will_hold(&self, bytes: u64) -> Result<()> {
                let mut text = lock(&self.text);
                *text = (*text).max(bytes);
                Ok(())
            }
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = Arc::new(crate::fs::roots::open(tmp.path()).expect("open root"));
        let target = || {
            crate::fs::scope::resolve_in(std::slice::from_ref(&root), "f", 4096).expect("resolve")
        };
        type Reader<'a> = Box<dyn Fn(&Io) -> Result<usize> + 'a>;
        let numbered = |io: &Io| {
            let range = crate::text::lines::Range {
                first: 1,
                count: None,
                numbers: true,
            };
            let caps = crate::text::lines::Caps {
                whole_chars: usize::MAX,
                cut_chars: usize::MAX,
                bytes: 32 << 20,
            };
            let cancel = tokio_util::sync::CancellationToken::new();
            read_range(io, &target(), range, caps, u64::MAX, &cancel, 32 << 20)
                .map(|((text, _, _), _)| text.len())
        };
        let readers: [(&str, Reader<'_>); 4] = [
            (
                "whole",
                Box::new(|io| read_all(io, &target(), 32 << 20).map(|b| b.len())),
            ),
            (
                "head",
                Box::new(|io| read_head(io, &target(), 5.0, 32 << 20).map(|s| s.0.len())),
            ),
            (
                "tail 0",
                Box::new(|io| read_tail(io, &target(), 0.0, 32 << 20).map(|s| s.0.0.len())),
            ),
            ("numbered range", Box::new(numbered)),
        ];
        let mut short = Vec::new();
        for (what, read) in readers {
            root.dir.write("f", vec![b'a'; 1000]).expect("write");
            let grant = Arc::new(Growing {
                root: root.clone(),
                granted: Mutex::new(0),
                text: Mutex::new(0),
                grown: Mutex::new(false),
            });
            let io = Io {
                grant: grant.clone(),
                ..Io::unbudgeted()
            };
            let got = read(&io).expect("read");
            let granted = (*lock(&grant.granted)).max(*lock(&grant.text));
            assert!(got > 3 << 20, "{what}: read {got} bytes");
            if granted < got as u64 {
                short.push(format!("{what}: held {got} bytes with {granted} covered"));
            }
        }
        assert!(short.is_empty(), "{short:?}");
    }
}
