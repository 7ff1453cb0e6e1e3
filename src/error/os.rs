//! OS errors: the one constructor of [`Error::Os`] and the classification of
//! `io::Error`s.
//!
//! Owns: the errno table (code and text, as Node words them, since the
//! reference server is Node) and the paths an OS error names.
//! May touch: nothing (no I/O).

use std::fmt;
use std::io;

use rustix::io::Errno;

use super::{Error, Outside};

/// The paths an [`Error::Os`] names after its operation, as given by the
/// client: none (`read`), one (`open 'a'`) or two (`rename 'a' -> 'b'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OsPaths {
    /// No path (`EISDIR: illegal operation on a directory, read`).
    None,
    /// One path.
    One(String),
    /// A two-path operation's source and destination.
    Two(String, String),
}

impl OsPaths {
    /// One path, as given.
    pub fn one(path: &str) -> Self {
        OsPaths::One(path.to_owned())
    }

    /// The first path named, or `""`.
    fn first(&self) -> &str {
        match self {
            OsPaths::None => "",
            OsPaths::One(p) | OsPaths::Two(p, _) => p,
        }
    }
}

impl fmt::Display for OsPaths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OsPaths::None => Ok(()),
            OsPaths::One(p) => write!(f, " '{p}'"),
            OsPaths::Two(p, d) => write!(f, " '{p}' -> '{d}'"),
        }
    }
}

/// What the resolver gives for a path whose parent is missing (a directory
/// on the way does not exist, or a rule hides it): an `io::Error` of kind
/// `NotFound` carrying this, which [`Error::io`] words as
/// [`Error::ParentMissing`]. Code that only asks whether a name is missing
/// (`ErrorKind::NotFound`) sees a missing name, as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParentMissing;

impl fmt::Display for ParentMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("parent directory does not exist")
    }
}

impl std::error::Error for ParentMissing {}

impl ParentMissing {
    /// The `io::Error` that carries it.
    pub fn io() -> io::Error {
        io::Error::new(io::ErrorKind::NotFound, ParentMissing)
    }
}

/// The parent of `path` as the client gave it: `path` without its last
/// component (and the slashes around it). `None` when the last component
/// is `.` or `..`, or there is no parent to name.
fn parent_as_given(path: &str) -> Option<String> {
    let trimmed = path.trim_end_matches('/');
    let (dir, leaf) = trimmed.rsplit_once('/')?;
    if leaf.is_empty() || leaf == "." || leaf == ".." {
        return None;
    }
    let dir = dir.trim_end_matches('/');
    Some(if dir.is_empty() { "/" } else { dir }.to_owned())
}

/// An errno's code and text as Node words them, for the errnos tuls words.
fn words(errno: Errno) -> Option<(&'static str, &'static str)> {
    Some(match errno {
        Errno::NOENT => ("ENOENT", "no such file or directory"),
        Errno::NOTDIR => ("ENOTDIR", "not a directory"),
        Errno::ISDIR => ("EISDIR", "illegal operation on a directory"),
        Errno::LOOP => ("ELOOP", "too many symbolic links encountered"),
        Errno::ACCESS => ("EACCES", "permission denied"),
        Errno::PERM => ("EPERM", "operation not permitted"),
        Errno::EXIST => ("EEXIST", "file already exists"),
        Errno::INVAL => ("EINVAL", "invalid argument"),
        Errno::NAMETOOLONG => ("ENAMETOOLONG", "name too long"),
        Errno::XDEV => ("EXDEV", "cross-device link not permitted"),
        Errno::NOTEMPTY => ("ENOTEMPTY", "directory not empty"),
        Errno::NOSPC => ("ENOSPC", "no space left on device"),
        Errno::ROFS => ("EROFS", "read-only file system"),
        Errno::BUSY => ("EBUSY", "resource busy or locked"),
        Errno::AGAIN => ("EAGAIN", "resource temporarily unavailable"),
        _ => return None,
    })
}

impl Error {
    /// The one constructor of OS errors: `errno` from operation `op` on
    /// `paths`, worded like Node's messages. An errno outside the table is
    /// [`Error::Other`], named by its `io::ErrorKind` only.
    pub fn os(errno: Errno, op: &'static str, paths: OsPaths) -> Self {
        match words(errno) {
            Some((code, text)) => Error::Os {
                code,
                text,
                op,
                paths,
            },
            None => Error::Other {
                op,
                path: paths.first().to_owned(),
                kind: io::Error::from_raw_os_error(errno.raw_os_error())
                    .kind()
                    .to_string(),
            },
        }
    }

    /// Classifies an `io::Error` from an operation `op` on the client path `path`.
    ///
    /// cap-std reports every sandbox escape as `PermissionDenied` with no OS
    /// error; a genuine `EACCES` carries `raw_os_error() == Some(13)`. Such
    /// an escape went through a symbolic link ([`Outside::Link`]): a path
    /// whose `..` climbs above its root, or an absolute one under no root,
    /// is refused by the scope before anything is looked up, so what the
    /// kernel or cap-std refuses later met a link on the way.
    pub fn io(op: &'static str, path: &str, e: &io::Error) -> Self {
        let Some(raw) = e.raw_os_error() else {
            let path = path.to_owned();
            return match e.kind() {
                io::ErrorKind::PermissionDenied => Error::OutsideRoots {
                    path,
                    why: Outside::Link,
                },
                io::ErrorKind::NotFound => match e.get_ref().map(|i| i.is::<ParentMissing>()) {
                    Some(true) => match parent_as_given(&path) {
                        Some(dir) => Error::ParentMissing { dir },
                        None => Error::os(Errno::NOENT, op, OsPaths::One(path)),
                    },
                    _ => Error::os(Errno::NOENT, op, OsPaths::One(path)),
                },
                io::ErrorKind::InvalidInput => Error::InvalidPath {
                    path,
                    reason: "not a usable path",
                },
                kind => Error::Other {
                    op,
                    path,
                    kind: kind.to_string(),
                },
            };
        };
        match Errno::from_raw_os_error(raw) {
            Errno::NXIO => Error::NotARegularFile {
                path: path.to_owned(),
                kind: "socket or device",
            },
            // The reference names no path here (`EISDIR: ..., read`).
            Errno::ISDIR => Error::os(Errno::ISDIR, op, OsPaths::None),
            errno => Error::os(errno, op, OsPaths::one(path)),
        }
    }

    /// Like [`Error::io`] for a two-path operation: OS errors name both paths
    /// (`rename 'a' -> 'b'`); an escape names the one that escaped.
    pub fn io2(op: &'static str, path: &str, dest: &str, escaped: &str, e: &io::Error) -> Self {
        match Error::io(op, escaped, e) {
            Error::Os { code, text, .. } => Error::Os {
                code,
                text,
                op,
                paths: OsPaths::Two(path.to_owned(), dest.to_owned()),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(errno: Errno) -> io::Error {
        errno.into()
    }

    /// The texts the reference gives, byte for byte.
    #[test]
    fn os_errors_are_worded_as_node_words_them() {
        let cases = [
            (
                Error::io("open", "a b", &io(Errno::NOENT)),
                "ENOENT: no such file or directory, open 'a b'",
            ),
            (
                Error::io("read", "a", &io(Errno::ISDIR)),
                "EISDIR: illegal operation on a directory, read",
            ),
            (
                Error::os(Errno::ISDIR, "open", OsPaths::one("d")),
                "EISDIR: illegal operation on a directory, open 'd'",
            ),
            (
                Error::io2("rename", "a", "b", "a", &io(Errno::XDEV)),
                "EXDEV: cross-device link not permitted, rename 'a' -> 'b'",
            ),
            (
                Error::io2("rename", "a", "b", "b", &io(Errno::ISDIR)),
                "EISDIR: illegal operation on a directory, rename 'a' -> 'b'",
            ),
            (
                Error::io("open", "x", &io::ErrorKind::NotFound.into()),
                "ENOENT: no such file or directory, open 'x'",
            ),
            (
                Error::io("open", "x", &io(Errno::NOMEM)),
                "open 'x' failed: out of memory",
            ),
            (
                Error::io("open", "x", &io(Errno::NXIO)),
                "Refusing to open 'x': it is a socket or device, not a regular file",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text, "{e:?}");
        }
    }

    /// A missing parent names the parent as given (2.3.0's text); a path
    /// whose last component is `.` or `..` keeps the ENOENT text.
    #[test]
    fn a_missing_parent_names_the_parent_as_given() {
        let e = ParentMissing::io();
        for (path, text) in [
            ("nope/x.txt", "Parent directory does not exist: nope"),
            (
                "/r/a//nope/x/",
                "Parent directory does not exist: /r/a//nope",
            ),
            ("/x", "Parent directory does not exist: /"),
            (
                "nope/..",
                "ENOENT: no such file or directory, open 'nope/..'",
            ),
            ("x", "ENOENT: no such file or directory, open 'x'"),
        ] {
            assert_eq!(Error::io("open", path, &e).to_string(), text, "{path}");
        }
        assert_eq!(
            Error::io2("rename", "a", "n/b", "n/b", &e).to_string(),
            "Parent directory does not exist: n"
        );
    }

    /// A sandbox escape (cap-std's `PermissionDenied` without an errno)
    /// names only the path that escaped, on two-path operations too.
    #[test]
    fn escapes_name_the_path_that_escaped() {
        let e = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(Error::io("open", "l/x", &e).is_outside());
        // What cap-std refuses went through a link (the scope refuses a
        // path that is outside as written before any lookup).
        let e = Error::io2("rename", "a", "l/b", "l/b", &e);
        assert_eq!(
            e.to_string(),
            format!(
                "Access denied - path outside allowed directories: l/b{}",
                Outside::Link
            )
        );
        assert!(
            Outside::Link
                .to_string()
                .starts_with(". It goes through a symbolic link")
        );
    }
}
