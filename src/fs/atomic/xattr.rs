//! Extended attributes carried from the old file to its replacement:
//! which carry access control (and refuse the write if lost), which are
//! dropped, and the copying itself.
//!
//! May touch: the two file handles it is given.

use super::*;

/// Whether an extended attribute carries access control: a POSIX or NFSv4
/// ACL (`system.*`) or a security label (`security.*`). Failing to keep one
/// refuses the write.
pub(super) fn carries_access(name: &CStr) -> bool {
    let b = name.to_bytes();
    b.starts_with(b"system.") || b.starts_with(b"security.")
}

/// Attributes that describe the old *content* or grant privilege, dropped
/// as the kernel drops them when a file is written (like setuid/setgid):
/// file capabilities and IMA/EVM measurements.
pub(super) fn dropped(name: &CStr) -> bool {
    matches!(
        name.to_bytes(),
        b"security.capability" | b"security.ima" | b"security.evm"
    )
}

pub(super) fn xattr_error(given: &str, name: &CStr, e: Errno) -> Error {
    Error::AccessControlNotKept {
        path: given.to_owned(),
        attr: printable(&name.to_string_lossy()).into_owned(),
        reason: io::Error::from(e).to_string(),
    }
}

/// The names of `fd`'s extended attributes (those this process may see).
/// A filesystem without extended attributes has none (an empty list).
pub(super) fn xattr_names(fd: impl AsFd) -> std::result::Result<Vec<std::ffi::CString>, Errno> {
    let n = match rustix::fs::flistxattr_query(&fd) {
        Ok(n) => n,
        Err(Errno::OPNOTSUPP) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    if n == 0 {
        return Ok(Vec::new());
    }
    if n > MAX_XATTR_BYTES {
        return Err(Errno::TOOBIG);
    }
    let mut buf = vec![0u8; n];
    let n = rustix::fs::flistxattr(&fd, &mut buf[..])?;
    Ok(buf
        .get(..n)
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .filter_map(|s| std::ffi::CString::new(s).ok())
        .collect())
}

/// One attribute's value, `None` when it is not there.
pub(super) fn xattr_value(
    fd: impl AsFd,
    name: &CStr,
) -> std::result::Result<Option<Vec<u8>>, Errno> {
    let n = match rustix::fs::fgetxattr_query(&fd, name) {
        Ok(n) => n,
        Err(Errno::NODATA) => return Ok(None),
        Err(e) => return Err(e),
    };
    if n > MAX_XATTR_BYTES {
        return Err(Errno::TOOBIG);
    }
    let mut buf = vec![0u8; n];
    let n = match rustix::fs::fgetxattr(&fd, name, &mut buf[..]) {
        Ok(n) => n,
        Err(Errno::NODATA) => return Ok(None),
        Err(e) => return Err(e),
    };
    buf.truncate(n);
    Ok(Some(buf))
}

/// Removes from the temp file every attribute the old file lacks.
pub(super) fn strip_extra_xattrs(
    old: impl AsFd,
    new: &cap_std::fs::File,
    given: &str,
) -> Result<()> {
    let list = |fd: &dyn AsFd| xattr_names(fd.as_fd());
    let have = list(&old).map_err(|e| Error::io("listxattr", given, &e.into()))?;
    let extra = list(new).map_err(|e| Error::io("listxattr", given, &e.into()))?;
    for name in extra.iter().filter(|n| !have.contains(n)) {
        match rustix::fs::fremovexattr(new, name.as_c_str()) {
            Ok(()) | Err(Errno::NODATA) => {}
            Err(e) if carries_access(name) => return Err(xattr_error(given, name, e)),
            Err(e) => {
                tracing::warn!(attr = %name.to_string_lossy(), error = %e, "cannot remove an inherited attribute")
            }
        }
    }
    Ok(())
}

/// Gives the temp file every attribute of the old one (but [`dropped`]
/// ones). One that carries access control and cannot be set refuses the
/// write; a `user.*` or `trusted.*` one is logged and left behind.
pub(super) fn copy_xattrs(old: impl AsFd, new: &cap_std::fs::File, given: &str) -> Result<()> {
    let names = xattr_names(&old).map_err(|e| Error::io("listxattr", given, &e.into()))?;
    for name in names.iter().filter(|n| !dropped(n)) {
        let name = name.as_c_str();
        let value = match xattr_value(&old, name) {
            Ok(Some(v)) => v,
            Ok(None) => continue, // removed meanwhile
            Err(e) if carries_access(name) => return Err(xattr_error(given, name, e)),
            Err(e) => {
                tracing::warn!(attr = %name.to_string_lossy(), error = %e, "cannot read an attribute");
                continue;
            }
        };
        if xattr_value(new, name).ok().flatten().as_ref() == Some(&value) {
            continue; // already there (a label the kernel gave it)
        }
        match rustix::fs::fsetxattr(new, name, &value, XattrFlags::empty()) {
            Ok(()) => {}
            Err(e) if carries_access(name) => return Err(xattr_error(given, name, e)),
            Err(e) => {
                tracing::warn!(attr = %name.to_string_lossy(), error = %e, "cannot keep an attribute")
            }
        }
    }
    Ok(())
}
