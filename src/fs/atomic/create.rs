//! Creating a file that must not exist (`copy_file`, a new file by
//! `append_file`): locate it, fill a temp file, and give it its name
//! without ever replacing one.
//!
//! May touch: the parent handle of a [`Dest`], by single names.

use super::*;

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
        // The walk matched the rules on where the name lands; a name that
        // is there, even as a link, exists.
        let w = t.walked_for_write()?;
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
        let parent_rel = t.parent_local().unwrap_or_else(|| ".".to_owned());
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
        rec: &dyn Recorder,
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
        // A keeper makes the rename durable with its record.
        if !rec.keeps()
            && let Err(e) = sync_dir(&self.parent)
        {
            tracing::warn!(error = %e, "fsync of the directory after a create failed");
        }
        if rec.records() {
            // For the recorders: the new file's version.
            let (after, len) = match file::version_in(
                &self.parent,
                &self.leaf,
                &self.given,
                crate::limits::MAX_READ_BYTES,
            ) {
                Ok((v, md)) => (v, md.len()),
                Err(_) => (None, 0),
            };
            rec.changed(&Changed {
                op: Op::Create,
                at: self.place(),
                before: None,
                after,
                id: crate::fs::record::id_in(&self.parent, &self.leaf),
                bytes: len,
                kept: None,
                dir: Some(&self.parent),
            })?;
        }
        Ok(())
    }

    /// Gives the temp file its final name, never replacing one.
    pub(super) fn put_new(&self, tmp: &str, ours: (u64, u64)) -> Result<()> {
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
}
