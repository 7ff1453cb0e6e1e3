//! Temp files for the one writer: created unnamed (`O_TMPFILE`) where it
//! can be, named once whole and checked, or named from the start.
//!
//! May touch: the parent handle of a [`Dest`], by single names.

use super::*;

/// Bytes of the target's name kept in a temp file's name, so the whole name
/// (`.` + name + `.tuls-` + 16 hex + `.tmp`) stays under `NAME_MAX` (255).
pub(super) const TEMP_NAME_KEEP: usize = 200;

/// Attempts at finding an unused temp name before giving up.
pub(super) const TEMP_ATTEMPTS: usize = 4;

/// Whether temp files start unnamed (`O_TMPFILE`); cleared for good the
/// first time this kernel refuses to link one for this process.
#[cfg(target_os = "linux")]
pub(super) static UNNAMED_TEMP: AtomicBool = AtomicBool::new(true);

/// A temp file being filled. Dropped unnamed, it is gone with its handle.
pub(super) struct Temp {
    pub(super) file: cap_std::fs::File,
    /// Its name in the parent, once it has one ([`Dest::name_temp`]).
    pub(super) name: Option<String>,
}

impl Dest {
    /// A fresh temp file in the parent directory: unnamed (`O_TMPFILE`),
    /// so that nothing written to it shows anywhere until it is whole and
    /// the directory has been checked ([`Dest::name_temp`]); named from the
    /// start where the filesystem has no unnamed files, or this kernel will
    /// not let this process name one.
    pub(super) fn create_temp(&self) -> Result<Temp> {
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
    pub(super) fn create_named(&self, mode: u32) -> Result<Temp> {
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
    pub(super) fn name_temp(&self, temp: &mut Temp) -> Result<String> {
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
    pub(super) fn link_unnamed(&self, temp: &mut Temp) -> Result<String> {
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
    pub(super) fn named_copy(&self, unnamed: &mut cap_std::fs::File) -> Result<Temp> {
        let given = self.given.as_str();
        let named = self.create_named(0o600)?;
        let result = (|| {
            let io = |op: &'static str| move |e: io::Error| Error::io(op, given, &e);
            let st =
                rustix::fs::fstat(&*unnamed).map_err(|e| Error::io("stat", given, &e.into()))?;
            // Holes stay holes (a copied sparse file is the content here).
            let len = u64::try_from(st.st_size).unwrap_or(0);
            crate::fs::sparse::copy(&*unnamed, &named.file, len, &|| false).map_err(
                |e| match e {
                    crate::fs::sparse::Stop::Io(e) => Error::io("write", given, &e),
                    crate::fs::sparse::Stop::Cancelled => Error::Cancelled,
                },
            )?;
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
    pub(super) fn remove_temp(&self, name: Option<&str>) {
        if let Some(name) = name
            && !self.keep_temp.get()
        {
            let _ = self.parent.remove_file(name);
        }
    }
}

/// `.<name>.tuls-<16 hex>.tmp`, with `name` cut to [`TEMP_NAME_KEEP`] bytes.
pub(super) fn temp_name(leaf: &str) -> Result<String> {
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
