//! The undo journal (`--journal DIR`): what every change replaced, kept
//! where the agent cannot reach it, so that `tuls journal revert` can put a
//! session's changes back.
//!
//! Owns: opening the journal at startup (before Landlock; it must lie
//! outside every root and contain none, checked by device and inode of
//! every directory from it up to `/`), the session's records in
//! `journal.jsonl` (one JSON line per change, appended with one `write`,
//! `fdatasync`ed before the change is acknowledged), and what the writers
//! tell it as a change recorder ([`crate::fs::record::Recorder`]): it keeps
//! the old bytes before they go away (`keep_swapped`, `keep_copy`: the
//! pre-image store, [`store`]) and records each change once it is in place
//! (`changed`). The command-line side (`tuls journal list`, `revert`) is in
//! [`revert`]; the record format in [`record`].
//!
//! The journal is opened once at startup and handed to the server, which
//! puts it in every call's recorder ([`crate::fs::io::Io`]) beside the
//! call's audit note; no global holds it.
//!
//! Fail closed: if a pre-image cannot be kept the change is not made; if a
//! record cannot be written the change is answered as made-but-unrecorded,
//! and every later change is refused (reads go on), as for the audit log.
//!
//! May touch: the journal directory handle opened at startup, and the
//! directories writers hand in (opened beneath a root), by single names.

pub mod record;
pub mod revert;
pub mod store;

use std::path::Path;
use std::sync::Mutex;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt};

use crate::error::{Error, Result};
use crate::fs::record::{self as rec, Changed, Kept, Place, Recorder};
use crate::fs::roots::Root;
use crate::fs::version::Version;
use record::{Change, Loc, Op, Record};
use store::Store;

/// The log's name in the journal directory.
pub const LOG: &str = "journal.jsonl";

/// An open undo journal.
#[derive(Debug)]
pub struct Journal {
    dir: Dir,
    session: String,
    inner: Mutex<Inner>,
    broken: Mutex<Option<String>>,
}

#[derive(Debug)]
struct Inner {
    log: File,
    store: Store,
    seq: u64,
    started: bool,
}

/// Opens the journal directory `path` (created 0700 if missing) for the
/// session `session`; a startup error (exit 2) if it lies inside a root,
/// is reached through a symlink into one, or contains one.
///
/// # Ambient Authority
///
/// Opens the operator's path once, at startup, before Landlock (through
/// [`crate::fs::roots::open_operator_dir`]).
pub fn open(path: &Path, roots: &[Root], max: u64, session: String) -> Result<Journal, String> {
    // Checked before it is created, so nothing lands in a root.
    crate::audit::outside_roots(path, roots, "undo journal")?;
    let dir = crate::fs::roots::open_operator_dir(path, true)
        .map_err(|e| format!("undo journal: {e}"))?;
    let shown = path.display();
    let mine = crate::audit::ancestry(dup(&dir)?, "undo journal")?;
    for root in roots {
        let theirs = crate::audit::ancestry(dup(&root.dir)?, "undo journal")?;
        if theirs.first().is_some_and(|id| mine.contains(id)) {
            return Err(format!(
                "the undo journal '{shown}' lies inside the allowed directory '{}', where the agent could change it; put it outside every DIR",
                root.display
            ));
        }
        if mine.first().is_some_and(|id| theirs.contains(id)) {
            return Err(format!(
                "the allowed directory '{}' lies inside the undo journal '{shown}'; put the journal outside every DIR",
                root.display
            ));
        }
    }
    let mut opts = OpenOptions::new();
    opts.append(true)
        .create(true)
        .mode(0o600)
        .follow(FollowSymlinks::No);
    let log = dir
        .open_with(LOG, &opts)
        .map_err(|e| format!("cannot open the undo journal's log in '{shown}': {e}"))?;
    let store = Store::open(&dir, max)
        .map_err(|e| format!("cannot open the undo journal's objects in '{shown}': {e}"))?;
    Ok(Journal {
        dir,
        session,
        inner: Mutex::new(Inner {
            log,
            store,
            seq: 0,
            started: false,
        }),
        broken: Mutex::new(None),
    })
}

fn dup(dir: &Dir) -> Result<std::os::fd::OwnedFd, String> {
    rustix::io::fcntl_dupfd_cloexec(dir, 0).map_err(|e| format!("cannot use a directory: {e}"))
}

/// Where a file is, as the journal names it: the operator's `DIR` and the
/// path beneath it.
fn loc(place: &Place) -> Loc {
    Loc {
        root: place.origin.clone(),
        path: place.beneath.clone(),
    }
}

impl Recorder for Journal {
    fn keeps(&self) -> bool {
        true
    }

    fn keep_swapped(&self, parent: &Dir, tmp: &str, known: Option<&Version>) -> Result<Kept> {
        let mut inner = crate::sync::lock(&self.inner);
        inner
            .store
            .keep_swapped(parent, tmp, known)
            .map_err(|e| self.unavailable(&e))
    }

    fn keep_copy(&self, parent: &Dir, leaf: &str) -> Result<Kept> {
        let mut inner = crate::sync::lock(&self.inner);
        inner
            .store
            .keep_copy(parent, leaf)
            .map_err(|e| self.unavailable(&e))
    }

    fn changed(&self, c: &Changed<'_>) -> Result<()> {
        let at = loc(&c.at);
        let after = c.after.as_ref();
        match (&c.op, c.kept.clone(), after) {
            (rec::Op::Replace, Some(kept), Some(after)) => {
                self.record_replace(at, kept, after, c.dir)
            }
            (rec::Op::Replace | rec::Op::Create, _, _) => self.record_create(at, after, c.dir),
            (rec::Op::Append { size_before }, _, _) => self.record_append(at, *size_before, after),
            (rec::Op::Move { from, id }, _, _) => self.record_move(loc(from), at, after, *id),
        }
    }
}

impl Journal {
    /// The journal directory (for its Landlock rule).
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Why changes are refused, once the journal failed.
    pub fn refusal(&self) -> Option<String> {
        crate::sync::lock(&self.broken).clone()
    }

    fn fail(&self, why: String) -> String {
        tracing::error!("{why}; changes are refused from now on");
        let mut b = crate::sync::lock(&self.broken);
        b.get_or_insert(why).clone()
    }

    fn unavailable(&self, e: &std::io::Error) -> Error {
        Error::JournalUnavailable {
            why: self.fail(format!(
                "the undo journal cannot keep the old content ({e})"
            )),
        }
    }

    /// Records a replaced file; `parent`, the directory it is in, is synced
    /// with the record.
    fn record_replace(
        &self,
        at: Loc,
        kept: Kept,
        after: &Version,
        parent: Option<&Dir>,
    ) -> Result<()> {
        let stored = kept.object.is_some();
        let change = Change {
            op: Op::Replace,
            before: kept.before.as_ref().map(|v| v.as_str().to_owned()),
            object: kept.object,
            not_kept: kept.not_kept,
            after: Some(after.as_str().to_owned()),
            ..blank(at)
        };
        self.record(change, kept.evicted, stored, parent)
    }

    /// Records a file created (it did not exist before); `parent` as for
    /// [`Journal::record_replace`].
    fn record_create(&self, at: Loc, after: Option<&Version>, parent: Option<&Dir>) -> Result<()> {
        let change = Change {
            op: Op::Create,
            after: after.map(|v| v.as_str().to_owned()),
            ..blank(at)
        };
        self.record(change, Vec::new(), false, parent)
    }

    /// Records an append to an existing file of `size_before` bytes.
    fn record_append(&self, at: Loc, size_before: u64, after: Option<&Version>) -> Result<()> {
        let change = Change {
            op: Op::Append,
            size_before: Some(size_before),
            after: after.map(|v| v.as_str().to_owned()),
            ..blank(at)
        };
        self.record(change, Vec::new(), false, None)
    }

    /// Records a move of what is now at `to` (a file of version `after`,
    /// or a directory; `id` is its device and inode).
    fn record_move(
        &self,
        from: Loc,
        to: Loc,
        after: Option<&Version>,
        id: Option<(u64, u64)>,
    ) -> Result<()> {
        let change = Change {
            op: Op::Move,
            from: Some(from),
            after: after.map(|v| v.as_str().to_owned()),
            id,
            ..blank(to)
        };
        self.record(change, Vec::new(), false, None)
    }

    /// Appends the change (after the session's start, and the evictions it
    /// caused) and makes it durable: the log's `fdatasync`, the sync of
    /// `objects/` (when a pre-image was stored) and of the changed file's
    /// directory (the writer's own rename) are issued at once, on as many
    /// threads, so a filesystem with a journal (ext4, XFS) commits them
    /// together instead of one after the other. A failed sync of the file's
    /// directory is logged, as the writer does without a journal; any other
    /// failure refuses later changes.
    fn record(
        &self,
        mut change: Change,
        evicted: Vec<String>,
        stored: bool,
        parent: Option<&Dir>,
    ) -> Result<()> {
        let mut inner = crate::sync::lock(&self.inner);
        let mut lines = String::new();
        if !inner.started {
            push(
                &mut lines,
                &Record::Start {
                    session: self.session.clone(),
                    time: record::now(),
                    pid: std::process::id(),
                },
            );
        }
        if !evicted.is_empty() {
            push(
                &mut lines,
                &Record::Evicted {
                    time: record::now(),
                    objects: evicted,
                },
            );
        }
        inner.seq += 1;
        change.seq = inner.seq;
        change.session.clone_from(&self.session);
        push(&mut lines, &Record::Change(Box::new(change)));
        let inner = &mut *inner;
        let objects = inner.store.dir();
        let log = &inner.log;
        let result = write_all(log, lines.as_bytes())
            .map_err(std::io::Error::from)
            .and_then(|()| {
                std::thread::scope(|s| {
                    // A thread that cannot be made (a pids or memory limit)
                    // is not a panic: that directory is synced here instead.
                    let spawn = |d| {
                        std::thread::Builder::new()
                            .spawn_scoped(s, move || sync_dir(d))
                            .map_err(|_| d)
                    };
                    let dir = parent.map(spawn);
                    let obj = stored.then(|| spawn(objects));
                    let logged = crate::fs::sys::datasync(log).map_err(std::io::Error::from);
                    let joined = |h: Result<std::thread::ScopedJoinHandle<'_, _>, _>| match h {
                        Ok(h) => h
                            .join()
                            .unwrap_or_else(|_| Err(std::io::Error::other("a sync panicked"))),
                        Err(d) => sync_dir(d),
                    };
                    if let Some(Err(e)) = dir.map(joined) {
                        tracing::warn!(error = %e, "fsync of the directory after a write failed");
                    }
                    let stored = obj.map(joined).unwrap_or(Ok(()));
                    logged.and(stored)
                })
            });
        match result {
            Ok(()) => {
                inner.started = true;
                Ok(())
            }
            Err(e) => Err(Error::JournalNotRecorded {
                why: self.fail(format!("the undo journal cannot be written ({e})")),
            }),
        }
    }
}

/// fsyncs a directory (cap-std holds them `O_PATH`, which `fsync` refuses,
/// so `.` is opened beneath the handle).
fn sync_dir(dir: &Dir) -> std::io::Result<()> {
    let this = dir.open(".")?;
    rustix::fs::fsync(&this).map_err(std::io::Error::from)
}

/// A change with only its place set.
fn blank(at: Loc) -> Change {
    Change {
        session: String::new(),
        seq: 0,
        time: record::now(),
        op: Op::Create,
        at,
        from: None,
        before: None,
        object: None,
        not_kept: None,
        size_before: None,
        after: None,
        id: None,
    }
}

fn push(out: &mut String, rec: &Record) {
    out.push_str(&serde_json::to_string(rec).unwrap_or_default());
    out.push('\n');
}

/// Writes all of `bytes` (one `write` where the kernel takes it whole, as
/// it does for a line this size: records of concurrent writers never
/// interleave, since the log is opened `O_APPEND`).
pub(crate) fn write_all(fd: &impl rustix::fd::AsFd, bytes: &[u8]) -> rustix::io::Result<()> {
    let mut rest = bytes;
    while !rest.is_empty() {
        match rustix::io::write(fd, rest) {
            Ok(0) => return Err(rustix::io::Errno::NOSPC),
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
