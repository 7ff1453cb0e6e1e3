//! The platform split of the capability core, in one place.
//!
//! Owns: the calls that differ between Linux and the portable (macOS)
//! backend. Linux reads directories with `getdents64` into one buffer
//! (rustix's `RawDir`), and tells procfs apart by `fstatfs`; the portable
//! backend reads directories with `readdir` (rustix's `Dir`, `fdopendir`
//! on a duplicate of the descriptor). Everything else (cap-std's
//! resolution, `renameat_with(NOREPLACE)`, which rustix maps to
//! `renameat2` on Linux and `renameatx_np(RENAME_EXCL)` on macOS) is the
//! same code on both. Landlock and the allocator tuning are Linux-only and
//! live in [`super::sandbox`] and the binary.
//!
//! The portable backend is what macOS builds use; on Linux the cargo
//! feature `portable` forces it, so the whole test suite runs through it
//! here too.
//! May touch: directory descriptors it is given.

use std::ffi::CStr;
use std::os::fd::OwnedFd;

use rustix::fs::FileType;
use rustix::io::Errno;

/// The `getdents64` buffer: big enough for a few hundred entries per call.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
const GETDENTS_BUF_BYTES: usize = 32 * 1024;

/// Calls `f` with the name and type of each entry of the directory `fd`
/// (including `.` and `..`), until `f` says to stop. The directory's file
/// offset moves. `buf` is scratch space the caller may reuse across calls
/// (so a walk does not allocate a buffer per directory).
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub fn read_dir(
    fd: &OwnedFd,
    buf: &mut Vec<u8>,
    mut f: impl FnMut(&CStr, FileType) -> std::ops::ControlFlow<()>,
) -> Result<(), Errno> {
    buf.clear();
    buf.reserve(GETDENTS_BUF_BYTES);
    let mut iter = rustix::fs::RawDir::new(fd, buf.spare_capacity_mut());
    while let Some(entry) = iter.next() {
        let entry = entry?;
        if f(entry.file_name(), entry.file_type()).is_break() {
            break;
        }
    }
    Ok(())
}

/// Calls `f` with the name and type of each entry of the directory `fd`
/// (including `.` and `..`), until `f` says to stop. (`buf` is not used
/// here.)
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub fn read_dir(
    fd: &OwnedFd,
    _buf: &mut Vec<u8>,
    mut f: impl FnMut(&CStr, FileType) -> std::ops::ControlFlow<()>,
) -> Result<(), Errno> {
    // `read_from` duplicates the descriptor: out of descriptors, the error
    // goes back to the walk, which notes it.
    let mut dir = rustix::fs::Dir::read_from(fd)?;
    while let Some(entry) = dir.read() {
        let entry = entry?;
        if f(entry.file_name(), entry.file_type()).is_break() {
            break;
        }
    }
    Ok(())
}

/// The device and inode numbers of `st`, as one type on every platform
/// (`st_dev` is a `u64` on Linux and an `i32` on macOS).
#[allow(clippy::unnecessary_cast)] // not unnecessary on every platform
pub fn dev_ino(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

/// Whether `dir` lives on procfs, whose magic links tuls refuses to serve.
#[cfg(target_os = "linux")]
pub fn is_procfs(dir: &cap_std::fs::Dir) -> bool {
    /// procfs's `f_type`.
    const PROC_SUPER_MAGIC: u64 = 0x9fa0;
    rustix::fs::fstatfs(dir).is_ok_and(|st| st.f_type as u64 == PROC_SUPER_MAGIC)
}

/// Whether `dir` lives on procfs (there is none off Linux).
#[cfg(not(target_os = "linux"))]
pub fn is_procfs(_dir: &cap_std::fs::Dir) -> bool {
    false
}

/// Flushes a file's data (and the metadata needed to read it back) to
/// disk: `fdatasync` where there is one, `fsync` elsewhere (macOS).
pub fn datasync<Fd: rustix::fd::AsFd>(fd: Fd) -> rustix::io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return rustix::fs::fdatasync(fd);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    return rustix::fs::fsync(fd);
}

/// Where the next data of a file is, from an offset on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// At this offset (the offset itself when it is not in a hole).
    At(u64),
    /// Only a hole is left, up to the end of the file.
    HoleToEnd,
    /// The filesystem cannot say (no `SEEK_DATA`), or the offset is at or
    /// past the end: read on.
    Unknown,
}

/// The next offset of `file` at or after `from` that is not in a hole
/// (`lseek(SEEK_DATA)`). The file offset moves; the caller seeks to where
/// it reads next.
pub fn next_data(file: &cap_std::fs::File, from: u64) -> Data {
    #[cfg(any(target_os = "linux", target_vendor = "apple"))]
    {
        match rustix::fs::seek(file, rustix::fs::SeekFrom::Data(from)) {
            Ok(at) => Data::At(at),
            Err(Errno::NXIO) => {
                // Past the end is NXIO too: a hole only if `from` is before
                // the end.
                match rustix::fs::fstat(file) {
                    Ok(st) if u64::try_from(st.st_size).is_ok_and(|size| from < size) => {
                        Data::HoleToEnd
                    }
                    _ => Data::Unknown,
                }
            }
            Err(_) => Data::Unknown,
        }
    }
    #[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
    {
        let _ = (file, from);
        Data::Unknown
    }
}

/// Whether the kernel cannot resolve paths beneath a directory itself:
/// `openat2(RESOLVE_BENEATH)` on `dir` fails with `ENOSYS` (a kernel before
/// 5.6, or an emulator without the call, such as Debian 12's qemu-user 7.2)
/// or `EPERM` (a seccomp filter that refuses it). cap-std then walks each
/// path one component at a time with `O_NOFOLLOW`, as the resolver's own
/// walk does: the same confinement, with more system calls. Off Linux
/// `openat2` does not exist and that walk is the design, so nothing is
/// missing.
#[cfg(target_os = "linux")]
pub fn openat2_unavailable(dir: &cap_std::fs::Dir) -> bool {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    matches!(
        rustix::fs::openat2(
            dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ),
        Err(Errno::NOSYS | Errno::PERM)
    )
}

/// See the Linux version: off Linux there is no `openat2` to miss.
#[cfg(not(target_os = "linux"))]
pub fn openat2_unavailable(_dir: &cap_std::fs::Dir) -> bool {
    false
}
