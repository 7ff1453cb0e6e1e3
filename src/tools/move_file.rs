//! `move_file`: rename without ever replacing, in one syscall. Touches: scope.
//!
//! Both parents are opened beneath their roots, then
//! `renameat2(src_parent, name, dst_parent, name, RENAME_NOREPLACE)` acts on
//! the two handles and two plain names: there is no check-then-rename window,
//! an existing destination is never overwritten, and nothing is re-resolved
//! by path. A symlink source moves the link itself, not its target (the
//! reference moves the target). Moving between two roots works when they are
//! on one filesystem. With `ifMatch` the source must be a regular file at
//! that version (checked under the writer's lock, and again after the
//! rename, which is undone if an outside writer changed the file). With
//! the undo journal, the move is recorded (both places, the file's version
//! or a directory's device and inode) before the reply.

use rmcp::schemars::{self, JsonSchema};
use rustix::fs::{AtFlags, RenameFlags};
use rustix::io::Errno;
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::ifmatch::{self, Condition};
use cap_std::fs::Dir;

/// The tool description.
pub const DESCRIPTION: &str = "Move or rename a file or directory, within a directory or across directories. Fails if the destination exists.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Move File",
    description: DESCRIPTION,
    hints: Hints::write(false, true),
    input: schema::<Params>,
    output: OutputKind::Text,
    plan: Plan::small,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "move_file";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The file or directory to move.
    pub source: String,
    /// Its new path, which must not exist yet.
    pub destination: String,
    /// Refuse unless the source is at this version (a read's `version`).
    #[serde(default)]
    #[schemars(with = "String")]
    pub if_match: Option<String>,
}

/// Renames `source` to `destination`, refusing to replace anything.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let (from, to) = (p.source.as_str(), p.destination.as_str());
    // Links are moved, not their targets: a final symlink stays the link.
    let s = ctx.scope.resolve_link(from)?;
    let d = ctx.scope.resolve_link(to)?;
    let (sp, sl) = s.parent_and_leaf()?;
    // A destination naming a root, or ending in `.`/`..`, is a directory
    // that exists.
    let (dp, dl) = d.parent_and_leaf().map_err(|_| Error::DestinationExists {
        path: to.to_owned(),
    })?;
    // Path rules: a hidden or unreachable path reads as a missing one.
    let sdir = s
        .dir()
        .and_then(|b| b.open_dir(&sp))
        .map_err(|e| Error::io2("rename", from, to, from, &e))?;
    let ddir = d
        .dir()
        .and_then(|b| b.open_dir(&dp))
        .map_err(|e| Error::io2("rename", from, to, to, &e))?;
    crate::fs::canon::check_move(&s, &d, &sdir, &sl, ctx.limits.max_walk_entries)?;
    let (sp, dp) = (
        s.parent_local().unwrap_or(sp),
        d.parent_local().unwrap_or(dp),
    );
    let os = |e: Errno| Error::io2("rename", from, to, from, &e.into());
    if s.trailing_slash || d.trailing_slash {
        // `name/` must be a directory, as the kernel would insist.
        let md = sdir
            .symlink_metadata(&sl)
            .map_err(|e| Error::io2("rename", from, to, from, &e))?;
        if !md.is_dir() {
            return Err(os(Errno::NOTDIR));
        }
    }
    let cond = Condition {
        if_match: p.if_match.as_deref(),
        require: false, // a move replaces no content
        limit: ctx.limits.max_read_bytes,
        op: "move",
        tool: NAME,
    };
    let (_lock, checked) = ifmatch::check_source(&sdir, &sl, from, &cond)?;
    // For the audit record: the version of the file moved.
    let moved = match &checked {
        Some(v) => Some(v.clone()),
        None if crate::audit::note::active() || crate::journal::active().is_some() => {
            crate::fs::file::version_in(&sdir, &sl, from, ctx.limits.max_read_bytes)
                .ok()
                .and_then(|(v, _)| v)
        }
        None => None,
    };
    // Both directories must still be where their roots lead, checked just
    // before the rename: one moved out of its root since it was opened would
    // take the move with it.
    for (root, rel, dir, path) in [(&s.root, &sp, &sdir, from), (&d.root, &dp, &ddir, to)] {
        if !root.still_reaches(rel, dir) {
            return Err(Error::DirectoryMoved {
                path: path.to_owned(),
            });
        }
    }
    rename(&sdir, &sl, &ddir, &dl, from, to)?;
    if let Some(v) = checked {
        ifmatch::verify_moved(&v, (&ddir, &dl), (&sdir, &sl), from, &cond)?;
    }
    if let Some(j) = crate::journal::active() {
        let id = rustix::fs::statat(&ddir, dl.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .map(|st| crate::fs::sys::dev_ino(&st));
        let (at_from, at_to) = (
            crate::journal::loc(&s.root, &sp, &sl),
            crate::journal::loc(&d.root, &dp, &dl),
        );
        j.record_move(at_from, at_to, moved.as_ref(), id)?;
    }
    for (path, before, after) in [(from, moved.clone(), None), (to, None, moved)] {
        let change = crate::audit::Change {
            path: path.to_owned(),
            before,
            after,
        };
        crate::audit::note::changed(change, 0);
    }
    Ok(Output::Text(format!("Successfully moved {from} to {to}")))
}

/// The rename itself, never over an existing name.
fn rename(sdir: &Dir, sl: &str, ddir: &Dir, dl: &str, from: &str, to: &str) -> Result<()> {
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
                reason: "they are on different filesystems, and move_file only renames, it never copies",
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
                    reason: "a directory cannot be moved into itself or into one of its own subdirectories",
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
