//! The undo journal's pre-images: `objects/` in the journal directory,
//! content-addressed, bounded.
//!
//! Owns: keeping the old content of a replaced file under the name of its
//! version (the hex of `b3:…`), and evicting the oldest pre-images once
//! they hold more than `--journal-max-bytes`. The old file swapped out by
//! the writer's `RENAME_EXCHANGE` is renamed into `objects/` as it is (no
//! byte is copied) when it is on the same filesystem and has no other
//! name; otherwise its bytes are copied (`copy_file_range`) into a temp
//! file there, synced, and renamed to its name. Either way the pre-image
//! is never reachable from a root, so nothing the agent can do changes it.
//! An object's modification time is set when it is kept (or kept again),
//! which orders eviction across restarts. The directory is synced together
//! with the record that names the object ([`super::Journal`]).
//!
//! Pinned objects: the first pre-image of every file a session changed (the
//! user's own bytes, before the agent touched the file) is never evicted,
//! whatever the agent writes afterwards. When a new first pre-image does
//! not fit beside the pinned ones, keeping it fails with [`NoRoom`] and the
//! change is not made (fail closed); a later pre-image of a file already
//! pinned that does not fit is not kept (the revert restores the first one
//! instead, see [`super::revert`]).
//!
//! May touch: the `objects/` handle opened at startup, and the directory a
//! writer hands in (opened beneath a root), by single names.

use std::collections::{HashSet, VecDeque};
use std::io;

use cap_std::fs::{Dir, MetadataExt};
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, Timespec, Timestamps};
use rustix::io::Errno;

use crate::fs::record::Kept;
use crate::fs::version::Version;

/// Bytes moved per `copy_file_range` (or read) when a pre-image is copied.
#[cfg(target_os = "linux")]
const COPY_CHUNK: usize = 1 << 20;

/// The pre-image store.
#[derive(Debug)]
pub struct Store {
    dir: Dir,
    max: u64,
    total: u64,
    /// Objects, oldest first, with their sizes.
    order: VecDeque<(String, u64)>,
    /// Objects never evicted: the first pre-image of a file in a session.
    pinned: HashSet<String>,
    /// Bytes of the pinned objects present.
    pinned_bytes: u64,
}

/// Keeping a first pre-image failed: it does not fit beside the pinned
/// ones (or is larger than the bound on its own). The change is refused;
/// the journal stays usable.
#[derive(Debug)]
pub struct NoRoom(pub String);

impl std::fmt::Display for NoRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoRoom {}

/// Whether a pre-image is a file's first in its session (pinned) or a later
/// one (evictable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// The session's first pre-image of this file: never evicted.
    First,
    /// A later one: evicted first, dropped when there is no room.
    Later,
}

impl Store {
    /// Opens (creating) `objects/` in the journal directory, removes temp
    /// files a killed process left there, and reads the objects' sizes and
    /// times (oldest first); `pinned` are the objects earlier sessions
    /// pinned (read from the log).
    pub fn open(journal: &Dir, max: u64, pinned: HashSet<String>) -> io::Result<Store> {
        match journal.create_dir("objects") {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        let dir = cap_fs_ext::DirExt::open_dir_nofollow(journal, "objects")?;
        let mut found = Vec::new();
        for entry in dir.entries()? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let md = entry.metadata()?;
            if name.starts_with('.') {
                let _ = dir.remove_file(&name);
                continue;
            }
            if md.is_file() {
                found.push(((md.mtime(), md.mtime_nsec()), name, md.len()));
            }
        }
        found.sort();
        let total = found.iter().map(|f| f.2).sum();
        let pinned_bytes = found
            .iter()
            .filter(|f| pinned.contains(&f.1))
            .map(|f| f.2)
            .sum();
        let order = found.into_iter().map(|(_, n, l)| (n, l)).collect();
        Ok(Store {
            dir,
            max,
            total,
            order,
            pinned,
            pinned_bytes,
        })
    }

    /// Keeps the file `tmp` in `parent` (the old file the writer swapped
    /// out, reachable by no other name in the root) as the pre-image of
    /// `version` (computed here when `None`), and removes `tmp`. On an
    /// error (a [`NoRoom`] for a first pre-image that does not fit) `tmp`
    /// is left in place for the caller to swap back.
    pub fn keep_swapped(
        &mut self,
        parent: &Dir,
        tmp: &str,
        version: Option<&Version>,
        pin: Pin,
    ) -> io::Result<Kept> {
        let st = rustix::fs::statat(parent, tmp, AtFlags::SYMLINK_NOFOLLOW)?;
        let size = u64::try_from(st.st_size).unwrap_or(u64::MAX);
        let name = self.name_for(parent, tmp, size, version, pin)?;
        if pin == Pin::First {
            self.check_room(name.as_deref(), size)?;
        }
        let Some(name) = name.filter(|n| self.fits(n, size, pin)) else {
            let _ = rustix::fs::unlinkat(parent, tmp, AtFlags::empty());
            return Ok(self.not_kept(size));
        };
        let before = Version::from_token(&format!("b3:{name}"));
        if self.has(&name) {
            self.touch(&name, size);
            rustix::fs::unlinkat(parent, tmp, AtFlags::empty())?;
        } else {
            #[allow(clippy::unnecessary_cast)] // not unnecessary on every platform
            let moved = st.st_nlink as u64 == 1
                && match rustix::fs::renameat_with(
                    parent,
                    tmp,
                    &self.dir,
                    name.as_str(),
                    RenameFlags::NOREPLACE,
                ) {
                    Ok(()) => true,
                    Err(Errno::EXIST) => {
                        rustix::fs::unlinkat(parent, tmp, AtFlags::empty())?;
                        true
                    }
                    Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::ACCESS) => false,
                    Err(e) => return Err(e.into()),
                };
            if !moved {
                self.copy_in(parent, tmp, &name)?;
                rustix::fs::unlinkat(parent, tmp, AtFlags::empty())?;
            }
            self.touch(&name, size);
        }
        self.pin(&name, size, pin);
        Ok(Kept {
            object: Some(name.clone()),
            not_kept: None,
            before,
            evicted: self.evict(&name),
        })
    }

    /// Keeps a copy of the file `leaf` in `parent`, which stays (before a
    /// plain rename replaces it, where the filesystem has no exchange).
    pub fn keep_copy(&mut self, parent: &Dir, leaf: &str, pin: Pin) -> io::Result<Kept> {
        let st = rustix::fs::statat(parent, leaf, AtFlags::SYMLINK_NOFOLLOW)?;
        let size = u64::try_from(st.st_size).unwrap_or(u64::MAX);
        let name = self.name_for(parent, leaf, size, None, pin)?;
        if pin == Pin::First {
            self.check_room(name.as_deref(), size)?;
        }
        let Some(name) = name.filter(|n| self.fits(n, size, pin)) else {
            return Ok(self.not_kept(size));
        };
        let before = Version::from_token(&format!("b3:{name}"));
        if !self.has(&name) {
            self.copy_in(parent, leaf, &name)?;
        }
        self.touch(&name, size);
        self.pin(&name, size, pin);
        Ok(Kept {
            object: Some(name.clone()),
            not_kept: None,
            before,
            evicted: self.evict(&name),
        })
    }

    /// The object name for the file `leaf` in `parent`: its version's hex,
    /// hashed here when not given; `None` when it cannot be kept (larger
    /// than the bound, or changing while hashed), which for a first
    /// pre-image is a [`NoRoom`] (the change is refused).
    fn name_for(
        &self,
        parent: &Dir,
        leaf: &str,
        size: u64,
        version: Option<&Version>,
        pin: Pin,
    ) -> io::Result<Option<String>> {
        if size > self.max {
            return match pin {
                Pin::First => Err(self.no_room(size)),
                Pin::Later => Ok(None),
            };
        }
        let v = match version {
            Some(v) => Some(v.clone()),
            None => {
                crate::fs::file::version_in(parent, leaf, leaf, self.max)
                    .map_err(|e| io::Error::other(e.to_string()))?
                    .0
            }
        };
        match (v, pin) {
            (Some(v), _) => Ok(Some(v.as_str().trim_start_matches("b3:").to_owned())),
            (None, Pin::First) => Err(io::Error::other(NoRoom(
                "the old content changed while it was kept".to_owned(),
            ))),
            (None, Pin::Later) => Ok(None),
        }
    }

    /// Whether the object `name` of `size` bytes may be kept: a pinned one
    /// already kept always; a first pre-image too (its room is checked by
    /// [`Store::check_room`] first); a later one only if it fits beside the
    /// pinned ones (it is not kept otherwise).
    fn fits(&self, name: &str, size: u64, pin: Pin) -> bool {
        self.pinned.contains(name)
            || pin == Pin::First
            || self.pinned_bytes.saturating_add(size) <= self.max
    }

    /// Refuses a first pre-image of `size` bytes that does not fit beside
    /// the pinned ones; called before anything is kept.
    fn check_room(&self, name: Option<&str>, size: u64) -> io::Result<()> {
        if name.is_some_and(|n| self.pinned.contains(n)) {
            return Ok(());
        }
        if self.pinned_bytes.saturating_add(size) > self.max {
            return Err(self.no_room(size));
        }
        Ok(())
    }

    fn no_room(&self, size: u64) -> io::Error {
        io::Error::other(NoRoom(format!(
            "the undo journal cannot keep its old content ({size} bytes): the first old content of every file a session changed is kept until it is reverted, they hold {} bytes, and --journal-max-bytes is {}",
            self.pinned_bytes, self.max
        )))
    }

    /// Pins `name` when it is a first pre-image.
    fn pin(&mut self, name: &str, size: u64, pin: Pin) {
        if pin == Pin::First && self.pinned.insert(name.to_owned()) {
            self.pinned_bytes = self.pinned_bytes.saturating_add(size);
        }
    }

    fn not_kept(&self, size: u64) -> Kept {
        let why = if size > self.max {
            format!(
                "the old content ({size} bytes) is larger than --journal-max-bytes ({})",
                self.max
            )
        } else if self.pinned_bytes.saturating_add(size) > self.max {
            format!(
                "no room for the old content ({size} bytes) beside the first old contents kept ({} bytes of --journal-max-bytes {}); the revert restores the file's first old content instead",
                self.pinned_bytes, self.max
            )
        } else {
            "the old content changed while it was kept".to_owned()
        };
        Kept {
            not_kept: Some(why),
            ..Kept::default()
        }
    }

    fn has(&self, name: &str) -> bool {
        self.order.iter().any(|(n, _)| n == name)
            || self.dir.symlink_metadata(name).is_ok_and(|m| m.is_file())
    }

    /// Marks `name` as kept now: newest in the order, its time set.
    fn touch(&mut self, name: &str, size: u64) {
        if let Some(i) = self.order.iter().position(|(n, _)| n == name)
            && let Some((_, old)) = self.order.remove(i)
        {
            self.total = self.total.saturating_sub(old);
        }
        self.order.push_back((name.to_owned(), size));
        self.total = self.total.saturating_add(size);
        let now = Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_NOW,
        };
        let times = Timestamps {
            last_access: now,
            last_modification: now,
        };
        let _ = rustix::fs::utimensat(&self.dir, name, &times, AtFlags::SYMLINK_NOFOLLOW);
    }

    /// Copies the file `leaf` in `parent` into the object `name` (through
    /// a synced temp file, renamed without replacing).
    fn copy_in(&self, parent: &Dir, leaf: &str, name: &str) -> io::Result<()> {
        let src = rustix::fs::openat(
            parent,
            leaf,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let tmp = format!(".in-{name}-{}", std::process::id());
        let out = rustix::fs::openat(
            &self.dir,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let result = (|| {
            copy_all(&src, &out)?;
            crate::fs::sys::datasync(&out)?;
            match rustix::fs::renameat_with(
                &self.dir,
                tmp.as_str(),
                &self.dir,
                name,
                RenameFlags::NOREPLACE,
            ) {
                Ok(()) | Err(Errno::EXIST) => Ok(()),
                Err(e) => Err(io::Error::from(e)),
            }
        })();
        let _ = rustix::fs::unlinkat(&self.dir, tmp.as_str(), AtFlags::empty());
        result
    }

    /// The `objects/` directory, whose names the journal syncs with the
    /// record that names them.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Removes the oldest objects (never `keep`, never a pinned one) while
    /// they hold more than the bound; returns their names.
    fn evict(&mut self, keep: &str) -> Vec<String> {
        let mut gone = Vec::new();
        while self.total > self.max {
            let Some(i) = self
                .order
                .iter()
                .position(|(n, _)| n != keep && !self.pinned.contains(n))
            else {
                break;
            };
            let Some((name, size)) = self.order.remove(i) else {
                break;
            };
            self.total = self.total.saturating_sub(size);
            match self.dir.remove_file(&name) {
                Ok(()) => gone.push(name),
                Err(e) if e.kind() == io::ErrorKind::NotFound => gone.push(name),
                Err(e) => tracing::warn!(error = %e, "cannot evict a pre-image"),
            }
        }
        gone
    }
}

/// Copies all of `src` to `out` (both at their offsets).
fn copy_all(src: &impl rustix::fd::AsFd, out: &impl rustix::fd::AsFd) -> io::Result<()> {
    let mut kernel = true;
    let mut buf = Vec::new();
    loop {
        if kernel {
            match kernel_copy(src, out) {
                Ok(0) => return Ok(()),
                Ok(_) => continue,
                Err(Errno::INTR) => continue,
                Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                    kernel = false;
                    buf.resize(64 * 1024, 0);
                }
                Err(e) => return Err(e.into()),
            }
        }
        let n = match rustix::io::read(src, &mut buf[..]) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        let mut rest = buf.get(..n).unwrap_or_default();
        while !rest.is_empty() {
            match rustix::io::write(out, rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(w) => rest = rest.get(w..).unwrap_or_default(),
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// One `copy_file_range` (Linux); elsewhere there is none.
#[cfg(target_os = "linux")]
fn kernel_copy(src: &impl rustix::fd::AsFd, out: &impl rustix::fd::AsFd) -> Result<usize, Errno> {
    rustix::fs::copy_file_range(src, None, out, None, COPY_CHUNK)
}

/// One `copy_file_range` (Linux); elsewhere there is none.
#[cfg(not(target_os = "linux"))]
fn kernel_copy(_src: &impl rustix::fd::AsFd, _out: &impl rustix::fd::AsFd) -> Result<usize, Errno> {
    Err(Errno::NOSYS)
}
