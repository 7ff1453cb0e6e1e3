//! Conditional changes (`ifMatch`): the check every writer makes before it
//! replaces, moves or appends to a file, and the lock that makes the check
//! and the change one step for writers through tuls.
//!
//! Owns: [`WriteLock`] (one per file: the directory it is in, by device and
//! inode, and its name there), [`Condition`] (what the call asked for), and
//! the checks: [`Dest::check`](crate::fs::atomic::Dest::check) for a file
//! about to be replaced, [`check_source`] and [`verify_moved`] for a file
//! about to be moved. The verification after the change (the replaced file,
//! swapped out with `RENAME_EXCHANGE`, is hashed again and swapped back when
//! an outside writer changed it meanwhile) lives in the writer
//! ([`crate::fs::atomic`]).
//!
//! Two calls through tuls with the same `ifMatch` for one file take its lock
//! in turn: the second finds the first one's content and is refused. The
//! lock is per process: another process (another tuls too) is an outside
//! writer, which the check after the change catches (SECURITY.md states the
//! window that remains).
//!
//! May touch: directories opened beneath a root, by single names.

use std::sync::{Condvar, Mutex};

use cap_std::fs::{Dir, MetadataExt};

use crate::error::{Error, Result};
use crate::fs::file;
use crate::fs::version::Version;
use crate::text::fmt::cut;

/// Bytes of a client's `ifMatch` repeated in a refusal.
const GIVEN_KEEP: usize = 80;

/// A file's place: its directory's device and inode, and its name there.
type Key = (u64, u64, String);

/// The locks held (a few at a time: one per write in flight).
static HELD: Mutex<Vec<Key>> = Mutex::new(Vec::new());
static FREED: Condvar = Condvar::new();

/// The right to change one file, held from the check to the end of the
/// change; released when dropped.
#[derive(Debug)]
pub struct WriteLock {
    key: Option<Key>,
}

impl WriteLock {
    /// Waits until no other call through tuls holds the lock of `leaf` in
    /// `dir`, then holds it. A directory whose identity cannot be read gets
    /// no lock (the check after the change still runs).
    pub fn take(dir: &Dir, leaf: &str) -> WriteLock {
        let Ok(md) = dir.dir_metadata() else {
            return WriteLock { key: None };
        };
        let key = (md.dev(), md.ino(), leaf.to_owned());
        let mut held = crate::sync::lock(&HELD);
        while held.contains(&key) {
            held = FREED.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.push(key.clone());
        WriteLock { key: Some(key) }
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            crate::sync::lock(&HELD).retain(|k| *k != key);
            FREED.notify_all();
        }
    }
}

/// What a change asks of the file it changes.
#[derive(Debug, Clone, Copy)]
pub struct Condition<'a> {
    /// The version the agent based its change on (`ifMatch`), if it named one.
    pub if_match: Option<&'a str>,
    /// `--require-if-match`: a change to an existing file must name one.
    pub require: bool,
    /// The largest file a version is computed for (`--max-read-bytes`).
    pub limit: u64,
    /// What the change is, for messages (`write`, `edit`, `move`, `append to`).
    pub op: &'static str,
    /// The tool to call again, for messages.
    pub tool: &'static str,
    /// Which tools give a file's version, for messages (from the tool
    /// table: `crate::tools::version_readers`).
    pub readers: &'static str,
}

impl Condition<'_> {
    /// The refusal of a change whose file is not at the version named; the
    /// file's state now, worded (see [`Error::VersionMismatch`]).
    pub fn mismatch(&self, path: &str, current: String) -> Error {
        Error::VersionMismatch {
            op: self.op,
            path: path.to_owned(),
            given: cut(self.if_match.unwrap_or_default(), GIVEN_KEEP).to_owned(),
            current,
        }
    }

    /// Refuses a change to an existing file without `ifMatch` where one is
    /// required.
    pub fn require_for_existing(&self, path: &str, exists: bool) -> Result<()> {
        if self.require && exists && self.if_match.is_none() {
            return Err(Error::IfMatchRequired {
                readers: self.readers,
                op: self.op,
                path: path.to_owned(),
                tool: self.tool,
            });
        }
        Ok(())
    }

    /// Compares the version of the content a change was computed from with
    /// `ifMatch` (for writers that read the file first: `edit_file`).
    pub fn compare(&self, path: &str, current: &Version) -> Result<()> {
        match self.if_match {
            Some(want) if !current.matches(want) => Err(self.mismatch(path, now_is(Some(current)))),
            _ => Ok(()),
        }
    }
}

/// "; its current version is …", or that it has none.
pub fn now_is(v: Option<&Version>) -> String {
    match v {
        Some(v) => format!("; its current version is {v}"),
        None => "; it is larger than the read limit (--max-read-bytes) or changing, so it has no version".to_owned(),
    }
}

/// The check before a move of `leaf` in `dir` (`move_file`'s source):
/// with `ifMatch`, the source must be a regular file at that version.
/// Returns the lock to hold through the move and the version checked.
pub fn check_source(
    dir: &Dir,
    leaf: &str,
    given: &str,
    cond: &Condition<'_>,
) -> Result<(WriteLock, Option<Version>)> {
    let lock = WriteLock::take(dir, leaf);
    if cond.if_match.is_none() {
        return Ok((lock, None));
    }
    let md = match dir.symlink_metadata(leaf) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(cond.mismatch(given, "; it does not exist".to_owned()));
        }
        Err(e) => return Err(Error::io("rename", given, &e)),
    };
    if !md.is_file() {
        return Err(cond.mismatch(
            given,
            "; it is not a regular file, and only a regular file has a version".to_owned(),
        ));
    }
    let (v, hashed) = file::version_in(dir, leaf, given, cond.limit)?;
    if (hashed.dev(), hashed.ino()) != (md.dev(), md.ino()) {
        return Err(cond.mismatch(given, "; it was replaced while it was checked".to_owned()));
    }
    match v {
        Some(v) if v.matches(cond.if_match.unwrap_or_default()) => Ok((lock, Some(v))),
        v => Err(cond.mismatch(given, now_is(v.as_ref()))),
    }
}

/// After a move checked by [`check_source`]: the file now at `to_leaf` in
/// `to_dir` must still be the version checked. If an outside writer changed
/// it between the check and the rename, the move is undone (renamed back,
/// never over anything) and refused.
pub fn verify_moved(
    expected: &Version,
    (to_dir, to_leaf): (&Dir, &str),
    (from_dir, from_leaf): (&Dir, &str),
    given: &str,
    cond: &Condition<'_>,
) -> Result<()> {
    let now = file::version_in(to_dir, to_leaf, given, cond.limit)
        .ok()
        .and_then(|(v, _)| v);
    if now.as_ref() == Some(expected) {
        return Ok(());
    }
    if let Err(e) = rustix::fs::renameat_with(
        to_dir,
        to_leaf,
        from_dir,
        from_leaf,
        rustix::fs::RenameFlags::NOREPLACE,
    ) {
        tracing::warn!(error = %e, "cannot move back a file changed during a conditional move");
    }
    Err(cond.mismatch(given, now_is(now.as_ref())))
}
