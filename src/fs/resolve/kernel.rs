//! The kernel backend: the kernel resolves beneath the root handle.
//!
//! Owns: the [`Resolved`] of a path the kernel resolves at each use
//! ([`deferred`]: the root handle and the client's components; cap-std's
//! `openat2(RESOLVE_BENEATH)` follows in-root symlinks and refuses an
//! escape), and the walk's one-call lookup of a path that has no symlink
//! and no `..` ([`no_symlinks`]: `openat2(RESOLVE_NO_SYMLINKS)`, the path
//! its own canonical path).
//! May touch: root `Dir`s, by `openat2` beneath them, and the directory it
//! opens, by a single name.

use std::sync::Arc;

use cap_std::fs::Dir;

use super::{Backend, Resolved};
#[cfg(all(target_os = "linux", not(feature = "portable")))]
use super::{Beneath, Final};
use crate::rules::Effect;

/// The kernel backend's result: nothing is looked up now; each use
/// resolves `segs` beneath `root` in one call.
pub(super) fn deferred(root: &Arc<Dir>, segs: &[String]) -> Resolved {
    let mut local = String::new();
    for s in segs {
        match s.as_str() {
            "" | "." => {}
            ".." => local.truncate(local.rfind('/').unwrap_or(0)),
            s => {
                if !local.is_empty() {
                    local.push('/');
                }
                local.push_str(s);
            }
        }
    }
    Resolved {
        how: Backend::Kernel,
        base: root.clone(),
        rel: segs.to_vec(),
        held: None,
        parent_end: (!local.is_empty()).then(|| local.rfind('/').unwrap_or(0)),
        local,
        effect: Effect::None,
        decided: None,
        void: None,
        via_link: false,
        missing: false,
        parent_missing: false,
        is_dir: false,
    }
}

/// The common case of the walk in one `openat2`: a path without `..` whose
/// directories are all real (no symlink among them) is its own canonical
/// path, so the parent is opened in one call with `RESOLVE_NO_SYMLINKS`
/// beneath the root and the rules are matched on the path as given.
/// Anything else (a `..`, a symlink anywhere, a missing directory, a path
/// the rules hide, any error) returns `None`, and the component-by-component
/// walk decides.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub(super) fn no_symlinks(at: Beneath<'_>, segs: &[String], last: Final) -> Option<Resolved> {
    use cap_fs_ext::DirExt;
    use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    // `..` anywhere, or a final `.` (`file/.` is not a directory), take the
    // walk.
    if segs.iter().any(|s| s == "..") || segs.last().is_some_and(|s| s == ".") {
        return None;
    }
    let mut comps = segs.iter().filter(|s| !s.is_empty() && *s != ".");
    let leaf = comps.next_back()?;
    let mut local = String::new();
    for c in comps {
        if !local.is_empty() {
            local.push('/');
        }
        local.push_str(c);
    }
    let parent_end = local.len();
    let base = if local.is_empty() {
        at.dir.clone()
    } else {
        // `O_PATH`, as cap-std opens the walk's directories: a handle to
        // resolve beneath, never read. The kernel's open of a directory
        // for reading (permission hook, open and close notifications) cost
        // more than the lookup itself.
        let fd = rustix::fs::openat2(
            &**at.dir,
            local.as_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .ok()?;
        Arc::new(Dir::from(fd))
    };
    let (ft, missing) = match rustix::fs::statat(&*base, leaf.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => (FileType::from_raw_mode(st.st_mode), false),
        Err(Errno::NOENT) => (FileType::Unknown, true),
        Err(_) => return None,
    };
    if ft == FileType::Symlink && last == Final::Follow {
        return None;
    }
    let held = if ft == FileType::Directory {
        Some(Arc::new(base.open_dir_nofollow(leaf.as_str()).ok()?))
    } else {
        None
    };
    if !local.is_empty() {
        local.push('/');
    }
    local.push_str(leaf);
    let kind = if missing { None } else { Some(held.is_some()) };
    let effect = if at.rules.is_empty() {
        Effect::None
    } else {
        at.rules.effect(&at.rule_path(&local), kind)
    };
    // A hidden path: the walk tells whether a directory on the way is the
    // one hidden (the path's parent then reads as missing, as it does where
    // that directory does not exist) or the final name.
    if effect == Effect::Hidden {
        return None;
    }
    let decided = (effect != Effect::None).then(|| at.rule_path(&local));
    Some(Resolved {
        how: Backend::Walk,
        base,
        rel: vec![leaf.clone()],
        held,
        local,
        parent_end: Some(parent_end),
        effect,
        decided,
        void: None,
        via_link: false,
        missing,
        parent_missing: false,
        is_dir: ft == FileType::Directory,
    })
}
