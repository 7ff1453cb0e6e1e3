//! Moving a file or directory to a new name (`move_file`), never replacing
//! one.
//!
//! Owns: the whole move. Both parents are opened beneath their roots
//! ([`Target::open_parent`]), then `renameat2(src_parent, name,
//! dst_parent, name, RENAME_NOREPLACE)` acts on the two handles and two
//! plain names: there is no check-then-rename window, an existing
//! destination is never overwritten, and nothing is re-resolved by path. A
//! symlink source moves the link itself, not its target. Moving between
//! two roots works when they are on one filesystem; across filesystems it
//! is refused (a move never copies). Where the filesystem lacks
//! `RENAME_NOREPLACE`, a non-directory moves by `linkat` (no-replace by
//! construction) and `unlinkat`.
//!
//! The order of the checks is the security argument: path rules
//! ([`check_move`]); `ifMatch`, hashed under the
//! writer's lock ([`ifmatch::check_source`]); then, right before the
//! rename, both parent handles are checked to still be the directories
//! their roots reach ([`crate::fs::roots::Root::still_reaches`]), since a
//! handle moved out of its root would take the move outside; after the
//! rename, `ifMatch` again ([`ifmatch::verify_moved`], undoing a move of a
//! file an outside writer changed). The move is then told to the call's
//! recorder (both places, the file's version or a directory's device and
//! inode): the undo journal records it before the reply, the audit note
//! notes both paths.
//!
//! May touch: the two parent directories, opened beneath their roots, by
//! single names; the root handles only to check that those parents are
//! still reached.

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, RenameFlags};
use rustix::io::Errno;

use crate::error::{Error, Result};
use crate::fs::ifmatch::{self, Condition};
use crate::fs::record::{Changed, Op, Recorder};
use crate::fs::resolve::moves::move_keeps_rules;
use crate::fs::scope::Target;
use crate::rules::{Effect, Rules};

/// Renames `src` to `dst`, refusing to replace anything. `cond` carries
/// `ifMatch` (the source must be a regular file at that version) and the
/// byte limit for hashing; `max_walk_entries` bounds the path-rule check
/// of a directory moved.
pub fn rename(
    src: &Target,
    dst: &Target,
    cond: &Condition<'_>,
    max_walk_entries: usize,
    rec: &dyn Recorder,
) -> Result<()> {
    let (from, to) = (src.given.as_str(), dst.given.as_str());
    let (sp, sl) = src.parent_and_leaf()?;
    // A destination naming a root, or ending in `.`/`..`, is a directory
    // that exists.
    let (dp, dl) = dst
        .parent_and_leaf()
        .map_err(|_| Error::DestinationExists {
            path: to.to_owned(),
        })?;
    // Path rules: a hidden or unreachable path reads as a missing one.
    let sdir = src
        .open_parent(&sp)
        .map_err(|e| Error::io2("rename", from, to, from, &e))?;
    let ddir = dst
        .open_parent(&dp)
        .map_err(|e| Error::io2("rename", from, to, to, &e))?;
    check_move(src, dst, &sdir, &sl, max_walk_entries)?;
    let (sp, dp) = (
        src.parent_local().unwrap_or(sp),
        dst.parent_local().unwrap_or(dp),
    );
    let os = |e: Errno| Error::io2("rename", from, to, from, &e.into());
    if src.trailing_slash || dst.trailing_slash {
        // `name/` must be a directory, as the kernel would insist.
        let md = sdir
            .symlink_metadata(&sl)
            .map_err(|e| Error::io2("rename", from, to, from, &e))?;
        if !md.is_dir() {
            return Err(os(Errno::NOTDIR));
        }
    }
    let (_lock, checked) = ifmatch::check_source(&sdir, &sl, from, cond)?;
    // For the recorders: the version of the file moved.
    let moved = match &checked {
        Some(v) => Some(v.clone()),
        None if rec.records() => crate::fs::file::version_in(&sdir, &sl, from, cond.limit)
            .ok()
            .and_then(|(v, _)| v),
        None => None,
    };
    // Both directories must still be where their roots lead, checked just
    // before the rename: one moved out of its root since it was opened would
    // take the move with it.
    for (root, rel, dir, path) in [(&src.root, &sp, &sdir, from), (&dst.root, &dp, &ddir, to)] {
        if !root.still_reaches(rel, dir) {
            return Err(Error::DirectoryMoved {
                path: path.to_owned(),
            });
        }
    }
    no_replace(&sdir, &sl, &ddir, &dl, (from, to), cond.tool)?;
    if let Some(v) = checked {
        ifmatch::verify_moved(&v, (&ddir, &dl), (&sdir, &sl), from, cond)?;
    }
    if rec.records() {
        rec.changed(&Changed {
            op: Op::Move {
                from: src.root.place_in(&sp, &sl, from),
            },
            at: dst.root.place_in(&dp, &dl, to),
            before: moved.clone(),
            after: moved,
            id: crate::fs::record::id_in(&ddir, dl.as_str()),
            bytes: 0,
            kept: None,
            dir: None,
        })?;
    }
    Ok(())
}

/// The rename itself, never over an existing name.
/// `tool` is the tool moving, for the refusal across filesystems.
fn no_replace(
    sdir: &Dir,
    sl: &str,
    ddir: &Dir,
    dl: &str,
    (from, to): (&str, &str),
    tool: &str,
) -> Result<()> {
    let os = |e: Errno| Error::io2("rename", from, to, from, &e.into());
    match rustix::fs::renameat_with(sdir, sl, ddir, dl, RenameFlags::NOREPLACE) {
        Ok(()) => {}
        Err(Errno::EXIST) => {
            return Err(Error::DestinationExists {
                path: to.to_owned(),
            });
        }
        Err(Errno::XDEV) => {
            return Err(Error::Move {
                from: from.to_owned(),
                to: to.to_owned(),
                reason: format!(
                    "they are on different filesystems, and {tool} only renames, it never copies"
                ),
            });
        }
        Err(Errno::INVAL) => {
            let md = sdir
                .symlink_metadata(sl)
                .map_err(|e| Error::io2("rename", from, to, from, &e))?;
            if md.is_dir() {
                return Err(Error::Move {
                    from: from.to_owned(),
                    to: to.to_owned(),
                    reason: "a directory cannot be moved into itself or into one of its own subdirectories"
                        .to_owned(),
                });
            }
            // Not a directory, so not "into itself": the filesystem lacks
            // RENAME_NOREPLACE. linkat is no-replace by construction (EEXIST
            // if the name exists; without AT_SYMLINK_FOLLOW it links a symlink
            // itself), and unlinking the old name completes the move. A crash
            // in between leaves both names, never neither.
            match rustix::fs::linkat(sdir, sl, ddir, dl, AtFlags::empty()) {
                Ok(()) => {}
                Err(Errno::EXIST) => {
                    return Err(Error::DestinationExists {
                        path: to.to_owned(),
                    });
                }
                Err(e) => return Err(os(e)),
            }
            if let Err(e) = rustix::fs::unlinkat(sdir, sl, AtFlags::empty()) {
                let _ = rustix::fs::unlinkat(ddir, dl, AtFlags::empty());
                return Err(os(e));
            }
        }
        Err(e) => return Err(os(e)),
    }
    Ok(())
}

/// Refuses a move the path rules forbid: a read-only source (it may not
/// be moved away) or destination (nothing may be moved into it), and a
/// directory whose contents the rules would see differently after the
/// move (when rules are in force for either root).
pub fn check_move(s: &Target, d: &Target, sdir: &Dir, leaf: &str, budget: usize) -> Result<()> {
    let (sw, dw) = (s.walked_for_write()?, d.walked_for_write()?);
    if s.root.rules.is_empty() && d.root.rules.is_empty() {
        return Ok(());
    }
    for (t, w) in [(s, sw), (d, dw)] {
        if w.effect != Effect::None {
            return Err(t.protected());
        }
    }
    let is_dir = sdir
        .symlink_metadata(leaf)
        .is_ok_and(|md| md.file_type().is_dir());
    let (from_rules, from) = (&*s.root.rules, s.root.rule_path(&sw.local));
    let (to_rules, to) = (&*d.root.rules, d.root.rule_path(&dw.local));
    // Decided from the rules first, on every path they may tell apart, so
    // that the answer does not depend on what exists beneath (a hidden
    // directory there must not show); then on what does exist.
    if is_dir
        && (!probes_agree((from_rules, &from), (to_rules, &to))
            || !move_keeps_rules(sdir, leaf, (from_rules, &from), (to_rules, &to), budget))
    {
        return Err(Error::MoveChangesRules {
            from: s.given.clone(),
            to: d.given.clone(),
        });
    }
    Ok(())
}

/// Whether the rules make the same of every probe path
/// ([`Rules::probes`]) beneath `from` as beneath `to`.
fn probes_agree((from_rules, from): (&Rules, &str), (to_rules, to): (&Rules, &str)) -> bool {
    let join = |base: &str, rel: &str| {
        if base.is_empty() {
            rel.to_owned()
        } else {
            format!("{base}/{rel}")
        }
    };
    let mut probes = from_rules.probes();
    for p in to_rules.probes() {
        if !probes.contains(&p) {
            probes.push(p);
        }
    }
    probes
        .iter()
        .all(|p| from_rules.effect(&join(from, p), None) == to_rules.effect(&join(to, p), None))
}
