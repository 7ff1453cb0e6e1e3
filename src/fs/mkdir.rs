//! Making a directory and its missing parents (`create_directory`,
//! `mkdir -p`).
//!
//! Owns: creating directories one component at a time. Without path rules,
//! each prefix (`a`, `a/b`, `a/b/c`) is created with `Dir::create_dir` on
//! the root handle, which resolves the prefix's parent beneath the root
//! every time, so a component swapped for a symlink out of the root
//! mid-call is an escape error, never a directory created outside. An
//! existing component must be a directory, possibly through an in-root
//! symlink. With path rules in force the missing directories are made
//! beneath the handle the rule walk produced, each checked against the
//! rules ([`crate::fs::canon::create_dirs`]).
//!
//! May touch: the target's root handle, by paths resolved beneath it.

use std::io;

use cap_std::fs::Dir;
use rustix::io::Errno;

use crate::error::{Error, OsPaths, Result};
use crate::fs::scope::Target;

/// Creates the directory `t` names and its missing parents; an existing
/// directory is success.
pub fn create_dir_all(t: &Target) -> Result<()> {
    if t.walked().is_some() {
        return crate::fs::canon::create_dirs(t);
    }
    let given = t.given.as_str();
    let dir = &t.root.dir;
    let mut prefix = String::new();
    for (i, seg) in t.segs.iter().enumerate() {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(seg);
        // `.` and a non-climbing `..` name directories already checked.
        if seg == "." || seg == ".." {
            continue;
        }
        let last = i + 1 == t.segs.len();
        match dir.create_dir(&prefix) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                existing_dir(dir, &prefix, last, given)?;
            }
            Err(e) => return Err(Error::io("mkdir", given, &e)),
        }
    }
    Ok(())
}

/// Checks that an existing `prefix` is (or leads, inside the root, to) a
/// directory.
fn existing_dir(dir: &Dir, prefix: &str, last: bool, given: &str) -> Result<()> {
    match dir.metadata(prefix) {
        Ok(md) if md.is_dir() => Ok(()),
        Ok(_) if last => Err(Error::os(Errno::EXIST, "mkdir", OsPaths::one(given))),
        Ok(_) => Err(Error::os(Errno::NOTDIR, "mkdir", OsPaths::one(given))),
        // The name exists but leads nowhere: a dangling in-root link.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::DanglingSymlink {
            path: given.to_owned(),
        }),
        Err(e) => Err(Error::io("mkdir", given, &e)),
    }
}
