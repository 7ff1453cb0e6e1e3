//! The one resolver: a client path's components beneath a root, to what
//! they name, with the path rules' verdict.
//!
//! Owns: the one result shape ([`Resolved`]) and the two backends that
//! produce it, as libpathrs has them:
//! - [`Backend::Kernel`] (`kernel`): the kernel resolves, in one
//!   `openat2(RESOLVE_BENEATH)` call at each use, through the root handle
//!   (cap-std). Taken only for a read in a root whose rules hide nothing,
//!   where the kernel has `openat2`: what the rules could say (read-only)
//!   changes nothing for a read.
//! - [`Backend::Walk`] (`walk`): tuls walks the path component by
//!   component beneath the root handle, each directory opened `O_NOFOLLOW`
//!   from the one before, each symlink read here and its target walked the
//!   same way; the rules are matched on every name passed, and the result
//!   holds the handles the operation then acts on. Every write takes it, in
//!   every root, with or without rules; so does every read in a root whose
//!   rules may hide a path, and every read where the kernel lacks
//!   `openat2`. A path with no symlink and no `..` is looked up in one
//!   `openat2(RESOLVE_NO_SYMLINKS)` call (`kernel::no_symlinks`): it is
//!   its own canonical path.
//!
//! This is the one place in tuls that reads a symlink to resolve a client
//! path (`walk`); the kernel backend leaves it to the kernel.
//! May touch: root `Dir`s and directories opened beneath them, by single
//! names (never `.`, `..`, or a name with `/`) or by `openat2` beneath them.

use std::sync::Arc;

use cap_std::fs::Dir;
use rustix::io::Errno;

use crate::error::{ParentMissing, Result};
use crate::rules::{Effect, Rules};

mod kernel;
pub mod moves;
mod walk;

#[cfg(test)]
mod tests;

/// Whether the last component is followed when it is a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Final {
    /// Follow it (reads, writes of content, listings).
    Follow,
    /// Act on the link itself (`move_file`).
    Link,
}

/// Which backend resolves a path (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The kernel, at each use, beneath the root handle.
    Kernel,
    /// tuls's component walk, once, with the rules.
    Walk,
}

/// A resolved path: the directory operations start from and the path
/// beneath it, with what the rules make of it. Both backends return it.
///
/// From the walk, `base` is the parent of what the path names (opened by
/// the walk), `rel` its final name, and the final name is already resolved
/// (operations open it without following a link). From the kernel, `base`
/// is the root handle and `rel` the client's components, which the kernel
/// resolves beneath it at each use ([`Resolved::kernel_follows`]).
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Which backend made it.
    pub how: Backend,
    /// The directory operations start from.
    pub base: Arc<Dir>,
    /// Components beneath `base`: the final name; several when the walk
    /// stopped at a missing component (the first is missing), or from the
    /// kernel backend; none for a root.
    pub rel: Vec<String>,
    /// The directory the path names, opened by the walk.
    pub held: Option<Arc<Dir>>,
    /// The canonical path beneath the root handle (`/`-joined, "" for the
    /// root), missing components included lexically. From the kernel
    /// backend, the client's path taken lexically (what it names may lie
    /// elsewhere, through a link).
    pub local: String,
    /// Where the canonical parent ends in `local` (`None` for the root).
    pub parent_end: Option<usize>,
    /// What the rules make of it (from the kernel backend: nothing is
    /// hidden in its root, and read-only changes nothing for a read).
    pub effect: Effect,
    /// The path the rules matched to give `effect` (beneath the operator's
    /// root: the canonical one, or another name the walk reached it by),
    /// to name the rule in a refusal ([`crate::rules::Rules::why`]);
    /// `None` when no rule applies.
    pub decided: Option<String>,
    /// Act as if missing, with this errno (a hidden path is `ENOENT`).
    pub void: Option<Errno>,
    /// The final component was reached through a symlink.
    pub via_link: bool,
    /// The final component does not exist.
    pub missing: bool,
    /// A directory before the final component does not exist, or a rule
    /// hides it (which reads the same): the path's parent is missing, and
    /// the void is worded so ([`crate::error::Error::ParentMissing`]).
    pub parent_missing: bool,
    /// The final component is a directory.
    pub is_dir: bool,
}

impl Resolved {
    /// Whether the kernel still resolves `rel` at each use (following
    /// in-root symlinks, a final one included): the kernel backend.
    /// Otherwise the final name is resolved already, and an operation opens
    /// it without following a link (one swapped in since would lead where
    /// the rules were not checked).
    pub fn kernel_follows(&self) -> bool {
        self.how == Backend::Kernel
    }

    /// The error a use of this path gives, when the walk could not go on
    /// with it (it is void): its errno, or a missing parent
    /// ([`ParentMissing`]), which an operation words with its own path.
    pub fn void_error(&self) -> Option<std::io::Error> {
        let errno = self.void?;
        Some(if self.parent_missing && errno == Errno::NOENT {
            ParentMissing::io()
        } else {
            errno.into()
        })
    }
}

/// What a path resolves against: a root's handle, its canonical path
/// beneath its operator's root (`prefix`), and the rules matched there.
#[derive(Debug, Clone, Copy)]
pub struct Beneath<'a> {
    /// The root handle.
    pub dir: &'a Arc<Dir>,
    /// Its canonical path beneath its operator's root ("" for the
    /// operator's root itself).
    pub prefix: &'a str,
    /// Its rules.
    pub rules: &'a Rules,
}

impl Beneath<'_> {
    /// The path the rules match for `local`, a canonical path beneath the
    /// root handle.
    pub fn rule_path(&self, local: &str) -> String {
        match (self.prefix.is_empty(), local.is_empty()) {
            (true, _) => local.to_owned(),
            (false, true) => self.prefix.to_owned(),
            (false, false) => format!("{}/{local}", self.prefix),
        }
    }
}

/// Resolves `segs` (the client's components beneath the root, which may
/// hold `.` and `..`) with `backend`. `given` is the client's path, for
/// errors.
///
/// # Security
///
/// From the walk, escapes (an absolute link, a link climbing out) are
/// [`crate::error::Error::OutsideRoots`] with the reason
/// [`crate::error::Outside::Link`] (the scope refused a `..` above the root
/// as written before); every other
/// failure, and every hidden path, is a void [`Resolved`], never a distinct
/// error. From the kernel backend nothing is looked up yet: each use is
/// one `openat2(RESOLVE_BENEATH)`, which refuses an escape.
pub fn resolve(
    at: Beneath<'_>,
    segs: &[String],
    last: Final,
    given: &str,
    backend: Backend,
) -> Result<Resolved> {
    match backend {
        Backend::Kernel => Ok(kernel::deferred(at.dir, segs)),
        Backend::Walk => walk::walk(at, segs, last, given),
    }
}
