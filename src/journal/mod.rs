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

mod list;
pub mod record;
pub mod revert;
pub mod rules;
pub mod show;
pub mod store;
mod undo;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt};

use crate::error::{Error, Result};
use crate::fs::record::{self as rec, Changed, Kept, Place, Recorder};
use crate::fs::roots::Root;
use crate::fs::version::Version;
use record::{Change, Loc, Op, Record};
use store::{NoRoom, Pin, Store};

/// The log's name in the journal directory.
pub const LOG: &str = "journal.jsonl";

/// An open undo journal.
#[derive(Debug)]
pub struct Journal {
    dir: Dir,
    session: String,
    /// The operator's roots, for the session's `start` record.
    roots: Vec<String>,
    /// The operator's rule spec, for the session's `start` record.
    rules: rules::RuleSpec,
    inner: Mutex<Inner>,
    broken: Mutex<Option<String>>,
}

#[derive(Debug)]
struct Inner {
    log: File,
    store: Store,
    seq: u64,
    started: bool,
    /// The files whose first pre-image this session kept (pinned).
    pins: HashSet<Loc>,
}

/// Opens the journal directory `path` (created 0700 if missing) for the
/// session `session`; a startup error (exit 2) if it lies inside a root,
/// is reached through a symlink into one, or contains one.
///
/// # Ambient Authority
///
/// Opens the operator's path once, at startup, before Landlock (through
/// [`crate::fs::roots::open_operator_dir`]).
pub fn open(
    path: &Path,
    roots: &[Root],
    max: u64,
    session: String,
    rules: rules::RuleSpec,
) -> Result<Journal, String> {
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
    // The first pre-image of each file in each session stays pinned across
    // restarts: read from the log (a missing log pins nothing).
    let pinned = match dir.read(LOG) {
        Ok(bytes) => record::pinned(&record::parse(&bytes).0),
        Err(_) => Default::default(),
    };
    let store = Store::open(&dir, max, pinned)
        .map_err(|e| format!("cannot open the undo journal's objects in '{shown}': {e}"))?;
    let roots = roots
        .iter()
        .map(|r| r.origin.path().to_string_lossy().into_owned())
        .collect();
    Ok(Journal {
        dir,
        session,
        roots,
        rules,
        inner: Mutex::new(Inner {
            log,
            store,
            seq: 0,
            started: false,
            pins: HashSet::new(),
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

    /// `at`'s first pre-image in this session is pinned, and one that does
    /// not fit refuses the change ([`Error::JournalFull`]).
    fn keep_swapped(
        &self,
        parent: &Dir,
        tmp: &str,
        known: Option<&Version>,
        at: &Place,
    ) -> Result<Kept> {
        let at = loc(at);
        let mut inner = crate::sync::lock(&self.inner);
        let pin = inner.pin_for(&at);
        let kept = inner.store.keep_swapped(parent, tmp, known, pin);
        self.kept(&mut inner, kept, &at, pin)
    }

    /// As [`Journal::keep_swapped`], for a copy kept before a plain rename.
    fn keep_copy(&self, parent: &Dir, leaf: &str, at: &Place) -> Result<Kept> {
        let at = loc(at);
        let mut inner = crate::sync::lock(&self.inner);
        let pin = inner.pin_for(&at);
        let kept = inner.store.keep_copy(parent, leaf, pin);
        self.kept(&mut inner, kept, &at, pin)
    }

    fn changed(&self, c: &Changed<'_>) -> Result<()> {
        let at = loc(&c.at);
        let after = c.after.as_ref();
        let id = c.id;
        match (&c.op, c.kept.clone(), after) {
            (rec::Op::Replace, Some(kept), Some(after)) => {
                self.record_replace(at, kept, after, id, c.dir)
            }
            (rec::Op::Replace | rec::Op::Create, _, _) => self.record_create(at, after, id, c.dir),
            (rec::Op::Append { size_before }, _, _) => {
                self.record_append(at, *size_before, after, id)
            }
            (rec::Op::Move { from }, _, _) => self.record_move(loc(from), at, after, id),
            (rec::Op::Mkdir, _, _) => self.record_mkdir(at, id, c.dir),
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

    /// What keeping a pre-image gave: the file pinned, or the change
    /// refused (logged, and recorded in the journal) when there was no
    /// room for a first pre-image, or the journal broken on an I/O error.
    fn kept(
        &self,
        inner: &mut Inner,
        kept: std::io::Result<Kept>,
        at: &Loc,
        pin: Pin,
    ) -> Result<Kept> {
        match kept {
            Ok(k) => {
                if pin == Pin::First && k.object.is_some() {
                    inner.pins.insert(at.clone());
                }
                Ok(k)
            }
            Err(e) => match e.get_ref().and_then(|e| e.downcast_ref::<NoRoom>()) {
                Some(NoRoom(why)) => {
                    let path = at.shown();
                    tracing::error!(path = %crate::text::fmt::for_terminal(&path), "refused a change: {why}");
                    let rec = Record::Refused {
                        time: record::now(),
                        session: self.session.clone(),
                        at: at.clone(),
                        why: why.clone(),
                        tool: None,
                    };
                    let mut line = String::new();
                    push(&mut line, &rec);
                    if let Err(e) = write_all(&inner.log, line.as_bytes()) {
                        tracing::warn!(error = %e, "cannot record the refusal in the undo journal");
                    }
                    Err(Error::JournalFull {
                        path,
                        why: why.clone(),
                    })
                }
                None => Err(self.unavailable(&e)),
            },
        }
    }

    /// Records a change the path rules refused (`tool` on the client's
    /// `path`; nothing was changed), so `tuls journal show` can flag the
    /// attempt. Best effort: a failure is logged, the call's answer stands.
    pub fn refused_by_rules(&self, tool: &str, path: &str, why: &str) {
        let rec = Record::Refused {
            time: record::now(),
            session: self.session.clone(),
            at: Loc {
                root: String::new(),
                path: path.to_owned(),
            },
            why: why.to_owned(),
            tool: Some(tool.to_owned()),
        };
        let mut line = String::new();
        push(&mut line, &rec);
        let inner = crate::sync::lock(&self.inner);
        if let Err(e) = write_all(&inner.log, line.as_bytes()) {
            tracing::warn!(error = %e, "cannot record the refused attempt in the undo journal");
        }
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
        id: Option<(u64, u64)>,
        parent: Option<&Dir>,
    ) -> Result<()> {
        let stored = kept.object.is_some();
        let change = Change {
            op: Op::Replace,
            id,
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
    fn record_create(
        &self,
        at: Loc,
        after: Option<&Version>,
        id: Option<(u64, u64)>,
        parent: Option<&Dir>,
    ) -> Result<()> {
        let change = Change {
            op: Op::Create,
            after: after.map(|v| v.as_str().to_owned()),
            id,
            ..blank(at)
        };
        self.record(change, Vec::new(), false, parent)
    }

    /// Records a directory made by `create_directory` (`id`: its device and
    /// inode); `parent`, the directory it was made in, is synced with the
    /// record.
    fn record_mkdir(&self, at: Loc, id: Option<(u64, u64)>, parent: Option<&Dir>) -> Result<()> {
        let change = Change {
            op: Op::Mkdir,
            id,
            ..blank(at)
        };
        self.record(change, Vec::new(), false, parent)
    }

    /// Records an append to an existing file of `size_before` bytes (`id`:
    /// the file's device and inode).
    fn record_append(
        &self,
        at: Loc,
        size_before: u64,
        after: Option<&Version>,
        id: Option<(u64, u64)>,
    ) -> Result<()> {
        let change = Change {
            op: Op::Append,
            id,
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
                    roots: self.roots.clone(),
                    rules: Some(self.rules.clone()),
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

impl Inner {
    /// Whether a pre-image of `at` now is its first in this session.
    fn pin_for(&self, at: &Loc) -> Pin {
        if self.pins.contains(at) {
            Pin::Later
        } else {
            Pin::First
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
