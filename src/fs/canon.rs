//! The rule walk: resolving a client path component by component beneath
//! its root, so that path rules match the object actually touched.
//!
//! Owns: turning the components of a [`Target`] into the canonical in-root
//! path of what they name (after in-root symlinks and `..`) and a handle on
//! its parent directory (and on itself, when it is a directory), checking
//! the path rules on the way. Each directory is opened `O_NOFOLLOW` from the
//! one before; a symlink is read (`readlinkat`) and its target's components
//! are walked the same way, never followed by the kernel; a link that is
//! absolute or climbs above the root is an escape. Every canonical path the
//! walk passes through is matched, so a hidden directory cannot even be
//! passed through (`secrets/../x`). The final effect is the strongest over
//! the canonical path and every other name the path reached it by (each
//! symlink's own path with the rest of the path after it): a protected name
//! that is a link (`.git -> store.git`) protects what it leads to. The
//! operation then acts on the handles
//! the walk produced (the path checked is the path used): a directory or
//! symlink swapped in after the check is not followed.
//!
//! The walk never decides how an error is worded: a path it cannot go on
//! with (missing, not a directory, hidden) leaves the target *void* with an
//! errno, and each operation words that as it words its own failures, so a
//! hidden path reads exactly like a missing one for every tool.
//! May touch: root `Dir`s and directories opened beneath them, by single
//! names (never `.`, `..`, or a name with `/`).

use std::sync::Arc;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use crate::error::{Error, Result};
use crate::fs::scope::Target;
use crate::limits::{MAX_RESOLVE_DEPTH, MAX_SYMLINK_HOPS};
use crate::rules::{Effect, Rules};

/// Whether the last component is followed when it is a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Final {
    /// Follow it (reads, writes of content, listings).
    Follow,
    /// Act on the link itself (`move_file`).
    Link,
}

/// Where the walk ended.
#[derive(Debug, Clone)]
pub struct Walked {
    /// The directory operations start from: the parent of what the path
    /// names (or the root, for the root itself).
    pub base: Arc<Dir>,
    /// Components beneath `base`: the final name; several when the walk
    /// stopped at a missing component (the first is missing); none for a
    /// root.
    pub rel: Vec<String>,
    /// The directory the path names, opened by the walk.
    pub held: Option<Arc<Dir>>,
    /// The canonical path beneath the root handle (`/`-joined, "" for the
    /// root), missing components included lexically.
    pub local: String,
    /// Where the canonical parent ends in `local` (`None` for the root).
    pub parent_end: Option<usize>,
    /// What the rules make of it.
    pub effect: Effect,
    /// Act as if missing, with this errno (a hidden path is `ENOENT`).
    pub void: Option<Errno>,
    /// The final component was reached through a symlink.
    pub via_link: bool,
    /// The final component does not exist.
    pub missing: bool,
    /// The final component is a directory.
    pub is_dir: bool,
}

/// Walks `segs` beneath `root` (whose canonical path beneath its operator
/// root is `prefix`), checking `rules`.
///
/// # Security
///
/// Escapes (`..` above the root, an absolute link, a link climbing out) are
/// [`Error::OutsideRoots`]. Every other failure, and every hidden path,
/// comes back as a void [`Walked`], never as a distinct error.
pub fn walk(
    root: &Arc<Dir>,
    prefix: &str,
    rules: &Rules,
    segs: &[String],
    last: Final,
    given: &str,
) -> Result<Walked> {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    if let Some(w) = fast(root, prefix, rules, segs, last) {
        return Ok(w);
    }
    let outside = || Error::OutsideRoots {
        path: given.to_owned(),
    };
    // Directories entered, the root first, each with where its name ends in
    // `local`.
    let mut dirs: Vec<(Arc<Dir>, usize, bool)> = vec![(root.clone(), 0, false)];
    let mut local = String::new();
    // Components still to walk, the next one last, each marked when it
    // came from a symlink's target.
    let mut pending: Vec<(String, bool)> = segs.iter().rev().map(|s| (s.clone(), false)).collect();
    let mut hops = 0;
    // The other in-root names of what the path reaches: at each symlink
    // passed, the link's own path with the rest of the path after it (the
    // name a program that spells the path that way reads it by).
    let mut aliases: Vec<String> = Vec::new();
    let mut out = Walked {
        base: root.clone(),
        rel: Vec::new(),
        held: Some(root.clone()),
        local: String::new(),
        parent_end: None,
        effect: Effect::None,
        void: None,
        via_link: false,
        missing: false,
        is_dir: true,
    };
    let rule_path = |local: &str| -> String {
        match (prefix.is_empty(), local.is_empty()) {
            (true, _) => local.to_owned(),
            (false, true) => prefix.to_owned(),
            (false, false) => format!("{prefix}/{local}"),
        }
    };
    let void = |mut out: Walked, errno: Errno| {
        out.void = Some(errno);
        Ok(out)
    };
    while let Some((c, from_link)) = pending.pop() {
        match c.as_str() {
            "" | "." => continue,
            ".." => {
                if dirs.len() <= 1 {
                    return Err(outside());
                }
                dirs.pop();
                let end = dirs.last().map_or(0, |d| d.1);
                local.truncate(end);
                continue;
            }
            _ => {}
        }
        let is_last = pending.iter().all(|(p, _)| p.is_empty() || p == ".");
        let Some((cur, _, _)) = dirs.last().cloned() else {
            return Err(outside());
        };
        let end_before = local.len();
        if !local.is_empty() {
            local.push('/');
        }
        local.push_str(&c);
        let st = match rustix::fs::statat(&*cur, c.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Some(st),
            Err(Errno::NOENT) => None,
            Err(e) => {
                out.base = cur;
                out.rel = std::iter::once(c)
                    .chain(pending.into_iter().rev().map(|p| p.0))
                    .collect();
                out.held = None;
                out.local = local;
                out.parent_end = Some(end_before);
                return void(out, e);
            }
        };
        let ft = st.map(|st| FileType::from_raw_mode(st.st_mode));
        let is_dir = ft == Some(FileType::Directory);
        // Every canonical path passed through is matched: a hidden one is
        // missing, whether or not it exists, and cannot be passed through.
        if rules.hides_any() && {
            let rp = rule_path(&local);
            rules.hides_entry(&rp, is_dir) || (ft.is_none() && rules.hides_entry(&rp, true))
        } {
            out.base = cur;
            out.rel = vec![c];
            out.held = None;
            out.local = local;
            out.parent_end = Some(end_before);
            out.effect = Effect::Hidden;
            return void(out, Errno::NOENT);
        }
        match ft {
            Some(FileType::Symlink) if !(is_last && last == Final::Link) => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    out.base = cur;
                    out.rel = vec![c];
                    out.held = None;
                    out.local = local;
                    out.parent_end = Some(end_before);
                    return void(out, Errno::LOOP);
                }
                let link = match rustix::fs::readlinkat(&*cur, c.as_str(), Vec::new()) {
                    Ok(link) => link,
                    // No longer a link (or gone): replaced since the lstat.
                    // As any path the walk cannot go on with: void, worded
                    // by each operation as a missing path.
                    Err(Errno::INVAL | Errno::NOENT) => {
                        out.base = cur;
                        out.rel = vec![c];
                        out.held = None;
                        out.local = local;
                        out.parent_end = Some(end_before);
                        return void(out, Errno::NOENT);
                    }
                    Err(e) => return Err(Error::io("open", given, &e.into())),
                };
                let link = link.to_str().map_err(|_| Error::InvalidPath {
                    path: given.to_owned(),
                    reason: "its symbolic link leads to a name that is not valid UTF-8",
                })?;
                if link.starts_with('/') {
                    return Err(outside());
                }
                if let Some(a) = alias(rule_path(&local), &pending) {
                    aliases.push(a);
                }
                local.truncate(end_before);
                pending.extend(link.split('/').rev().map(|p| (p.to_owned(), true)));
                continue;
            }
            Some(FileType::Directory) => {
                if dirs.len() > MAX_RESOLVE_DEPTH {
                    out.base = cur;
                    out.rel = vec![c];
                    out.held = None;
                    out.local = local;
                    return void(out, Errno::NAMETOOLONG);
                }
                match cur.open_dir_nofollow(c.as_str()) {
                    Ok(d) => dirs.push((Arc::new(d), local.len(), from_link)),
                    Err(e) => {
                        // Swapped for something else since the lstat.
                        out.base = cur;
                        out.rel = vec![c];
                        out.held = None;
                        out.local = local;
                        out.parent_end = Some(end_before);
                        let errno = e
                            .raw_os_error()
                            .map_or(Errno::NOENT, Errno::from_raw_os_error);
                        return void(out, errno);
                    }
                }
                continue;
            }
            _ => {}
        }
        // A file, a kept final link, or a missing name: the walk ends here.
        out.base = cur;
        out.rel = std::iter::once(c)
            .chain(pending.drain(..).rev().map(|p| p.0))
            .collect();
        out.held = None;
        out.parent_end = Some(end_before);
        out.missing = ft.is_none();
        out.is_dir = false;
        out.via_link = from_link;
        if !is_last {
            // A missing or non-directory component with more after it: the
            // rest is matched lexically, and nothing but create_directory
            // (which makes the missing ones) goes on.
            let mut parts: Vec<&str> = Vec::new();
            for p in out.rel.iter().skip(1) {
                match p.as_str() {
                    "" | "." => {}
                    ".." => {
                        parts.pop();
                    }
                    p => parts.push(p),
                }
            }
            for p in parts {
                local.push('/');
                local.push_str(p);
            }
            out.local = local;
            let errno = if ft.is_some() {
                Errno::NOTDIR
            } else {
                Errno::NOENT
            };
            out.effect = strongest(rules, &rule_path(&out.local), &aliases, None);
            if out.effect == Effect::Hidden {
                out.rel.truncate(1);
            }
            return void(out, errno);
        }
        out.local = local;
        if out.rel.len() > 1 {
            // Only `.`s follow a name that is not a directory (`f.txt/.`):
            // not a directory, as the kernel would say.
            let errno = if ft.is_some() {
                Errno::NOTDIR
            } else {
                Errno::NOENT
            };
            out.effect = strongest(rules, &rule_path(&out.local), &aliases, None);
            return void(out, errno);
        }
        let kind = if ft.is_none() { None } else { Some(false) };
        out.effect = strongest(rules, &rule_path(&out.local), &aliases, kind);
        if out.effect == Effect::Hidden {
            return void(out, Errno::NOENT);
        }
        return Ok(out);
    }
    // The path ended on a directory (or the root).
    let Some((held, end, from_link)) = dirs.pop() else {
        return Err(outside());
    };
    out.held = Some(held);
    out.via_link = from_link;
    out.local = local;
    if let Some((parent, parent_end, _)) = dirs.last() {
        out.base = parent.clone();
        out.parent_end = Some(*parent_end);
        let start = if *parent_end == 0 { 0 } else { parent_end + 1 };
        out.rel = vec![out.local.get(start..end).unwrap_or_default().to_owned()];
    }
    out.effect = strongest(rules, &rule_path(&out.local), &aliases, Some(true));
    if out.effect == Effect::Hidden {
        out.held = None;
        return void(out, Errno::NOENT);
    }
    Ok(out)
}

/// The strongest effect over the canonical rule path `canonical` and the
/// other names the walk reached it by (`aliases`): a protection holds for
/// every name by which a program that obeys the file reads it (`.git ->
/// store.git` makes `store.git/hooks` what git runs as `.git/hooks`).
fn strongest(rules: &Rules, canonical: &str, aliases: &[String], kind: Option<bool>) -> Effect {
    aliases
        .iter()
        .map(|a| rules.effect(a, kind))
        .fold(rules.effect(canonical, kind), Effect::max)
}

/// The name a path has through the symlink at rule path `link`: the link's
/// own path followed by the components still to walk (`pending`, the next
/// one last), `..` taken lexically. `None` when it climbs above the root.
fn alias(mut link: String, pending: &[(String, bool)]) -> Option<String> {
    for (p, _) in pending.iter().rev() {
        match p.as_str() {
            "" | "." => {}
            ".." => {
                let cut = link.rfind('/').unwrap_or(0);
                if link.is_empty() {
                    return None;
                }
                link.truncate(cut);
            }
            p => {
                if !link.is_empty() {
                    link.push('/');
                }
                link.push_str(p);
            }
        }
    }
    Some(link)
}

/// The common case in one `openat2`: a path without `..` whose directories
/// are all real (no symlink among them) is its own canonical path, so the
/// parent is opened in one call with `RESOLVE_NO_SYMLINKS` beneath the root
/// and the rules are matched on the path as given. Anything else (a `..`, a
/// symlink anywhere, a missing directory, any error) returns `None`, and
/// the component-by-component walk decides.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn fast(
    root: &Arc<Dir>,
    prefix: &str,
    rules: &Rules,
    segs: &[String],
    last: Final,
) -> Option<Walked> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
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
        root.clone()
    } else {
        // `O_PATH`, as cap-std opens the walk's directories: a handle to
        // resolve beneath, never read. The kernel's open of a directory
        // for reading (permission hook, open and close notifications) cost
        // more than the lookup itself.
        let fd = rustix::fs::openat2(
            &**root,
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
    let path = match (prefix.is_empty(), local.is_empty()) {
        (true, _) => std::borrow::Cow::Borrowed(local.as_str()),
        (false, _) => std::borrow::Cow::Owned(format!("{prefix}/{local}")),
    };
    let effect = rules.effect(&path, kind);
    let hidden = effect == Effect::Hidden;
    Some(Walked {
        base,
        rel: vec![leaf.clone()],
        held: if hidden { None } else { held },
        local,
        parent_end: Some(parent_end),
        effect,
        void: hidden.then_some(Errno::NOENT),
        via_link: false,
        missing,
        is_dir: ft == FileType::Directory,
    })
}

/// Whether moving the directory `name` in `parent` from the canonical rule
/// path `from` (under `from_rules`) to `to` (under `to_rules`) leaves what
/// the rules make of everything beneath it unchanged: a move must not carry
/// a protected or hidden path out from under its rule (`/a/secrets` moved
/// with `a`), or bring one under another. Looks at no more than `budget`
/// entries; a bigger tree is refused (`false`), as is one it cannot list.
pub fn move_keeps_rules(
    parent: &Dir,
    name: &str,
    (from_rules, from): (&Rules, &str),
    (to_rules, to): (&Rules, &str),
    budget: usize,
) -> bool {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(top) = rustix::fs::openat(parent, name, flags, Mode::empty()) else {
        return false;
    };
    let mut seen = 0usize;
    let mut stack = vec![(top, String::new())];
    let join = |base: &str, rel: &str| {
        if base.is_empty() {
            rel.to_owned()
        } else {
            format!("{base}/{rel}")
        }
    };
    while let Some((fd, rel)) = stack.pop() {
        let Ok((entries, more)) = crate::fs::walk::read_entries_fd(&fd, false, budget, "") else {
            return false;
        };
        seen += entries.len();
        if more || seen > budget {
            return false;
        }
        for e in entries {
            let sub = join(&rel, &e.name);
            let is_dir = e.kind == crate::fs::walk::Kind::Dir;
            let before = from_rules.effect(&join(from, &sub), Some(is_dir));
            let after = to_rules.effect(&join(to, &sub), Some(is_dir));
            if before != after {
                return false;
            }
            if is_dir {
                match rustix::fs::openat(&fd, e.os_name(), flags, Mode::empty()) {
                    Ok(child) => stack.push((child, sub)),
                    Err(_) => return false,
                }
            }
        }
    }
    true
}

/// Refuses a move the path rules forbid: a read-only source (it may not
/// be moved away) or destination (nothing may be moved into it), and a
/// directory whose contents the rules would see differently after the
/// move (when rules are in force for either root).
pub fn check_move(s: &Target, d: &Target, sdir: &Dir, leaf: &str, budget: usize) -> Result<()> {
    if s.walked_for_write()?.is_none() && d.walked_for_write()?.is_none() {
        return Ok(());
    }
    for t in [s, d] {
        if t.walked().is_some_and(|w| w.effect != Effect::None) {
            return Err(Error::Protected {
                path: t.given.clone(),
            });
        }
    }
    let is_dir = sdir
        .symlink_metadata(leaf)
        .is_ok_and(|md| md.file_type().is_dir());
    // A root without rules (not walked) sees nothing beneath either path.
    let none = Rules::default();
    fn side<'a>(t: &'a Target, none: &'a Rules) -> (&'a Rules, String) {
        match t.walked() {
            Some(w) => (&t.root.rules, t.root.rule_path(&w.local)),
            None => (none, String::new()),
        }
    }
    let (from_rules, from) = side(s, &none);
    let (to_rules, to) = side(d, &none);
    if is_dir && !move_keeps_rules(sdir, leaf, (from_rules, &from), (to_rules, &to), budget) {
        return Err(Error::MoveChangesRules {
            from: s.given.clone(),
            to: d.given.clone(),
        });
    }
    Ok(())
}
