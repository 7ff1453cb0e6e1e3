//! Undoing one change of the journal: what is at a place now, whether it
//! is what the change left, and the undo itself.
//!
//! Owns: the roots the journal names, opened as capabilities once each;
//! the comparison of what is there with what the revert expects (the
//! version the change left and the device and inode of what it left); and
//! each undo: a replaced file gets its pre-image back through the one
//! writer ([`crate::fs::atomic::Dest`], which checks the file again after
//! swapping it out), a created file is removed, an append is cut back, a
//! move is renamed back (never over anything), a directory made is removed
//! if it is empty and still the same one.
//! May touch: the roots the journal names, by paths beneath them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};
use rustix::fs::{AtFlags, RenameFlags};

use super::record::{Change, Loc, Op};
use super::rules::RuleSpec;
use crate::fs::atomic::{Dest, Guard};
use crate::fs::resolve::Final;
use crate::fs::roots::Root;
use crate::fs::scope::{Target, resolve_in, walk};
use crate::fs::version::Version;
use crate::limits::{MAX_PATH_BYTES, MAX_READ_BYTES};
use crate::rules::Effect;

/// The roots the journal names, opened as capabilities (once each), with
/// the path rules the session had.
pub(super) struct Roots {
    open: HashMap<String, Result<Arc<Root>, String>>,
}

impl Roots {
    /// Opens the session's roots (`roots`, as its `start` record names them)
    /// with the rules of `rules` built in, as `tuls filesystem` does at
    /// startup; roots of a session that recorded none are opened as they are
    /// named, with the built-in protections.
    pub(super) fn new(roots: &[String], rules: Option<&RuleSpec>) -> Roots {
        let mut open = HashMap::new();
        let spec = rules.cloned().unwrap_or_default();
        let mut opened = Vec::new();
        for r in roots {
            match crate::fs::roots::open(Path::new(r)) {
                Ok(root) => opened.push((r.clone(), root)),
                Err(e) => {
                    open.insert(r.clone(), Err(e.to_string()));
                }
            }
        }
        let mut handles: Vec<Root> = Vec::new();
        let mut names = Vec::new();
        for (n, r) in opened {
            names.push(n);
            handles.push(r);
        }
        match crate::run::apply_rules(&spec.spec(), &spec.read_only_dirs, &mut handles) {
            Ok(_) => {
                for (n, r) in names.into_iter().zip(handles) {
                    open.insert(n, Ok(Arc::new(r)));
                }
            }
            Err(e) => {
                for n in names {
                    open.insert(
                        n,
                        Err(format!("the session's path rules cannot be built: {e}")),
                    );
                }
            }
        }
        Roots { open }
    }

    fn get(&mut self, root: &str) -> Result<Arc<Root>, String> {
        self.open
            .entry(root.to_owned())
            .or_insert_with(|| {
                let mut r = crate::fs::roots::open(Path::new(root)).map_err(|e| e.to_string())?;
                let spec = RuleSpec::default().spec();
                crate::run::apply_rules(&spec, &[], std::slice::from_mut(&mut r))?;
                Ok(Arc::new(r))
            })
            .clone()
    }

    /// The target `loc` names, resolved by the walk backend as a tool's
    /// write is (with the session's rules), for the one writer; its parent
    /// must be the directory [`Roots::place`] reaches without following a
    /// link.
    fn target(&mut self, loc: &Loc) -> Result<Target, String> {
        let (dir, _) = self.place(loc)?;
        let root = self.get(&loc.root)?;
        let mut t = resolve_in(&[root], &loc.shown(), MAX_PATH_BYTES).map_err(|e| e.to_string())?;
        walk(&mut t, Final::Link).map_err(|e| e.to_string())?;
        let id = |d: &Dir| d.dir_metadata().ok().map(|m| (m.dev(), m.ino()));
        let walked = t.dir().ok().and_then(id);
        if walked.is_none() || walked != id(&dir) {
            return Err(
                "its path now leads through a symbolic link, which a revert never follows"
                    .to_owned(),
            );
        }
        Ok(t)
    }

    /// The directory `loc` is in and its name there, reached from the root
    /// one directory at a time without following any symbolic link (the
    /// journal records canonical paths, so the session saw none there: a
    /// link found now was planted since), and only where the session's
    /// rules let the tools write (neither hidden nor read-only).
    pub(super) fn place(&mut self, loc: &Loc) -> Result<(Dir, String), String> {
        let root = self.get(&loc.root)?;
        match root.rules.effect(&loc.path, None) {
            Effect::None => {}
            Effect::Hidden => return Err("it is hidden by the session's path rules".to_owned()),
            Effect::ReadOnly => {
                return Err("it is protected (read-only) by the session's path rules".to_owned());
            }
        }
        let parts: Vec<&str> = loc.path.split('/').collect();
        let Some((leaf, dirs)) = parts.split_last() else {
            return Err("the record names no path".to_owned());
        };
        if parts.iter().any(|p| matches!(*p, "" | "." | "..")) {
            return Err("the record's path is not canonical".to_owned());
        }
        let mut dir = root.dir.try_clone().map_err(|e| e.to_string())?;
        for (i, name) in dirs.iter().enumerate() {
            dir = dir.open_dir_nofollow(name).map_err(|e| {
                let at = dirs.get(..=i).unwrap_or_default().join("/");
                match e.raw_os_error() {
                    Some(c) if c == rustix::io::Errno::LOOP.raw_os_error()
                        || c == rustix::io::Errno::NOTDIR.raw_os_error() =>
                    {
                        format!("'{at}' is not a directory now (a symbolic link is never followed by a revert)")
                    }
                    _ => format!("'{at}': {e}"),
                }
            })?;
        }
        Ok((dir, (*leaf).to_owned()))
    }
}

/// What is at a place now, to compare with what the journal recorded.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Now {
    Missing,
    File(Option<Version>, (u64, u64)),
    Other((u64, u64)),
}

pub(super) fn now_at(dir: &Dir, leaf: &str) -> Now {
    let Ok(md) = dir.symlink_metadata(leaf) else {
        return Now::Missing;
    };
    let id = (md.dev(), md.ino());
    if !md.is_file() {
        return Now::Other(id);
    }
    let v = crate::fs::file::version_in(dir, leaf, leaf, MAX_READ_BYTES)
        .ok()
        .and_then(|(v, _)| v);
    Now::File(v, id)
}

/// What a change's undo expects at its place: the version left (a file)
/// and the device and inode left (when recorded).
#[derive(Debug, Clone, Default)]
pub(super) struct Expect {
    pub(super) after: Option<String>,
    pub(super) id: Option<(u64, u64)>,
}

impl Expect {
    pub(super) fn of(c: &Change) -> Expect {
        Expect {
            after: c.after.clone(),
            id: c.id,
        }
    }
}

/// Whether what is at the place now is what the undo expects: the same
/// object (device and inode, when known) with the same version (a file),
/// or the same directory.
pub(super) fn as_left(want: &Expect, now: &Now) -> bool {
    let same = |id: &(u64, u64)| want.id.is_none_or(|w| w == *id);
    match now {
        Now::File(v, id) => {
            same(id)
                && match &want.after {
                    Some(after) => v.as_ref().is_some_and(|v| v.as_str() == after),
                    None => want.id.is_some(),
                }
        }
        Now::Other(id) => want.after.is_none() && want.id.is_some() && same(id),
        Now::Missing => false,
    }
}

pub(super) fn describe(now: &Now) -> String {
    match now {
        Now::Missing => "it no longer exists".to_owned(),
        Now::File(Some(v), _) => format!("its version is now {v}"),
        Now::File(None, _) => "it has no version now (too large, or changing)".to_owned(),
        Now::Other(_) => "it is no longer the same".to_owned(),
    }
}

/// What an undo did: its message, and the device and inode it left at the
/// change's place (a file written back), for the checks of older changes.
pub(super) struct Done {
    pub(super) what: String,
    pub(super) left: Option<(u64, u64)>,
}

fn done(what: String) -> Result<Done, String> {
    Ok(Done { what, left: None })
}

/// Undoes one change, expecting `want` at its place (`object`: its
/// pre-image, already read and checked, for a replace); says what it did,
/// or why not.
pub(super) fn undo(
    c: &Change,
    roots: &mut Roots,
    object: Option<Vec<u8>>,
    want: &Expect,
    force: bool,
) -> Result<Done, String> {
    let (dir, leaf) = roots.place(&c.at)?;
    let now = now_at(&dir, &leaf);
    let left = as_left(want, &now);
    let changed = || {
        format!(
            "it was changed after the session ({}; the journal recorded {}); --force overwrites it",
            describe(&now),
            want.after.as_deref().unwrap_or("no version")
        )
    };
    match c.op {
        Op::Replace => {
            let Some(object) = object else {
                return Err("no pre-image".to_owned());
            };
            if !left && !force {
                return Err(changed());
            }
            let t = roots.target(&c.at)?;
            let dest = Dest::locate(&t).map_err(|e| e.to_string())?;
            let guard = match (&now, force) {
                (Now::File(Some(v), _), false) => Guard::Content {
                    version: v.clone(),
                    limit: MAX_READ_BYTES,
                    named: false,
                },
                _ => Guard::None,
            };
            dest.replace(&object, guard, &crate::fs::record::Recorders::NONE)
                .map_err(|e| e.to_string())?;
            let left = rustix::fs::statat(&dir, leaf.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                .ok()
                .map(|st| crate::fs::sys::dev_ino(&st));
            Ok(Done {
                what: format!("restored {}", c.at.shown()),
                left,
            })
        }
        Op::Create => {
            if now == Now::Missing {
                return done(format!("already gone: {}", c.at.shown()));
            }
            if !left && !force {
                return Err(changed());
            }
            dir.remove_file(&leaf).map_err(|e| e.to_string())?;
            done(format!("removed {}", c.at.shown()))
        }
        Op::Mkdir => {
            if now == Now::Missing {
                return done(format!("already gone: {}", c.at.shown()));
            }
            if !left {
                return Err("it is no longer the directory the session made".to_owned());
            }
            rustix::fs::unlinkat(&dir, leaf.as_str(), AtFlags::REMOVEDIR).map_err(|e| match e {
                rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST => {
                    "it is not empty".to_owned()
                }
                e => e.to_string(),
            })?;
            done(format!("removed the directory {}", c.at.shown()))
        }
        Op::Append => {
            if !left && !force {
                return Err(changed());
            }
            let size = c.size_before.unwrap_or(0);
            let mut opts = OpenOptions::new();
            opts.write(true)
                .follow(FollowSymlinks::No)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
            let f = dir.open_with(&leaf, &opts).map_err(|e| e.to_string())?;
            if !f.metadata().is_ok_and(|m| m.is_file()) {
                return Err("it is no longer a regular file".to_owned());
            }
            f.set_len(size).map_err(|e| e.to_string())?;
            f.sync_all().map_err(|e| e.to_string())?;
            done(format!("cut {} back to {size} bytes", c.at.shown()))
        }
        Op::Move => {
            let Some(from) = &c.from else {
                return Err("the record names no old path".to_owned());
            };
            if now == Now::Missing {
                return Err("it is no longer there".to_owned());
            }
            if !left && !force {
                return Err(changed());
            }
            let (fdir, fleaf) = roots.place(from)?;
            rustix::fs::renameat_with(
                &dir,
                leaf.as_str(),
                &fdir,
                fleaf.as_str(),
                RenameFlags::NOREPLACE,
            )
            .map_err(|e| match e {
                rustix::io::Errno::EXIST => {
                    format!("its old path {} is taken", from.shown())
                }
                e => e.to_string(),
            })?;
            done(format!("moved {} back to {}", c.at.shown(), from.shown()))
        }
    }
}
