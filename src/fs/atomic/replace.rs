//! Replacing a file's content: fill a temp file, give it the old file's
//! owner, mode and attributes, check the directory, rename it over the
//! name (exchanged, where the filesystem can), undo a rename that landed
//! in a directory moved out meanwhile.
//!
//! May touch: the parent handle of a [`Dest`], by single names.

use super::*;

impl Dest {
    /// Atomically replaces (or creates) the file with `bytes`.
    ///
    /// # Security
    ///
    /// Every step acts on the parent handle and single names: the temp file
    /// is unnamed until it is linked under a fresh name, or `O_CREAT|O_EXCL`
    /// (either way it never follows a link), permissions are set on its
    /// handle before the rename, and `rename` replaces the name itself (a link
    /// swapped in is replaced, never followed).
    ///
    /// Returns the version written; the change is told to `rec` (the
    /// call's recorder: the undo journal keeps the old file and records the
    /// change, the audit note notes it).
    pub fn replace(&self, bytes: &[u8], guard: Guard, rec: &dyn Recorder) -> Result<Version> {
        self.check_writable()?;
        self.check_parent()?;
        // The version replaced: known when checked; else hashed here when a
        // recorder wants it and none keeps the old file (keeping hashes it).
        let before = match &guard {
            Guard::Content { version, .. } => Some(version.clone()),
            _ if self.exists() && rec.before() && !rec.keeps() => file::version_in(
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
        let result = self.fill_and_rename(&mut temp, bytes, &guard, rec);
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
        // The new content is in place; make the rename durable (a keeper
        // does, with its record: one commit for both).
        if !rec.keeps()
            && let Err(e) = sync_dir(&self.parent)
        {
            tracing::warn!(error = %e, "fsync of the directory after a write failed");
        }
        let after = Version::of(bytes);
        if rec.records() {
            let before = before.or_else(|| kept.as_ref().and_then(|k| k.before.clone()));
            rec.changed(&Changed {
                op: if kept.is_some() {
                    Op::Replace
                } else {
                    Op::Create
                },
                at: self.place(),
                before,
                after: Some(after.clone()),
                id: crate::fs::record::id_in(&self.parent, &self.leaf),
                bytes: bytes.len() as u64,
                kept,
                dir: Some(&self.parent),
            })?;
        }
        Ok(after)
    }

    pub(super) fn fill_and_rename(
        &self,
        temp: &mut Temp,
        bytes: &[u8],
        guard: &Guard,
        rec: &dyn Recorder,
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
        self.put_in_place(&tmp, ours, guard, rec)
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
    /// When a recorder keeps old files (the undo journal), the old file
    /// (swapped out, reachable by no name in the root) goes to it instead
    /// of being unlinked; where there is no exchange, a copy of it is kept
    /// before the rename. Returns what was kept (`None`: nothing was
    /// replaced).
    pub(super) fn put_in_place(
        &self,
        tmp: &str,
        ours: (u64, u64),
        guard: &Guard,
        rec: &dyn Recorder,
    ) -> Result<Option<Kept>> {
        let given = self.given.as_str();
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
            let copied = if self.existing.is_some() && rec.keeps() {
                match rec.keep_copy(&self.parent, &self.leaf, &self.place()) {
                    Ok(k) => Some(k),
                    // Gone meanwhile: nothing is replaced.
                    Err(_) if self.parent.symlink_metadata(&self.leaf).is_err() => None,
                    Err(e) => return Err(e),
                }
            } else {
                None
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
        if rec.keeps() {
            let known = match guard {
                Guard::Content { version, .. } => Some(version),
                _ => None,
            };
            return match rec.keep_swapped(&self.parent, tmp, known, &self.place()) {
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

    pub(super) fn swap_back(&self, tmp: &str) {
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

    /// Opens the located file (never following a link, never blocking) for
    /// its extended attributes: read-only, or write-only when the owner may
    /// only write. Another inode there now is [`Error::Changed`].
    pub(super) fn open_old(&self, old: &Stamp) -> Result<OwnedFd> {
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

/// Locates `t` and replaces its content with `bytes` (`write_file`),
/// telling the change to `rec`.
pub fn write(t: &Target, bytes: &[u8], rec: &dyn Recorder) -> Result<()> {
    Dest::locate(t)?.replace(bytes, Guard::None, rec).map(drop)
}

/// Locates `t` and replaces its content with `bytes` if `cond` holds
/// (`write_file` with `ifMatch` or `--require-if-match`): the check and
/// the replacement under one [`WriteLock`], the replaced file verified
/// after the exchange. Returns the version written, the change told to
/// `rec`.
pub fn write_if(
    t: &Target,
    bytes: &[u8],
    cond: &Condition<'_>,
    rec: &dyn Recorder,
) -> Result<Version> {
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
    dest.replace(bytes, guard, rec)
}
