//! The one writer: every content replacement (`write_file`, `edit_file`)
//! goes through [`Dest`].
//!
//! Owns: finding where a write lands and replacing the file there
//! atomically. The destination is a parent directory opened beneath a root
//! plus one plain name; a final symlink is followed by tuls itself, one
//! `readlinkat` at a time, each hop's directory opened *beneath the root
//! handle* (never through `/proc`), so the link stays a link and its in-root
//! target is written, while a link that leaves the root, an absolute one or
//! a dangling one is refused. The replacement is a temp file created
//! unnamed (`O_TMPFILE`) in that same directory, written, given the old
//! file's owner (best effort), permission bits (without setuid/setgid) and
//! extended attributes (POSIX ACLs, security labels, `user.*`, `trusted.*`)
//! on its own handle, and fsynced; nothing of it shows in the directory
//! until then. Then the parent handle is checked to still be the directory
//! a fresh resolve beneath the root reaches (and, for a client root, the
//! client root still where it was beneath the operator's root), and right
//! after that the temp file is linked under a random dot-name and renamed
//! over the name, and the directory fsynced. A rename that landed in a
//! directory moved out of the root in that window of a few system calls is
//! undone at once. On any failure before the rename the target is left
//! byte-identical; a kill at any moment leaves the old or the new content,
//! never a mix (at worst a stray `.<name>.tuls-<hex>.tmp`, only in the
//! instant between the link and the rename). Where the filesystem has no
//! unnamed files, or the kernel will not let this process link one (before
//! Linux 6.10 without `CAP_DAC_READ_SEARCH`), the temp file is named from
//! the start (`O_CREAT|O_EXCL`).
//!
//! Hand-written on purpose: cap-tempfile 4.0.3's `TempFile::replace` needs
//! `/proc`, which Landlock denies (it fails with `EOPNOTSUPP`), and resets the
//! mode.
//!
//! May touch: root `Dir`s and `Dir`s opened beneath them, by single names.

use std::ffi::CStr;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

use cap_std::fs::PermissionsExt;
use cap_std::fs::{Dir, Metadata, MetadataExt, OpenOptions, OpenOptionsExt, Permissions};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, XattrFlags, renameat_with};
use rustix::io::Errno;

use crate::error::{Error, Result};
use crate::fs::file;
use crate::fs::ifmatch::{self, Condition, WriteLock};
use crate::fs::roots::Root;
use crate::fs::scope::Target;
use crate::fs::version::Version;
use crate::journal::store::Kept;
use crate::limits::{MAX_SYMLINK_HOPS, MAX_XATTR_BYTES};
use crate::text::fmt::printable;

/// Bytes of the target's name kept in a temp file's name, so the whole name
/// (`.` + name + `.tuls-` + 16 hex + `.tmp`) stays under `NAME_MAX` (255).
const TEMP_NAME_KEEP: usize = 200;

/// Attempts at finding an unused temp name before giving up.
const TEMP_ATTEMPTS: usize = 4;

/// Whether temp files start unnamed (`O_TMPFILE`); cleared for good the
/// first time this kernel refuses to link one for this process.
#[cfg(target_os = "linux")]
static UNNAMED_TEMP: AtomicBool = AtomicBool::new(true);

/// A temp file being filled. Dropped unnamed, it is gone with its handle.
struct Temp {
    file: cap_std::fs::File,
    /// Its name in the parent, once it has one ([`Dest::name_temp`]).
    name: Option<String>,
}

/// Whether [`Dest::replace`] first checks that the file is still the one
/// [`Dest::locate`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Replace whatever is there (`write_file`).
    None,
    /// Refuse if the file was replaced or modified since it was located
    /// (its identity, size and times).
    Unchanged,
    /// As [`Guard::Unchanged`], and the replaced file must have had this
    /// content: it is swapped out with `RENAME_EXCHANGE`, hashed again (up
    /// to the given bytes) and swapped back if an outside writer changed it
    /// in between (`ifMatch`; `edit_file`, whose new content was computed
    /// from the old).
    Content {
        /// The version the replaced file must have.
        version: Version,
        /// The most bytes hashed to tell (`--max-read-bytes`).
        limit: u64,
        /// Whether the client named the version (`ifMatch`): a refusal then
        /// says which version the file has now; otherwise it is
        /// [`Error::Changed`].
        named: bool,
    },
}

/// The identity and state of an existing regular file, from `lstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
    uid: u32,
    gid: u32,
}

impl Stamp {
    fn of(md: &Metadata) -> Self {
        Self {
            dev: md.dev(),
            ino: md.ino(),
            len: md.len(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
            mode: md.mode(),
            uid: md.uid(),
            gid: md.gid(),
        }
    }
}

/// Where a content write lands: a directory opened beneath a root and a
/// plain entry name in it (never empty, `.`, `..`, or containing `/`).
#[derive(Debug)]
pub struct Dest {
    /// The root the write was resolved from.
    root: Arc<Root>,
    /// The parent's path beneath `root`, for the check before the rename.
    parent_rel: String,
    parent: Dir,
    leaf: String,
    existing: Option<Stamp>,
    given: String,
    /// Set when an old file swapped out could not be swapped back: its
    /// temp name then holds it and is not removed.
    keep_temp: std::cell::Cell<bool>,
}

impl Dest {
    /// Where a write to `t` lands when `leaf` does not exist in `parent`:
    /// a new file (refused when the path ends in a slash).
    fn absent(t: &Target, parent_rel: String, parent: Dir, leaf: String) -> Result<Dest> {
        if t.trailing_slash {
            return Err(is_a_directory(&t.given));
        }
        Ok(Dest {
            root: t.root.clone(),
            parent_rel,
            parent,
            leaf,
            existing: None,
            given: t.given.clone(),
            keep_temp: Default::default(),
        })
    }

    /// Finds where a write to `t` lands.
    ///
    /// # Security
    ///
    /// The parent is opened beneath the root (cap-std refuses any escape,
    /// including through symlinked components). A final symlink is resolved
    /// only through the root handle; an escape, an absolute link or a link
    /// into another root is [`Error::OutsideRoots`], a dangling in-root link
    /// is [`Error::DanglingSymlink`], and neither says where the link points.
    pub fn locate(t: &Target) -> Result<Dest> {
        if t.walked().is_some() {
            return Dest::locate_walked(t);
        }
        let given = t.given.as_str();
        let root = &t.root.dir;
        let (mut parent_rel, mut leaf) = split(t)?;
        let mut parent = open_parent(root, &parent_rel, given)?;
        let mut md = match parent.symlink_metadata(&leaf) {
            Ok(md) => md,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Dest::absent(t, parent_rel, parent, leaf);
            }
            Err(e) => return Err(Error::io("open", given, &e)),
        };
        // A final symlink: write its in-root target, followed hop by hop,
        // each hop's directory opened beneath the root by the kernel.
        let mut hops = 0;
        while md.file_type().is_symlink() {
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(Error::io("open", given, &Errno::LOOP.into()));
            }
            let link = match rustix::fs::readlinkat(&parent, leaf.as_str(), Vec::new()) {
                Ok(link) => link,
                // No longer a link (or gone): replaced since the lstat.
                Err(Errno::INVAL | Errno::NOENT) => {
                    return Err(Error::Changed {
                        path: given.to_owned(),
                    });
                }
                Err(e) => return Err(Error::io("open", given, &e.into())),
            };
            let link = link.to_str().map_err(|_| Error::InvalidPath {
                path: given.to_owned(),
                reason: "its symbolic link leads to a name that is not valid UTF-8",
            })?;
            if link.starts_with('/') {
                return Err(Error::OutsideRoots {
                    path: given.to_owned(),
                });
            }
            let (dir_part, last) = match link.rsplit_once('/') {
                Some((d, l)) => (Some(d), l),
                None => (None, link),
            };
            let next_rel = match dir_part {
                Some(d) if !d.is_empty() => format!("{parent_rel}/{d}"),
                _ => parent_rel.clone(),
            };
            if last.is_empty() || last == "." || last == ".." {
                // The link names a directory (`sub/`, `.`, `..`): it must be
                // one beneath the root.
                let whole = format!("{next_rel}/{}", if last.is_empty() { "." } else { last });
                return Err(match root.open_dir(&whole) {
                    Ok(_) => is_a_directory(given),
                    Err(e) => dangling_or(e, given),
                });
            }
            parent = root
                .open_dir(&next_rel)
                .map_err(|e| dangling_or(e, given))?;
            parent_rel = next_rel;
            leaf = last.to_owned();
            md = match parent.symlink_metadata(&leaf) {
                Ok(md) => md,
                Err(e) => return Err(dangling_or(e, given)),
            };
        }
        Dest::existing(
            &t.root,
            parent_rel,
            parent,
            leaf,
            &md,
            t.trailing_slash,
            given,
        )
    }

    /// [`Dest::locate`] when path rules are in force: the rule walk has
    /// followed a final in-root symlink already (so the rules were matched
    /// on where the write lands), and its parent handle is written through.
    fn locate_walked(t: &Target) -> Result<Dest> {
        let given = t.given.as_str();
        let Some(w) = t.walked() else {
            return Err(Error::Internal("write target was not walked".to_owned()));
        };
        // As without rules: a path ending in `.` or `..` names a directory.
        split(t)?;
        if w.void.is_none() && w.effect != crate::rules::Effect::Hidden {
            if w.held.is_some() {
                t.check_write("open")?;
                return Err(is_a_directory(given));
            }
            if w.via_link && w.missing {
                return Err(Error::DanglingSymlink {
                    path: given.to_owned(),
                });
            }
        }
        t.check_write("open")?;
        let (_, leaf) = t.parent_and_leaf()?;
        let parent = t
            .dir()
            .and_then(Dir::try_clone)
            .map_err(|e| Error::io("open", given, &e))?;
        let parent_rel = t.parent_local().unwrap_or_else(|| ".".to_owned());
        let md = match parent.symlink_metadata(&leaf) {
            Ok(md) => md,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Dest::absent(t, parent_rel, parent, leaf);
            }
            Err(e) => return Err(Error::io("open", given, &e)),
        };
        if md.file_type().is_symlink() {
            // Swapped in since the walk: never followed.
            return Err(Error::Changed {
                path: given.to_owned(),
            });
        }
        Dest::existing(
            &t.root,
            parent_rel,
            parent,
            leaf,
            &md,
            t.trailing_slash,
            given,
        )
    }

    fn existing(
        root: &Arc<Root>,
        parent_rel: String,
        parent: Dir,
        leaf: String,
        md: &Metadata,
        slash: bool,
        given: &str,
    ) -> Result<Dest> {
        let ft = md.file_type();
        if ft.is_dir() {
            return Err(is_a_directory(given));
        }
        if !ft.is_file() {
            return Err(Error::NotARegularFile {
                path: given.to_owned(),
                kind: file::kind_name(ft),
            });
        }
        if slash {
            return Err(Error::Os {
                code: "ENOTDIR",
                text: "not a directory",
                op: "open",
                path: given.to_owned(),
            });
        }
        Ok(Dest {
            root: root.clone(),
            parent_rel,
            parent,
            leaf,
            existing: Some(Stamp::of(md)),
            given: given.to_owned(),
            keep_temp: Default::default(),
        })
    }

    /// Reads the current file, of at most `limit` bytes, through the
    /// parent handle the write will go through.
    pub fn read_all(&self, limit: u64) -> Result<Vec<u8>> {
        file::read_all_in(&self.parent, &self.leaf, &self.given, limit)
    }

    /// The directory the file lives in (opened beneath its root).
    pub fn dir(&self) -> &Dir {
        &self.parent
    }

    /// The file's plain name in [`Dest::dir`].
    pub fn leaf(&self) -> &str {
        &self.leaf
    }

    /// Whether a file is there now (otherwise the write creates it).
    pub fn exists(&self) -> bool {
        self.existing.is_some()
    }

    /// Refuses a target whose permission bits grant no write access, as an
    /// editor's read-only warning would, even when running as root.
    pub fn check_writable(&self) -> Result<()> {
        match self.existing {
            Some(s) if s.mode & 0o222 == 0 => Err(Error::ReadOnly {
                path: self.given.clone(),
                mode: s.mode & 0o7777,
            }),
            _ => Ok(()),
        }
    }

    /// Takes the lock that makes a check and the replacement one step for
    /// writers through tuls (see [`crate::fs::ifmatch`]); hold it across
    /// [`Dest::check`] (or the read a new content is computed from) and
    /// [`Dest::replace`].
    pub fn lock(&self) -> WriteLock {
        WriteLock::take(&self.parent, &self.leaf)
    }

    /// The check of a conditional change, under [`Dest::lock`]: refuses a
    /// change to an existing file without `ifMatch` where one is required,
    /// and a change whose file is not (or no longer) the version `ifMatch`
    /// names. Returns the version checked, for a [`Guard::Content`]; from
    /// here on the write is refused if the file is replaced or modified.
    ///
    /// For `write_file`, and for any writer that does not read the file
    /// first (one that does compares with [`Condition::compare`]).
    pub fn check(&mut self, cond: &Condition<'_>) -> Result<Option<Version>> {
        cond.require_for_existing(&self.given, self.exists())?;
        let Some(want) = cond.if_match else {
            return Ok(None);
        };
        if !self.exists() {
            return Err(cond.mismatch(&self.given, "; it does not exist".to_owned()));
        }
        let (v, md) = file::version_in(&self.parent, &self.leaf, &self.given, cond.limit)?;
        // What was hashed is what the write must replace.
        self.existing = Some(Stamp::of(&md));
        match v {
            Some(v) if v.matches(want) => Ok(Some(v)),
            v => Err(cond.mismatch(&self.given, ifmatch::now_is(v.as_ref()))),
        }
    }

    /// Atomically replaces (or creates) the file with `bytes`.
    ///
    /// # Security
    ///
    /// Every step acts on the parent handle and single names: the temp file
    /// is `O_CREAT|O_EXCL` (never follows a link), permissions are set on its
    /// handle before the rename, and `rename` replaces the name itself (a link
    /// swapped in is replaced, never followed).
    ///
    /// Returns the version written.
    pub fn replace(&self, bytes: &[u8], guard: Guard) -> Result<Version> {
        self.check_writable()?;
        self.check_parent()?;
        let journal = crate::journal::active();
        // For the audit record: the version replaced (known when checked;
        // with the journal, hashed as it is kept).
        let before = match (&guard, crate::audit::note::active()) {
            (Guard::Content { version, .. }, _) => Some(version.clone()),
            (_, true) if self.exists() && journal.is_none() => file::version_in(
                &self.parent,
                &self.leaf,
                &self.given,
                crate::limits::MAX_READ_BYTES,
            )
            .ok()
            .and_then(|(v, _)| v),
            _ => None,
        };
        let mut temp = self.create_temp()?;
        let result = self.fill_and_rename(&mut temp, bytes, &guard);
        let name = temp.name.take();
        drop(temp);
        let kept = match result {
            Ok(kept) => kept,
            Err(e) => {
                // The rename did not happen, or was undone: the target is
                // untouched.
                self.remove_temp(name.as_deref());
                return Err(e);
            }
        };
        let audit = crate::audit::note::active();
        let after = Version::of(bytes);
        let kept_before = kept.as_ref().and_then(|k| k.before.clone());
        match journal {
            // The new content is in place; the rename is made durable with
            // the journal's record (one commit for both).
            Some(j) => match kept {
                Some(kept) => j.record_replace(self.loc(), kept, &after, &self.parent)?,
                None => j.record_create(self.loc(), Some(&after), &self.parent)?,
            },
            // The new content is in place; make the rename durable.
            None => {
                if let Err(e) = sync_dir(&self.parent) {
                    tracing::warn!(error = %e, "fsync of the directory after a write failed");
                }
            }
        }
        if audit {
            let change = crate::audit::Change {
                path: self.given.clone(),
                before: before.or(kept_before),
                after: Some(after.clone()),
            };
            crate::audit::note::changed(change, bytes.len() as u64);
        }
        Ok(after)
    }

    /// Where the file is, as the undo journal names it.
    pub fn loc(&self) -> crate::journal::record::Loc {
        crate::journal::loc(&self.root, &self.parent_rel, &self.leaf)
    }

    /// A fresh temp file in the parent directory: unnamed (`O_TMPFILE`),
    /// so that nothing written to it shows anywhere until it is whole and
    /// the directory has been checked ([`Dest::name_temp`]); named from the
    /// start where the filesystem has no unnamed files, or this kernel will
    /// not let this process name one.
    fn create_temp(&self) -> Result<Temp> {
        // Until it has its final mode the temp file is private; a new file
        // gets 0666 and the umask, as the kernel would give it.
        let mode: u32 = if self.existing.is_some() {
            0o600
        } else {
            0o666
        };
        #[cfg(target_os = "linux")]
        if UNNAMED_TEMP.load(Ordering::Relaxed) {
            let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
            match rustix::fs::openat(&self.parent, ".", flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => {
                    return Ok(Temp {
                        file: cap_std::fs::File::from_std(fd.into()),
                        name: None,
                    });
                }
                // No unnamed files here (the filesystem, or the kernel).
                Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {}
                Err(e) => return Err(Error::io("open", &self.given, &e.into())),
            }
        }
        self.create_named(mode)
    }

    /// A temp file created `O_CREAT|O_EXCL` under a random dot-name.
    fn create_named(&self, mode: u32) -> Result<Temp> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create_new(true).mode(mode);
        let mut last = None;
        for _ in 0..TEMP_ATTEMPTS {
            let tmp = temp_name(&self.leaf)?;
            match self.parent.open_with(&tmp, &opts) {
                Ok(file) => {
                    return Ok(Temp {
                        file,
                        name: Some(tmp),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(Error::io("open", &self.given, &e)),
            }
        }
        let e = last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists));
        Err(Error::io("open", &self.given, &e))
    }

    /// Gives a whole, checked temp file its temp name in the parent (an
    /// unnamed one is linked there; a named one has it already) and returns
    /// it. This is the write's first visible step, right after the check.
    ///
    /// Where this kernel will not link an unnamed file for this process
    /// (before Linux 6.10, without `CAP_DAC_READ_SEARCH`), its content, mode,
    /// owner and attributes are copied into a named temp file instead, and
    /// later writes make named ones from the start.
    fn name_temp(&self, temp: &mut Temp) -> Result<String> {
        if let Some(name) = &temp.name {
            return Ok(name.clone());
        }
        #[cfg(target_os = "linux")]
        return self.link_unnamed(temp);
        #[cfg(not(target_os = "linux"))]
        Err(Error::Internal("an unnamed temp file off Linux".into()))
    }

    /// Links an unnamed temp file under a fresh temp name ([`Dest::name_temp`]).
    #[cfg(target_os = "linux")]
    fn link_unnamed(&self, temp: &mut Temp) -> Result<String> {
        let given = self.given.as_str();
        for _ in 0..TEMP_ATTEMPTS {
            let tmp = temp_name(&self.leaf)?;
            let linked = rustix::fs::linkat(
                &temp.file,
                "",
                &self.parent,
                tmp.as_str(),
                AtFlags::EMPTY_PATH,
            );
            match linked {
                Ok(()) => {
                    temp.name = Some(tmp.clone());
                    return Ok(tmp);
                }
                Err(Errno::EXIST) => {}
                Err(Errno::NOENT | Errno::PERM | Errno::ACCESS | Errno::OPNOTSUPP) => {
                    let named = self.named_copy(&mut temp.file)?;
                    UNNAMED_TEMP.store(false, Ordering::Relaxed);
                    *temp = named;
                    return temp
                        .name
                        .clone()
                        .ok_or_else(|| Error::Internal("a named temp file without a name".into()));
                }
                Err(e) => return Err(Error::io("link", given, &e.into())),
            }
        }
        Err(Error::io("link", given, &Errno::EXIST.into()))
    }

    /// A named temp file with the unnamed one's content, mode, owner and
    /// extended attributes, fsynced.
    #[cfg(target_os = "linux")]
    fn named_copy(&self, unnamed: &mut cap_std::fs::File) -> Result<Temp> {
        use std::io::Seek;
        let given = self.given.as_str();
        let mut named = self.create_named(0o600)?;
        let result = (|| {
            let io = |op: &'static str| move |e: io::Error| Error::io(op, given, &e);
            unnamed.rewind().map_err(io("read"))?;
            io::copy(unnamed, &mut named.file).map_err(io("write"))?;
            let st =
                rustix::fs::fstat(&*unnamed).map_err(|e| Error::io("stat", given, &e.into()))?;
            let _ = rustix::fs::fchown(
                &named.file,
                Some(rustix::fs::Uid::from_raw(st.st_uid)),
                Some(rustix::fs::Gid::from_raw(st.st_gid)),
            );
            strip_extra_xattrs(&*unnamed, &named.file, given)?;
            named
                .file
                .set_permissions(Permissions::from_mode(st.st_mode & 0o777))
                .map_err(io("chmod"))?;
            copy_xattrs(&*unnamed, &named.file, given)?;
            named.file.sync_all().map_err(io("fsync"))
        })();
        if let Err(e) = result {
            self.remove_temp(named.name.as_deref());
            return Err(e);
        }
        Ok(named)
    }

    /// Removes a temp name left by a failed write (after the undo of a
    /// rename into a directory moved out, too: it is tuls's own name there),
    /// unless it holds an old file that could not be swapped back.
    fn remove_temp(&self, name: Option<&str>) {
        if let Some(name) = name
            && !self.keep_temp.get()
        {
            let _ = self.parent.remove_file(name);
        }
    }

    fn fill_and_rename(
        &self,
        temp: &mut Temp,
        bytes: &[u8],
        guard: &Guard,
    ) -> Result<Option<Kept>> {
        let given = self.given.as_str();
        let f = &mut temp.file;
        f.write_all(bytes)
            .map_err(|e| Error::io("write", given, &e))?;
        if let Some(old) = self.existing {
            // The old file itself, for its extended attributes; the same
            // inode that was located, or the write is refused.
            let src = self.open_old(&old)?;
            // Keep the owner when we can (as root); an unprivileged server
            // cannot give a file away, which is fine.
            let me = f.metadata().map_err(|e| Error::io("write", given, &e))?;
            if me.uid() != old.uid || me.gid() != old.gid {
                let _ = rustix::fs::fchown(
                    &*f,
                    Some(rustix::fs::Uid::from_raw(old.uid)),
                    Some(rustix::fs::Gid::from_raw(old.gid)),
                );
            }
            // What the temp file got and the old one lacks (an ACL inherited
            // from the directory's default ACL) goes first; then the mode
            // (setuid/setgid dropped), then the old attributes: an ACL set
            // after fchmod keeps its mask, which the group bits then show.
            strip_extra_xattrs(&src, f, given)?;
            f.set_permissions(Permissions::from_mode(old.mode & 0o777))
                .map_err(|e| Error::io("chmod", given, &e))?;
            copy_xattrs(&src, f, given)?;
        }
        f.sync_all().map_err(|e| Error::io("fsync", given, &e))?;
        if *guard != Guard::None {
            let now = self.parent.symlink_metadata(&self.leaf).ok();
            if now.as_ref().map(Stamp::of) != self.existing {
                return Err(Error::Changed {
                    path: given.to_owned(),
                });
            }
        }
        // The directory must still be where the root leads: one moved out of
        // the root since it was opened would take the new file with it. The
        // temp file gets its name only now, so nothing showed there before.
        self.check_parent()?;
        let ours = f.metadata().map_err(|e| Error::io("write", given, &e))?;
        let ours = (ours.dev(), ours.ino());
        let tmp = self.name_temp(temp)?;
        self.put_in_place(&tmp, ours, guard)
    }

    /// Puts the temp file in place, then makes sure it did not land in a
    /// directory moved out of the root between [`Dest::check_parent`] and
    /// the rename (a window of a few system calls); if it did, the write is
    /// undone there at once, and the temp name goes with it.
    ///
    /// Over an existing file the temp file is swapped in with
    /// `RENAME_EXCHANGE`, so the old file is still at hand (under the temp
    /// name) and can be swapped back; it is unlinked once the new one is
    /// known to be in place. Elsewhere (a new file, or a filesystem without
    /// exchange) it is a plain rename, and an undo can only remove the new
    /// file.
    ///
    /// With the undo journal, the old file (swapped out, reachable by no
    /// name in the root) goes into the journal instead of being unlinked;
    /// where there is no exchange, a copy of it is kept before the rename.
    /// Returns what was kept (`None`: nothing was replaced).
    fn put_in_place(&self, tmp: &str, ours: (u64, u64), guard: &Guard) -> Result<Option<Kept>> {
        let given = self.given.as_str();
        let journal = crate::journal::active();
        let exchanged = self.existing.is_some()
            && match renameat_with(
                &self.parent,
                tmp,
                &self.parent,
                self.leaf.as_str(),
                RenameFlags::EXCHANGE,
            ) {
                Ok(()) => true,
                // Gone meanwhile: a conditional write is refused.
                Err(Errno::NOENT) if matches!(guard, Guard::Content { .. }) => {
                    return Err(Error::Changed {
                        path: given.to_owned(),
                    });
                }
                // Gone meanwhile (a plain write creates it), or no exchange
                // on this filesystem: a plain rename.
                Err(Errno::NOENT | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => false,
                Err(e) => return Err(Error::io("rename", given, &e.into())),
            };
        let copied = if exchanged {
            // A rename would refuse to replace a directory; so does this.
            let swapped_out = rustix::fs::statat(&self.parent, tmp, AtFlags::SYMLINK_NOFOLLOW);
            let is_dir = swapped_out
                .map(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
                .unwrap_or(true);
            if is_dir {
                self.swap_back(tmp);
                return Err(is_a_directory(given));
            }
            // The old content, swapped out, must be what the check saw: an
            // outside writer may have changed it after the check, within
            // one timestamp tick and at the same size.
            if let Guard::Content {
                version,
                limit,
                named,
            } = guard
            {
                let now = file::version_in(&self.parent, tmp, given, *limit)
                    .ok()
                    .and_then(|(v, _)| v);
                if now.as_ref() != Some(version) {
                    self.swap_back(tmp);
                    return Err(if *named {
                        Error::VersionMismatch {
                            op: "write",
                            path: given.to_owned(),
                            given: version.to_string(),
                            current: ifmatch::now_is(now.as_ref()),
                        }
                    } else {
                        Error::Changed {
                            path: given.to_owned(),
                        }
                    });
                }
            }
            None
        } else {
            // No exchange here: a copy of the old file is kept first.
            let copied = match (journal, self.existing.is_some()) {
                (Some(j), true) => match j.keep_copy(&self.parent, &self.leaf) {
                    Ok(k) => Some(k),
                    // Gone meanwhile: nothing is replaced.
                    Err(_) if self.parent.symlink_metadata(&self.leaf).is_err() => None,
                    Err(e) => return Err(e),
                },
                _ => None,
            };
            self.parent
                .rename(tmp, &self.parent, &self.leaf)
                .map_err(|e| Error::io("rename", given, &e))?;
            copied
        };
        if !self.still_in_root() {
            // Moved out between the check and the rename: undo it there.
            if exchanged {
                self.swap_back(tmp); // the caller removes the temp name
            } else if let Ok(st) =
                rustix::fs::statat(&self.parent, self.leaf.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                && crate::fs::sys::dev_ino(&st) == ours
            {
                let _ = rustix::fs::unlinkat(&self.parent, self.leaf.as_str(), AtFlags::empty());
            }
            return Err(Error::DirectoryMoved {
                path: given.to_owned(),
            });
        }
        if !exchanged {
            return Ok(copied);
        }
        if let Some(j) = journal {
            let known = match guard {
                Guard::Content { version, .. } => Some(version),
                _ => None,
            };
            return match j.keep_swapped(&self.parent, tmp, known) {
                Ok(kept) => Ok(Some(kept)),
                Err(e) => {
                    // Not kept, so not replaced: the old file goes back.
                    self.swap_back(tmp);
                    Err(e)
                }
            };
        }
        if let Err(e) = rustix::fs::unlinkat(&self.parent, tmp, AtFlags::empty()) {
            tracing::warn!(error = %e, "cannot remove the replaced file's old inode");
        }
        Ok(Some(Kept::default()))
    }

    fn swap_back(&self, tmp: &str) {
        if let Err(e) = renameat_with(
            &self.parent,
            tmp,
            &self.parent,
            self.leaf.as_str(),
            RenameFlags::EXCHANGE,
        ) {
            // The old file stays under the temp name rather than be removed
            // with it.
            self.keep_temp.set(true);
            tracing::warn!(error = %e, temp = %printable(tmp), "cannot swap the old file back; it is kept under the temp name");
        }
    }

    /// Refuses when the parent handle is no longer the directory a fresh
    /// resolve beneath the root reaches (it was moved, out of the root or
    /// elsewhere, or replaced).
    fn check_parent(&self) -> Result<()> {
        if self.still_in_root() {
            Ok(())
        } else {
            Err(Error::DirectoryMoved {
                path: self.given.clone(),
            })
        }
    }

    /// Opens the located file (never following a link, never blocking) for
    /// its extended attributes: read-only, or write-only when the owner may
    /// only write. Another inode there now is [`Error::Changed`].
    fn open_old(&self, old: &Stamp) -> Result<OwnedFd> {
        let given = self.given.as_str();
        let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let open = |how: OFlags| {
            rustix::fs::openat(&self.parent, self.leaf.as_str(), flags | how, Mode::empty())
        };
        let fd = match open(OFlags::RDONLY) {
            Err(Errno::ACCESS) => open(OFlags::WRONLY),
            other => other,
        };
        let changed = || Error::Changed {
            path: given.to_owned(),
        };
        let fd = match fd {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::LOOP) => return Err(changed()),
            Err(e) => return Err(Error::io("open", given, &e.into())),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| Error::io("open", given, &e.into()))?;
        if crate::fs::sys::dev_ino(&st) != (old.dev, old.ino) {
            return Err(changed());
        }
        Ok(fd)
    }
}

/// Whether an extended attribute carries access control: a POSIX or NFSv4
/// ACL (`system.*`) or a security label (`security.*`). Failing to keep one
/// refuses the write.
fn carries_access(name: &CStr) -> bool {
    let b = name.to_bytes();
    b.starts_with(b"system.") || b.starts_with(b"security.")
}

/// Attributes that describe the old *content* or grant privilege, dropped
/// as the kernel drops them when a file is written (like setuid/setgid):
/// file capabilities and IMA/EVM measurements.
fn dropped(name: &CStr) -> bool {
    matches!(
        name.to_bytes(),
        b"security.capability" | b"security.ima" | b"security.evm"
    )
}

fn xattr_error(given: &str, name: &CStr, e: Errno) -> Error {
    Error::AccessControlNotKept {
        path: given.to_owned(),
        attr: printable(&name.to_string_lossy()).into_owned(),
        reason: io::Error::from(e).to_string(),
    }
}

/// The names of `fd`'s extended attributes (those this process may see).
/// A filesystem without extended attributes has none (an empty list).
fn xattr_names(fd: impl AsFd) -> std::result::Result<Vec<std::ffi::CString>, Errno> {
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
fn xattr_value(fd: impl AsFd, name: &CStr) -> std::result::Result<Option<Vec<u8>>, Errno> {
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
fn strip_extra_xattrs(old: impl AsFd, new: &cap_std::fs::File, given: &str) -> Result<()> {
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
fn copy_xattrs(old: impl AsFd, new: &cap_std::fs::File, given: &str) -> Result<()> {
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

/// A `NotFound` while following a link is a dangling link; anything else
/// is worded as usual (an escape is [`Error::OutsideRoots`]).
fn dangling_or(e: io::Error, given: &str) -> Error {
    if e.kind() == io::ErrorKind::NotFound {
        Error::DanglingSymlink {
            path: given.to_owned(),
        }
    } else {
        Error::io("open", given, &e)
    }
}

impl Dest {
    /// Where a new file lands (`copy_file`): the parent opened beneath the
    /// root and a final name that must not exist in any form (a file, a
    /// directory, a symbolic link, dangling or not). A path naming a root or
    /// ending in `.` / `..` names a directory that exists.
    pub fn locate_new(t: &Target) -> Result<Dest> {
        let given = t.given.as_str();
        let exists = || Error::DestinationExists {
            path: given.to_owned(),
        };
        let (parent_rel, leaf, parent) = match t.walked() {
            // Path rules in force: the walk matched them on where the name
            // lands; a name that is there, even as a link, exists.
            Some(w) => {
                t.check_write("open")?;
                if w.via_link || !w.missing {
                    return Err(exists());
                }
                let (in_base, leaf) = t.parent_and_leaf().map_err(|_| exists())?;
                let base = t.dir().map_err(|e| Error::io("open", given, &e))?;
                let parent = if in_base == "." {
                    base.try_clone()
                } else {
                    cap_fs_ext::DirExt::open_dir_nofollow(base, &in_base)
                }
                .map_err(|e| Error::io("open", given, &e))?;
                (
                    t.parent_local().unwrap_or_else(|| ".".to_owned()),
                    leaf,
                    parent,
                )
            }
            None => {
                let (parent_rel, leaf) = split(t).map_err(|_| exists())?;
                let parent = open_parent(&t.root.dir, &parent_rel, given)?;
                (parent_rel, leaf, parent)
            }
        };
        match parent.symlink_metadata(&leaf) {
            Ok(_) => Err(exists()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Dest {
                root: t.root.clone(),
                parent_rel,
                parent,
                leaf,
                existing: None,
                given: given.to_owned(),
                keep_temp: Default::default(),
            }),
            Err(e) => Err(Error::io("open", given, &e)),
        }
    }

    /// Creates the file, which must not exist, with what `fill` writes into
    /// a fresh temp file in the same directory: the temp file is fsynced and
    /// then renamed with `RENAME_NOREPLACE` (or linked, where the filesystem
    /// lacks it), so no reader ever sees a part of the content, and a name
    /// created meanwhile is never replaced: that is
    /// [`Error::DestinationExists`], and the temp file is removed.
    ///
    /// # Security
    ///
    /// As [`Dest::replace`]: single names in the parent handle, checked to
    /// still be where the root leads before the rename and after it (a file
    /// put into a directory moved out of the root meanwhile is removed).
    pub fn create_new(
        &self,
        fill: impl FnOnce(&mut cap_std::fs::File) -> Result<()>,
    ) -> Result<()> {
        self.check_parent()?;
        let mut temp = self.create_temp()?;
        let result = (|| {
            fill(&mut temp.file)?;
            temp.file
                .sync_all()
                .map_err(|e| Error::io("fsync", &self.given, &e))?;
            self.check_parent()?;
            let ours = temp
                .file
                .metadata()
                .map_err(|e| Error::io("write", &self.given, &e))?;
            let tmp = self.name_temp(&mut temp)?;
            self.put_new(&tmp, (ours.dev(), ours.ino()))
        })();
        let name = temp.name.take();
        drop(temp);
        if result.is_err() {
            self.remove_temp(name.as_deref());
            return result;
        }
        // For the undo journal and the audit record: the new file's version.
        let journal = crate::journal::active();
        // With the journal, the rename is made durable with its record.
        if journal.is_none()
            && let Err(e) = sync_dir(&self.parent)
        {
            tracing::warn!(error = %e, "fsync of the directory after a create failed");
        }
        if journal.is_some() || crate::audit::note::active() {
            let (after, len) = match file::version_in(
                &self.parent,
                &self.leaf,
                &self.given,
                crate::limits::MAX_READ_BYTES,
            ) {
                Ok((v, md)) => (v, md.len()),
                Err(_) => (None, 0),
            };
            if let Some(j) = journal {
                j.record_create(self.loc(), after.as_ref(), &self.parent)?;
            }
            let change = crate::audit::Change {
                path: self.given.clone(),
                before: None,
                after,
            };
            crate::audit::note::changed(change, len);
        }
        Ok(())
    }

    /// Gives the temp file its final name, never replacing one.
    fn put_new(&self, tmp: &str, ours: (u64, u64)) -> Result<()> {
        let given = self.given.as_str();
        let exists = || Error::DestinationExists {
            path: given.to_owned(),
        };
        let leaf = self.leaf.as_str();
        match renameat_with(
            &self.parent,
            tmp,
            &self.parent,
            leaf,
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {}
            Err(Errno::EXIST) => return Err(exists()),
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                // No RENAME_NOREPLACE here: a hard link is no-replace by
                // construction; the temp name goes once the link is made.
                match rustix::fs::linkat(&self.parent, tmp, &self.parent, leaf, AtFlags::empty()) {
                    Ok(()) => {}
                    Err(Errno::EXIST) => return Err(exists()),
                    Err(e) => return Err(Error::io("rename", given, &e.into())),
                }
                let _ = rustix::fs::unlinkat(&self.parent, tmp, AtFlags::empty());
            }
            Err(e) => return Err(Error::io("rename", given, &e.into())),
        }
        if !self.still_in_root() {
            // Moved out between the check and the rename: undo it there.
            if let Ok(st) = rustix::fs::statat(&self.parent, leaf, AtFlags::SYMLINK_NOFOLLOW)
                && crate::fs::sys::dev_ino(&st) == ours
            {
                let _ = rustix::fs::unlinkat(&self.parent, leaf, AtFlags::empty());
            }
            return Err(Error::DirectoryMoved {
                path: given.to_owned(),
            });
        }
        Ok(())
    }

    /// Opens the located existing file for writing in place (`append_file`):
    /// never following a link, never blocking, and only the very inode
    /// [`Dest::locate`] saw; anything else there now (a symbolic link
    /// swapped in, another file) is [`Error::Changed`]. Returns the file and
    /// its size now. `None` when no file was there.
    pub fn open_in_place(&self) -> Result<Option<(OwnedFd, u64)>> {
        let Some(old) = self.existing else {
            return Ok(None);
        };
        let given = self.given.as_str();
        self.check_writable()?;
        self.check_parent()?;
        let flags =
            OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let changed = || Error::Changed {
            path: given.to_owned(),
        };
        let fd = match rustix::fs::openat(&self.parent, self.leaf.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::LOOP | Errno::NXIO) => return Err(changed()),
            Err(e) => return Err(Error::io("open", given, &e.into())),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| Error::io("open", given, &e.into()))?;
        if crate::fs::sys::dev_ino(&st) != (old.dev, old.ino)
            || FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
        {
            return Err(changed());
        }
        Ok(Some((fd, u64::try_from(st.st_size).unwrap_or(0))))
    }

    /// Whether the file opened by [`Dest::open_in_place`] is still exactly
    /// as [`Dest::check`] hashed it (identity, size, modification and change
    /// times): a writer in place (`append_file` with `ifMatch`) cannot swap
    /// the old file out to hash it again, so it compares the open handle
    /// with the state the check saw.
    pub fn still_as_checked(&self, fd: &OwnedFd) -> bool {
        let (Some(old), Ok(st)) = (self.existing, rustix::fs::fstat(fd)) else {
            return false;
        };
        #[allow(clippy::unnecessary_cast)] // not unnecessary on every platform
        let now = (
            u64::try_from(st.st_size).unwrap_or(u64::MAX),
            (st.st_mtime as i64, st.st_mtime_nsec as i64),
            (st.st_ctime as i64, st.st_ctime_nsec as i64),
        );
        crate::fs::sys::dev_ino(&st) == (old.dev, old.ino) && now == (old.len, old.mtime, old.ctime)
    }

    /// Whether the directory is still where the root leads: checked just
    /// before a write's visible step, and right after it (to undo one that
    /// landed in a directory moved out meanwhile).
    pub fn still_in_root(&self) -> bool {
        self.root.still_reaches(&self.parent_rel, &self.parent)
    }

    /// The path as the client gave it.
    pub fn given(&self) -> &str {
        &self.given
    }
}

/// Locates `t` and replaces its content with `bytes` (`write_file`).
pub fn write(t: &Target, bytes: &[u8]) -> Result<()> {
    Dest::locate(t)?.replace(bytes, Guard::None).map(drop)
}

/// Locates `t` and replaces its content with `bytes` if `cond` holds
/// (`write_file` with `ifMatch` or `--require-if-match`): the check and
/// the replacement under one [`WriteLock`], the replaced file verified
/// after the exchange. Returns the version written.
pub fn write_if(t: &Target, bytes: &[u8], cond: &Condition<'_>) -> Result<Version> {
    let mut dest = Dest::locate(t)?;
    let _lock = dest.lock();
    let guard = match dest.check(cond)? {
        Some(version) => Guard::Content {
            version,
            limit: cond.limit,
            named: true,
        },
        None => Guard::None,
    };
    dest.replace(bytes, guard)
}

/// The parent's relative path and the plain final name of `t`; a path that
/// names a root or ends in `.` / `..` is a directory.
fn split(t: &Target) -> Result<(String, String)> {
    match t.segs.last().map(String::as_str) {
        None | Some(".") | Some("..") => Err(is_a_directory(&t.given)),
        Some(_) => t.parent_and_leaf(),
    }
}

/// Opens a parent directory beneath `root`. A missing parent is `ENOENT`
/// naming the client's path, as in the reference.
fn open_parent(root: &Dir, rel: &str, given: &str) -> Result<Dir> {
    root.open_dir(rel).map_err(|e| Error::io("open", given, &e))
}

fn is_a_directory(given: &str) -> Error {
    Error::Os {
        code: "EISDIR",
        text: "illegal operation on a directory",
        op: "open",
        path: given.to_owned(),
    }
}

/// `.<name>.tuls-<16 hex>.tmp`, with `name` cut to [`TEMP_NAME_KEEP`] bytes.
fn temp_name(leaf: &str) -> Result<String> {
    let mut rand = [0u8; 8];
    getrandom::fill(&mut rand).map_err(|e| Error::Other {
        op: "getrandom",
        path: String::new(),
        kind: e.to_string(),
    })?;
    let hex: String = rand.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!(
        ".{}.tuls-{hex}.tmp",
        crate::text::fmt::cut(leaf, TEMP_NAME_KEEP)
    ))
}

/// fsyncs a directory so a rename in it survives a crash.
///
/// cap-std holds directories as `O_PATH` handles, which `fsync` refuses
/// (`EBADF`), so this opens the directory itself (`.`, read-only) beneath
/// the handle and fsyncs that.
fn sync_dir(dir: &Dir) -> io::Result<()> {
    let this = dir.open(".")?;
    rustix::fs::fsync(&this).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::fs::roots::Root;
    use crate::fs::scope::resolve_in;

    /// A temp directory opened as a root (through `roots::open`, the one
    /// ambient-authority site), and the std path to inspect it.
    fn root() -> (tempfile::TempDir, Arc<Root>) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = Arc::new(crate::fs::roots::open(tmp.path()).expect("open root"));
        (tmp, root)
    }

    fn target(root: &Arc<Root>, p: &str) -> Target {
        resolve_in(std::slice::from_ref(root), p, 4096).expect("resolve")
    }

    fn names(root: &Root) -> Vec<String> {
        let mut v: Vec<String> = root
            .dir
            .entries()
            .expect("entries")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn temp_names_are_hidden_random_and_bounded() {
        let a = temp_name("notes.txt").unwrap();
        let b = temp_name("notes.txt").unwrap();
        assert_ne!(a, b);
        assert!(
            a.starts_with(".notes.txt.tuls-") && a.ends_with(".tmp"),
            "{a}"
        );
        assert_eq!(a.len(), ".notes.txt.tuls-".len() + 16 + ".tmp".len());
        let long = "é".repeat(127); // 254 bytes
        let t = temp_name(&long).unwrap();
        assert!(t.len() <= 255, "{}", t.len());
        assert!(!t.contains('/'));
    }

    #[test]
    fn replaces_keeping_mode_and_creates_with_umask() {
        let (_tmp, root) = root();
        root.dir.write("f", "old").unwrap();
        root.dir
            .set_permissions("f", Permissions::from_mode(0o640))
            .unwrap();
        write(&target(&root, "f"), b"new").unwrap();
        assert_eq!(root.dir.read("f").unwrap(), b"new");
        assert_eq!(root.dir.metadata("f").unwrap().mode() & 0o7777, 0o640);
        write(&target(&root, "g"), b"fresh").unwrap();
        root.dir.write("probe", "").unwrap(); // what the umask gives 0666
        let want = root.dir.metadata("probe").unwrap().mode() & 0o777;
        assert_eq!(root.dir.metadata("g").unwrap().mode() & 0o777, want);
        assert_eq!(names(&root), ["f", "g", "probe"]);
        // cap-std's handles are O_PATH: fsync on them directly fails.
        assert!(rustix::fs::fsync(&*root.dir).is_err());
        sync_dir(&root.dir).expect("a root handle can be fsynced");
        sync_dir(&root.dir.open_dir(".").unwrap()).expect("so can one opened beneath it");
    }

    #[test]
    fn a_failure_after_the_temp_exists_removes_it_and_keeps_the_target() {
        let (_tmp, root) = root();
        root.dir.write("f", "v1").unwrap();
        let dest = Dest::locate(&target(&root, "f")).unwrap();
        // Someone else changes the file after it was located.
        std::thread::sleep(std::time::Duration::from_millis(10));
        root.dir.write("f", "v2-other").unwrap();
        let err = dest.replace(b"mine", Guard::Unchanged).unwrap_err();
        assert!(matches!(err, Error::Changed { .. }), "{err}");
        assert_eq!(root.dir.read("f").unwrap(), b"v2-other");
        assert_eq!(names(&root), ["f"]);

        // The name becomes a non-empty directory: the rename itself fails.
        let dest = Dest::locate(&target(&root, "f")).unwrap();
        root.dir.remove_file("f").unwrap();
        root.dir.create_dir("f").unwrap();
        root.dir.write("f/keep", "k").unwrap();
        assert!(dest.replace(b"mine", Guard::None).is_err());
        assert_eq!(root.dir.read("f/keep").unwrap(), b"k");
        assert_eq!(names(&root), ["f"]);
    }

    /// An outside writer that rewrote the file in place within one
    /// timestamp tick after the check (same identity, size and times: the
    /// stamp check before the rename passes) is caught by content: the
    /// exchange swaps its file out, the hash differs, it is swapped back.
    /// The rewrite is stood in for by a check that saw other content.
    #[test]
    fn a_change_after_the_check_is_swapped_back_by_content() {
        let (_tmp, root) = root();
        root.dir.write("f", "v2-bbbb").unwrap();
        let dest = Dest::locate(&target(&root, "f")).unwrap();
        let guard = |named| Guard::Content {
            version: Version::of(b"v1-aaaa"),
            limit: 1 << 20,
            named,
        };
        let err = dest.replace(b"mine", guard(true)).unwrap_err();
        assert!(matches!(err, Error::VersionMismatch { .. }), "{err}");
        assert!(
            err.to_string().contains(Version::of(b"v2-bbbb").as_str()),
            "{err}"
        );
        assert_eq!(root.dir.read("f").unwrap(), b"v2-bbbb");
        assert_eq!(names(&root), ["f"]);
        // Without ifMatch (edit_file's own check) it is a plain "changed".
        let err = dest.replace(b"mine", guard(false)).unwrap_err();
        assert!(matches!(err, Error::Changed { .. }), "{err}");
        assert_eq!(root.dir.read("f").unwrap(), b"v2-bbbb");
        assert_eq!(names(&root), ["f"]);
        // The version it has: the write goes through (located afresh: the
        // swaps back changed its ctime).
        let dest = Dest::locate(&target(&root, "f")).unwrap();
        let ok = Guard::Content {
            version: Version::of(b"v2-bbbb"),
            limit: 1 << 20,
            named: true,
        };
        dest.replace(b"mine", ok).unwrap();
        assert_eq!(root.dir.read("f").unwrap(), b"mine");
        assert_eq!(names(&root), ["f"]);
    }

    #[test]
    fn read_only_targets_are_refused_without_a_temp() {
        let (_tmp, root) = root();
        root.dir.write("ro", "keep").unwrap();
        root.dir
            .set_permissions("ro", Permissions::from_mode(0o444))
            .unwrap();
        let err = write(&target(&root, "ro"), b"x").unwrap_err();
        assert!(matches!(err, Error::ReadOnly { mode: 0o444, .. }), "{err}");
        assert_eq!(root.dir.read("ro").unwrap(), b"keep");
        assert_eq!(names(&root), ["ro"]);
    }

    #[test]
    fn final_symlinks_are_followed_inside_and_refused_otherwise() {
        let (tmp, root) = root();
        root.dir.create_dir("sub").unwrap();
        root.dir.write("sub/real", "r").unwrap();
        root.dir.symlink("sub/real", "in").unwrap();
        root.dir.symlink("nowhere", "dangling").unwrap();
        root.dir.symlink("sub", "dirlink").unwrap();
        write(&target(&root, "in"), b"via").unwrap();
        assert_eq!(root.dir.read("sub/real").unwrap(), b"via");
        assert!(root.dir.symlink_metadata("in").unwrap().is_symlink());
        let err = write(&target(&root, "dangling"), b"x").unwrap_err();
        assert!(matches!(err, Error::DanglingSymlink { .. }), "{err}");
        assert!(root.dir.symlink_metadata("nowhere").is_err());
        let err = write(&target(&root, "dirlink"), b"x").unwrap_err();
        assert!(err.to_string().starts_with("EISDIR"), "{err}");
        // An absolute link is refused even when it points inside.
        #[allow(clippy::disallowed_methods)] // cap-std will not create one
        std::os::unix::fs::symlink(tmp.path().join("sub/real"), tmp.path().join("abs")).unwrap();
        assert!(write(&target(&root, "abs"), b"x").unwrap_err().is_outside());
        // Out of the root, to a name that exists or not: the same refusal.
        root.dir.symlink("../../x", "sub/up").unwrap();
        assert!(
            write(&target(&root, "sub/up"), b"x")
                .unwrap_err()
                .is_outside()
        );
        root.dir.symlink("..", "sub/parent").unwrap();
        assert!(
            write(&target(&root, "sub/parent"), b"x")
                .unwrap_err()
                .to_string()
                .starts_with("EISDIR")
        );
        assert_eq!(root.dir.read("sub/real").unwrap(), b"via");
    }

    #[test]
    fn chained_and_climbing_links_are_followed_hop_by_hop_and_loops_end() {
        let (_tmp, root) = root();
        root.dir.create_dir("sub").unwrap();
        root.dir.create_dir("sub/deeper").unwrap();
        root.dir.write("top.txt", "t").unwrap();
        root.dir.symlink("../top.txt", "sub/up").unwrap();
        root.dir.symlink("sub/up", "chain").unwrap();
        // `sub/deeper/..` is resolved by the kernel: `sub`, whatever the string says.
        root.dir.symlink("deeper/../up", "sub/round").unwrap();
        write(&target(&root, "chain"), b"1").unwrap();
        assert_eq!(root.dir.read("top.txt").unwrap(), b"1");
        write(&target(&root, "sub/round"), b"2").unwrap();
        assert_eq!(root.dir.read("top.txt").unwrap(), b"2");
        root.dir.symlink("l2", "l1").unwrap();
        root.dir.symlink("l1", "l2").unwrap();
        let err = write(&target(&root, "l1"), b"x").unwrap_err();
        assert!(err.to_string().starts_with("ELOOP"), "{err}");
        assert_eq!(names(&root), ["chain", "l1", "l2", "sub", "top.txt"]);
    }
}
