//! Copying the bytes of one open file into a new, empty one, holes kept.
//!
//! Owns: the copy loop of `copy_file` (and of the writer's named temp
//! file, [`crate::fs::atomic`]). The source's data extents are found with
//! `lseek(SEEK_DATA)` and `lseek(SEEK_HOLE)`, and only they are copied,
//! each to the same offset of the destination: by `copy_file_range` on
//! Linux (the kernel copies them without passing them through tuls, or
//! shares the blocks: a reflink on Btrfs and XFS, a server-side copy on
//! NFS), through a 64 KiB buffer (`pread`/`pwrite`) elsewhere or where the
//! kernel refuses. The holes between extents are never written, and the
//! destination's length is set last, so a trailing hole stays one too: a
//! 1 GiB file holding 8 KiB of data copies as 8 KiB of disk in a few
//! system calls (the plain loop it replaces wrote the whole GiB, about
//! 20 s). Where the filesystem cannot say where the data is (no
//! `SEEK_DATA`), everything is copied as data. The copy checks for
//! cancellation between extents and between chunks of one.
//!
//! May touch: the two open files it is given.

use std::os::fd::{AsFd, BorrowedFd};

use rustix::io::Errno;

use crate::limits::COPY_CHUNK_BYTES;

/// Bytes of the buffer that carries a copy the kernel cannot do itself.
const BUFFER_BYTES: usize = 64 * 1024;

/// Why a copy stopped before its end.
#[derive(Debug)]
pub enum Stop {
    /// The call was cancelled.
    Cancelled,
    /// A read, write or seek failed.
    Io(std::io::Error),
}

impl From<Errno> for Stop {
    fn from(e: Errno) -> Self {
        Stop::Io(e.into())
    }
}

/// Where the next data of the source lies, from an offset on.
enum Extent {
    /// Data from the first offset up to the second (a hole or the end).
    Data(u64, u64),
    /// Only a hole is left, or the file ends here.
    None,
    /// The filesystem cannot say: all of it is data.
    Unknown,
}

/// How the bytes of an extent move.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// `copy_file_range`, in the kernel.
    #[cfg(target_os = "linux")]
    Kernel,
    /// `pread` and `pwrite` through a buffer.
    Buffer,
}

/// Copies the first `len` bytes of `src` (fewer if it shrinks meanwhile)
/// into the empty file `dst`, at the same offsets, keeping the holes, and
/// gives `dst` that length. Returns the length copied. `cancelled` is asked
/// between extents and chunks.
pub fn copy(
    src: impl AsFd,
    dst: impl AsFd,
    len: u64,
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, Stop> {
    #[cfg(target_os = "linux")]
    let how = How::Kernel;
    #[cfg(not(target_os = "linux"))]
    let how = How::Buffer;
    copy_as(src.as_fd(), dst.as_fd(), len, how, cancelled)
}

/// [`copy`], the bytes moved `how` (until the kernel refuses).
fn copy_as(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    len: u64,
    mut how: How,
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, Stop> {
    let mut buf = Vec::new();
    let mut end = len;
    let mut at = 0u64;
    while at < end {
        if cancelled() {
            return Err(Stop::Cancelled);
        }
        let (from, to) = match extent(src, at) {
            Extent::Data(from, to) => (from, to.min(end)),
            Extent::None => break,
            Extent::Unknown => (at, end),
        };
        if from >= to {
            break;
        }
        let reached = copy_range(src, dst, (from, to), &mut how, &mut buf, cancelled)?;
        if reached < to {
            // The source ended early: it shrank while it was copied.
            end = reached;
            break;
        }
        at = to;
    }
    // A source that shrank is copied as far as it now goes.
    let now = rustix::fs::fstat(src).map(|st| u64::try_from(st.st_size).unwrap_or(0))?;
    let end = end.min(now);
    rustix::fs::ftruncate(dst, end)?;
    Ok(end)
}

/// The next data extent of `src` at or after `at`.
fn extent(src: BorrowedFd<'_>, at: u64) -> Extent {
    #[cfg(any(target_os = "linux", target_vendor = "apple"))]
    {
        use rustix::fs::{SeekFrom, seek};
        match seek(src, SeekFrom::Data(at)) {
            // Every file ends in a hole, the implicit one at its end.
            Ok(from) => match seek(src, SeekFrom::Hole(from)) {
                Ok(to) => Extent::Data(from, to),
                Err(_) => Extent::Data(from, u64::MAX),
            },
            // No data at or after `at`: a hole to the end, or past the end.
            Err(Errno::NXIO) => Extent::None,
            // No SEEK_DATA here (EINVAL, or an unexpected answer).
            Err(_) => Extent::Unknown,
        }
    }
    #[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
    {
        let _ = (src, at);
        Extent::Unknown
    }
}

/// Copies the bytes of `src` from `range.0` up to `range.1` to the same
/// offsets of `dst`. Returns how far it got: `range.1`, or less where the
/// source ended.
fn copy_range(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    (mut at, to): (u64, u64),
    how: &mut How,
    buf: &mut Vec<u8>,
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, Stop> {
    // Only Linux offers `copy_file_range` here; elsewhere every byte goes
    // through the buffer.
    #[cfg(not(target_os = "linux"))]
    let _ = how;
    while at < to {
        if cancelled() {
            return Err(Stop::Cancelled);
        }
        let want = usize::try_from(to - at)
            .unwrap_or(usize::MAX)
            .min(COPY_CHUNK_BYTES);
        #[cfg(target_os = "linux")]
        if *how == How::Kernel {
            let (mut from, mut into) = (at, at);
            match rustix::fs::copy_file_range(src, Some(&mut from), dst, Some(&mut into), want) {
                Ok(0) => return Ok(at),
                Ok(n) => at += n as u64,
                Err(Errno::INTR) => {}
                // Not offered between these two files: carry the bytes.
                Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                    *how = How::Buffer;
                }
                Err(e) => return Err(e.into()),
            }
            continue;
        }
        if buf.is_empty() {
            buf.resize(BUFFER_BYTES, 0);
        }
        let chunk = want.min(buf.len());
        let n = match rustix::io::pread(src, &mut buf[..chunk], at) {
            Ok(0) => return Ok(at),
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        write_all_at(dst, &buf[..n], at)?;
        at += n as u64;
    }
    Ok(at)
}

/// Writes all of `bytes` at offset `at` of `dst`.
fn write_all_at(dst: BorrowedFd<'_>, mut bytes: &[u8], mut at: u64) -> Result<(), Stop> {
    while !bytes.is_empty() {
        match rustix::io::pwrite(dst, bytes, at) {
            Ok(0) => return Err(Stop::Io(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => {
                bytes = bytes.get(n..).unwrap_or_default();
                at += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::fs::{Dir, File, OpenOptions};

    const MIB: u64 = 1 << 20;

    /// A temp directory opened as a root, and in it `src` (3 MiB: 4 KiB of
    /// data at 0 and at 1 MiB, holes between and after) and an empty `dst`.
    fn files() -> (tempfile::TempDir, std::sync::Arc<Dir>, File, File) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = crate::fs::roots::open(tmp.path()).expect("root").dir;
        let rw = |name: &str| {
            let mut o = OpenOptions::new();
            o.read(true).write(true).create_new(true);
            dir.open_with(name, &o).expect("create")
        };
        let src = rw("src");
        for at in [0, MIB] {
            rustix::io::pwrite(&src, &[7u8; 4096], at).expect("write");
        }
        src.set_len(3 * MIB).expect("set_len");
        let dst = rw("dst");
        (tmp, dir, src, dst)
    }

    fn bytes(dir: &Dir, name: &str) -> Vec<u8> {
        dir.read(name).expect("read")
    }

    fn allocated(f: &File) -> u64 {
        rustix::fs::fstat(f)
            .map(|st| st.st_blocks as u64 * 512)
            .unwrap_or(0)
    }

    /// Through the buffer (no `copy_file_range`) the holes are kept too.
    #[test]
    fn the_buffer_copies_the_data_and_keeps_the_holes() {
        let (_tmp, dir, src, dst) = files();
        let len = copy_as(src.as_fd(), dst.as_fd(), 3 * MIB, How::Buffer, &|| false);
        assert_eq!(len.ok(), Some(3 * MIB));
        assert_eq!(bytes(&dir, "dst"), bytes(&dir, "src"));
        if allocated(&src) < MIB {
            assert!(allocated(&dst) < MIB, "{}", allocated(&dst));
        }
    }

    /// A source shorter than asked (it shrank) is copied as far as it goes.
    #[test]
    fn a_source_that_shrank_is_copied_as_far_as_it_goes() {
        let (_tmp, dir, src, dst) = files();
        src.set_len(MIB + 100).expect("shrink");
        let len = copy(&src, &dst, 3 * MIB, &|| false);
        assert_eq!(len.ok(), Some(MIB + 100));
        assert_eq!(bytes(&dir, "dst"), bytes(&dir, "src"));
    }

    #[test]
    fn a_cancelled_copy_stops() {
        let (_tmp, _dir, src, dst) = files();
        let r = copy(&src, &dst, 3 * MIB, &|| true);
        assert!(matches!(r, Err(Stop::Cancelled)));
    }
}
