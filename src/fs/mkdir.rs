//! Making a directory and its missing parents (`create_directory`,
//! `mkdir -p`).
//!
//! Owns: creating directories one component at a time, beneath the handle
//! the walk backend produced (every write is walked): the existing part of
//! the path was resolved by the walk (in-root symlinks included), and each
//! missing directory is made with `mkdirat` in the one before, then opened
//! `O_NOFOLLOW`, so a component swapped for a symlink mid-call is never
//! followed; every directory to be made is matched against the rules
//! first (`create_walked`).
//!
//! May touch: the target's root handle, by paths resolved beneath it.

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use rustix::io::Errno;

use crate::rules::Effect;

use crate::error::{Error, Result};
use crate::fs::record::{Changed, Op, Recorder};
use crate::fs::scope::Target;

/// Creates the directory `t` names and its missing parents; an existing
/// directory is success. Each missing directory is made with `mkdirat` in
/// the one before and then opened `O_NOFOLLOW`, beneath the handle the walk
/// backend produced, and matched against the rules before any is made.
/// Each directory made is told to `rec` ([`Op::Mkdir`]).
pub fn create_dir_all(t: &Target, rec: &dyn Recorder) -> Result<()> {
    create_walked(t, rec)
}

/// Creates the missing directories of a walked target, each with `mkdirat`
/// in the one before and then opened `O_NOFOLLOW`, and returns nothing:
/// `create_directory`'s `mkdir -p`. `given` is the client's path.
fn create_walked(t: &Target, rec: &dyn Recorder) -> Result<()> {
    let given = t.given.as_str();
    let w = t.walked_for_write()?;
    let mkdir = |e: std::io::Error| Error::io("mkdir", given, &e);
    match w.effect {
        Effect::Hidden => return Err(Error::io("mkdir", given, &Errno::NOENT.into())),
        Effect::ReadOnly => return Err(t.protected()),
        Effect::None => {}
    }
    if w.held.is_some() {
        return Ok(());
    }
    match w.void {
        None | Some(Errno::NOENT) if w.missing => {}
        None => {
            // The final component exists and is not a directory.
            return Err(Error::io("mkdir", given, &Errno::EXIST.into()));
        }
        Some(e) => return Err(Error::io("mkdir", given, &e.into())),
    }
    if w.via_link {
        return Err(Error::DanglingSymlink {
            path: given.to_owned(),
        });
    }
    // Every directory to be made is matched first, so a refusal makes
    // nothing: `a/new/.git/../x` would make `a/new/.git`.
    let start_local = w.local.get(..w.parent_end.unwrap_or(0)).unwrap_or_default();
    let mut path = t.root.rule_path(start_local);
    let mut depth = 0usize;
    for name in &w.rel {
        match name.as_str() {
            "" | "." => continue,
            ".." => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| Error::io("mkdir", given, &Errno::NOENT.into()))?;
                path.truncate(path.rfind('/').unwrap_or(0));
                continue;
            }
            _ => depth += 1,
        }
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(name);
        match t.root.rules.effect(&path, Some(true)) {
            Effect::None => {}
            Effect::Hidden => {
                if let Some(why) = t.root.rules.why(&path, Some(true)) {
                    why.log(given);
                }
                return Err(Error::io("mkdir", given, &Errno::NOENT.into()));
            }
            Effect::ReadOnly => {
                let rule = t.root.rules.why(&path, Some(true));
                return Err(Error::Protected {
                    path: given.to_owned(),
                    rule: rule.filter(|w| w.effect == Effect::ReadOnly).map(Box::new),
                });
            }
        }
    }
    // The directory the first `mkdir` goes in must still be where the root
    // leads, checked just before: another process may have moved it out of
    // the root since the walk.
    // `start_local` is where the walk stopped (`w.local` is the path
    // spelled on from there and need not name a directory at all).
    let reached = {
        let rel = if start_local.is_empty() {
            "."
        } else {
            start_local
        };
        t.root.still_reaches(rel, &w.base)
    };
    if !reached {
        return Err(Error::DirectoryMoved {
            path: given.to_owned(),
        });
    }
    // The directories made or entered, to climb back for a `..`, with
    // their paths beneath the root's handle (for the recorder).
    let mut made: Vec<(Dir, String)> = Vec::new();
    for name in &w.rel {
        match name.as_str() {
            "" | "." => continue,
            ".." => {
                made.pop();
                continue;
            }
            _ => {}
        }
        let (at, at_path) = made
            .last()
            .map_or((&*w.base, start_local), |(d, p)| (d, p.as_str()));
        let new = match at.create_dir(name) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(mkdir(e)),
        };
        let next = at.open_dir_nofollow(name).map_err(mkdir)?;
        let path = if at_path.is_empty() {
            name.clone()
        } else {
            format!("{at_path}/{name}")
        };
        // Every directory made is told to the recorder (issue 32 item 3):
        // the undo journal records it, so a revert removes it (and knows it
        // is there).
        if new && rec.records() {
            let id = next.dir_metadata().map_err(mkdir)?;
            use cap_std::fs::MetadataExt;
            rec.changed(&Changed {
                op: Op::Mkdir,
                at: t.root.place(&path, given),
                before: None,
                after: None,
                id: Some((id.dev(), id.ino())),
                bytes: 0,
                kept: None,
                dir: Some(at),
            })?;
        }
        made.push((next, path));
    }
    Ok(())
}
